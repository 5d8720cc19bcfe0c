#!/usr/bin/env bash
# it_faults.sh - the bus and its logs under faults, with real processes:
#   the segment file truncated under a running collector and an attached
#   producer, again and again: both live on, the collector reports every cut
#   and serves new producers exactly;
#   a 1 MiB tmpfs log directory that fills up mid-run, and one full from the
#   start: every log file parses with our reader and Java's, holds no NUL
#   byte, every lost interval is reported (stderr, a '#' line in the log, a
#   sidecar row), no interval with events is both logged and lost or neither,
#   writing resumes once space comes back, and tailbusd's status says data
#   was lost;
#   a FIFO at the segment's path, --fresh with a producer attached, and a
#   storm of scribbles on the slot table;
#   20 SIGKILLs of tailbusd, each followed by a restart, under 2 producers:
#   every event written is in the logs or counted lost, exactly, and the
#   backlog a restart finds goes to the intervals it completed in.
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT, TB_SCRIBBLE. The disk-full checks mount a tmpfs and
# need root; without it they fail unless TAILBUS_ALLOW_NO_ROOT=1.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}" "${TB_SCRIBBLE:?}"
use_tmp

check_skip_status=77

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
	# each cut at least once (a fault noted while a cut is taken is looked
	# at again: at worst reported twice)
	[[ $cuts -ge 10 && $rows -eq $cuts ]] || { echo "  reported $cuts cuts on stderr, $rows in the sidecar"; cat "$tmp/$bus/tailbusd.out"; return 1; }
	grep -q "^tailbusd: ring 0 .*quarantined" "$tmp/$bus/tailbusd.out" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	# the producer's own account adds up: written + dropped + folded == attempted
	read -r att wr dr fo _ <"$tmp/$bus/victim.out"
	[[ $att -eq $((wr + dr + fo)) && $att -eq 100000 ]] || { echo "  producer: $(cat "$tmp/$bus/victim.out")"; return 1; }
	logged_as_sent $bus
}
check "the segment truncated 10 times under a collector and a producer: both live on, every cut reported" truncated_segment

# Java's reader (tests/java/ReadLog.java), compiled once; none when java is
# missing (the check then says so and skips it, unless TAILBUS_REQUIRE_JAVA=1).
readonly JAR=${TB_HDR_JAR:-/usr/share/java/hdrhistogram.jar}
java_ready=
java_reader() {
	if [[ -z $java_ready ]]; then
		java_ready=no
		if command -v javac >/dev/null && [[ -r $JAR ]] &&
			javac -d "$tmp/classes" -cp "$JAR" "$(dirname "${BASH_SOURCE[0]}")"/java/ReadLog.java \
				"$(dirname "${BASH_SOURCE[0]}")"/java/Figures.java 2>"$tmp/javac.err"; then
			java_ready=yes
		fi
	fi
	[[ $java_ready == yes ]]
}

# mount_small DIR: a 1 MiB tmpfs there, unmounted on exit
mounts=()
on_cleanup() {
	local m
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}
mount_small() {
	mkdir -p "$1"
	mount -t tmpfs -o size=1m tmpfs "$1" || return 1
	mounts+=("$1")
}

# fill DIR: a file that takes every free block of DIR's file system
fill() {
	dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null || true
}

# logs_valid BUS: every .hlog of the bus parses with our reader (no bad
# line) and Java's, no file holds a NUL byte, every interval with events
# (by the sidecar's metric rows) is either logged or reported lost in the
# log's comments, never both, and the stderr and sidecar reports name the
# same intervals.
logs_valid() {
	local bus=$1 f
	for f in "$tmp/$bus"/log/*.hlog "$tmp/$bus"/log/*.health.csv; do
		[[ -e $f ]] || continue
		if [[ $(tr -d '\000' <"$f" | wc -c) -ne $(wc -c <"$f") ]]; then
			echo "  $f holds NUL bytes"; return 1
		fi
	done
	for f in "$tmp/$bus"/log/*.hlog; do
		"$TAILBUS" replay "$f" >"$tmp/$bus/replay.out" 2>"$tmp/$bus/replay.err" ||
			{ echo "  replay $f failed: $(cat "$tmp/$bus/replay.err")"; return 1; }
		if grep -q ": line " "$tmp/$bus/replay.err"; then
			echo "  replay $f: $(cat "$tmp/$bus/replay.err")"; return 1
		fi
		head -c 2 "$f" | grep -q '^#\[' || { echo "  $f does not open with its header"; return 1; }
		if java_reader; then
			java -cp "$JAR:$tmp/classes" ReadLog "$f" >"$tmp/$bus/java.out" 2>"$tmp/$bus/java.err" ||
				{ echo "  Java's reader refused $f: $(head -3 "$tmp/$bus/java.err")"; return 1; }
		elif [[ ${TAILBUS_REQUIRE_JAVA:-0} == 1 ]]; then
			echo "  Java's reader is missing ($JAR, javac)"; return 1
		else
			echo "  (no Java: $f read by tailbus only)"
		fi
	done
	python3 - "$tmp/$bus" "$interval_s" <<'PY'
import glob, re, sys
d, step = sys.argv[1], float(sys.argv[2])
logged, noted, told, rows = set(), set(), set(), set()
k = lambda t: round(float(t) / step)
for f in sorted(glob.glob(d + "/log/*.hlog")):
    base = None
    for line in open(f):
        m = re.match(r"#\[BaseTime: ([0-9.]+)", line)
        if m:
            base = float(m.group(1))
        m = re.match(r"# tailbus: (\d+) intervals? lost from the log, ([0-9.]+) to ([0-9.]+): ", line)
        if m:
            n, a, b = int(m.group(1)), k(m.group(2)), k(m.group(3))
            run = set(range(a, b + 1))
            if len(run) != n:
                sys.exit("  a note of %d intervals spans %d: %s" % (n, len(run), line))
            noted |= run
        if line[0] not in '#"' and line.strip():
            logged.add(k(base + float(line.split(",")[-4 if line.startswith("Tag=") else 0])))
for line in open(d + "/tailbusd.out"):
    m = re.match(r"tailbusd: interval ([0-9.]+) lost from .*\.hlog: ", line)
    if m:
        told.add(k(m.group(1)))
for f in glob.glob(d + "/log/*.health.csv"):
    for line in open(f):
        p = line.split(",")
        if len(p) > 3 and p[1] == "lost" and p[2].startswith("log:"):
            a, b = k(p[0]), k(p[2].split(":")[1])
            rows |= set(range(a, b + 1))
busy = set()  # intervals the sidecar says had events: each must be logged or noted lost
for f in glob.glob(d + "/log/*.health.csv"):
    for line in open(f):
        p = line.split(",")
        if len(p) > 3 and p[1] == "metric" and int(p[3]) > 0:
            busy.add(k(p[0]))
if not told:
    sys.exit("  nothing was lost: the disk never filled")
if logged & noted:
    sys.exit("  logged and noted lost: %s" % sorted(logged & noted)[:5])
if busy - logged - noted:
    sys.exit("  with events, yet neither logged nor noted: %s" % sorted(busy - logged - noted)[:5])
if told != noted or rows != noted:
    sys.exit("  lost on stderr %d, in the log %d, in the sidecar %d" % (len(told), len(noted), len(rows)))
if max(logged) < max(noted):
    sys.exit("  nothing was logged after the last loss: writing did not resume")
PY
}

interval_s=0.1

# run_full BUS WHEN: the collector and a producer at 4 metrics, the log
# directory full from the start (WHEN=start) or from 1 s in, space back 1.5
# s later; tailbusd's status must be 1 (data lost), and say so.
run_full() {
	local bus=$1 when=$2 log
	need_root || return $?
	log="$tmp/$bus/log"
	mount_small "$log" || return 1
	[[ $when == start ]] && fill "$log"
	start_collector $bus --interval 100ms || return 1
	emit $bus --metrics 4 --count 40000 --rate 10000 >/dev/null &
	local e=$!
	pids+=("$e")
	[[ $when == start ]] || { sleep 1; fill "$log"; }
	sleep 1.5
	rm -f "$log/filler"
	wait "$e" || return 1
	sleep 0.5
	local rc=0
	kill -INT "$cpid"
	wait "$cpid" || rc=$?
	[[ $rc -eq 1 ]] || { echo "  tailbusd exited with $rc, not 1"; cat "$tmp/$bus/tailbusd.out"; return 1; }
	grep -q "intervals were lost from the log files" "$tmp/$bus/tailbusd.out" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	logs_valid $bus || { tail -20 "$tmp/$bus/tailbusd.out"; return 1; }
}

full_mid_run() { run_full fullmid mid; }
check "a log directory full mid-run: valid logs, every lost interval reported, writing resumes" full_mid_run
full_at_start() { run_full fullstart start; }
check "a log directory full from the start: the header comes first once space is back, logs valid" full_at_start

# A FIFO planted where the segment belongs: top, the collector and a
# producer refuse it at once, saying why, instead of waiting for a writer.
fifo_segment() {
	local d="$tmp/fifo" out rc
	mkdir -p "$d/log"
	mkfifo "$d/ff.tailbus"
	rc=0
	out=$(timeout 10 "$TAILBUS" top --bus ff --dir "$d" --once 2>&1) || rc=$?
	[[ $rc -ne 0 && $rc -ne 124 ]] && grep -q "not a regular file" <<<"$out" ||
		{ echo "  top: status $rc: $out"; return 1; }
	rc=0
	out=$(timeout 10 "$TAILBUSD" --bus ff --dir "$d" --log-dir "$d/log" --foreground 2>&1) || rc=$?
	[[ $rc -eq 1 ]] && grep -q "not a regular file" <<<"$out" || { echo "  tailbusd: status $rc: $out"; return 1; }
	rc=0
	out=$(TAILBUS_DIR="$d" timeout 10 "$TB_EMIT" --bus ff --count 10 2>&1) || rc=$?
	[[ $rc -eq 1 ]] && grep -q "not a regular file" <<<"$out" || { echo "  producer: status $rc: $out"; return 1; }
}
check "a FIFO at the segment's path is refused at once by top, tailbusd and a producer" fifo_segment

# --fresh with a producer attached: refused, naming it, and the segment
# (with the producer's ring) is still there; once it has gone, --fresh works.
fresh_with_producer() {
	local bus=fresh seg out rc=0
	start_collector $bus || return 1
	seg="$tmp/$bus/seg/$bus.tailbus"
	emit $bus --count 100 --hold-ms 3000 --no-detach >/dev/null &
	local e=$!
	pids+=("$e")
	sleep 0.5
	stop_collector "$cpid" || return 1
	local inode
	inode=$(stat -c %i "$seg")
	out=$(timeout 10 "$TAILBUSD" --bus $bus --dir "$tmp/$bus/seg" --log-dir "$tmp/$bus/log" \
		--foreground --fresh 2>&1) || rc=$?
	[[ $rc -eq 1 ]] && grep -q -- "--fresh: 1 producer thread is still attached to this bus (pid [0-9]" <<<"$out" ||
		{ echo "  status $rc: $out"; return 1; }
	[[ $(stat -c %i "$seg") == "$inode" ]] || { echo "  the segment was replaced"; return 1; }
	wait "$e" || true
	start_collector $bus --fresh || return 1
	stop_collector "$cpid" || return 1
	[[ $(grep -c "(created, " "$tmp/$bus/tailbusd.out") -eq 2 ]] ||
		{ echo "  --fresh did not make a new segment"; cat "$tmp/$bus/tailbusd.out"; return 1; }
}
check "--fresh refuses while a producer is attached, and says which" fresh_with_producer

# The slot-table storm: on a 4-slot bus, producers churn while a hostile
# process leaves every slot in a state no producer leaves it in (none of
# the five, CLAIMED by a running process, LIVE or QUARANTINED under a pid
# that runs but never claimed it), 10 times. Within a bounded time (the 2 s
# of SLOT_STUCK_NS and a housekeeping round or two), every slot serves a
# producer again and its events are exact; each reclaim is reported.
slot_storm() {
	local bus=storm r
	start_collector $bus --slots 4 || return 1
	for r in $(seq 10); do
		emit $bus --name churn --prefix churn --threads 2 --count 200 >/dev/null 2>&1 || true
		# the last round's states must last: what the collector was asked
		# about the churn's slots (freeing those it left) is done first
		[[ $r -eq 10 ]] && sleep 0.5
		TAILBUS_DIR="$tmp/$bus/seg" "$TB_SCRIBBLE" --bus $bus --what slots --round "$r" || return 1
		sleep 0.2
	done
	sleep 3.5
	local out
	out=$(emit $bus --name good --prefix good --threads 4 --metrics 2 --count 4000 --rate 20000 \
		--seed 41 --expect "$tmp/$bus/gexp" 2>&1) || { echo "  after the storm: $out"; return 1; }
	sleep 0.3
	stop_collector "$cpid" || return 1
	grep -q "^tailbusd: ring [0-9] reclaimed: its state 3735928559 is not a slot state" "$tmp/$bus/tailbusd.out" &&
		grep -q "reclaimed: claimed for 2 s and never published" "$tmp/$bus/tailbusd.out" &&
		grep -q "reclaimed: its pid 1 runs, but is not the process that claimed it" "$tmp/$bus/tailbusd.out" &&
		grep -q "slots in impossible states were reclaimed" "$tmp/$bus/tailbusd.out" ||
		{ cat "$tmp/$bus/tailbusd.out"; return 1; }
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/$bus/r.json" 2>/dev/null || true
	python3 - "$tmp/$bus/r.json" "$tmp/$bus/gexp" <<'PY'
import json, sys
got = {t["tag"]: t for t in json.load(open(sys.argv[1]))["tags"]}
for line in open(sys.argv[2]):
    name, total = line.split()[:2]
    if name not in got or got[name]["count"] != int(total):
        sys.exit("  %s: %s, sent %s" % (name, got.get(name), total))
PY
}
check "a slot-table storm: every slot comes back within a bounded time, each reclaim reported" slot_storm

# Twenty SIGKILLs of tailbusd, each followed by a new one, while two
# producer processes record 30k events/s each into rings small enough to
# fold while no collector runs: every event a producer wrote or folded is
# either in a log or in a later collector's `collector-lost` sidecar row,
# exactly (logged + lost == written + folded), each kill is reported once,
# no interval of a tag is written twice across the logs, and what waited in
# the rings during a restart is not counted late.
kill_campaign() {
	local bus=kill k
	# rings of 1024 events fill while no collector runs: SPANs fold
	start_collector $bus --interval 100ms --ring-events 1024 || return 1
	emit $bus --name pa --prefix pa --count 240000 --rate 30000 >"$tmp/$bus/pa.out" &
	local a=$!
	pids+=("$a")
	emit $bus --name pb --prefix pb --count 240000 --rate 30000 >"$tmp/$bus/pb.out" &
	local b=$!
	pids+=("$b")
	for k in $(seq 20); do
		sleep "0.$((RANDOM % 25 + 5))"
		kill -KILL "$cpid"
		wait "$cpid" 2>/dev/null || true
		start_collector $bus --interval 100ms || return 1
	done
	wait "$a" || return 1
	wait "$b" || return 1
	sleep 0.3
	stop_collector "$cpid" || { cat "$tmp/$bus/tailbusd.out"; return 1; }
	local said
	said=$(grep -c "^tailbusd: the collector before this one (pid [0-9]*) was killed" "$tmp/$bus/tailbusd.out" || true)
	[[ $said -eq 20 ]] || { echo "  $said kills reported on stderr"; return 1; }
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/$bus/r.json" || return 1
	python3 - "$tmp/$bus/r.json" "$tmp/$bus/pa.out" "$tmp/$bus/pb.out" "$tmp/$bus"/log/*.hlog <<'PY' || return 1
import csv, glob, json, os, sys
logged = sum(t["count"] for t in json.load(open(sys.argv[1]))["tags"])
sent = folded = 0
for out in sys.argv[2:4]:
    att, wr, dr, fo = map(int, open(out).read().split()[:4])
    sent += wr + fo
    folded += fo
lost = rows = late = 0
for path in glob.glob(os.path.join(os.path.dirname(sys.argv[4]), "*.health.csv")):
    for row in csv.reader(l for l in open(path) if not l.startswith("#")):
        if len(row) > 3 and row[1] == "collector-lost":
            lost += int(row[3])
            rows += 1
        if len(row) > 6 and row[1] == "metric":
            late += int(row[6])
if rows != 20 or logged + lost != sent:
    sys.exit("  %d collector-lost rows; logged %d + lost %d = %d, written + folded %d"
             % (rows, logged, lost, logged + lost, sent))
# what waited in the rings goes to the intervals it completed in: late
# are only events a producer stamped more than the grace before the
# drain read them (a busy host), never a restart's whole backlog
if late > sent // 40:
    sys.exit("  %d events late of %d" % (late, sent))
print("  logged %d + lost %d == written + folded %d (%d folded); %d late"
      % (logged, lost, sent, folded, late))
PY
	no_interval_twice "$tmp/$bus"/log/*.hlog || return 1
	# a log that opens with the loss line reads with Java's reader too
	local f
	f=$(grep -l "^# tailbus: [0-9]* events lost" "$tmp/$bus"/log/*.hlog | head -1)
	[[ -n $f ]] || { echo "  no log carries the loss line"; return 1; }
	if java_reader; then
		java -cp "$JAR:$tmp/classes" ReadLog "$f" >/dev/null 2>"$tmp/$bus/java.err" ||
			{ echo "  Java's reader refused $f: $(head -3 "$tmp/$bus/java.err")"; return 1; }
	fi
}
check "20 collector SIGKILLs under 2 producers: logged + reported lost == written + folded" kill_campaign

summary it_faults
