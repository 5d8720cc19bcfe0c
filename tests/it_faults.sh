#!/usr/bin/env bash
# it_faults.sh - the bus and its logs under faults, with real processes:
#   the segment file truncated under a running collector and an attached
#   producer, again and again: both live on, the collector reports every cut
#   and serves new producers exactly;
#   (more checks below, each named for what must hold).
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT. The disk-full checks mount a tmpfs and
# need root; without it they fail unless TAILBUS_ALLOW_NO_ROOT=1.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}"
use_tmp

check_skip_status=77
need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		echo "  needs root"
		[[ ${TAILBUS_ALLOW_NO_ROOT:-0} == 1 ]] && return 77
		return 1
	fi
}

# Ten cuts to sizes from nothing to the middle of the rings, 0.3 s apart,
# while a producer (with tb_guard_segment_faults) records at 20k/s.
truncated_segment() {
	local bus=cut seg
	start_collector $bus || return 1
	seg="$tmp/$bus/seg/$bus.tailbus"
	emit $bus --name victim --prefix victim --guard --count 100000 --rate 20000 --hold-ms 500 \
		>"$tmp/$bus/victim.out" 2>&1 &
	local v=$!
	pids+=("$v")
	sleep 0.5
	local size
	for size in 8192 0 4096 100000 8192 2000000 0 8192 6000 8192; do
		truncate -s "$size" "$seg"
		sleep 0.3
		kill -0 "$cpid" 2>/dev/null || { echo "  tailbusd died after a cut to $size"; cat "$tmp/$bus/tailbusd.out"; return 1; }
		kill -0 "$v" 2>/dev/null || { echo "  the producer died after a cut to $size"; cat "$tmp/$bus/victim.out"; break; }
	done
	local vrc=0
	wait "$v" || vrc=$?
	[[ $vrc -eq 0 ]] || { echo "  the producer exited with $vrc: $(cat "$tmp/$bus/victim.out")"; return 1; }
	# the file has its size again, and a new producer is served exactly
	[[ $(stat -c %s "$seg") -ge 8192 ]] || { echo "  segment size $(stat -c %s "$seg")"; return 1; }
	emit $bus --name good --prefix good --threads 2 --metrics 2 --count 5000 --rate 20000 \
		--seed 31 --expect "$tmp/$bus/gexp" >/dev/null || return 1
	sleep 0.3
	stop_collector "$cpid" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	local cuts rows
	cuts=$(grep -c "^tailbusd: segment .* was truncated" "$tmp/$bus/tailbusd.out" || true)
	rows=$(cat "$tmp/$bus"/log/*.health.csv | grep -c ",segment-truncated," || true)
	[[ $cuts -eq 10 && $rows -eq 10 ]] || { echo "  reported $cuts cuts on stderr, $rows in the sidecar"; cat "$tmp/$bus/tailbusd.out"; return 1; }
	grep -q "quarantined: the segment was truncated" "$tmp/$bus/tailbusd.out" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	# the producer's own account adds up: written + dropped + folded == attempted
	read -r att wr dr fo _ <"$tmp/$bus/victim.out"
	[[ $att -eq $((wr + dr + fo)) && $att -eq 100000 ]] || { echo "  producer: $(cat "$tmp/$bus/victim.out")"; return 1; }
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/$bus/r.json" 2>/dev/null || true
	python3 - "$tmp/$bus/r.json" "$tmp/$bus/gexp" <<'PY'
import json, sys
got = {t["tag"]: t for t in json.load(open(sys.argv[1]))["tags"]}
for line in open(sys.argv[2]):
    name, total, p50, p90, p99, p999, p9999, mx = line.split()
    t = got.get(name)
    if not t or t["total"] != int(total) or t["p99"] != int(p99) or t["max"] != int(mx):
        sys.exit("  %s: log %s, sent total %s p99 %s max %s" % (name, t, total, p99, mx))
PY
}
check "the segment truncated 10 times under a collector and a producer: both live on, every cut reported" truncated_segment

summary it_faults
