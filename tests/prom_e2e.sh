#!/usr/bin/env bash
# prom_e2e.sh - the fleet view end to end, with a real Prometheus (Debian's
# `prometheus` 2.42, started here on loopback ports with its own config and
# storage, stopped here).
#
# Two buses with their collectors stand for two hosts; each gets a
# deliberately different distribution through the public producer API
# (prom_emit): host a many fast events, host b few slow ones. A `tailbus
# export` per host is scraped every second by two Prometheus servers: one
# with native histograms (protobuf), one without (text, classic buckets).
# While the producers run, prom_hostile.py throws bad clients at exporter a.
# Then, through Prometheus's HTTP API:
#   - histogram_count(sum(...)) equals the events both producers wrote;
#   - the merged native buckets equal `tailbus replay --format prom-native`
#     of both hosts' logs, bucket for bucket;
#   - histogram_quantile p50/p90/p99/p99.9 lie within the native bound of
#     replay's HDR figures, and the classic ones within the classic bound;
#   - the average of the two hosts' p99s misses the fleet p99 by far more.
#
# Needs: TAILBUS, TAILBUSD, TB_PROM_EMIT, prometheus and curl on PATH.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_PROM_EMIT:?}"
here=$(dirname "${BASH_SOURCE[0]}")
for tool in prometheus curl python3; do
	command -v "$tool" >/dev/null || { echo "prom_e2e: $tool is missing (scripts/install-deps installs it)"; exit 1; }
done
use_tmp

SCHEMA=4
# host a: many fast events; host b: few slow ones (prom_emit's arguments)
A_COUNT=30000 A_LOW=50000 A_HIGH=2000000
B_COUNT=600 B_LOW=5000000 B_HIGH=100000000
DISTINCT=40 EMIT_SECONDS=4
HOSTILE_CONNECTIONS=1000

# free_ports N: N loopback ports nothing listens on now
free_ports() {
	python3 - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}
read -r port_a port_b port_native port_classic <<<"$(free_ports 4)"

# start_exporter BUS HOST PORT: sets $epid
start_exporter() {
	"$TAILBUS" export --bus "$1" --dir "$tmp/$1/seg" --host "$2" --listen "127.0.0.1:$3" \
		--schema "$SCHEMA" >"$tmp/export-$2.out" 2>&1 &
	epid=$!
	pids+=("$epid")
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$3/metrics" >/dev/null && return 0
		sleep 0.1
	done
	echo "  exporter $2 did not answer:"; cat "$tmp/export-$2.out"; return 1
}

# start_prometheus NAME PORT [FLAGS]: its own config, storage and port; sets $ppid
start_prometheus() {
	local name=$1 port=$2
	shift 2
	mkdir -p "$tmp/$name"
	cat >"$tmp/$name/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: tailbus
    static_configs:
      - targets: ['127.0.0.1:$port_a', '127.0.0.1:$port_b']
EOF
	prometheus --config.file="$tmp/$name/prometheus.yml" --storage.tsdb.path="$tmp/$name/data" \
		--web.listen-address="127.0.0.1:$port" "$@" >"$tmp/$name/prometheus.out" 2>&1 &
	ppid=$!
	pids+=("$ppid")
	for _ in $(seq 200); do
		curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && return 0
		sleep 0.1
	done
	echo "  prometheus $name did not start:"; tail -5 "$tmp/$name/prometheus.out"; return 1
}

# query PORT PROMQL: the JSON result of an instant query
query() {
	curl -sf "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2"
}

# scalar PORT PROMQL: the value of a one-sample vector ("" if none)
scalar() {
	query "$1" "$2" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 and "value" in r[0] else "")'
}

# wait_for PORT PROMQL WANT: until the query gives WANT (30 s at most)
wait_for() {
	local got=""
	for _ in $(seq 60); do
		got=$(scalar "$1" "$2")
		[[ $got == "$3" ]] && return 0
		sleep 0.5
	done
	echo "  $2: got '$got', want '$3'"
	return 1
}

# refusals, each in one sentence
refused() { # WANT_STATUS WANT_STDERR_PATTERN ARGS...
	local want=$1 pattern=$2 rc=0
	shift 2
	"$TAILBUS" export "$@" >"$tmp/refused.out" 2>&1 || rc=$?
	[[ $rc -eq $want ]] && grep -q "$pattern" "$tmp/refused.out" ||
		{ echo "  export $*: status $rc, said: $(cat "$tmp/refused.out")"; return 1; }
}
check "--schema 9 is refused" refused 2 "bad value '9' for --schema: a schema is 0..8" --schema 9
check "--listen without a port is refused" refused 2 "bad value 'localhost' for --listen" --listen localhost
check "--listen with a name is refused" refused 2 "is not a numeric IPv4" --listen "localhost:9477"
check "--listen port 0 is refused" refused 2 "the port must be 1..65535" --listen 127.0.0.1:0
check "a missing bus is said" refused 1 "bus 'nosuch'" --bus nosuch --dir "$tmp"

# host a's drain thread pinned to the last CPU (where there are two or more):
# exporter a keeps every thread of its own off that CPU
allowed=$(cpus_allowed self)
last=${allowed##* }
a_cpus=()
[[ $allowed == "$last" ]] || a_cpus=(--cpus "$last")
start_collector a "${a_cpus[@]}"
cpid_a=$cpid
start_collector b
cpid_b=$cpid
start_exporter a a "$port_a"
epid_a=$epid
start_exporter b b "$port_b"
epid_b=$epid

off_the_drain_cpu() {
	[[ ${#a_cpus[@]} -gt 0 ]] || { echo "  (one CPU: nothing to keep apart, skipped)"; return 0; }
	# the exporter looks once a second: the drain thread may have pinned
	# itself only after the exporter's first look
	local _
	for _ in $(seq 30); do
		grep -q "keeping off CPU(s) $last, the drain threads'" "$tmp/export-a.out" && break
		sleep 0.1
	done
	grep -q "keeping off CPU(s) $last, the drain threads'" "$tmp/export-a.out" ||
		{ cat "$tmp/export-a.out"; return 1; }
	local t n=0
	for t in /proc/"$epid_a"/task/*; do
		[[ " $(cpus_allowed "${t#/proc/}") " != *" $last "* ]] ||
			{ echo "  exporter thread $(cat "$t/comm") may run on the drain CPU $last"; return 1; }
		n=$((n + 1))
	done
	[[ $n -ge 2 ]] || { echo "  exporter threads seen: $n (its HTTP thread too?)"; return 1; }
}
check "the exporter keeps off the CPU of a collector's drain thread" off_the_drain_cpu
check "Prometheus with native histograms starts" \
	start_prometheus native "$port_native" --enable-feature=native-histograms
pid_native=$ppid
check "Prometheus without native histograms starts" start_prometheus classic "$port_classic"
pid_classic=$ppid
check "both exporters are up for the native Prometheus" wait_for "$port_native" 'sum(up)' 2
check "both exporters are up for the classic Prometheus" wait_for "$port_classic" 'sum(up)' 2

# content negotiation
pb='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'
type_of() { curl -sf -o /dev/null -w '%{content_type}' "$@" "http://127.0.0.1:$port_a/metrics"; }
check "Accept: protobuf gets the delimited protobuf" \
	expect_eq "content type" "$(type_of -H "Accept: $pb;q=0.7,text/plain;version=0.0.4;q=0.3")" \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
check "no Accept gets the text format 0.0.4" \
	expect_eq "content type" "$(type_of)" "text/plain; version=0.0.4; charset=utf-8"

# the producers, and the bad clients meanwhile
TAILBUS_DIR="$tmp/a/seg" "$TB_PROM_EMIT" a lat "$A_COUNT" "$A_LOW" "$A_HIGH" "$DISTINCT" "$EMIT_SECONDS" \
	>"$tmp/emit-a.out" 2>&1 &
emit_a=$!
TAILBUS_DIR="$tmp/b/seg" "$TB_PROM_EMIT" b lat "$B_COUNT" "$B_LOW" "$B_HIGH" "$DISTINCT" "$EMIT_SECONDS" \
	>"$tmp/emit-b.out" 2>&1 &
emit_b=$!
python3 "$here/prom_hostile.py" 127.0.0.1 "$port_a" "$HOSTILE_CONNECTIONS" >"$tmp/hostile.out" 2>&1 &
hostile=$!
check "host a's producer wrote all its events" wait "$emit_a"
check "host b's producer wrote all its events" wait "$emit_b"
check "the exporter answered others through every bad client" wait "$hostile"
sed 's/^/  /' "$tmp/hostile.out" | grep -v '^  ok:' || true
check "exporter a is still running" kill -0 "$epid_a"

# Stopping the collectors closes the last interval and flushes the logs.
check "collector a stops cleanly" stop_collector "$cpid_a"
check "collector b stops cleanly" stop_collector "$cpid_b"
total=$((A_COUNT + B_COUNT))
check "histogram_count(sum(...)) equals the events written ($total)" \
	wait_for "$port_native" 'histogram_count(sum(tailbus_latency_seconds))' "$total"
check "sum(tailbus_events_total) equals the events written" \
	wait_for "$port_native" 'sum(tailbus_events_total)' "$total"
check "no event missed its histogram" wait_for "$port_native" 'sum(tailbus_summary_only_total)' 0
# the sidecar's other per-metric counts, one series per host's metric: none
# of these events was negative, late or left unmatched
for counter in negative late unmatched_start unmatched_end; do
	check "tailbus_${counter}_total: a series per metric, 0 here" \
		wait_for "$port_native" "count(tailbus_${counter}_total) + sum(tailbus_${counter}_total)" 2
done
check "the classic _count equals the events written" \
	wait_for "$port_classic" 'sum(tailbus_latency_seconds_count)' "$total"
check "the classic +Inf bucket equals the events written" \
	wait_for "$port_classic" 'sum(tailbus_latency_seconds_bucket{le="+Inf"})' "$total"

logs=("$tmp"/a/log/*.hlog "$tmp"/b/log/*.hlog)
"$TAILBUS" replay --format prom-native --schema "$SCHEMA" "${logs[@]}" >"$tmp/replay.native"
"$TAILBUS" replay --format json "${logs[@]}" >"$tmp/replay.json"

# compare_buckets: Prometheus's merged native buckets against replay's, by
# bucket index (from the upper bound: 2^(index / 2^schema))
compare_buckets() {
	query "$port_native" 'sum(tailbus_latency_seconds)' >"$tmp/sum.json"
	python3 - "$tmp/sum.json" "$tmp/replay.native" "$SCHEMA" <<'EOF'
import json, math, sys
res = json.load(open(sys.argv[1]))["data"]["result"]
schema = int(sys.argv[3])
prom = {}
for b in res[0]["histogram"][1]["buckets"]:
    count = float(b[3])
    if count:
        prom[round(math.log2(float(b[2])) * 2 ** schema)] = count
replay = {}
for line in open(sys.argv[2]):
    if line.startswith("#"):
        continue
    tag, index, lower, upper, count = line.split()
    replay[int(index)] = float(count)
if prom != replay:
    for i in sorted(set(prom) | set(replay)):
        if prom.get(i) != replay.get(i):
            print("  bucket %d: prometheus %s, replay %s" % (i, prom.get(i), replay.get(i)))
    sys.exit(1)
print("  %d buckets equal" % len(prom))
EOF
}
check "merged native buckets equal tailbus replay --format prom-native" compare_buckets

# within PROMQL_FMT BOUND PORT: each quantile's figure within BOUND of replay's
within() {
	local fmt=$1 bound=$2 port=$3 q key got want
	for pair in 0.5:p50 0.9:p90 0.99:p99 0.999:p99_9; do
		q=${pair%%:*} key=${pair#*:}
		# shellcheck disable=SC2059
		got=$(scalar "$port" "$(printf "$fmt" "$q")")
		want=$(json_field "$tmp/replay.json" lat "$key")
		python3 -c '
import sys
got, want, bound = float(sys.argv[1]) * 1e9, float(sys.argv[2]), float(sys.argv[3])
err = abs(got - want) / want
print("  q %s: prometheus %.0f ns, HDR %.0f ns, error %.4f (bound %.4f)" % (sys.argv[4], got, want, err, bound))
sys.exit(0 if err <= bound * (1 + 1e-9) else 1)' "$got" "$want" "$bound" "$q" || return 1
	done
}
native_bound=$(python3 -c "print(2 ** (2 ** -$SCHEMA) - 1)")
classic_bound=$(python3 -c "print(1.6 / 1.25 - 1)")
check "native quantiles within $native_bound of replay's HDR figures" \
	within 'histogram_quantile(%s, sum(tailbus_latency_seconds))' "$native_bound" "$port_native"
check "classic quantiles within $classic_bound of replay's HDR figures" \
	within 'histogram_quantile(%s, sum by (le) (tailbus_latency_seconds_bucket))' "$classic_bound" \
	"$port_classic"

# The negative control: averaging the hosts' p99s is not the fleet's p99.
averaging_misses() {
	local avg fleet
	avg=$(scalar "$port_native" 'avg(histogram_quantile(0.99, sum by (host) (tailbus_latency_seconds)))')
	fleet=$(json_field "$tmp/replay.json" lat p99)
	python3 -c '
import sys
avg, fleet, bound = float(sys.argv[1]) * 1e9, float(sys.argv[2]), float(sys.argv[3])
miss = abs(avg - fleet) / fleet
print("  average of per-host p99s %.0f ns, fleet p99 %.0f ns: off by %.1f%%, %.0fx the bound" % (avg, fleet, miss * 100, miss / bound))
sys.exit(0 if miss > 10 * bound else 1)' "$avg" "$fleet" "$native_bound"
}
check "the average of per-host p99s misses the fleet p99 by over 10x the bound" averaging_misses

# Stop everything this test started; an exporter exits 0 on SIGTERM.
stop_pid() {
	kill -TERM "$1"
	wait "$1"
}
check "exporter a exits cleanly" stop_pid "$epid_a"
check "exporter b exits cleanly" stop_pid "$epid_b"
check "the native Prometheus stops" stop_pid "$pid_native"
check "the classic Prometheus stops" stop_pid "$pid_classic"
summary prom_e2e
