# shellcheck shell=bash
# bench/bus/summary.sh - the headline figures bench/bus/run appends to
# $TB_BENCH_SUMMARY for bench/run, one tab-separated line each: section
# figure value unit baseline baseline_value ratio target verdict.
# Sourced by bench/bus/run after figures.sh when TB_BENCH_SUMMARY is set,
# never run.
sline() { # section figure value unit baseline baseline_value target verdict
	local r
	r=$(awk -v a="$3" -v b="$6" 'BEGIN {
		if (a ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ && b ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ && b + 0 != 0)
			printf "%.4g", a / b; else print "n/a" }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$r" "$7" "$8" >>"$summary"
}
is_num() { [[ "$1" =~ ^-?[0-9.]+(e[-+]?[0-9]+)?$ ]]; }
below() { # value limit -> met|missed|n/a
	if is_num "$1" && is_num "$2"; then
		awk -v v="$1" -v l="$2" 'BEGIN { print (v < l) ? "met" : "missed" }'
	else echo n/a; fi
}
at_least() {
	if is_num "$1"; then awk -v v="$1" -v l="$2" 'BEGIN { print (v >= l) ? "met" : "missed" }'
	else echo n/a; fi
}
pc_of() { awk -F'\t' -v s="$1 call-empty" '$1 == "percall" && $2 == s && $3 > 0 { printf "%.4g", $7 / $3 }' "$work/span.tsv"; }
p9999_of() { awk -F'\t' -v s="$1 call-empty" '$1 == "percall" && $2 == s { v = $7 } END { print v == "" ? "n/a" : v }' "$work/span.tsv"; }
pc_span=$(pc_of span) pc_hdr=$(pc_of hdr_record) pc_store=$(pc_of store)
# the target (p99.99 within 5x of the median) can be judged only where
# the instrument resolves it: where a plain store's own ratio is under 5
pc_verdict=n/a
if is_num "$pc_span" && is_num "$pc_store" && awk -v f="$pc_store" 'BEGIN { exit !(f < 5) }'; then
	pc_verdict=$(below "$pc_span" 5.0001)
fi
hdr_ratio=$(awk -v a="$span_ns" -v b="$hdr_ns" 'BEGIN { print (b > 0) ? a / b : "n/a" }')
hdr_i_ratio=$(awk -v a="$span_i" -v b="$hdr_i" 'BEGIN { print (a ~ /^[0-9.]+$/ && b > 0) ? a / b : "n/a" }')
sline bus.producer "tb_span, given timestamps" "$span_ns" ns/event "tb_hist_record in-thread" "$hdr_ns" \
	"ratio < 1" "$(below "$hdr_ratio" 1)"
sline bus.producer "tb_span, given timestamps, against a plain store" "$span_ns" ns/event \
	"16-byte store, ring-sized array" "$ring_ns" n/a n/a
sline bus.producer "tb_span instructions" "$span_i" instructions/event "tb_hist_record in-thread" "$hdr_i" \
	"ratio < 1" "$(below "$hdr_i_ratio" 1)"
# issue 5 asks for at most 12 on the common path: tb_span's own, the
# benchmark's loop (the same loads, no call) subtracted
sline bus.producer "tb_span's own instructions (its loop subtracted)" "$own_i" instructions/event \
	"the loop alone (same loads, no call)" "$harness_i" "<= 12 (issue 5)" \
	"$(is_num "$own_i" && awk -v v="$own_i" 'BEGIN { print (v <= 12.05) ? "met" : "missed" }' || echo n/a)"
sline bus.producer "tb_span instructions with its loop, against a plain store" "$span_i" instructions/event \
	"16-byte store, L1 array, with its loop" "$store_i" n/a n/a
sline bus.producer "tb_span per call, p99.99 / median" "${pc_span:-n/a}" ratio \
	"a plain store per call, p99.99 / median (the instrument's floor)" "${pc_store:-n/a}" \
	"<= 5 (issue 5), where the floor is under 5" "$pc_verdict"
sline bus.producer "tb_span per call, p99.99" "$(p9999_of span)" ns \
	"a plain store per call, p99.99" "$(p9999_of store)" n/a n/a
sline bus.producer "tb_hist_record per call, p99.99 / median" "${pc_hdr:-n/a}" ratio n/a n/a n/a n/a
sline bus.clock "tb_now" "$now_ns" ns/call "clock_gettime(CLOCK_MONOTONIC)" "$cg_ns" n/a n/a
sline bus.collector "drain in process, one core" "$drain_rate" Mevents/s n/a n/a ">= 100" \
	"$(at_least "$drain_rate" 100)"
sline bus.cross-process "1 producer at full speed: written" "$g_wr" Mevents/s \
	"ceiling (memcpy-only SPSC), written" "$c_wr" n/a n/a
sline bus.cross-process "1 producer at full speed: written / the better of the two ceiling runs beside it, median of $flood_runs pairs (min $(num "$pr_m_min"), max $(num "$pr_m_max"))" \
	"$pr_m" ratio n/a n/a ">= 0.9 (issue 5)" "$(at_least "$pr_m" 0.9)"
sline bus.cross-process "the same, over the ceiling in tailbusd's mode only, median of pairs (min $(num "$pr_g_min"), max $(num "$pr_g_max"))" \
	"$pr_g" ratio n/a n/a n/a n/a
sline bus.cross-process "the same, tailbusd --evict-lines / ceiling --evict, median of pairs (min $(num "$pr_e_min"), max $(num "$pr_e_max"))" \
	"$pr_e" ratio n/a n/a n/a n/a
sline bus.cross-process "the same, each side's better mode of the run, median of pairs (min $(num "$pr_b_min"), max $(num "$pr_b_max"))" \
	"$pr_b" ratio n/a n/a n/a n/a
sline bus.cross-process "1 producer at full speed, fold lanes off (the ring alone): dropped" "$g_drop" "% of attempted" \
	"ceiling (memcpy-only SPSC), dropped" "$c_drop" n/a n/a
# issue 5's zero drops, for tailbusd as it runs by default: a SPAN that
# finds the ring full is folded (counted at 2 digits), not lost
sline bus.cross-process "1 producer at full speed, tailbusd as by default: lost (dropped), median of $flood_runs runs (max $(num "$f_drop_max"))" \
	"$f_drop" "% of attempted" "ceiling (memcpy-only SPSC), dropped" "$c_drop" "0 (or the ratio above)" \
	"$(awk -v d="$f_drop_max" 'BEGIN { print (d == 0) ? "met" : "missed" }')"
sline bus.cross-process "... of them folded into a lane at 2 digits, the ring full (median)" "$f_fold" "% of attempted" \
	n/a n/a n/a n/a
sline bus.cross-process "1 producer at full speed: written per second of the consumer's CPU" "$g_cpu" \
	Mevents/CPU-s "ceiling (memcpy-only SPSC)" "$c_cpu" n/a n/a
sline bus.cross-process "1 producer at full speed, tailbusd --evict-lines: attempted" "$e_att" Mevents/s \
	"tailbusd (lines left in its cache): attempted" "$g_att" n/a n/a
sline bus.cross-process "1 producer at full speed, tailbusd --evict-lines: written" "$e_wr" Mevents/s \
	"ceiling --evict, written" "$ce_wr" n/a n/a
for n in "${counts[@]}"; do
	sline bus.cross-process "max zero-drop rate, $n producer$([ "$n" -gt 1 ] && echo s)" \
		"$(awk -v r="${zero_drop[bus.$n]}" 'BEGIN { printf "%.4g", r / 1e6 }')" Mevents/s \
		"ceiling (memcpy-only SPSC), $n producer$([ "$n" -gt 1 ] && echo s)" \
		"$(awk -v r="${zero_drop[ceiling.$n]}" 'BEGIN { printf "%.4g", r / 1e6 }')" n/a n/a
done
while IFS=$'\t' read -r n d b _ c _; do
	sline bus.drain-threads "max zero-drop rate, $n producer$([ "$n" -gt 1 ] && echo s), $d drain thread$([ "$d" -gt 1 ] && echo s)" \
		"$(awk -v r="$b" 'BEGIN { printf "%.4g", r / 1e6 }')" Mevents/s \
		"ceiling, $d consumer$([ "$d" -gt 1 ] && echo s) side by side" \
		"$(awk -v r="$c" 'BEGIN { printf "%.4g", r / 1e6 }')" ">= 0.8" \
		"$(at_least "$(quotient "$b" "$c" 3)" 0.8)"
done <"$work/scaling.tsv"
sline bus.housekeeping "interval close, 64 metrics x 8 rings, at 1 s intervals" "$hk_pct" "% of a core" \
	n/a n/a "< 1" "$(below "$hk_pct" 1)"
