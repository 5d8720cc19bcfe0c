#!/usr/bin/env bash
# it_bus.sh - the bus end to end, with real processes, real shared memory,
# real io_uring and the real Java reader:
#   exactness across processes and threads, START/END across processes,
#   ring-full accounting with the collector stopped, start order both ways,
#   a collector killed and restarted mid-run, the pwrite fallback, the
#   drain thread's CPU kept for it alone.
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT. Each scenario uses its own bus, segment
# directory and log directory under one temp dir, removed on exit.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}"
use_tmp
JAR=/usr/share/java/hdrhistogram.jar

# compare_expect BUS EXPECTFILE: the logs' merged figures per metric equal
# the emitter's in-process figures
compare_expect() {
	local bus=$1 expect=$2
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/$bus/replay.json" || return 1
	python3 - "$tmp/$bus/replay.json" "$expect" <<'EOF'
import json, sys
got = {t["tag"]: t for t in json.load(open(sys.argv[1]))["tags"]}
ok = True
for line in open(sys.argv[2]):
    name, total, p50, p90, p99, p999, p9999, mx = line.split()
    want = dict(count=int(total), p50=int(p50), p90=int(p90), p99=int(p99), p99_9=int(p999), p99_99=int(p9999), max=int(mx))
    t = got.get(name)
    if t is None:
        print("  metric %s missing from the log" % name); ok = False; continue
    for k, v in want.items():
        if t[k] != v:
            print("  %s %s: log %s, sent %s" % (name, k, t[k], v)); ok = False
sys.exit(0 if ok else 1)
EOF
}

# java_totals BUS METRIC: HistogramLogProcessor's total count for a tag
java_total() {
	local log=$1 tag=$2
	java -cp "$JAR" org.HdrHistogram.HistogramLogProcessor -i "$log" -tag "$tag" -outputValueUnitRatio 1 2>&1 |
		sed -n 's/^#\[Max .*Total count *= *\([0-9]*\)\]$/\1/p'
}

exactness() {
	local bus=exact
	start_collector $bus || return 1
	emit $bus --threads 3 --count 20000 --metrics 4 --rate 50000 --seed 7 --expect "$tmp/expect" >"$tmp/e1" &
	local e1=$!
	emit $bus --threads 3 --count 20000 --metrics 4 --rate 50000 --seed 7 >"$tmp/e2" &
	local e2=$!
	wait $e1 $e2
	sleep 0.3
	stop_collector "$cpid"
	# two processes of the same seed: each figure's total doubles, percentiles stay
	awk '{ $2 = $2 * 2; print }' "$tmp/expect" >"$tmp/expect2"
	read -r att wr dr fo <"$tmp/e1"
	[[ $dr -eq 0 && $wr -eq $att ]] || { echo "  producer 1 dropped $dr"; return 1; }
	compare_expect $bus "$tmp/expect2" || return 1
	# the Java reference reads the same log and counts the same
	local log
	log=$(ls "$tmp/$bus"/log/*.hlog)
	local jt
	jt=$(java_total "$log" m2)
	[[ "$jt" == "$(awk '$1=="m2"{print $2}' "$tmp/expect2")" ]] || { echo "  java total for m2: '$jt'"; return 1; }
	grep -q '^#\[BaseTime: ' "$log" || return 1
	# the machine it was measured on travels in the header, and replay reports it
	python3 - "$tmp/$bus/replay.json" "$(uname -r)" <<'EOF'
import json, sys
env = json.load(open(sys.argv[1]))["env"]
assert env and env["kernel"].startswith(sys.argv[2]), env
EOF
}
check "2 processes x 3 threads: log totals and percentiles equal what was sent; Java agrees" exactness

start_end() {
	local bus=join base
	start_collector $bus || return 1
	base=$("$TB_EMIT" --now)
	emit $bus --mode start --threads 2 --count 5000 --metrics 2 --base-ns "$base" --seed 3 \
		--expect "$tmp/jexpect" >/dev/null &
	local a=$!
	emit $bus --mode end --threads 2 --count 5000 --metrics 2 --base-ns "$base" --seed 3 >/dev/null &
	local b=$!
	wait $a $b
	sleep 0.5
	# ENDs with no START: reported unmatched in the sidecar, never recorded
	emit $bus --mode end --threads 1 --count 100 --metrics 1 --base-ns "$base" --seed 99 >/dev/null
	sleep 0.3
	stop_collector "$cpid"
	compare_expect $bus "$tmp/jexpect" || return 1
	local unmatched
	unmatched=$(awk -F, '$2=="metric" && $3=="m0" { s += $10 } END { print s + 0 }' "$tmp/$bus"/log/*.health.csv)
	[[ $unmatched -eq 100 ]] || { echo "  unmatched END: $unmatched, want 100"; return 1; }
}
check "START in one process, END in another: joined latencies equal what was sent" start_end

ring_full() {
	local bus=full
	# no fold lanes: what does not fit is dropped (ring_full_folded below has them)
	start_collector $bus --ring-events 4096 --fold-lanes 0 || return 1
	kill -STOP "$cpid"
	sleep 0.3
	emit $bus --threads 1 --count 100000 --metrics 1 >"$tmp/full.out"
	kill -CONT "$cpid"
	sleep 0.3
	stop_collector "$cpid"
	local att wr dr fo
	read -r att wr dr fo <"$tmp/full.out"
	[[ $att -eq 100000 && $((wr + dr)) -eq $att && $dr -gt 0 && $fo -eq 0 ]] || { echo "  $att $wr $dr $fo"; return 1; }
	# the log holds exactly what was written, the sidecar exactly what was dropped
	local logged side_drops
	logged=$("$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format csv | awk -F, '$1=="m0"{print $3}')
	side_drops=$(awk -F, '$2=="ring" { s += $5 } END { print s + 0 }' "$tmp/$bus"/log/*.health.csv)
	[[ $logged -eq $wr ]] || { echo "  logged $logged, written $wr"; return 1; }
	[[ $side_drops -eq $dr ]] || { echo "  sidecar drops $side_drops, producer drops $dr"; return 1; }
	# and beside them, how long the rings went unread (longest_gap_us)
	local gap
	gap=$(awk -F, '$2 == "ring" && $12 > m { m = $12 } END { print m + 0 }' "$tmp/$bus"/log/*.health.csv)
	head -2 "$tmp/$bus"/log/*.health.csv | grep -q ',high_water,longest_gap_us,folded,ahead,longest_pass_us,self_pause_us,drain_thread,series_waits$' || { echo "  sidecar header"; return 1; }
	[[ $gap -ge 300000 ]] || { echo "  longest gap between passes $gap us, stopped for 300 ms and more"; return 1; }
}
check "collector stopped: producer never blocks; written + dropped == attempted; sidecar has the drops and the stall" ring_full

# The same with fold lanes (the default): nothing is lost. What did not fit
# in the ring is in the log all the same, at 2 digits: every figure at or
# above what was sent, by at most 1/128 (and the 3-digit rounding).
ring_full_folded() {
	local bus=folded
	start_collector $bus --ring-events 4096 || return 1
	kill -STOP "$cpid"
	sleep 0.3
	emit $bus --threads 1 --count 100000 --metrics 1 --seed 11 --expect "$tmp/fexpect" >"$tmp/folded.out"
	kill -CONT "$cpid"
	sleep 0.3
	stop_collector "$cpid"
	local att wr dr fo
	read -r att wr dr fo <"$tmp/folded.out"
	[[ $att -eq 100000 && $dr -eq 0 && $fo -gt 0 && $((wr + fo)) -eq $att ]] ||
		{ echo "  attempted $att written $wr dropped $dr folded $fo"; return 1; }
	local logged side_drops side_folded jtotal
	logged=$("$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format csv | awk -F, '$1=="m0"{print $3}')
	side_drops=$(awk -F, '$2=="ring" { s += $5 } END { print s + 0 }' "$tmp/$bus"/log/*.health.csv)
	side_folded=$(awk -F, '$2=="metric" && $3=="m0" { s += $13 } END { print s + 0 }' "$tmp/$bus"/log/*.health.csv)
	jtotal=$(java_total "$(ls "$tmp/$bus"/log/*.hlog | head -1)" m0)
	[[ $logged -eq $att ]] || { echo "  logged $logged of $att attempted"; return 1; }
	[[ $jtotal -eq $att ]] || { echo "  Java's total $jtotal of $att attempted"; return 1; }
	[[ $side_drops -eq 0 && $side_folded -eq $fo ]] ||
		{ echo "  sidecar: drops $side_drops, folded $side_folded (producer folded $fo)"; return 1; }
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/$bus/replay.json" || return 1
	python3 - "$tmp/$bus/replay.json" "$tmp/fexpect" <<'EOF'
import json, sys
t = {t["tag"]: t for t in json.load(open(sys.argv[1]))["tags"]}["m0"]
name, total, *vals = open(sys.argv[2]).read().split()
ok = True
for k, want in zip(["p50", "p90", "p99", "p99_9", "p99_99", "max"], map(int, vals)):
    if not want <= t[k] <= want * (1 + 1 / 128) * (1 + 1 / 1024) + 2:
        print("  %s: log %s, sent %s" % (k, t[k], want)); ok = False
sys.exit(0 if ok else 1)
EOF
}
check "collector stopped, fold lanes: nothing lost; the log (and Java) count every event, its figures within 2 digits above what was sent" ring_full_folded

producer_first() {
	local bus=order
	mkdir -p "$tmp/$bus/seg" "$tmp/$bus/log"
	# the producer creates the segment and fills part of its ring before any collector exists
	emit $bus --threads 1 --count 3000 --metrics 1 --seed 5 --expect "$tmp/oexpect" --hold-ms 1500 >/dev/null &
	local e=$!
	sleep 0.5
	start_collector $bus || return 1
	wait $e
	sleep 0.3
	stop_collector "$cpid"
	grep -q "(attached" "$tmp/$bus/tailbusd.out" || { echo "  collector did not attach to the producer's segment"; return 1; }
	compare_expect $bus "$tmp/oexpect"
}
check "producer first, collector later: nothing lost" producer_first

restart() {
	local bus=restart
	start_collector $bus || return 1
	local first=$cpid
	emit $bus --threads 2 --count 40000 --metrics 2 --rate 10000 --seed 11 --expect "$tmp/rexpect" >"$tmp/r.out" &
	local e=$!
	sleep 1.2
	kill -KILL "$first"
	wait "$first" 2>/dev/null || true
	sleep 0.3
	start_collector $bus || return 1
	wait $e
	sleep 0.5
	stop_collector "$cpid"
	local att wr dr
	read -r att wr dr fo <"$tmp/r.out"
	[[ $dr -eq 0 ]] || { echo "  producers dropped $dr"; return 1; }
	local n
	n=$(ls "$tmp/$bus"/log/*.hlog | wc -l)
	[[ $n -eq 2 ]] || { echo "  expected 2 logs, found $n"; return 1; }
	# both files parse; no interval start appears twice across them for a tag
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >/dev/null || return 1
	no_interval_twice "$tmp/$bus"/log/*.hlog || return 1
	# the second collector's log holds what reached it; the first one's completed
	# intervals (not the one in flight at the kill) are in the first file
	for log in "$tmp/$bus"/log/*.hlog; do
		[[ -n "$(java_total "$log" m0)" ]] || { echo "  Java cannot read $log"; return 1; }
	done
}
check "collector killed and restarted mid-run: producers unaffected, logs parse, no interval twice" restart

fallback() {
	local bus=fallback
	start_collector $bus --io-fallback || return 1
	grep -q "through pwrite thread (forced)" "$tmp/$bus/tailbusd.out" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	emit $bus --threads 2 --count 5000 --metrics 2 --seed 13 --expect "$tmp/fexpect" >/dev/null
	sleep 0.3
	stop_collector "$cpid"
	compare_expect $bus "$tmp/fexpect"
}
check "forced pwrite fallback: announced, and the log is exact" fallback

# bus metrics seed: 2 threads x 20000 events at 100000/s each into the
# running collector $cpid, which is then stopped: nothing dropped, the log
# exactly what was sent
paced_exact() {
	local bus=$1
	emit $bus --threads 2 --count 20000 --metrics "$2" --rate 100000 --seed "$3" \
		--expect "$tmp/$bus.expect" >"$tmp/$bus.e"
	sleep 0.3
	stop_collector "$cpid"
	read -r att wr dr fo <"$tmp/$bus.e"
	[[ $dr -eq 0 && $wr -eq $att ]] || { echo "  $bus: of $att, $dr dropped and $fo folded (the ring was full)"; return 1; }
	compare_expect $bus "$tmp/$bus.expect"
}

evict_lines() {
	local bus=evict
	start_collector $bus --evict-lines --ring-events 4096 || return 1
	local how=clflush # clflushopt or clflush on x86-64; nothing elsewhere, and said so
	[[ $(uname -m) == x86_64 ]] || how=nothing
	grep -q "evicting each event line read, with $how" "$tmp/$bus/tailbusd.out" ||
		{ cat "$tmp/$bus/tailbusd.out"; return 1; }
	# small rings, so the drain goes round each many times, flushing as it goes
	paced_exact $bus 3 29
}
check "--evict-lines: announced with its instruction, and the log is exact" evict_lines

backoff() {
	# a back-off past a millisecond is refused, naming the option
	if "$TAILBUSD" --bus bo --log-dir "$tmp" --backoff-ns 2000000 --foreground \
		>"$tmp/bo.err" 2>&1; then
		echo "  --backoff-ns 2000000 accepted"; return 1
	fi
	grep -q "bad value '2000000' for --backoff-ns" "$tmp/bo.err" || { cat "$tmp/bo.err"; return 1; }
	# polling at once, and backing off 1 ms after every short pass: both exact (a
	# ring of 65536 events lasts 655 ms at the 100,000/s each producer sends, longer
	# than a loaded machine keeps an ASan build's drain thread off its CPU)
	local bo bus
	for bo in 0 1000000; do
		bus=backoff$bo
		start_collector $bus --backoff-ns $bo --ring-events 65536 || return 1
		paced_exact $bus 2 17 || return 1
	done
}
check "collector back-off (--backoff-ns 0 and 1 ms): the log is exact; a bad value is refused" backoff

live_area() {
	local bus=live
	start_collector $bus || return 1
	emit $bus --threads 2 --count 30000 --metrics 2 --rate 20000 --seed 17 --expect "$tmp/lexpect" >/dev/null
	sleep 1.3 # every interval holding an event is closed and published
	TAILBUS_DIR="$tmp/$bus/seg" "$TB_LIVE" --bus $bus --prefix m >"$tmp/live.out" || return 1
	stop_collector "$cpid"
	# while the collector ran, another process read every metric's intervals:
	# summaries and histograms agree, and add up to what was sent
	python3 - "$tmp/live.out" "$tmp/lexpect" <<'EOF'
import sys
live = {l.split()[0]: l.split() for l in open(sys.argv[1])}
for line in open(sys.argv[2]):
    name, total = line.split()[:2]
    got = live.get(name)
    if not got or int(got[2]) != int(total) or int(got[3]) != int(total):
        sys.exit("  live %s: %s, sent %s" % (name, got, total))
EOF
}
check "live area: another process reads every published interval, lock-free, exact" live_area

producer_death() {
	local bus=death
	start_collector $bus --slots 2 || return 1
	# started directly (not through the emit function) so that $! is tb_emit itself
	TAILBUS_DIR="$tmp/$bus/seg" "$TB_EMIT" --bus $bus --name doomed --count 2000 --seed 19 \
		--hold-ms 60000 --no-detach --expect "$tmp/dexpect" >/dev/null &
	local d=$!
	pids+=("$d")
	sleep 0.5
	kill -KILL $d
	wait $d 2>/dev/null || true
	sleep 0.4 # housekeeping notices the dead owner, drains, frees the slot
	# both slots are free again: two producers at once get a ring each
	emit $bus --threads 2 --count 10 --prefix after >"$tmp/after.out" 2>&1 || { cat "$tmp/after.out"; return 1; }
	sleep 0.3
	stop_collector "$cpid"
	compare_expect $bus "$tmp/dexpect"
}
check "a producer killed mid-run: its ring is drained and its slot reclaimed" producer_death

# pid_namespace: producers in a PID namespace of their own, as in a
# container with the collector outside it. The pid a producer writes (1
# there) names another process here, so its slot is judged by its owner
# lock: one records through many housekeeping looks and loses nothing, and
# so does one that cannot read its own namespace (no /proc); one killed
# there has its ring drained and its slot freed.
pid_namespace() {
	unshare --pid --fork --mount-proc true 2>/dev/null || { echo "  no PID namespace here (unshare: root)"; return 77; }
	local bus=pidns
	start_collector $bus --slots 3 || return 1
	# killed with its unshare (--kill-child): the namespace's init dies
	TAILBUS_DIR="$tmp/$bus/seg" unshare --pid --fork --mount-proc --kill-child=SIGKILL \
		"$TB_EMIT" --bus $bus --name doomed --prefix k --count 2000 --seed 31 \
		--hold-ms 60000 --no-detach --expect "$tmp/kexpect" >/dev/null &
	local u=$!
	pids+=("$u")
	# 3 s at 1,000 events a second: thirty housekeeping rounds
	TAILBUS_DIR="$tmp/$bus/seg" unshare --pid --fork --mount-proc \
		"$TB_EMIT" --bus $bus --name contained --prefix n --count 3000 --rate 1000 --seed 29 \
		--expect "$tmp/nexpect" >"$tmp/n.out" &
	local n=$!
	# A sanitizer's run-time reads its options and the threads to stop
	# from /proc, and dies without it: that producer only where there is none
	local f ran=n
	if grep -q -a __asan_init "$TB_EMIT"; then
		echo "  (a sanitized build: the producer without /proc is left out)"
	else
		ran="n p"
		TAILBUS_DIR="$tmp/$bus/seg" unshare --pid --fork --mount-proc \
			sh -c 'mount -t tmpfs none /proc && exec "$0" "$@"' \
			"$TB_EMIT" --bus $bus --name noproc --prefix p --count 3000 --rate 1000 --seed 37 \
			--expect "$tmp/pexpect" >"$tmp/p.out" 2>"$tmp/p.err" ||
			{ echo "  the producer without /proc failed:"; cat "$tmp/p.err"; return 1; }
	fi
	wait $n || { echo "  the contained producer failed"; return 1; }
	for f in $ran; do
		read -r att wr dr fo <"$tmp/$f.out"
		[[ $att -eq 3000 && $wr -eq 3000 ]] || { echo "  $f: $att attempted, $wr written"; return 1; }
	done
	kill -KILL $u
	wait $u 2>/dev/null || true
	sleep 0.4 # housekeeping sees the lock gone, drains, frees the slot
	# every slot is free again: three producers at once get a ring each
	emit $bus --threads 3 --count 10 --prefix after >"$tmp/after.out" 2>&1 || { cat "$tmp/after.out"; return 1; }
	read -r att wr dr fo <"$tmp/after.out"
	[[ $dr -eq 0 ]] || { echo "  after: $dr dropped (no ring)"; return 1; }
	sleep 0.3
	stop_collector "$cpid"
	if grep -E "quarantined|not the process" "$tmp/$bus/tailbusd.out"; then
		return 1
	fi
	[[ $ran == *p* ]] || : >"$tmp/pexpect"
	cat "$tmp/nexpect" "$tmp/pexpect" "$tmp/kexpect" >"$tmp/nkexpect"
	compare_expect $bus "$tmp/nkexpect"
}
check_skip_status=77 check "producers in another PID namespace: judged by their owner lock, kept while they run, freed when killed" pid_namespace

slot_churn() {
	local bus=churn
	start_collector $bus --slots 1 --ring-events 1024 || return 1
	# one slot, owner after owner; each writes exactly a ring, at full speed
	# (the case where a stale position hint once quarantined the next owner)
	local k out
	for k in 1 2 3 4 5 6; do
		out=$(emit $bus --count 1024 --seed 23 --expect "$tmp/cexpect") || return 1
		read -r att wr dr fo <<<"$out"
		[[ $att -eq 1024 ]] || { echo "  run $k: attempted $att"; return 1; }
		[[ $dr -eq 0 ]] || { echo "  run $k: $dr of 1024 dropped"; return 1; }
		sleep 0.3 # housekeeping drains the ring and hands the slot back
	done
	stop_collector "$cpid"
	if grep -q quarantined "$tmp/$bus/tailbusd.out"; then
		cat "$tmp/$bus/tailbusd.out"
		return 1
	fi
	awk '{ $2 = $2 * 6; print }' "$tmp/cexpect" >"$tmp/cexpect6"
	compare_expect $bus "$tmp/cexpect6"
}
check "one slot, six owners in turn, each writing exactly a ring: every event in the log, no quarantine" slot_churn

rotation() {
	local bus=rot
	start_collector $bus --rotate-seconds 1 --keep 3 || return 1
	emit $bus --count 12000 --rate 3000 --seed 23 >/dev/null
	sleep 0.3
	stop_collector "$cpid"
	local n
	n=$(ls "$tmp/$bus"/log/*.hlog | wc -l)
	[[ $n -eq 3 ]] || { echo "  $n log files kept, want 3"; return 1; }
	for f in "$tmp/$bus"/log/*.hlog; do
		sed '/^"StartTimestamp"/q' "$f" | grep -q '^#\[Histogram log format version 1.3\]$' || { echo "  $f has no header"; return 1; }
		grep -q '^#\[tailbus: open-loop: ' "$f" || { echo "  $f is not marked open-loop"; return 1; }
		[[ $(grep -c '^Tag=m0,' "$f") -ge 1 ]] || { echo "  $f has no interval"; return 1; }
	done
}
check "rotation every second keeps --keep files, each with a full header" rotation

drain_cpu_alone() {
	local bus=alone allowed last t comm list
	allowed=$(cpus_allowed self)
	last=${allowed##* }
	[[ $allowed != "$last" ]] || { echo "  (one CPU: nothing to keep apart, skipped)"; return 0; }
	start_collector $bus --cpus "$last" || return 1
	emit $bus --count 20000 --rate 20000 --seed 5 >/dev/null
	local seen_drain=0 seen_other=0
	for t in /proc/"$cpid"/task/*; do
		comm=$(cat "$t/comm")
		list=$(cpus_allowed "${t#/proc/}")
		if [[ $comm == tb-drain0 ]]; then
			[[ $list == "$last" ]] || { echo "  the drain thread may run on $list, want $last"; return 1; }
			seen_drain=1
		else
			[[ " $list " != *" $last "* ]] || { echo "  thread $comm may run on the drain CPU $last ($list)"; return 1; }
			seen_other=$((seen_other + 1))
		fi
	done
	stop_collector "$cpid"
	[[ $seen_drain -eq 1 && $seen_other -ge 2 ]] || { echo "  threads seen: drain $seen_drain, others $seen_other"; return 1; }
}
check "--cpus: the drain thread alone on its CPU, every other thread kept off it" drain_cpu_alone

# /proc/PID/task/TID/stat field 41: the scheduling policy (0 other, 1 FIFO)
sched_policy() {
	awk '{ sub(/^.*\) /, ""); print $39 }' "/proc/$1/stat"
}

keeper_ordinary() {
	local bus=fifo t comm closer keeper="" keeper_cpus="" allowed first
	allowed=$(cpus_allowed self)
	first=${allowed%% *}
	start_collector $bus --fifo 1 --close-cpu "$first" || return 1
	if grep -q "SCHED_FIFO refused" "$tmp/$bus/tailbusd.out"; then
		stop_collector "$cpid"
		echo "  (SCHED_FIFO refused here: skipped)"
		return 0
	fi
	closer=$(sched_policy "$cpid") # the main thread
	# the keeper starts with the run loop, just after the startup lines
	for _ in $(seq 100); do
		for t in /proc/"$cpid"/task/*; do
			comm=$(cat "$t/comm")
			if [[ $comm == tb-series ]]; then
				keeper=$(sched_policy "${t#/proc/}")
				keeper_cpus=$(cpus_allowed "${t#/proc/}")
			fi
		done
		[[ -n $keeper ]] && break
		sleep 0.02
	done
	stop_collector "$cpid"
	[[ $closer == 1 ]] || { echo "  the closer runs policy '$closer', want 1 (FIFO)"; return 1; }
	[[ $keeper == 0 ]] || { echo "  the series keeper runs policy '$keeper', want 0 (ordinary)"; return 1; }
	if [[ $allowed != "$first" && " $keeper_cpus " == *" $first "* ]]; then
		echo "  the series keeper may run on the closer's CPU $first ($keeper_cpus)"
		return 1
	fi
}
check "--fifo --close-cpu: the closer runs SCHED_FIFO, the series keeper as an ordinary thread off its CPU" keeper_ordinary

uring() {
	grep -q "through io_uring" "$tmp/exact/tailbusd.out" || { cat "$tmp/exact/tailbusd.out"; return 1; }
}
check "io_uring is the default write path" uring

summary it_bus
