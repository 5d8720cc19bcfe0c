#!/usr/bin/env bash
# clock_env_cli.sh - `tailbus env` and `tailbus clock` as a user runs them:
# env agrees with uname and nproc in text and JSON, its log header lines keep
# a log readable (tailbus replay, and HdrHistogram's Java reader when it is
# installed) with the same figures; clock prints every clock with
# p50 <= p99 <= max, its JSON parses, and CLOCK_MONOTONIC's floor is a
# plausible number; bad options exit 2 and name the option.
#
# Timing here is only sanity-checked (CLOCK_MONOTONIC p50 below 10 us):
# figures to hold ourselves to are measured in bench/, never in tests.
#
# Needs: TAILBUS (the binary), python3. Optional: java and
# /usr/share/java/hdrhistogram.jar (TB_HDR_JAR) for the Java reader check.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?path of the tailbus binary}"
use_tmp
export LC_ALL=C TZ=UTC
# nproc honours these; we want the CPUs this process may run on.
unset OMP_NUM_THREADS OMP_THREAD_LIMIT

# --- tailbus env ---

env_text() {
	"$TAILBUS" env >"$tmp/env.txt" || return 1
	grep -q "^kernel  *$(uname -r) " "$tmp/env.txt" || { echo "  no kernel $(uname -r)"; return 1; }
	grep -q "^cpus  *$(getconf _NPROCESSORS_ONLN)\$" "$tmp/env.txt" || { echo "  cpus"; return 1; }
	grep -q "^cpus_allowed  *$(nproc)\$" "$tmp/env.txt" || { echo "  cpus_allowed"; return 1; }
	for key in hostname cmdline cpu_model governor isolcpus nohz_full hugepages thp \
		clocksource clocksources compiler version commit; do
		grep -q "^$key  *[^ ]" "$tmp/env.txt" || { echo "  no $key"; return 1; }
	done
}
check "env: text names the kernel (uname -r) and the CPU count (nproc)" env_text

env_json() {
	"$TAILBUS" env --json >"$tmp/env.json" || return 1
	python3 - "$tmp/env.json" "$(uname -r)" "$(nproc)" "$(getconf _NPROCESSORS_ONLN)" <<'EOF' || return 1
import json, sys
doc = json.load(open(sys.argv[1]))
release, allowed, online = sys.argv[2:5]
bad = [k for k, v in doc.items() if not isinstance(v, str) or not v]
assert not bad, "empty or non-string values: %s" % bad
assert doc["kernel"].split(" ")[0] == release, doc["kernel"]
assert doc["cpus_allowed"] == allowed, (doc["cpus_allowed"], allowed)
assert doc["cpus"] == online, (doc["cpus"], online)
assert len(doc) >= 20, sorted(doc)
EOF
	# the same fields, in the same order, as the text
	expect_eq "keys" "$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' \
		"$tmp/env.json")" "$(awk '{printf "%s%s", (NR > 1 ? " " : ""), $1}' "$tmp/env.txt")"
}
check "env --json parses and agrees with uname -r, nproc and the text" env_json

env_header() {
	"$TAILBUS" env --header >"$tmp/env.hdr" || return 1
	expect_eq "lines" "$(wc -l <"$tmp/env.hdr")" "$(wc -l <"$tmp/env.txt")" || return 1
	# HdrHistogram_c reads header lines with fgets(line, 128): 127 bytes with the newline.
	awk 'length($0) + 1 > 127 || !/^#\[env [a-z_]+=.*\]$/ { print "  bad line: " $0; bad = 1 }
	     END { exit bad }' "$tmp/env.hdr"
}
check "env --header: one '#[env key=value]' line per field, each under 128 bytes" env_header

# A log with the env lines before its legend reads exactly as without them.
env_header_in_log() {
	"$TAILBUS" model --duration 3 --stall 1 --output-log "$tmp/plain.hlog" >/dev/null || return 1
	awk -v hdr="$tmp/env.hdr" '/^"StartTimestamp"/ { while ((getline l < hdr) > 0) print l }
	     { print }' "$tmp/plain.hlog" >"$tmp/env.hlog"
	expect_eq "env lines in log" "$(grep -c '^#\[env ' "$tmp/env.hlog")" "$(wc -l <"$tmp/env.hdr")" ||
		return 1
	"$TAILBUS" replay "$tmp/plain.hlog" --format json >"$tmp/plain.out" || return 1
	"$TAILBUS" replay "$tmp/env.hlog" --format json >"$tmp/env.out" || return 1
	# the figures are the same; only replay's "env" (where the log was measured) is new
	python3 - "$tmp/plain.out" "$tmp/env.out" "$(uname -r)" <<'EOF' || { echo "  replay differs"; return 1; }
import json, sys
plain, env = (json.load(open(p)) for p in sys.argv[1:3])
assert plain["tags"] == env["tags"], "figures differ"
assert plain["env"] is None and env["env"]["kernel"].startswith(sys.argv[3]), (plain["env"], env["env"])
EOF
	local jar=${TB_HDR_JAR:-/usr/share/java/hdrhistogram.jar}
	if ! command -v java >/dev/null 2>&1 || [[ ! -r $jar ]]; then
		echo "  (HdrHistogram Java reader not installed: only tailbus replay checked)"
		return 0
	fi
	local hlp=(java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$jar"
		org.HdrHistogram.HistogramLogProcessor -outputValueUnitRatio 1 -tag open)
	"${hlp[@]}" -i "$tmp/plain.hlog" >"$tmp/plain.hgrm" 2>/dev/null || true
	"${hlp[@]}" -i "$tmp/env.hlog" >"$tmp/env.hgrm" 2>/dev/null || true
	grep -q '^#\[Buckets = ' "$tmp/plain.hgrm" || { echo "  Java printed nothing"; return 1; }
	cmp -s "$tmp/plain.hgrm" "$tmp/env.hgrm" || { echo "  Java's distribution differs"; return 1; }
}
check "env header lines before the legend leave a log's figures unchanged" env_header_in_log

# --- tailbus clock ---

# in the order tailbus prints them; the forced system call (the baseline) last
clocks=(CLOCK_MONOTONIC CLOCK_MONOTONIC_RAW CLOCK_REALTIME CLOCK_MONOTONIC_COARSE)
case $(uname -m) in
x86_64 | i?86) clocks+=(rdtsc rdtsc+lfence rdtscp) ;;
esac
clocks+=(SYS_clock_gettime)

clock_text() {
	"$TAILBUS" clock --samples 20000 >"$tmp/clock.txt" || return 1
	grep -q "^clocksource  *$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) " \
		"$tmp/clock.txt" || { echo "  no clocksource line"; return 1; }
	# rows of the table: from its header to the first blank line
	awk '/^clock  *res_ns/ { t = 1; next } t && /^$/ { exit } t' "$tmp/clock.txt" >"$tmp/rows"
	for c in "${clocks[@]}"; do
		grep -q "^$c " "$tmp/rows" || { echo "  no row for $c"; return 1; }
	done
	# name res cost p50 p99 max min>0 back read-by: p50 <= p99 <= max where measured
	awk '$2 == "not" { next }
	     { n++ } !($4 + 0 <= $5 + 0 && $5 + 0 <= $6 + 0 && $4 + 0 >= 0) {
		print "  " $1 ": p50 " $4 " p99 " $5 " max " $6; bad = 1 }
	     END { exit bad || n < 5 }' "$tmp/rows" || return 1
	grep -q "^CLOCK_MONOTONIC .* <- tb_now\$" "$tmp/rows" || { echo "  tb_now mark"; return 1; }
	grep -A1 '^recommendation:$' "$tmp/clock.txt" | tail -n 1 | grep -q '^  [A-Z]' ||
		{ echo "  no recommendation"; return 1; }
}
check "clock: every clock, p50 <= p99 <= max, and a recommendation" clock_text

clock_json() {
	"$TAILBUS" clock --json --samples 20000 >"$tmp/clock.json" || return 1
	python3 - "$tmp/clock.json" "${clocks[@]}" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
want = sys.argv[2:]
got = [c["name"] for c in doc["clocks"]]
assert got == want, (got, want)
assert doc["samples"] == 20000
assert doc["recommendation"], "no recommendation"
for c in doc["clocks"]:
    if not c["available"]:
        assert c["why_not"], c
        continue
    assert 0 <= c["p50_ns"] <= c["p99_ns"] <= c["max_ns"], c
    assert c["cost_ns"] > 0, c
    assert c["used_by_tb_now"] == (c["name"] == "CLOCK_MONOTONIC"), c
mono = doc["clocks"][0]
assert mono["name"] == "CLOCK_MONOTONIC" and mono["available"], mono
assert 0 < mono["p50_ns"] < 10000, "CLOCK_MONOTONIC p50 %r ns" % mono["p50_ns"]
assert doc["clocks"][-1]["system_call"] is True
EOF
}
check "clock --json parses; CLOCK_MONOTONIC's p50 is positive and below 10 us" clock_json

# --- usage errors ---

# expect_usage PATTERN ARGS...: exit 2, nothing on stdout, stderr matching PATTERN
expect_usage() {
	local pattern=$1 rc=0
	shift
	"$TAILBUS" "$@" >"$tmp/u.out" 2>"$tmp/u.err" || rc=$?
	expect_eq "status of '$*'" "$rc" 2 || return 1
	[[ ! -s $tmp/u.out ]] || { echo "  '$*' printed on stdout"; return 1; }
	grep -q -- "$pattern" "$tmp/u.err" || { echo "  '$*': stderr lacks '$pattern'"; return 1; }
}

usage_errors() {
	expect_usage "unknown option '--bogus'" env --bogus &&
		expect_usage "option '--json' takes no value" env --json=yes &&
		expect_usage "unexpected argument 'extra'" env extra &&
		expect_usage "unknown option '--bogus'" clock --bogus &&
		expect_usage "bad value 'abc' for --samples" clock --samples abc &&
		expect_usage "bad value '0' for --samples" clock --samples 0 &&
		expect_usage "bad value '99999999999' for --samples" clock --samples 99999999999 &&
		expect_usage "option '--samples' needs a value" clock --samples
}
check "bad options exit 2 and name the option" usage_errors

help_ok() {
	"$TAILBUS" env --help | grep -q '^usage: tailbus env' &&
		"$TAILBUS" clock --help | grep -q '^usage: tailbus clock'
}
check "--help prints the usage and exits 0" help_ok

summary clock_env
