# shellcheck shell=bash
# bench/prom/scraper.sh - the scraper both bench/prom scripts use: a scrape
# of http://127.0.0.1:PORT/metrics started every 0.1 s however long the last
# one takes, the text format and the protobuf exposition in turn, each
# scrape's HTTP status appended to a file. Sourced, never run.

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
