#!/usr/bin/env bash
# top_cli.sh - `tailbus top` as an operator runs it, against a real collector:
#   --once --json figures equal what the emitter sent (window 60 and 1),
#   the text table (units, marks, legend), sufficiency marks on a small count,
#   a window of a metric at millions of events a second equal to replay of
#   the collector's log (whole histograms in the live area), a window the
#   live heap cut short (said on the row), a window bounded in time for a
#   metric quiet in between, ring drops,
#   a stale heartbeat, a segment replaced by `tailbusd --fresh`, --log on the
#   collector's own log and on a growing file with a torn last line, a real terminal (tmux: in-place redraw, the cursor
#   and the prompt back after Ctrl-C and 'q'), and the error sentences.
#
# Needs: TAILBUS, TAILBUSD, TB_EMIT, TB_HEAP_FILL. tmux for the terminal checks: skipped
# with a message when absent, unless TAILBUS_REQUIRE_TMUX=1.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_EMIT:?}" "${TB_HEAP_FILL:?}"
use_tmp
TMUX_SOCK="$tmp/tmux.sock"
# before lib.sh's cleanup kills what is left: TERM first (timeout passes it on
# to a background top, which exits), and the tmux server
on_cleanup() {
	local p
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -TERM "$p" 2>/dev/null || true; done
	sleep 0.2
	if command -v tmux >/dev/null && [[ -S "$TMUX_SOCK" ]]; then
		tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true
	fi
}

run_top() { # bus, then top args
	local bus=$1
	shift
	"$TAILBUS" top --bus "$bus" --dir "$tmp/$bus/seg" "$@"
}

# background_top ARGS: `tailbus top` streaming in the background, under a
# timeout so that a top that ignores SIGINT fails the test instead of hanging
# it; sets $tp (the timeout's pid). Stop it with stop_top.
TOP_TIMEOUT_S=240
background_top() {
	timeout -k 10 "$TOP_TIMEOUT_S" "$TAILBUS" top "$@" &
	tp=$!
	pids+=("$tp")
}

# top_pid: the pid of background_top's top itself (timeout's child), or
# nothing before timeout has started it
top_pid() {
	local st child
	for st in /proc/[0-9]*/stat; do
		# field 4 is the parent pid (the name in field 2 has no spaces here)
		if [[ $(cut -d' ' -f4 "$st" 2>/dev/null) == "$tp" ]]; then
			child=${st#/proc/}
			echo "${child%/stat}"
			return
		fi
	done
}

# stop_top: SIGINT to top itself, then its exit status. Not through timeout:
# timeout follows every signal it passes on with a SIGCONT, and under ASan a
# SIGCONT that lands while LeakSanitizer's exit-time tracer is stopping top
# leaves the tracer waiting forever (top then spins in its exit).
stop_top() {
	local child
	child=$(top_pid)
	kill -INT "${child:-$tp}"
	wait "$tp"
}

# wait_published BUS METRIC COUNT: until the live area's 60 s window of
# METRIC holds COUNT samples (the collector publishes an interval's events
# once the interval and its grace period are over)
wait_published() {
	local bus=$1 metric=$2 want=$3 got=
	for _ in $(seq 60); do
		got=$(run_top "$bus" --once --json --window 60 | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((m["count"] for m in d["metrics"] if m["metric"] == sys.argv[1]), 0))' "$metric")
		[[ $got -eq $want ]] && return 0
		sleep 0.1
	done
	echo "  $metric: $got samples published, want $want"
	return 1
}

# compare_json TOPJSON EXPECTFILE: each metric's window in top's JSON
# against tb_emit's --expect figures, every figure equal.
compare_json() {
	python3 - "$@" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
got = {m["metric"]: m for m in doc["metrics"]}
keys = ["count", "p50", "p90", "p99", "p99_9", "p99_99", "max"]
ok = True
for line in open(sys.argv[2]):
    f = line.split()
    want = dict(zip(keys, map(int, f[1:])))
    m = got.get(f[0])
    if m is None:
        print("  %s missing from top" % f[0]); ok = False; continue
    for k, v in want.items():
        if m[k] != v:
            print("  %s %s: top %s, sent %s" % (f[0], k, m[k], v)); ok = False
sys.exit(0 if ok else 1)
EOF
}

metric_field() { # file metric key: one value, lists comma-joined, else as JSON
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
m = next(m for m in d["metrics"] if m["metric"] == sys.argv[2])
v = m[sys.argv[3]]
print(",".join(v) if isinstance(v, list) else json.dumps(v))' "$@"
}

# ---- one collector, three metrics at a fixed rate, for most checks ----
BUS=live
start_collector $BUS || exit 1
live_pid=$cpid
# 1000 events/s over m0..m2 for 3 s: about 333 samples per metric and
# interval
emit $BUS --threads 1 --count 3000 --metrics 3 --rate 1000 --seed 5 --expect "$tmp/expect" >"$tmp/emit.out"
wait_published $BUS m2 1000 || exit 1

window_60() {
	run_top $BUS --once --json --window 60 >"$tmp/w60.json" || return 1
	compare_json "$tmp/w60.json" "$tmp/expect" || return 1
	# 1000 samples: p99 and beyond have fewer than 100 expected above them
	expect_eq "m0 insufficient" "$(metric_field "$tmp/w60.json" m0 insufficient)" "p99,p99_9,p99_99"
	expect_eq "window_s" "$(json_get "$tmp/w60.json" window_s)" 60
}
check "--once --json --window 60: count, percentiles and max equal what was sent" window_60

# the newest N (default 1) intervals of a tag, as their own log: replay counts
# them independently
newest_logged() { # tag [N]
	local log
	log=$(ls "$tmp/$BUS"/log/*.hlog)
	{ grep -v '^Tag=' "$log"; grep "^Tag=$1," "$log" | tail -"${2:-1}"; } >"$tmp/newest.hlog"
	"$TAILBUS" replay "$tmp/newest.hlog" --format csv | awk -F, -v t="$1" '$1 == t { print $3 }'
}

window_1() {
	run_top $BUS --once --json --window 1 >"$tmp/w1.json" || return 1
	for m in m0 m1 m2; do
		expect_eq "$m intervals" "$(metric_field "$tmp/w1.json" $m intervals)" 1 || return 1
		expect_eq "$m count" "$(metric_field "$tmp/w1.json" $m count)" "$(newest_logged $m)" || return 1
	done
}
check "--window 1: one interval, the count of the newest logged interval" window_1

# any duration, in any unit, is whole intervals of the bus's (1 s here)
window_units() {
	local w pair
	for pair in 2s:2 2000ms:2 2:2 1.6:1.6; do
		w=${pair%:*}
		run_top $BUS --once --json --window "$w" >"$tmp/w2.json" || return 1
		expect_eq "$w window_s" "$(json_get "$tmp/w2.json" window_s)" "${pair#*:}" || return 1
		for m in m0 m2; do
			expect_eq "$w $m intervals" "$(metric_field "$tmp/w2.json" $m intervals)" 2 || return 1
			expect_eq "$w $m count" "$(metric_field "$tmp/w2.json" $m count)" "$(newest_logged $m 2)" || return 1
		done
	done
}
check "--window 2s, 2000ms, 2 and 1.6: two intervals, the count of the newest two logged" window_units

text_table() {
	run_top $BUS --once --window 10 >"$tmp/text.out" || return 1
	local ok=0
	grep -q "bus $BUS   window 10s (10 intervals of 1 s)" "$tmp/text.out" || { echo "  no header"; ok=1; }
	grep -qE "segment $tmp/$BUS/seg/$BUS.tailbus, (4 KiB pages \(not hugepages\)|[0-9]+ [MG]iB hugepages)" \
		"$tmp/text.out" || { echo "  no segment/page size line"; ok=1; }
	grep -q "collector pid $live_pid, heartbeat fresh" "$tmp/text.out" || { echo "  no collector line"; ok=1; }
	grep -qE '^metric +rate/s +count +p50 +p90 +p99 +p99\.9 +p99\.99 +max +drops$' "$tmp/text.out" ||
		{ echo "  no column header"; ok=1; }
	# a row: name, rate, count, then six values with units, then drops
	grep -qE '^m0 +[0-9.]+k? +1000( +[0-9.]+ (ns|us|ms|s)[*~ ]*){6} +0' "$tmp/text.out" ||
		{ echo "  no m0 row with units"; ok=1; }
	grep -qE '[0-9] (ns|us|ms|s)\*' "$tmp/text.out" || { echo "  no '*' mark"; ok=1; }
	grep -q '^\* fewer than 100 samples expected beyond this percentile' "$tmp/text.out" ||
		{ echo "  no legend"; ok=1; }
	[[ $ok -eq 0 ]] || cat "$tmp/text.out"
	return $ok
}
check "text: header (bus, segment, pages, collector), units, '*' marks and the legend" text_table

small_count() {
	emit $BUS --count 50 --prefix s --seed 3 >/dev/null
	wait_published $BUS s0 50 || return 1
	run_top $BUS --once --json --window 60 >"$tmp/small.json" || return 1
	expect_eq "s0 insufficient" "$(metric_field "$tmp/small.json" s0 insufficient)" "p50,p90,p99,p99_9,p99_99" ||
		return 1
	run_top $BUS --once --window 60 | grep -E '^s0 ' >"$tmp/small.txt" || return 1
	expect_eq "marks on the s0 row" "$(grep -o '\*' "$tmp/small.txt" | wc -l)" 5
}
check "50 samples: every percentile is marked insufficient" small_count

# A metric quiet for a while: its window is the time of W intervals up to its
# newest one, so a burst before the quiet is not in a shorter window, on the
# bus or in the log.
sparse_window() {
	emit $BUS --count 1000 --prefix q --seed 5 --octaves 20 >/dev/null
	wait_published $BUS q0 1000 || return 1
	sleep 4
	emit $BUS --count 10 --prefix q --seed 6 --octaves 1 >/dev/null
	wait_published $BUS q0 1010 || return 1
	run_top $BUS --once --json --window 3 >"$tmp/sparse.json" || return 1
	expect_eq "q0 count, bus" "$(metric_field "$tmp/sparse.json" q0 count)" 10 || return 1
	# the log's lines of an interval land a little after its live publication
	local got=
	for _ in $(seq 50); do
		"$TAILBUS" top --log "$tmp/$BUS"/log/*.hlog --once --json --window 3 >"$tmp/sparse-log.json" ||
			return 1
		got=$(python3 -c '
import json, sys
print(sum(t["count"] for t in json.load(open(sys.argv[1]))["tags"] if t["tag"] == "q0"))' "$tmp/sparse-log.json")
		[[ $got -eq 10 ]] && return 0
		sleep 0.1
	done
	echo "  q0 count, log: $got, want 10"
	return 1
}
check "a metric quiet for a while: a 3 s window holds its newest events, not the burst 4 s before" sparse_window

# A bus a producer made before any collector: its interval is not known
# until one comes, so --window is held against the collector's when it
# does (top watching from before then ends, exit 2, as --once would).
window_checked_once_known() {
	local bus=early rc=0
	mkdir -p "$tmp/$bus/seg" "$tmp/$bus/log"
	emit $bus --count 10 >/dev/null || return 1
	background_top --bus $bus --dir "$tmp/$bus/seg" --json --window 1 --interval-ms 200 >/dev/null 2>"$tmp/early.err"
	sleep 0.6
	kill -0 "$tp" || { echo "  top ended before a collector came"; return 1; }
	start_collector $bus --interval 10s || return 1
	for _ in $(seq 100); do
		kill -0 "$tp" 2>/dev/null || break
		sleep 0.1
	done
	wait "$tp" || rc=$?
	stop_collector "$cpid" || return 1
	expect_eq "top's exit status" $rc 2 || return 1
	grep -q "bad value '1' for --window: shorter than one interval of bus $bus (10s)" "$tmp/early.err" ||
		{ cat "$tmp/early.err"; return 1; }
}
check "a bus made before its collector: --window is judged by the collector's interval when it comes" window_checked_once_known

# A collector's last interval is cut short at its stop: a window still
# reaches back its n intervals of the bus's length, not n of that short one.
short_last_interval() {
	local bus=short e
	start_collector $bus || return 1
	emit $bus --count 500 --rate 100 --prefix z >/dev/null &
	e=$!
	pids+=("$e")
	sleep 3
	# stopped 0.3 s into an interval (they start on whole seconds)
	python3 -c 'import time; time.sleep((1.3 - time.time() % 1) % 1)'
	stop_collector "$cpid" || return 1
	wait "$e" || return 1
	run_top $bus --once --json --window 3 >"$tmp/short.json" || return 1
	expect_eq "z0 intervals" "$(metric_field "$tmp/short.json" z0 intervals)" 3 || return 1
	# its log likewise: windows of the log's 1 s intervals, not of the short last line's
	local log
	log=$(ls "$tmp/$bus"/log/*.hlog)
	"$TAILBUS" top --log "$log" --once --json --window 3 >"$tmp/short-log.json" || return 1
	expect_eq "z0 intervals, log" "$(python3 -c '
import json, sys
print(next(t["intervals"] for t in json.load(open(sys.argv[1]))["tags"] if t["tag"] == "z0"))' "$tmp/short-log.json")" 3 ||
		return 1
	"$TAILBUS" top --log "$log" --once --window 60 >/dev/null
}
check "a collector stopped mid-interval: a 3 s window holds its short last interval and the 2 before (bus and log)" short_last_interval

# tb_emit as fast as it can: millions of events a second of one metric,
# latencies log-spread over 100 ns .. 100 ms (thousands of distinct buckets
# per interval, frames of tens of KiB), a full ring folding the rest; then,
# in later intervals, as many over 100 ns .. 2 us, so that the window's
# percentiles are those of the mixture, not of any one interval
busy_exact() {
	emit $BUS --threads 1 --count 6000000 --rate 0 --metrics 1 --prefix busy --seed 9 >/dev/null
	wait_published $BUS busy0 6000000 || return 1
	emit $BUS --threads 1 --count 6000000 --rate 0 --metrics 1 --prefix busy --seed 10 --octaves 4 >/dev/null
	wait_published $BUS busy0 12000000 || return 1
	run_top $BUS --once --json --window 60 >"$tmp/busy.json" || return 1
	"$TAILBUS" replay "$tmp/$BUS"/log/*.hlog --tag busy0 --format json >"$tmp/busy_replay.json" || return 1
	python3 - "$tmp/busy.json" "$tmp/busy_replay.json" <<'EOF2'
import json, sys
top = next(m for m in json.load(open(sys.argv[1]))["metrics"] if m["metric"] == "busy0")
rep = json.load(open(sys.argv[2]))["tags"][0]
ok = True
if top["count"] < 1000000 * top["intervals"]:
    print("  busy0: %d events in %d intervals, not millions a second" % (top["count"], top["intervals"]))
    ok = False
pairs = [("intervals", "intervals"), ("count", "count")] + \
        [(k, k) for k in ("p50", "p90", "p99", "p99_9", "p99_99", "max")]
for t, r in pairs:
    if top[t] != rep[r]:
        print("  busy0 %s: top %s, replay of the log %s" % (t, top[t], rep[r])); ok = False
sys.exit(0 if ok else 1)
EOF2
	run_top $BUS --once --window 60 >"$tmp/busy.txt" || return 1
	if grep -q '~' "$tmp/busy.txt"; then echo "  a '~' in top's table:"; cat "$tmp/busy.txt"; return 1; fi
}
check "millions of events a second, 100 ns .. 100 ms then .. 2 us: top's window equals replay of the log, bit for bit" busy_exact

# a bus whose smallest live heap let go intervals of a wide metric
# (tb_heap_fill: 1 ms intervals, 1024 records): a 1 s window says so and
# holds the intervals kept, a window within them does not
heap_let_go() {
	local d=$tmp/heapfill published kept
	mkdir -p "$d"
	read -r published kept < <("$TB_HEAP_FILL" --bus heapfill --dir "$d") || return 1
	[[ $kept -gt 0 && $kept -lt $published ]] || { echo "  kept $kept of $published"; return 1; }
	"$TAILBUS" top --bus heapfill --dir "$d" --once --json --window 1s >"$tmp/hf.json" || return 1
	expect_eq "heap_let_go" "$(metric_field "$tmp/hf.json" wide0 heap_let_go)" true || return 1
	expect_eq "intervals" "$(metric_field "$tmp/hf.json" wide0 intervals)" "$kept" || return 1
	"$TAILBUS" top --bus heapfill --dir "$d" --once --window 1s >"$tmp/hf.txt" || return 1
	grep -qE "^wide0 .*\(window: the newest $kept intervals; the live heap let the older go\)" "$tmp/hf.txt" ||
		{ echo "  no let-go note:"; cat "$tmp/hf.txt"; return 1; }
	"$TAILBUS" top --bus heapfill --dir "$d" --once --json --window 100ms >"$tmp/hf100.json" || return 1
	expect_eq "heap_let_go of 100ms" "$(metric_field "$tmp/hf100.json" wide0 heap_let_go)" false
}
check "a window the live heap cut short: the intervals kept, and a note that says why" heap_let_go

log_same() { # quiet|say
	run_top $BUS --once --json --window 60 >"$tmp/busall.json" || return 1
	"$TAILBUS" top --log "$tmp/$BUS"/log/*.hlog --once --json --window 60 >"$tmp/log.json" || return 1
	python3 - "$tmp/busall.json" "$tmp/log.json" "$1" <<'EOF'
import json, sys
bus = {m["metric"]: m for m in json.load(open(sys.argv[1]))["metrics"]}
log = json.load(open(sys.argv[2]))
got = {m["tag"]: m for m in log["tags"]}
ok = log["bus"] is None and log["bad_lines"] == 0
for name, m in bus.items():
    g = got.get(name)
    if g is None or g["count"] != m["count"] or g["max"] != m["max"] or g["drops"] is not None:
        if sys.argv[3] == "say": print("  %s: log %s, bus %s" % (name, g and (g["count"], g["max"]), (m["count"], m["max"])))
        ok = False
    elif g["p99"] != m["p99"]:
        if sys.argv[3] == "say": print("  %s p99: log %s, bus %s" % (name, g["p99"], m["p99"]))
        ok = False
sys.exit(0 if ok else 1)
EOF
}

log_mode() {
	# the log's lines of an interval land a little after its live publication
	for _ in $(seq 20); do
		log_same quiet && return 0
		sleep 0.1
	done
	log_same say
}
check "--log on the collector's log: the same counts, max and p99 as the bus" log_mode

logged_count() { # log tag N: samples in the tag's first N lines, by replay
	{ grep -v '^Tag=' "$1"; grep "^Tag=$2," "$1" | head -"$3"; } >"$tmp/first.hlog"
	"$TAILBUS" replay "$tmp/first.hlog" --format csv | awk -F, -v t="$2" '$1 == t { print $3 }'
}

# a log growing under top: a copy of the header, then lines appended, one torn
log_follow() {
	local log f=$tmp/follow.hlog line
	log=$(ls "$tmp/$BUS"/log/*.hlog)
	grep -v '^Tag=' "$log" >"$f"
	background_top --log "$f" --json --window 60 --interval-ms 100 >"$tmp/follow.json"
	sleep 0.4
	grep '^Tag=m0,' "$log" | head -1 >>"$f"
	line=$(grep '^Tag=m0,' "$log" | sed -n 2p)
	printf '%s' "${line:0:40}" >>"$f" # a writer caught mid-append
	sleep 0.5
	printf '%s\n' "${line:40}" >>"$f"
	sleep 0.5
	stop_top || { echo "  top --log did not exit cleanly on SIGINT"; return 1; }
	local want1 want2
	want1=$(logged_count "$log" m0 1)
	want2=$(logged_count "$log" m0 2)
	# every snapshot parses; counts go 0 (or absent), first line, both lines;
	# the torn line is never read as bad
	python3 - "$tmp/follow.json" "$want1" "$want2" <<'EOF'
import json, sys
seq = []
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["bad_lines"]:
        sys.exit("  a torn line was read: %s bad" % d["bad_lines"])
    c = next((m["count"] for m in d["tags"] if m["tag"] == "m0"), 0)
    if not seq or seq[-1] != c:
        seq.append(c)
want = [0, int(sys.argv[2]), int(sys.argv[3])]
if seq != want:
    sys.exit("  counts over time %s, want %s" % (seq, want))
EOF
}
check "--log follows a growing file; a torn last line waits until it is complete" log_follow

heartbeat() {
	local text json
	kill -STOP "$live_pid"
	sleep 2.5
	text=$(run_top $BUS --once) || { kill -CONT "$live_pid"; return 1; }
	json=$(run_top $BUS --once --json) || { kill -CONT "$live_pid"; return 1; }
	kill -CONT "$live_pid"
	grep -q "collector pid $live_pid: heartbeat [0-9.]* s old - collector not running?" <<<"$text" ||
		{ echo "$text" | head -3; return 1; }
	python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1])["collector_running"] is not False)' "$json"
}
check "a collector that stopped beating: 'collector not running?'" heartbeat

# ---- ring drops on their own bus ----
drops() {
	local bus=drops att wr dr fo
	# no fold lanes: a full ring drops
	start_collector $bus --ring-events 4096 --fold-lanes 0 || return 1
	kill -STOP "$cpid"
	sleep 0.3
	emit $bus --count 100000 >"$tmp/drops.out"
	kill -CONT "$cpid"
	read -r att wr dr fo <"$tmp/drops.out"
	[[ $dr -gt 0 ]] || { echo "  nothing dropped ($att $wr $dr)"; return 1; }
	wait_published $bus m0 "$wr" || return 1
	run_top $bus --once --json --window 60 >"$tmp/drops.json" || return 1
	run_top $bus --once --window 60 >"$tmp/drops.txt" || return 1
	stop_collector "$cpid" || true
	expect_eq "m0 drops" "$(metric_field "$tmp/drops.json" m0 drops)" "$dr" || return 1
	# beside them, the stall that caused them: stopped 300 ms and more
	local gap
	gap=$(metric_field "$tmp/drops.json" m0 longest_gap_us)
	[[ $gap -ge 300000 ]] || { echo "  longest_gap_us $gap, want >= 300000"; return 1; }
	grep -qE '^collector: up to [0-9.]+ (ms|s) between two of its passes' "$tmp/drops.txt" ||
		{ echo "  no collector gap line:"; cat "$tmp/drops.txt"; return 1; }
}
check "drops: the bus's ring drops during the window, exactly as the producer counted them, and the collector's stall beside them" drops

# ---- folds on their own bus: the default fold lanes, the collector stopped ----
folds() {
	local bus=folds att wr dr fo
	start_collector $bus --ring-events 4096 || return 1
	kill -STOP "$cpid"
	sleep 0.3
	# the emitter holds its ring a while after its last event: the header
	# counts what live rings folded
	emit $bus --count 100000 --hold-ms 4000 >"$tmp/folds.out" &
	local e=$!
	sleep 1
	kill -CONT "$cpid"
	# nothing lost: the count is every attempt
	wait_published $bus m0 100000 || return 1
	run_top $bus --once --json --window 60 >"$tmp/folds.json" || return 1
	run_top $bus --once --window 60 >"$tmp/folds.txt" || return 1
	wait $e
	stop_collector "$cpid" || true
	read -r att wr dr fo <"$tmp/folds.out"
	[[ $att -eq 100000 && $dr -eq 0 && $fo -gt 0 ]] || { echo "  nothing folded, or dropped ($att $wr $dr $fo)"; return 1; }
	expect_eq "m0 folded" "$(metric_field "$tmp/folds.json" m0 folded)" "$fo" || return 1
	expect_eq "m0 drops" "$(metric_field "$tmp/folds.json" m0 drops)" 0 || return 1
	expect_eq "ring_folded" "$(json_get "$tmp/folds.json" ring_folded)" "$fo" || return 1
	grep -qE "^folded: $fo of the counts came from fold lanes" "$tmp/folds.txt" ||
		{ echo "  no folded line:"; cat "$tmp/folds.txt"; return 1; }
	grep -qE "rings: [0-9]+ live, 0 events dropped, $fo folded since attach" "$tmp/folds.txt" ||
		{ echo "  no folded count in the header:"; cat "$tmp/folds.txt"; return 1; }
}
check "folds: what a full ring folded is counted, and shown as folded, not dropped" folds

# ---- top keeps off the CPU of a drain thread pinned with --cpus ----
off_the_drain_cpu() {
	local bus=pinned allowed last
	allowed=$(cpus_allowed self)
	last=${allowed##* }
	[[ $allowed != "$last" ]] || { echo "  (one CPU: nothing to keep apart, skipped)"; return 0; }
	start_collector $bus --cpus "$last" || return 1
	emit $bus --count 300 --seed 1 >/dev/null
	wait_published $bus m0 300 || return 1
	background_top --bus $bus --dir "$tmp/$bus/seg" --json --window 60 --interval-ms 100 >/dev/null
	local top="" _
	for _ in $(seq 50); do
		top=$(top_pid)
		[[ -n $top && " $(cpus_allowed "$top") " != *" $last "* ]] && break
		sleep 0.1
	done
	local got
	got=$(cpus_allowed "${top:-self}")
	stop_top || true
	stop_collector "$cpid" || true
	[[ -n $top && " $got " != *" $last "* ]] || { echo "  top (pid ${top:-?}) may run on the drain CPU $last ($got)"; return 1; }
}
check "top keeps off the CPU of a drain thread pinned with --cpus" off_the_drain_cpu

# ---- a collector restarted with --fresh replaces the segment under top ----
fresh() {
	local bus=fresh
	start_collector $bus || return 1
	local first=$cpid
	emit $bus --count 300 --seed 1 >/dev/null
	wait_published $bus m0 300 || return 1
	background_top --bus $bus --dir "$tmp/$bus/seg" --json --window 60 --interval-ms 100 >"$tmp/fresh.json"
	sleep 0.5
	stop_collector "$first" || true
	start_collector $bus --fresh || return 1
	emit $bus --count 70 --seed 2 >/dev/null
	wait_published $bus m0 70 || return 1
	sleep 0.5
	stop_top || { echo "  top did not exit cleanly on SIGINT"; return 1; }
	stop_collector "$cpid" || true
	# the stream saw the old segment, then the new one with its collector
	python3 - "$tmp/fresh.json" "$first" <<'EOF'
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
count = lambda d: next((m["count"] for m in d["metrics"] if m["metric"] == "m0"), 0)
if count(docs[0]) != 300 or docs[0]["collector_pid"] != int(sys.argv[2]):
    sys.exit("  first snapshot: %s samples, pid %s" % (count(docs[0]), docs[0]["collector_pid"]))
last = docs[-1]
if count(last) != 70 or not last["collector_running"] or last["collector_pid"] == int(sys.argv[2]):
    sys.exit("  last snapshot: %s samples, pid %s" % (count(last), last["collector_pid"]))
EOF
}
check "a collector restarted with --fresh: top follows the new segment" fresh

# ---- a real terminal ----
tmux_pane() { tmux -S "$TMUX_SOCK" capture-pane -p -t top "$@"; }
tmux_cursor() { tmux -S "$TMUX_SOCK" display-message -p -t top '#{cursor_flag}'; }
last_line() { tmux_pane | grep -v '^ *$' | tail -1; }
# top has exited when the shell's prompt is back: up to 5 s (an ASan build's
# exit, with its leak check, can take longer than a fixed pause allowed)
prompt_back() {
	for _ in $(seq 50); do
		[[ "$(last_line)" == 'top-test$' ]] && return 0
		sleep 0.1
	done
	return 1
}

terminal() {
	local cmd="TAILBUS_DIR=$tmp/$BUS/seg $TAILBUS top --bus $BUS"
	tmux -S "$TMUX_SOCK" new-session -d -s top -x 150 -y 30 \
		"env PS1='top-test\$ ' bash --norc --noprofile" || return 1
	sleep 0.3
	tmux -S "$TMUX_SOCK" send-keys -t top "$cmd" Enter
	sleep 1.5
	tmux_pane >"$tmp/pane1"
	sleep 1.7
	tmux_pane -S - >"$tmp/pane2" # with the scrollback: redrawn in place, never scrolled
	local hidden
	hidden=$(tmux_cursor)
	tmux -S "$TMUX_SOCK" send-keys -t top C-c
	prompt_back
	local ok=0
	grep -qE '^m0 +[0-9.]+k? +[0-9]+ +[0-9.]+ (ns|us|ms|s)' "$tmp/pane2" || { echo "  no table"; ok=1; }
	expect_eq "column headers in the scrollback" "$(grep -c '^metric  *rate/s' "$tmp/pane2")" 1 || ok=1
	[[ "$(grep 'tailbus top   bus' "$tmp/pane1")" != "$(grep 'tailbus top   bus' "$tmp/pane2")" ]] ||
		{ echo "  the header's clock did not move: no refresh"; ok=1; }
	expect_eq "cursor while running" "$hidden" 0 || ok=1
	expect_eq "cursor after Ctrl-C" "$(tmux_cursor)" 1 || ok=1
	expect_eq "last line after Ctrl-C" "$(last_line)" 'top-test$' || ok=1
	# 'q' quits too
	tmux -S "$TMUX_SOCK" send-keys -t top "clear; $cmd" Enter
	sleep 1
	tmux -S "$TMUX_SOCK" send-keys -t top q
	prompt_back
	expect_eq "last line after q" "$(last_line)" 'top-test$' || ok=1
	expect_eq "cursor after q" "$(tmux_cursor)" 1 || ok=1
	[[ $ok -eq 0 ]] || { echo "  pane:"; cat "$tmp/pane2"; }
	return $ok
}
if command -v tmux >/dev/null; then
	check "terminal (tmux): table redrawn in place, cursor hidden, prompt and cursor back after Ctrl-C and q" terminal
elif [[ "${TAILBUS_REQUIRE_TMUX:-0}" == 1 ]]; then
	failed=$((failed + 1))
	echo "FAILED: terminal: tmux is not installed and TAILBUS_REQUIRE_TMUX=1"
else
	echo "SKIPPED: terminal checks: tmux is not installed (apt-get install tmux; TAILBUS_REQUIRE_TMUX=1 makes this a failure)"
fi

# ---- errors ----
fails_with() { # status, pattern, then the command
	local want=$1 pattern=$2 rc=0
	shift 2
	"$@" >"$tmp/err.out" 2>&1 || rc=$?
	[[ $rc -eq $want ]] || { echo "  '$*': exit $rc, want $want"; cat "$tmp/err.out"; return 1; }
	grep -qE "$pattern" "$tmp/err.out" || { echo "  '$*' said:"; cat "$tmp/err.out"; return 1; }
	[[ $(wc -l <"$tmp/err.out") -eq 1 ]] || { echo "  more than one sentence:"; cat "$tmp/err.out"; return 1; }
}

errors() {
	fails_with 1 "^tailbus top: no bus 'nosuch' in $tmp/$BUS/seg " \
		"$TAILBUS" top --bus nosuch --dir "$tmp/$BUS/seg" --once &&
		fails_with 2 "bad value '500ms' for --window: shorter than one interval of bus $BUS \(1s\)" \
			run_top $BUS --once --window 500ms &&
		fails_with 2 "bad value '960ms' for --window: shorter than one interval of bus $BUS \(1s\)" \
			run_top $BUS --once --window 960ms &&
		fails_with 2 "bad value '2m' for --window: longer than the live area of bus $BUS keeps: 64 intervals of 1s" \
			run_top $BUS --once --window 2m &&
		fails_with 2 "bad value '10x' for --window: not a duration" run_top $BUS --once --window 10x &&
		fails_with 2 "bad value '-1' for --window: must be at least" run_top $BUS --once --window -1 &&
		fails_with 2 "option '--window' needs a value" run_top $BUS --window &&
		fails_with 2 "not both" "$TAILBUS" top --bus $BUS --log x --once &&
		fails_with 2 "bad value '1' for --interval-ms: must be at least 10ms" run_top $BUS --interval-ms 1 &&
		fails_with 1 "cannot read $tmp/none.hlog: No such file" "$TAILBUS" top --log "$tmp/none.hlog" --once
}
check "errors: no bus (named, with the directory searched) exits 1; bad options exit 2, named" errors

# A finished log read years later: the age of its newest data in days, not seconds.
old_log_age() {
	local log=${TB_FIXTURES:?}/tagged-Log.logV2.hlog
	"$TAILBUS" top --log "$log" --once >"$tmp/old.txt" || return 1
	grep -Eq '^A .* \(newest data [0-9]+ days old\)$' "$tmp/old.txt" ||
		{ grep '^A ' "$tmp/old.txt"; return 1; }
}
check "--log of an old log: '(newest data N days old)', not millions of seconds" old_log_age

# Logs whose lines are not all of 1 s: jHiccup's, with a line a stall
# stretched to 1.95 s 13 lines back; the same cut at that line (the newest
# stretched); and with two lines of 0.3 s after it (a collector started and
# stopped twice within an interval); and with its newest lines 1.001 s long,
# which --window 1 is not refused for. Windows stay whole intervals of 1 s.
uneven_lines() {
	local fixture=${TB_FIXTURES:?}/jHiccup-2.0.7S.logV2.hlog w log
	python3 - "$fixture" "$tmp" <<'PY' || return 1
import sys
lines = open(sys.argv[1]).read().splitlines(keepends=True)
head = [l for l in lines if l[0] in '#"']
data = [l for l in lines if l[0] not in '#"']
at = next(i for i, l in enumerate(data) if l.split(',')[1] == '1.950')
open(sys.argv[2] + '/stretched-newest.hlog', 'w').writelines(head + data[:at + 1])
f = data[-1].split(',')
start = float(f[0]) + float(f[1])
short = []
for k in range(2):
    short.append('%.3f,0.300,%s' % (start, ','.join(f[2:])))
    start += 0.3
open(sys.argv[2] + '/short-newest.hlog', 'w').writelines(lines + short)
jitter = [','.join(l.split(',')[:1] + ['1.001'] + l.split(',')[2:]) for l in data[-5:]]
open(sys.argv[2] + '/jitter.hlog', 'w').writelines(head + data[:-5] + jitter)
absurd = [','.join(l.split(',')[:1] + ['9999999999.000'] + l.split(',')[2:]) for l in data[-5:]]
open(sys.argv[2] + '/absurd.hlog', 'w').writelines(head + data[:-5] + absurd)
PY
	# log, window, intervals in it: the newest stretched, it fills two
	# seconds of the window's time, and one fewer interval is in it
	local want
	for want in "$fixture 10 10" "$fixture 30 30" "$tmp/stretched-newest.hlog 10 9" \
		"$tmp/stretched-newest.hlog 30 29" "$tmp/short-newest.hlog 10 10" "$tmp/short-newest.hlog 30 30" \
		"$tmp/jitter.hlog 1 1"; do
		set -- $want
		"$TAILBUS" top --log "$1" --once --json --window "$2" >"$tmp/uneven.json" || return 1
		expect_eq "${1##*/} --window $2: intervals, interval" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["tags"][0]["intervals"], round(d["interval_s"], 1))' "$tmp/uneven.json")" "$3 1.0" || return 1
	done
	# lines that say they lasted centuries: --window is shorter than one
	# of them (said, exit 2), not an empty row
	local rc=0
	"$TAILBUS" top --log "$tmp/absurd.hlog" --once --json --window 10 >/dev/null 2>"$tmp/absurd.err" || rc=$?
	expect_eq "absurd.hlog exit status" $rc 2 || return 1
	grep -q "shorter than one interval of log $tmp/absurd.hlog" "$tmp/absurd.err" || { cat "$tmp/absurd.err"; return 1; }
}
check "--log with stretched, short and jittery lines: windows of whole intervals of 1 s" uneven_lines

# A log of two tags, A in intervals of 1 s and B of 10 s: --window is held
# against the longer while B's data is recent, and not once B stopped long
# before A's newest.
two_intervals() {
	local fixture=${TB_FIXTURES:?}/jHiccup-2.0.7S.logV2.hlog gap rc
	for gap in 0.5 100; do
		python3 - "$fixture" "$tmp/two.hlog" "$gap" <<'PY' || return 1
import sys
lines = open(sys.argv[1]).read().splitlines(keepends=True)
head = [l for l in lines if l[0] in '#"']
rest = [l.split(',', 3)[2:] for l in lines if l[0] not in '#"'][:10]
end = 1000.0
a = ['Tag=A,%.3f,1.000,%s,%s' % (end - 10 + k, r[0], r[1]) for k, r in enumerate(rest)]
b_end = end - float(sys.argv[3])
b = ['Tag=B,%.3f,10.000,%s,%s' % (b_end - 10 * (3 - k), r[0], r[1]) for k, r in enumerate(rest[:3])]
open(sys.argv[2], 'w').writelines(head + b + a)
PY
		rc=0
		"$TAILBUS" top --log "$tmp/two.hlog" --once --window 5 >"$tmp/two.out" 2>&1 || rc=$?
		if [[ $gap == 0.5 ]]; then
			expect_eq "B recent: exit status" $rc 2 || { cat "$tmp/two.out"; return 1; }
			grep -q "shorter than one interval of log $tmp/two.hlog (10s)" "$tmp/two.out" ||
				{ cat "$tmp/two.out"; return 1; }
		else
			expect_eq "B stopped long ago: exit status" $rc 0 || { cat "$tmp/two.out"; return 1; }
		fi
	done
}
check "--log of tags in 1 s and 10 s intervals: --window 5 refused while the 10 s tag is recent, not after" two_intervals

stop_collector "$live_pid" || true
summary top_cli
