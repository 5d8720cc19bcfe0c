# shellcheck shell=bash
# bench/prom/lib.sh - what both bench/prom scripts (run, fixed) share: the
# CPUs, a free port, tailbusd and `tailbus export` started as they measure
# them (from the caller's $build), and the scraper. Sourced after
# bench/lib.sh, never run.

# CPUs: tailbusd's drain thread alone on the last CPU; the producer, the
# closer, the exporter and the scraper share the others (on 2 CPUs, CPU 0),
# so that the exporter can take time from the producer but never from the
# drain: what both scripts ask is whether scraping moves the drain.
ncpu=$(nproc)
drain_cpu=$((ncpu - 1))
others="0-$((ncpu > 1 ? ncpu - 2 : 0))"

# A TCP port free on 127.0.0.1 now.
prom_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# prom_tailbusd BUS SEGDIR LOGDIR RING_EVENTS: tailbusd in the background as
# measured (--fold-lanes 0: a SPAN that finds the ring full is dropped, so
# the rate is the drain's; --slots 8; rings of RING_EVENTS), its output in
# LOGDIR/d.out; returns once the segment exists, its pid in prom_pid.
prom_tailbusd() {
	"$build/collector/tailbusd" --bus "$1" --dir "$2" --log-dir "$3" --foreground --fold-lanes 0 \
		--slots 8 --ring-events "$4" --cpus "$drain_cpu" --close-cpu 0 >"$3/d.out" 2>&1 &
	prom_pid=$!
	local _
	for _ in $(seq 100); do [ -e "$2/$1.tailbus" ] && break; sleep 0.05; done
}

# prom_exporter BUS SEGDIR PORT OUT: `tailbus export` of BUS on the other
# CPUs in the background, its output in OUT; the pid in prom_pid.
prom_exporter() {
	taskset -c "$others" "$build/tools/tailbus" export --bus "$1" --dir "$2" \
		--listen "127.0.0.1:$3" >"$4" 2>&1 &
	prom_pid=$!
}

# The scraper: a scrape of http://127.0.0.1:PORT/metrics started every
# 0.1 s however long the last one takes, the text format and the protobuf
# exposition in turn, each scrape's HTTP status appended to a file.

prom_pb_accept='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'

# prom_scraper_start PORT CPUS FILE: starts the scraper on CPUS in the
# background; the caller kills $! when done.
prom_scraper_start() {
	local port=$1 cpus=$2 file=$3
	( taskset -cp "$cpus" $BASHPID >/dev/null; n=0; while :; do
		if (( n % 2 )); then curl -s -o /dev/null -w '%{http_code}\n' -H "Accept: $prom_pb_accept" "http://127.0.0.1:$port/metrics" &
		else curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/metrics" & fi
		n=$((n + 1)); sleep 0.1
	done >>"$file" ) &
}
