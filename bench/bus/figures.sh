# shellcheck shell=bash
# bench/bus/figures.sh - the figures of a bench/bus/run run, read from its
# $work/*.tsv: the tables (the main one printed and kept in $work/table.md;
# $work/flood.md, pairs.md, search.md) and the values and sentences that the
# reading in RESULTS.md and the summary quote.
# Sourced by bench/bus/run after the measurements, never run.
# ---- figures ----
span_field() { awk -F'\t' -v op="$1" -v col="$2" '$1 == op { print $col }' "$work/span.tsv"; }
coll_field() { awk -F'\t' -v op="$1" -v u="$2" -v col="$3" '$1 == op && $2 == u { print $col }' "$work/coll.tsv"; }
# per-run cross-process figures: mode column -> values, one a line
flood_col() { # mode expr(awk, over $3.. of flood.tsv)
	awk -F'\t' -v m="$1" '$1 == m { '"$2"' }' "$work/flood.tsv"
}
written_rate='printf "%.6f\n", $4 / ($6 / 1e9) / 1e6'
attempt_rate='printf "%.6f\n", $3 / ($6 / 1e9) / 1e6'
drop_pct='printf "%.6f\n", 100 * $5 / $3'
folded_pct='printf "%.6f\n", 100 * $15 / $3'
attempt_ns='printf "%.6f\n", $7 / $3'          # producer's on-CPU ns per attempt
td_wait='printf "%.6f\n", 100 * $10 / ($9 + $10)' # tailbusd's share of time waiting for its CPU
consumer_rate='printf "%.6f\n", $4 / ($9 / 1e9) / 1e6' # written per second of the consumer's CPU

row() { # name unit median min max xstore xhdr instr wait
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$(num "$3")" "$(num "$4")" \
		"$(num "$5")" "$6" "$7" "$(num "$8")" "$9"
}
span_row() { # label op unit [instr]
	local i=${4:-${instr[$2]:-n/a}}
	row "$1" "$3" "$(span_field "$2" 2)" "$(span_field "$2" 3)" "$(span_field "$2" 4)" \
		"$(num "$(span_field "$2" 5)")" "$(num "$(span_field "$2" 6)")" "$i" "$(span_field "$2" 9)%"
}
coll_row() { # label op unit instr
	row "$1" "$3" "$(coll_field "$2" "$3" 3)" "$(coll_field "$2" "$3" 4)" "$(coll_field "$2" "$3" 5)" \
		"" "" "$4" "$(coll_field "$2" "$3" 6)%"
}
flood_row() { # label mode unit expr
	local s1 s2 s3 w
	read -r s1 s2 s3 <<<"$(flood_col "$2" "$4" | median_min_max)"
	w=$(flood_col "$2" "$td_wait" | median_min_max | cut -d' ' -f1)
	row "$1" "$3" "$s1" "$s2" "$s3" "" "" "" "$(num "$w")% ($(case "$2" in ceiling*) echo consumer ;; *) echo tailbusd ;; esac))"
}
no_vdso="n/a (vDSO)"
table() {
	printf '| measurement | unit | median | min | max | x store | x HDR record | instructions | CPU wait |\n'
	printf '|---|---|---:|---:|---:|---:|---:|---:|---:|\n'
	span_row "(a) baseline: 16-byte store, L1 array" store ns/event
	span_row "16-byte store, ring-sized array" store_ring ns/event
	span_row "(b) baseline: tb_hist_record in-thread" hdr_record ns/event
	span_row "**tb_span**, given timestamps" span ns/event
	span_row "tb_span into a full ring (fold path)" span_full ns/event
	span_row "tb_span with done = tb_now()" span_now ns/event "$no_vdso"
	span_row "tb_now()" tb_now ns/call "$no_vdso"
	span_row "clock_gettime(CLOCK_MONOTONIC)" clock_gettime ns/call "$no_vdso"
	coll_row "collector drain, in process, same core" drain Mevents/s ""
	coll_row "" drain ns/event "${instr[drain]:-n/a}"
	coll_row "collector drain, ring filled by the other CPU" drain_xcore Mevents/s ""
	coll_row "" drain_xcore ns/event ""
	coll_row "close_interval, 64 metrics x 8 rings" close_interval ms/interval "${instr[close]:-n/a}"
	coll_row "close_interval, first close of each half" close_first ms/interval ""
	row "... of it on the drain thread: switching halves" instructions/interval "" "" "" "" "" "${instr[tb_drainer_switch]:-n/a}" ""
	row "drain thread's housekeeping, 16 slots" instructions/call "" "" "" "" "" "${instr[tb_drainer_housekeep]:-n/a}" ""
	row "drain thread's look at every slot (after a rebalance)" instructions/call "" "" "" "" "" "${instr[tb_drainer_serve_requests]:-n/a}" ""
	coll_row "close_interval: page faults, later closes" close_interval faults/interval ""
	coll_row "close_interval: page faults, first close of each half" close_first faults/interval ""
	flood_row "cross-process, given timestamps: attempted" given Mevents/s "$attempt_rate"
	flood_row "... written (achieved)" given Mevents/s "$written_rate"
	flood_row "... dropped" given "% of attempted" "$drop_pct"
	flood_row "cross-process, tb_now() per event: attempted" now Mevents/s "$attempt_rate"
	flood_row "... written (achieved)" now Mevents/s "$written_rate"
	flood_row "... dropped" now "% of attempted" "$drop_pct"
	flood_row "ceiling (memcpy-only SPSC), full speed: attempted" ceiling Mevents/s "$attempt_rate"
	flood_row "... written (copied out)" ceiling Mevents/s "$written_rate"
	flood_row "... dropped" ceiling "% of attempted" "$drop_pct"
	flood_row "tailbusd as by default (fold lanes), given timestamps: attempted" folded Mevents/s "$attempt_rate"
	flood_row "... written into the ring" folded Mevents/s "$written_rate"
	flood_row "... folded into a lane (the ring full)" folded "% of attempted" "$folded_pct"
	flood_row "... dropped (lost)" folded "% of attempted" "$drop_pct"
	flood_row "tailbusd --evict-lines, given timestamps: attempted" evict Mevents/s "$attempt_rate"
	flood_row "... written (achieved)" evict Mevents/s "$written_rate"
	flood_row "... dropped" evict "% of attempted" "$drop_pct"
	flood_row "ceiling --evict (lines read flushed): attempted" ceiling_evict Mevents/s "$attempt_rate"
	flood_row "... written (copied out)" ceiling_evict Mevents/s "$written_rate"
	flood_row "tailbusd, given timestamps: written per second of its CPU" given "Mevents/CPU-s" "$consumer_rate"
	flood_row "ceiling: copied per second of its consumer's CPU" ceiling "Mevents/CPU-s" "$consumer_rate"
}
table >"$work/table.md"
cat "$work/table.md"

flood_table() {
	printf '| mode | run | attempted | written | dropped | dropped %% | written Mevents/s | producer on-CPU ns/attempt | consumer Mevents/CPU-s | producer / consumer CPU wait | consumer recorded | consumer saw dropped | late |\n'
	printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
	awk -F'\t' '{
		printf "| %s | %s | %d | %d | %d | %.2f | %.1f | %.2f | %.1f | %.0f%% / %.0f%% | %d | %d | %d |\n",
			$1 == "given" ? "given timestamps" : $1 == "now" ? "tb_now() per event" : \
			$1 == "ceiling" ? "ceiling (memcpy SPSC)" : $1 == "evict" ? "given, tailbusd --evict-lines" : \
			$1 == "ceiling_evict" ? "ceiling --evict" : "tb_now(), no wait for follow",
			$2, $3, $4, $5, 100 * $5 / $3, $4 / ($6 / 1e9) / 1e6, $7 / $3, $4 / ($9 / 1e9) / 1e6,
			100 * $8 / ($7 + $8), 100 * $10 / ($9 + $10), $11, $12, $13 }' "$work/flood.tsv"
}
flood_table >"$work/flood.md"

# ---- figures the reading quotes ----
med() { span_field "$1" 2; }
span_ns=$(med span) store_ns=$(med store) ring_ns=$(med store_ring) hdr_ns=$(med hdr_record)
full_ns=$(med span_full) now_ns=$(med tb_now) cg_ns=$(med clock_gettime) span_now_ns=$(med span_now)
span_i=${instr[span]:-n/a} store_i=${instr[store]:-n/a} hdr_i=${instr[hdr_record]:-n/a}
full_i=${instr[span_full]:-n/a} harness_i=${instr[span_harness]:-n/a}
# tb_span's own: the benchmark's loop around it (its loads and counter) subtracted
own_i=n/a
[ "$span_i" != n/a ] && [ "$harness_i" != n/a ] && own_i=$(awk -v a="$span_i" -v b="$harness_i" 'BEGIN { printf "%.1f", a - b }')
drain_rate=$(coll_field drain Mevents/s 3) drain_ns=$(coll_field drain ns/event 3)
xcore_rate=$(coll_field drain_xcore Mevents/s 3) xcore_ns=$(coll_field drain_xcore ns/event 3)
close_ms=$(coll_field close_interval ms/interval 3) first_ms=$(coll_field close_first ms/interval 5)
close_pf=$(coll_field close_interval faults/interval 3) first_pf=$(coll_field close_first faults/interval 5)
read -r g_att _ _ <<<"$(flood_col given "$attempt_rate" | median_min_max)"
read -r g_wr g_wr_min g_wr_max <<<"$(flood_col given "$written_rate" | median_min_max)"
read -r g_drop g_drop_min g_drop_max <<<"$(flood_col given "$drop_pct" | median_min_max)"
read -r g_ns _ _ <<<"$(flood_col given "$attempt_ns" | median_min_max)"
read -r n_att _ _ <<<"$(flood_col now "$attempt_rate" | median_min_max)"
read -r n_wr n_wr_min n_wr_max <<<"$(flood_col now "$written_rate" | median_min_max)"
read -r n_drop n_drop_min n_drop_max <<<"$(flood_col now "$drop_pct" | median_min_max)"
read -r n_ns _ _ <<<"$(flood_col now "$attempt_ns" | median_min_max)"
read -r c_att _ _ <<<"$(flood_col ceiling "$attempt_rate" | median_min_max)"
read -r c_wr c_wr_min c_wr_max <<<"$(flood_col ceiling "$written_rate" | median_min_max)"
read -r c_drop c_drop_min c_drop_max <<<"$(flood_col ceiling "$drop_pct" | median_min_max)"
read -r c_cpu _ _ <<<"$(flood_col ceiling "$consumer_rate" | median_min_max)"
read -r g_cpu _ _ <<<"$(flood_col given "$consumer_rate" | median_min_max)"
c_w=$(flood_col ceiling "$td_wait" | sort -g | awk '{ v[NR] = $1 } END { printf "%.0f%% .. %.0f%%", v[1], v[NR] }')
read -r e_att _ _ <<<"$(flood_col evict "$attempt_rate" | median_min_max)"
read -r e_wr _ _ <<<"$(flood_col evict "$written_rate" | median_min_max)"
read -r e_drop _ _ <<<"$(flood_col evict "$drop_pct" | median_min_max)"
read -r e_ns _ _ <<<"$(flood_col evict "$attempt_ns" | median_min_max)"
read -r ce_att _ _ <<<"$(flood_col ceiling_evict "$attempt_rate" | median_min_max)"
read -r f_drop _ f_drop_max <<<"$(flood_col folded "$drop_pct" | median_min_max)"
read -r f_fold _ _ <<<"$(flood_col folded "$folded_pct" | median_min_max)"
read -r ce_wr ce_wr_min ce_wr_max <<<"$(flood_col ceiling_evict "$written_rate" | median_min_max)"
# Paired, per run: the line round trip, then the written rates (M events/s) of
# tailbusd, the ceiling, tailbusd --evict-lines and ceiling --evict, the ceiling
# runs being the ones next to tailbusd's; one line a run.
awk -F'\t' 'FNR == NR { trip[$1] = $2; next } { r[$1, $2] = $4 / ($6 / 1e9) / 1e6; runs[$2] = 1 }
	END { for (k = 1; k in runs; k++)
		printf "%d\t%s\t%.6f\t%.6f\t%.6f\t%.6f\n", k, trip[k], r["given", k], r["ceiling", k],
			r["evict", k], r["ceiling_evict", k] }' "$work/trip.tsv" "$work/flood.tsv" >"$work/pairs.tsv"
# ratio of tailbusd over the ceiling beside it: default modes, evicting modes,
# each side's better mode of the run, or tailbusd as it runs by default over
# the copy's better mode (the most the copy moved in that pair: issue 5's
# figure; n/a unless both copy runs moved events) -> one ratio a line
pair_ratios() { # default|evict|best|machine
	awk -F'\t' -v m="$1" 'function mx(a, b) { return a > b ? a : b }
		{ x = m == "default" || m == "machine" ? $3 : m == "evict" ? $5 : mx($3, $5)
		  y = m == "default" ? $4 : m == "evict" ? $6 : mx($4, $6)
		  if (m == "machine" && ($4 <= 0 || $6 <= 0)) y = 0
		  if (y > 0) printf "%.6f\n", x / y; else print "n/a" }' "$work/pairs.tsv"
}
read -r pr_g pr_g_min pr_g_max <<<"$(pair_ratios default | awk '$1 != "n/a"' | median_min_max)"
read -r pr_e pr_e_min pr_e_max <<<"$(pair_ratios evict | awk '$1 != "n/a"' | median_min_max)"
read -r pr_b pr_b_min pr_b_max <<<"$(pair_ratios best | awk '$1 != "n/a"' | median_min_max)"
read -r pr_m pr_m_min pr_m_max <<<"$(pair_ratios machine | awk '$1 != "n/a"' | median_min_max)"
pairs_table() {
	printf '| run | line round trip, ns | tailbusd | ceiling | ratio | tailbusd --evict-lines | ceiling --evict | ratio | best / best | tailbusd / the better ceiling |\n'
	printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
	paste "$work/pairs.tsv" <(pair_ratios default) <(pair_ratios evict) <(pair_ratios best) <(pair_ratios machine) |
		awk -F'\t' 'function q(x) { return x == "n/a" ? x : sprintf("%.2f", x) }
			{ printf "| %d | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %s | %s | %s |\n",
				$1, $2, $3, $4, q($7), $5, $6, q($8), q($9), q($10) }'
}
pairs_table >"$work/pairs.md"
# how far the ceiling itself moved between runs: the two vCPUs' placement on the host
if awk -v a="$c_wr_min" -v b="$c_wr_max" 'BEGIN { exit !(b > 1.3 * a) }'; then
	pair_spread_says="The ceiling itself moved from $(num "$c_wr_min") to $(num "$c_wr_max") M/s between runs of one
  binary: how fast lines move between these two vCPUs depends on where the host has put them, and that changes
  from minute to minute (runs seconds apart agree far better), so only the pairs are compared, never medians of
  runs minutes apart."
else
	pair_spread_says="The ceiling stayed within $(num "$c_wr_min") .. $(num "$c_wr_max") M/s between runs."
fi
if awk -v g="$pr_g_max" -v e="$pr_e_max" 'BEGIN { exit !(g > 1.05 || e > 1.05) }'; then
	pair_spread_says="$pair_spread_says Where tailbusd passes the copy, the copy's consumer, cheaper per event, caught up with
  its producer more often and read the line being written, which slows a producer (ceiling.c's header): the
  copy at tailbusd's cadence is then not the most this machine moves, and the pair says so rather than hiding it."
fi

# zero-drop search: one row per producer count
search_table() {
	printf '| producers | producer CPUs | tailbusd: max zero-drop rate, all producers | stopped by | ceiling: max zero-drop rate | stopped by | tailbusd / ceiling | tailbusd / consumer CPU wait (median step) | tailbusd steps: M events/s per producer, result |\n'
	printf '|---:|---|---:|---|---:|---|---:|---:|---|\n'
	local n
	for n in "${counts[@]}"; do
		local b=${zero_drop[bus.$n]} c=${zero_drop[ceiling.$n]} steps wb wc
		steps=$(awk -F'\t' -v n="$n" '$1 == "bus" && $2 == n { printf "%s%.3g %s", (k++ ? ", " : ""), $3 / 1e6, $12 }' "$work/search.tsv")
		wb=$(awk -F'\t' -v n="$n" '$1 == "bus" && $2 == n && $10 + $11 > 0 { print 100 * $11 / ($10 + $11) }' "$work/search.tsv" | median_min_max | cut -d' ' -f1)
		wc=$(awk -F'\t' -v n="$n" '$1 == "ceiling" && $2 == n && $10 + $11 > 0 { print 100 * $11 / ($10 + $11) }' "$work/search.tsv" | median_min_max | cut -d' ' -f1)
		printf '| %s | %s%s | %s Mevents/s | %s | %s Mevents/s | %s | %s | %s%% / %s%% | %s |\n' "$n" "$producer_cpus" \
			"$([ "$n" -gt "$n_pcpus" ] && echo " (shared, --yield)")" \
			"$(mevents "$b")" "${zero_bound[bus.$n]}" \
			"$(mevents "$c")" "${zero_bound[ceiling.$n]}" \
			"$(quotient "$b" "$c" 3)" "$(num "${wb:-0}")" "$(num "${wc:-0}")" "$steps"
	done
}
search_table >"$work/search.md"
zd_bus1=$(awk -v r="${zero_drop[bus.1]}" 'BEGIN { print r / 1e6 }')
zd_ceil1=$(awk -v r="${zero_drop[ceiling.1]}" 'BEGIN { print r / 1e6 }')
zd_ratio1=$(quotient "${zero_drop[bus.1]}" "${zero_drop[ceiling.1]}" 3)
step_wait() { # kind N -> median over its steps of the consumer's CPU wait, %
	awk -F'\t' -v k="$1" -v n="$2" '$1 == k && $2 == n && $10 + $11 > 0 { print 100 * $11 / ($10 + $11) }' \
		"$work/search.tsv" | median_min_max | cut -d' ' -f1
}
zd_ring_ms=$(awk -v c="$capacity" -v r="$zd_bus1" 'BEGIN { if (r > 0) printf "%.1f", (c - 1) / (r * 1e3); else print "n/a" }')
zd_agree=$(for n in "${counts[@]}"; do quotient "${zero_drop[bus.$n]}" "${zero_drop[ceiling.$n]}" 3; done |
	awk '{ if ($1 == "n/a" || $1 < 0.8 || $1 > 1.25) bad++ } END { print bad ? "no" : "yes" }')
zd_says="At these rates the ring holds $zd_ring_ms ms of events (one producer), so a consumer kept off its CPU
  for longer drops, whatever it does per event; in the search's steps tailbusd waited for its CPU $(num "$(step_wait bus 1)")% of the
  time and the ceiling's consumer $(num "$(step_wait ceiling 1)")% (one producer, median step)."
if [ "$zd_agree" = yes ]; then
	zd_says="$zd_says Where tailbusd's and the ceiling's zero-drop
  rates agree, as here, they measure how long this shared machine keeps a consumer off its CPU, not the
  consumer; the per-CPU-second figures above measure the consumers."
fi
zd_list=$(for n in "${counts[@]}"; do
	printf '%s producer%s %s M/s (ceiling %s M/s, %s)\n' "$n" "$([ "$n" -gt 1 ] && echo s)" \
		"$(mevents "${zero_drop[bus.$n]}")" \
		"$(mevents "${zero_drop[ceiling.$n]}")" \
		"$(quotient "${zero_drop[bus.$n]}" "${zero_drop[ceiling.$n]}" 3)"
done | paste -sd';' - | sed 's/;/; /g')
td_w=$(
	{ flood_col given "$td_wait"; flood_col now "$td_wait"; } | sort -g |
	awk '{ v[NR] = $1 } END { printf "%.0f%% .. %.0f%%", v[1], v[NR] }'
)
fl_w=$(awk -F'\t' '$1 == "given" || $1 == "now" { print 100 * $8 / ($7 + $8) }' "$work/flood.tsv" | sort -g |
	awk '{ v[NR] = $1 } END { printf "%.0f%% .. %.0f%%", v[1], v[NR] }')
start_drop=$(flood_col start "$drop_pct" | head -n 1)
start_dropped=$(awk -F'\t' '$1 == "start" { print $5 }' "$work/flood.tsv")
ring_ms_given=$(awk -v c="$capacity" -v r="$g_att" 'BEGIN { printf "%.2f", (c - 1) / (r * 1e3) }')
ring_ms_now=$(awk -v c="$capacity" -v r="$n_att" 'BEGIN { printf "%.1f", (c - 1) / (r * 1e3) }')
tsc_step=$(sed -n 's/^# tsc_step: [0-9]* ticks, \([0-9.]*\) ns/\1/p' "$work/span.tsv")
recorded_ok=$(awk -F'\t' '$4 + $15 != $11 || $5 != $12 { bad++ } END { print bad ? "no" : "yes" }' "$work/flood.tsv")

beats=$(awk -v s="$span_ns" -v h="$hdr_ns" 'BEGIN { print (s < h) ? "beats" : "does not beat" }')
instr_ratio="n/a"
[ "$span_i" != "n/a" ] && instr_ratio=$(quotient "$hdr_i" "$span_i" 1)
span_extra_i="n/a"
[ "$span_i" != "n/a" ] && span_extra_i=$(awk -v a="$span_i" -v b="$store_i" 'BEGIN { printf "%.0f", a - b }')
drain_wait=$(coll_field drain Mevents/s 6)
close_wait=$(coll_field close_interval ms/interval 6)
drain_meets=$(awk -v r="$drain_rate" 'BEGIN { print (r >= 100) ? "meets" : "misses" }')
close_pct=$(awk -v m="$close_ms" 'BEGIN { printf "%.1f", m / 10 }')
close_cpu_ms=$(coll_field close_interval cpu_ms/interval 3)
hk_pct=$(awk -v m="$close_cpu_ms" 'BEGIN { printf "%.2f", m / 10 }') # ms per 1000 ms, in %
hk_meets=$(awk -v p="$hk_pct" 'BEGIN { print (p < 1) ? "meets" : "misses" }')
ceil_ns=$(awk -v r="$c_cpu" 'BEGIN { if (r > 0) printf "%.2f", 1000 / r; else print "n/a" }')
bus_ns=$(awk -v r="$g_cpu" 'BEGIN { if (r > 0) printf "%.2f", 1000 / r; else print "n/a" }')
xcore_ev_ns=$(awk -v r="$xcore_rate" 'BEGIN { if (r > 0) printf "%.2f", 1000 / r; else print "n/a" }')
if awk -v b="$bus_ns" -v c="$ceil_ns" 'BEGIN { exit !(b > c) }'; then
	gap_extra="the collector's decoding and recording add $(difference "$bus_ns" "$ceil_ns") ns per event on top"
else
	gap_extra="in this run tailbusd even used less CPU per event than the copy, so the two differ by less than this machine's noise"
fi
if awk -v c="$ceil_ns" -v x="$xcore_ev_ns" 'BEGIN { exit !(c > x) }'; then
	gap_says="Where the gap is: per second of its own CPU the memcpy-only consumer gets $(num "$c_cpu") M events ($ceil_ns ns each),
  tailbusd $(num "$g_cpu") M ($bus_ns ns each). The copy alone, from a ring the producer is writing at the same time,
  costs more than the whole collector does on a finished ring written by the other CPU ($xcore_ev_ns ns): most of the
  per-event cost is the ring's index and event lines moving between the cores while both sides work on them, which
  no consumer-side work removes; $gap_extra.
  The wall-clock rates are lower than these by the CPU time other load took from the consumers."
else
	gap_says="Where the gap is: per second of its own CPU the memcpy-only consumer gets $(num "$c_cpu") M events ($ceil_ns ns each),
  tailbusd $(num "$g_cpu") M ($bus_ns ns each). The copy alone costs less than the whole collector on a finished ring
  written by the other CPU ($xcore_ev_ns ns): the collector's own work per event (decode, validate, record;
  $(difference "$bus_ns" "$ceil_ns") ns more than the copy) is the gap."
fi
drop_dearer=$(awk -v f="$full_ns" -v s="$span_ns" 'BEGIN { print (f > s) ? "dearer than" : "no dearer than" }')
under=$(awk -v a="$n_att" -v d="$drain_rate" 'BEGIN { print (a < d) ? "under" : "not under" }')
slower=$(awk -v g="$g_ns" -v s="$span_ns" -v n="$n_ns" -v t="$span_now_ns" 'BEGIN {
	print (g > 1.3 * s || n > 1.3 * t) ? "rises above" : "stays near" }')
xcore_cheap=$(awk -v x="$xcore_ns" -v d="$drain_ns" 'BEGIN { print (x <= 1.25 * d) ? "yes" : "no" }')
if [ "$xcore_cheap" = yes ]; then
	xcore_says="so moving finished event lines between these two vCPUs costs little by itself"
	xcore_aside="the drain of a finished ring from the other CPU, above, is nearly as fast as in cache"
else
	xcore_says="so moving finished event lines between these two vCPUs costs about $(difference "$xcore_ns" "$drain_ns") ns per event"
	xcore_aside="the drain of a finished ring from the other CPU, above, is slower than in cache too"
fi
if awk -v f="$first_ms" -v c="$close_ms" 'BEGIN { exit !(f > 2 * c) }'; then
	first_says="The first close of each half of the series took up to $(num "$first_ms") ms and $(num "$first_pf") page faults, against
  $(num "$close_ms") ms and $(num "$close_pf") faults later: moving a series into the merge reads its counts from its
  smallest to its largest value (writing only the lines that hold counts), and with a tail out to 10 ms most of
  that range was never recorded into, so the first close faults in pages that recording never touched (on this VM
  a read fault allocates and zeroes a page too: pvm_no_zero_page=1), about 7 per series; the drain loop stops
  meanwhile. It happens once per half of a new series, not per interval."
else
	first_says="The first close of each half of the series ($(num "$first_ms") ms at most) does not stand out from the later ones."
fi
keeps_up=$(awk -v d="$g_drop_max" -v e="$n_drop_max" 'BEGIN { print (d == 0 && e == 0) ? "keeps up" : "does not keep up" }')

percall_table="$(awk -F'\t' 'BEGIN { print "| series | p50 | p90 | p99 | p99.9 | p99.99 | max |"; print "|---|---:|---:|---:|---:|---:|---:|" }
	$1 == "percall" && $2 != "series" { printf "| %s | %s | %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6, $7, $8 }' "$work/span.tsv")"
if awk -v s="$tsc_step" 'BEGIN { exit !(s > 1.0) }'; then
	percall="Per-call distribution (ns; each operation warmed up over two passes of the ring first, then single
  calls between lfence;rdtsc;lfence and rdtscp;lfence, interleaved with empty pairs; 'call-empty' subtracts
  the median empty pair). The TSC on this VM advances in steps of ${tsc_step} ns and an empty pair reads
  20-30 ns, so a median is one step and a ratio to it says little: compare each series's p99.99 with the
  plain store's, which is the instrument's own tail:

$percall_table"
else
	percall="Per-call distribution (ns; each operation warmed up over two passes of the ring first, then single
  calls between lfence;rdtsc;lfence and rdtscp;lfence, interleaved with empty pairs; 'call-empty' subtracts
  the median empty pair, so it is only meaningful well above the pair's spread):

$percall_table"
fi
