# shellcheck shell=bash
# bench/bus/measure_inproc.sh - bench/bus/run's in-process measurements:
# bench_span and bench_collector timed ($work/span.tsv, $work/coll.tsv), and
# their operations' instructions counted under callgrind (instr[OP], the
# drain thread's steps at an interval's end by function name, with
# the ring's capacity and where the drain's and the close's instructions go:
# drain_breakdown, close_breakdown).
# Sourced by bench/bus/run, never run; reads its settings (bin, work, runs,
# min_ms, span_n, drain_n, close_n).
# ---- timing ----
echo "bench_span: $runs runs per operation, each >= $min_ms ms ..." >&2
"$bin/bench_span" --tsv --runs "$runs" --min-ms "$min_ms" --percall >"$work/span.tsv"
echo "bench_collector: $runs runs ..." >&2
"$bin/bench_collector" --tsv --runs "$runs" --min-ms "$min_ms" >"$work/coll.tsv"

# ---- instructions ----
cg_total() { # name args... -> total instructions of that process
	local name=$1 out="$work/cg.$1"
	shift
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>"$out.log"
	awk '/^(summary|totals):/ { print $2; exit }' "$out"
}
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f", (b - a) / n }'; }

declare -A instr
span_ops=(store store_ring hdr_record span span_full span_harness)
capacity=$(sed -n 's/^# ring capacity \([0-9]*\) events.*/\1/p' "$work/span.tsv")
close_breakdown="(valgrind not found)"
drain_breakdown="(valgrind not found)"
if command -v valgrind >/dev/null; then
	for op in "${span_ops[@]}"; do
		echo "callgrind: $op x $span_n and x $((2 * span_n)) ..." >&2
		t1=$(cg_total "$op.1" "$bin/bench_span" --op "$op" --iters "$span_n")
		t2=$(cg_total "$op.2" "$bin/bench_span" --op "$op" --iters $((2 * span_n)))
		instr[$op]=$(per "$t1" "$t2" "$span_n")
	done
	echo "callgrind: drain x $drain_n and x $((2 * drain_n)) rings ..." >&2
	t1=$(cg_total drain.1 --toggle-collect=tb_collector_drain_all "$bin/bench_collector" --op drain --iters "$drain_n")
	t2=$(cg_total drain.2 --toggle-collect=tb_collector_drain_all "$bin/bench_collector" --op drain --iters $((2 * drain_n)))
	instr[drain]=$(per "$t1" "$t2" $((drain_n * (capacity - 1))))
	echo "callgrind: close x $close_n and x $((2 * close_n)) intervals ..." >&2
	t1=$(cg_total close.1 --toggle-collect=tb_collector_close_interval "$bin/bench_collector" --op close --iters "$close_n")
	t2=$(cg_total close.2 --toggle-collect=tb_collector_close_interval "$bin/bench_collector" --op close --iters $((2 * close_n)))
	instr[close]=$(per "$t1" "$t2" "$close_n")
	# the drain thread's own steps at an interval's end, each counted alone
	for fn in tb_drainer_switch tb_drainer_housekeep tb_drainer_serve_requests; do
		echo "callgrind: $fn, boundary x $close_n and x $((2 * close_n)) ..." >&2
		t1=$(cg_total "$fn.1" --toggle-collect="$fn" "$bin/bench_collector" --op boundary --iters "$close_n")
		t2=$(cg_total "$fn.2" --toggle-collect="$fn" "$bin/bench_collector" --op boundary --iters $((2 * close_n)))
		instr[$fn]=$(per "$t1" "$t2" "$close_n")
	done
	# where the instructions go: functions' inclusive (close) and own (drain) shares
	breakdown() { # file inclusive(yes|no) -> "fn share%, ..." for the heaviest functions
		callgrind_annotate --inclusive="$2" "$1" 2>/dev/null |
		awk '/^ *[0-9,]+ +\( *[0-9.]+%\) +[^ ]+:/ {
			match($0, /\( *[0-9.]+%\)/); pct = substr($0, RSTART + 1, RLENGTH - 2)
			gsub(/ /, "", pct); fn = $0
			sub(/^[^:]*:/, "", fn); sub(/ .*/, "", fn)
			if (fn ~ /^(main|\(below|__libc_start_main|0x[0-9a-f]+$|tb_collector_close_interval$|tb_collector_drain_all$)/) next
			sub(/^__memset.*/, "memset", fn)
			if (n++ < 10) printf "%s%s %s", (n > 1 ? ", " : ""), fn, pct
		}'
	}
	close_breakdown=$(breakdown "$work/cg.close.2" yes)
	drain_breakdown=$(breakdown "$work/cg.drain.2" no)
else
	echo "valgrind not found: no instruction counts" >&2
fi
