#!/usr/bin/env bash
# examples_bus.sh - the example engines (examples/c_producer.c and
# examples/cpp_producer.cpp) record into a real bus served by a real
# tailbusd, one after the other and then both at once, and the log
# holds what they sent: each example's metric with every event it
# recorded, its largest latency 1000 us (to the log's 3 digits).
#
# Needs: TAILBUS, TAILBUSD, TB_C_PRODUCER, TB_CPP_PRODUCER.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${TAILBUS:?}" "${TAILBUSD:?}" "${TB_C_PRODUCER:?}" "${TB_CPP_PRODUCER:?}"
use_tmp

# log_has BUS TAG COUNT: the merged log of BUS has COUNT events of TAG, the
# largest within HDR's 3 digits above 1000 us
log_has() {
	local bus=$1 tag=$2 count=$3 total max
	"$TAILBUS" replay "$tmp/$bus"/log/*.hlog --format json >"$tmp/$bus/replay.json" || return 1
	total=$(json_field "$tmp/$bus/replay.json" "$tag" count) || return 1
	max=$(json_field "$tmp/$bus/replay.json" "$tag" max) || return 1
	expect_eq "$tag total" "$total" "$count" || return 1
	((max >= 1000000 && max <= 1001000)) || { echo "  $tag max $max ns, want 1000 us"; return 1; }
}

# run_example BUS PROGRAM NAME COUNT: the example prints its counters, all
# written, none dropped, and no warning (tailbusd serves the bus)
run_example() {
	local bus=$1 prog=$2 name=$3 count=$4 out
	out=$(TAILBUS_DIR="$tmp/$bus/seg" "$prog" "$bus" "$count" 2>"$tmp/$name.$bus.err") ||
		{ echo "  $name exited $?: $out"; cat "$tmp/$name.$bus.err"; return 1; }
	[[ ! -s $tmp/$name.$bus.err ]] || { echo "  $name on a served bus:"; cat "$tmp/$name.$bus.err"; return 1; }
	expect_eq "$name attempted written dropped folded" "$out" "$count $count 0 0"
}

one_after_the_other() {
	local bus=seq
	start_collector $bus || return 1
	run_example $bus "$TB_C_PRODUCER" c_producer 20000 || return 1
	run_example $bus "$TB_CPP_PRODUCER" cpp_producer 30000 || return 1
	sleep 0.3
	stop_collector "$cpid" || return 1
	log_has $bus c_fill 20000 && log_has $bus cpp_fill 30000
}
check "the C and the C++ example record into tailbusd's log, every event" one_after_the_other

both_at_once() {
	local bus=both a b
	start_collector $bus || return 1
	run_example $bus "$TB_C_PRODUCER" c_producer 50000 >"$tmp/c.out" &
	a=$!
	run_example $bus "$TB_CPP_PRODUCER" cpp_producer 50000 >"$tmp/cpp.out" &
	b=$!
	wait $a || { cat "$tmp/c.out"; return 1; }
	wait $b || { cat "$tmp/cpp.out"; return 1; }
	sleep 0.3
	stop_collector "$cpid" || return 1
	log_has $bus c_fill 50000 && log_has $bus cpp_fill 50000
}
check "both examples at once, in two processes on one bus" both_at_once

# A bus that no collector serves: the examples record (the events wait in
# the ring) and warn, naming the bus; once tailbusd comes it takes them, and
# after it stops the warning says so
unserved() {
	local bus=typo out err
	mkdir -p "$tmp/$bus/seg" "$tmp/$bus/log"
	out=$(TAILBUS_DIR="$tmp/$bus/seg" "$TB_C_PRODUCER" $bus 1000 2>"$tmp/err") || { echo "  c_producer: $out"; return 1; }
	grep -q "^c_producer: warning: bus typo: no collector has this bus yet" "$tmp/err" ||
		{ echo "  c_producer said:"; cat "$tmp/err"; return 1; }
	out=$(TAILBUS_DIR="$tmp/$bus/seg" "$TB_CPP_PRODUCER" $bus 1000 2>"$tmp/err") || { echo "  cpp_producer: $out"; return 1; }
	grep -q "^cpp_producer: warning: bus typo: no collector has this bus yet" "$tmp/err" ||
		{ echo "  cpp_producer said:"; cat "$tmp/err"; return 1; }
	start_collector $bus || return 1
	sleep 0.3
	stop_collector "$cpid" || return 1
	log_has $bus c_fill 1000 && log_has $bus cpp_fill 1000 || return 1
	out=$(TAILBUS_DIR="$tmp/$bus/seg" "$TB_C_PRODUCER" $bus 1000 2>"$tmp/err") || { echo "  c_producer: $out"; return 1; }
	grep -q "^c_producer: warning: bus typo: the bus's collector has stopped" "$tmp/err" ||
		{ echo "  c_producer after tailbusd stopped said:"; cat "$tmp/err"; return 1; }
}
check "a bus no collector serves: the examples warn, and tailbusd later takes the events" unserved

# An example whose bus cannot be reached says so and exits 1
unreachable() {
	local out rc=0
	out=$(TAILBUS_DIR="$tmp/missing/dir" "$TB_CPP_PRODUCER" nobus 10 2>&1) || rc=$?
	[[ $rc -eq 1 && $out == "cpp_producer: cannot record into bus nobus: "* ]] ||
		{ echo "  exit $rc: $out"; return 1; }
}
check "the C++ example on a bus it cannot reach says why and exits 1" unreachable
summary examples_bus
