#!/usr/bin/env bash
# it_faults_more.sh - more of the bus under faults, with real processes:
#   the segment's header scribbled on (its magic, a size, a whole other valid
#   layout) under a running collector and an attached producer: the
#   collector says so within a second (stderr and a sidecar row), writes it
#   back, and serves a new producer exactly; with no collector, a producer
#   refuses a bad header with a sentence, within its attach timeout;
#   nothing created before every check passed: a symlink planted at the
#   collector's lock, or at tailbusd.out, refuses the start with no segment
#   made; a start that fails after creating the segment (a log directory
#   that is a file, or the lock held by a collector whose segment was
#   removed) removes it again, never another's lock; symlinks planted at
#   the log files' names are never followed.
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT, TB_SCRIBBLE.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}" "${TB_SCRIBBLE:?}"
use_tmp

# reported_within BUS PATTERN N: the N-th line matching PATTERN appears in
# tailbusd's output within a second
reported_within() {
	local bus=$1 pattern=$2 want=$3
	for _ in $(seq 20); do
		[[ $(grep -c -- "$pattern" "$tmp/$bus/tailbusd.out" || true) -ge $want ]] && return 0
		sleep 0.05
	done
	echo "  not reported within a second: $pattern"; cat "$tmp/$bus/tailbusd.out"; return 1
}

# The magic, then the total size, scribbled while a producer records at
# 20k/s: each reported within a second and written back; a producer that
# attaches after each is served, and its events are counted exactly.
header_scribbled() {
	local bus=hdr what n=0
	start_collector $bus --interval 200ms || return 1
	emit $bus --name victim --prefix victim --count 60000 --rate 20000 >"$tmp/$bus/victim.out" 2>&1 &
	local v=$!
	pids+=("$v")
	sleep 0.3
	for what in magic size; do
		n=$((n + 1))
		TAILBUS_DIR="$tmp/$bus/seg" "$TB_SCRIBBLE" --bus $bus --what header-$what || return 1
		reported_within $bus "^tailbusd: segment .*: its header was changed under the collector" $n || return 1
		emit $bus --name good$what --prefix good$what --threads 2 --metrics 2 --count 3000 --rate 20000 \
			--seed $((40 + n)) --expect "$tmp/$bus/exp$what" >/dev/null || { echo "  no producer after the $what"; return 1; }
	done
	wait "$v" || { echo "  the producer attached before failed: $(cat "$tmp/$bus/victim.out")"; return 1; }
	sleep 0.3
	stop_collector "$cpid" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	grep -q "(magic); written back from the collector's copy, 0 rings quarantined" "$tmp/$bus/tailbusd.out" &&
		grep -q "(total_size); written back" "$tmp/$bus/tailbusd.out" &&
		grep -q "^tailbusd: the segment's header was changed under the collector 2 times" "$tmp/$bus/tailbusd.out" ||
		{ cat "$tmp/$bus/tailbusd.out"; return 1; }
	local rows
	rows=$(cat "$tmp/$bus"/log/*.health.csv | grep -c ",segment-header,$bus.tailbus:" || true)
	[[ $rows -eq 2 ]] || { echo "  $rows segment-header rows"; return 1; }
	read -r att wr dr fo _ <"$tmp/$bus/victim.out"
	[[ $att -eq 60000 && $att -eq $((wr + dr + fo)) ]] || { echo "  victim: $(cat "$tmp/$bus/victim.out")"; return 1; }
	cat "$tmp/$bus/expmagic" "$tmp/$bus/expsize" >"$tmp/$bus/gexp"
	logged_as_sent $bus
}
check "the header's magic and size scribbled under a collector: reported within 1 s, written back, new producers exact" header_scribbled

# A whole other header that validates (one slot less): a producer could
# have attached by it, so the rings followed are quarantined; then a new
# producer is served exactly.
header_other_layout() {
	local bus=lay
	start_collector $bus || return 1
	emit $bus --name victim --prefix victim --count 20000 --rate 20000 >/dev/null 2>&1 &
	local v=$!
	pids+=("$v")
	sleep 0.3
	TAILBUS_DIR="$tmp/$bus/seg" "$TB_SCRIBBLE" --bus $bus --what header-layout || return 1
	reported_within $bus "(it described another valid layout), 1 ring quarantined" 1 || return 1
	wait "$v" || true
	emit $bus --name good --prefix good --threads 2 --metrics 2 --count 3000 --rate 20000 \
		--seed 47 --expect "$tmp/$bus/gexp" >/dev/null || { echo "  no producer after it"; return 1; }
	sleep 0.3
	stop_collector "$cpid" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	grep -q "^tailbusd: ring 0 (pid [0-9]*) quarantined: the segment's header described another layout" \
		"$tmp/$bus/tailbusd.out" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	logged_as_sent $bus
}
check "a header of another valid layout: the rings followed are quarantined, new producers exact" header_other_layout

# No collector to write it back: a producer refuses the header with a
# sentence, at once for a bad size, within its 2 s attach wait for a bad magic.
header_bad_no_collector() {
	local bus=nocol out rc start
	start_collector $bus || return 1
	stop_collector "$cpid" || return 1
	TAILBUS_DIR="$tmp/$bus/seg" "$TB_SCRIBBLE" --bus $bus --what header-size || return 1
	rc=0
	out=$(timeout 10 env TAILBUS_DIR="$tmp/$bus/seg" "$TB_EMIT" --bus $bus --count 10 2>&1) || rc=$?
	[[ $rc -eq 1 ]] && grep -q "header: region offsets do not match" <<<"$out" || { echo "  size: status $rc: $out"; return 1; }
	TAILBUS_DIR="$tmp/$bus/seg" "$TB_SCRIBBLE" --bus $bus --what header-magic 2>/dev/null && return 1
	# tb_scribble cannot attach either now; plant the magic by hand
	printf 'XXXXXXXX' | dd of="$tmp/$bus/seg/$bus.tailbus" bs=1 conv=notrunc status=none
	start=$SECONDS
	rc=0
	out=$(timeout 10 env TAILBUS_DIR="$tmp/$bus/seg" "$TB_EMIT" --bus $bus --count 10 2>&1) || rc=$?
	[[ $rc -eq 1 ]] && grep -q "header: bad magic (not a tailbus segment, or its header was overwritten" <<<"$out" && [[ $((SECONDS - start)) -le 4 ]] ||
		{ echo "  magic: status $rc after $((SECONDS - start)) s: $out"; return 1; }
}
check "a bad header with no collector: a producer refuses it with a sentence, in bounded time" header_bad_no_collector

# tailbusd DIR BUS [args]: a start in the foreground, its status in $rc and
# its output in $out
run_tailbusd() {
	local d=$1 bus=$2
	shift 2
	rc=0
	out=$(timeout 10 "$TAILBUSD" --bus "$bus" --dir "$d" --log-dir "$d/log" "$@" 2>&1) || rc=$?
}

lock_symlink() {
	local d="$tmp/lk" rc out
	mkdir -p "$d"
	ln -s "$d/victim" "$d/lk.tailbus.lock"
	run_tailbusd "$d" lk --foreground
	[[ $rc -eq 1 ]] && grep -q "the collector lock file (<segment>.lock) is a symlink" <<<"$out" ||
		{ echo "  status $rc: $out"; return 1; }
	[[ ! -e $d/lk.tailbus && ! -e $d/victim && ! -e $d/log ]] || { echo "  left: $(ls -A "$d")"; return 1; }
}
check "a symlink at the lock: refused, naming it, before the segment is created" lock_symlink

out_symlink() {
	local d="$tmp/os" rc out
	mkdir -p "$d/log"
	ln -s "$d/victim" "$d/log/tailbusd.out"
	run_tailbusd "$d" os
	[[ $rc -eq 1 ]] && grep -q "^tailbusd: cannot detach" <<<"$out" || { echo "  status $rc: $out"; return 1; }
	[[ ! -e $d/os.tailbus && ! -e $d/victim ]] || { echo "  left: $(ls -A "$d")"; return 1; }
}
check "a symlink at tailbusd.out: refused before the segment is created" out_symlink

failed_start() {
	local d="$tmp/fs" rc out
	mkdir -p "$d"
	: >"$d/notadir"
	rc=0
	out=$(timeout 10 "$TAILBUSD" --bus fs --dir "$d" --log-dir "$d/notadir" --foreground 2>&1) || rc=$?
	[[ $rc -eq 1 ]] && grep -q "not a directory" <<<"$out" || { echo "  status $rc: $out"; return 1; }
	[[ ! -e $d/fs.tailbus && ! -e $d/fs.tailbus.lock ]] || { echo "  left: $(ls -A "$d")"; return 1; }
}
check "a start that fails after creating the segment removes it and its lock" failed_start

# The first tailbusd's segment removed under it: a second one creates a new
# segment, finds the lock held, and removes that segment again, but not the
# lock file the first one holds (a third would take it then).
second_collector() {
	local bus=two rc out
	start_collector $bus || return 1
	rm "$tmp/$bus/seg/$bus.tailbus"
	run_tailbusd "$tmp/$bus/seg" $bus --foreground
	[[ $rc -eq 1 ]] && grep -q "another tailbusd is collecting this bus" <<<"$out" || { echo "  status $rc: $out"; return 1; }
	[[ ! -e $tmp/$bus/seg/$bus.tailbus && -e $tmp/$bus/seg/$bus.tailbus.lock ]] ||
		{ echo "  left: $(ls -A "$tmp/$bus/seg")"; return 1; }
	stop_collector "$cpid"
}
check "a second tailbusd that made a segment and found the lock held removes the segment, not the lock" second_collector

# Symlinks at the names the log files of the next seconds would take: the
# collector takes other names, and what they point to is never created.
log_symlinks() {
	local bus=ls s d
	mkdir -p "$tmp/$bus/log"
	d="$tmp/$bus/log"
	for s in $(seq 0 4); do
		local stamp
		stamp=$(date -u -d "@$(($(date +%s) + s))" +%Y%m%dT%H%M%SZ)
		ln -s "$tmp/$bus/target$s.hlog" "$d/$bus.$stamp.hlog"
		ln -s "$tmp/$bus/target$s.csv" "$d/$bus.$stamp.health.csv"
	done
	start_collector $bus || return 1
	emit $bus --count 1000 --seed 3 --expect "$tmp/$bus/gexp" >/dev/null || return 1
	sleep 0.3
	stop_collector "$cpid" || return 1
	[[ -z $(ls "$tmp/$bus" | grep '^target') ]] || { echo "  a symlink was followed"; return 1; }
	grep -q "tailbusd: writing .*/$bus\.[0-9TZ]*-1\.hlog" "$tmp/$bus/tailbusd.out" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	# replay every real log (the symlinks point nowhere)
	find "$d" -type l -delete
	logged_as_sent $bus
}
check "symlinks at the log files' names are never followed" log_symlinks

summary it_faults_more
