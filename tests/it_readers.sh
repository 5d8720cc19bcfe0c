#!/usr/bin/env bash
# it_readers.sh - the readers of a segment (tailbus export, tailbus top) when
# its file changes under them:
#   - cut (truncate, by anyone who may write it) while no collector is there
#     to give its size back: both keep running (the read guard puts zeros
#     where the pages went) and map it afresh once it is whole again;
#   - replaced by `tailbusd --fresh`: the exporter follows the new file, and
#     each metric's counter goes on from where it was.
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT, curl.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}"
use_tmp
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
events_of_m0() { # port
	curl -sf "http://127.0.0.1:$1/metrics" | awk '/^tailbus_events_total\{.*metric="m0"/ { print $2 }'
}
start_export() { # bus port
	"$TAILBUS" export --bus "$1" --dir "$tmp/$1/seg" --listen "127.0.0.1:$2" >"$tmp/export.$1.out" 2>&1 &
	pids+=("$!")
	for _ in $(seq 50); do
		curl -sf "http://127.0.0.1:$2/metrics" >/dev/null && return 0
		sleep 0.1
	done
	echo "  the exporter did not answer"
	return 1
}

# ---- a cut segment ----
BUS=readcut
port=$(free_port)
start_collector $BUS || exit 1
emit $BUS --count 2000 --metrics 3 >/dev/null
sleep 2.5
stop_collector "$cpid"
seg="$tmp/$BUS/seg/$BUS.tailbus"
size=$(stat -c %s "$seg")
start_export $BUS "$port" || exit 1
epid=${pids[-1]}
"$TAILBUS" top --bus $BUS --dir "$tmp/$BUS/seg" --interval-ms 100 --json >"$tmp/top.out" 2>&1 &
tpid=$!
pids+=("$tpid")
sleep 1
truncate -s 8192 "$seg"
sleep 1
both_run_on() {
	local ok=0 rc
	kill -0 "$epid" 2>/dev/null || { rc=0; wait "$epid" || rc=$?; echo "  exporter ended: $rc (135: SIGBUS)"; ok=1; }
	kill -0 "$tpid" 2>/dev/null || { rc=0; wait "$tpid" || rc=$?; echo "  top ended: $rc (135: SIGBUS)"; ok=1; }
	curl -sf "http://127.0.0.1:$port/metrics" >/dev/null || { echo "  no answer from the exporter"; ok=1; }
	return $ok
}
check "export and a running top survive their segment cut under them" both_run_on
truncate -s "$size" "$seg" # given back, as a collector would
sleep 1
mapped_afresh() {
	grep -q "bus 'readcut': its segment file was cut under the exporter; mapped afresh" "$tmp/export.$BUS.out" || {
		echo "  the exporter said:"; sed 's/^/    /' "$tmp/export.$BUS.out"; return 1; }
	kill -0 "$tpid" 2>/dev/null
}
check "the exporter maps the file afresh once it is whole again" mapped_afresh

# ---- a segment replaced by tailbusd --fresh ----
BUS=readfresh
port=$(free_port)
start_collector $BUS || exit 1
start_export $BUS "$port" || exit 1
emit $BUS --count 1000 >/dev/null
sleep 2.5
before=$(events_of_m0 "$port")
stop_collector "$cpid"
start_collector $BUS --fresh || exit 1
emit $BUS --count 1000 >/dev/null
sleep 2.5
follows_fresh() {
	local after
	after=$(events_of_m0 "$port")
	expect_eq "events of m0 before --fresh" "$before" 1000 && expect_eq "after 1000 more" "$after" 2000
}
check "the exporter follows a segment replaced by --fresh, its counters going on" follows_fresh
stop_collector "$cpid"
summary it_readers
