# shellcheck shell=bash
# bench/bus/results.sh - the results file bench/bus/run writes ($results:
# bench/bus/RESULTS.md, or the build's bus-RESULTS.md for --quick): the
# machine, the method, figures.sh's tables and the reading of its figures.
# Sourced by bench/bus/run after figures.sh, never run.

at_least_word() { awk -v v="$1" -v l="$2" 'BEGIN { print (v >= l) ? "meets" : "misses" }'; }
waited() { # pct -> "" or " (measured while waiting for a CPU N% of the time: other load)"
	awk -v w="$1" 'BEGIN { if (w >= 5) printf " (measured while waiting for a CPU %.0f%% of the time: other load)", w }'
}

commit=unknown
if head=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
	commit=$head
	git -C "$root" diff-index --quiet HEAD -- 2>/dev/null || commit="$commit (with uncommitted changes)"
fi
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
cpu_id=$(awk -F': ' '/^cpu family/ { f = $2 } /^model\t/ { m = $2 } END { printf "family %s model %s", f, m }' /proc/cpuinfo)
compiler=$(sed -n 's/^C compiler for the host machine: //p' "$build/meson-logs/meson-log.txt" | head -n 1)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)
writer=$(sed -n 's/^# close: .*writer \([^(]*\) (.*/\1/p' "$work/coll.tsv" | sed 's/ *$//')

cat >"$results" <<EOF
# Bus benchmark results

Written by \`bench/bus/run\` on $(date -u '+%Y-%m-%d %H:%M UTC'); run it again to refresh. Measurements, not
tests: docs/design.md, Performance targets, says what they are held to.

- Machine: kernel \`$(uname -r)\` ($(uname -m)), $(nproc) CPUs, $cpu ($cpu_id), clocksource $clocksource,
  segments on /dev/shm (4 KiB pages, no hugetlbfs). A shared VM: load average $load_start at the start,
  $load_end at the end; the CPU wait column is the share of each measurement's wall time the benchmark spent
  waiting for a CPU that another process had. Long-running CPU-bound processes of others: at the start
  ${hogs_start:-none}; at the end ${hogs_end:-none}.
- Compiler: ${compiler:-unknown}, buildtype=release, no LTO; built by meson (bench/bus/meson.build)
- Commit: $commit
- Timing: $runs runs per measurement after a warm-up, each >= $min_ms ms; median, min and max.
  bench_span times batches of 4096 events (the ring holds $capacity) and between batches, untimed, moves the
  ring's consumer index up to the producer's, so every timed tb_span takes the common path (no drops; the
  benchmark checks); the cost of an empty pair of clock reads is subtracted per batch.
- Instructions: callgrind, (total for 2N - total for N) / N: tb_span and baselines N = $span_n events; drain
  N = $drain_n rings of $((capacity - 1)) events, counted only inside tb_collector_drain_all; close N = $close_n
  intervals, counted only inside tb_collector_close_interval. Valgrind replaces the vDSO clock read with a
  system call whose kernel instructions it does not count, so rows that read the clock have none.
- Latencies recorded everywhere (bench_bus.h): 99% log-normal around 10 us (sigma 0.5), 1% log-uniform
  100 us .. 10 ms; histograms are the collector's layout, 1 ns .. 1 h at 3 digits.
- Collector in process (bench_collector.c): the real collector (tb_collector_open, log written through
  $writer), real producers (tb_attach) in the same process, pinned to CPU $collector_cpu. drain: one ring over 4
  metrics, filled to capacity - 1 untimed, then tb_collector_drain_all timed. drain, ring filled by the other
  CPU: the same, each fill done by a thread on CPU $producer_cpu and finished before the drain. close_interval:
  8 rings x 64 metrics (512 series), every ring filled and drained untimed ($((8 * (capacity - 1))) events per
  interval), then tb_collector_close_interval timed; the first close of each half of the series is shown apart.
- Cross-process: the real tailbusd, \`--cpu $collector_cpu\` (busy-polling), fresh segment per run; one flood
  process (bench/bus/flood.c) under \`taskset -c $producer_cpu\` calling tb_span over 4 metrics for $flood_s s, after
  tailbusd has followed its ring (flood waits for two collector heartbeats). "given timestamps" reads the
  clock once per 4096 events; "tb_now() per event" reads it for every event, as an engine timing each
  request would. Runs of each: $flood_runs; medians with min and max, and ratios taken pair by pair (below).
- Ceiling (bench/bus/ceiling.c): the same 16-byte events (SPAN-shaped, 4 metrics, one clock read per 4096)
  through a minimal SPSC ring of the bus's size ($capacity slots) in shared memory, producer process on CPU
  $producer_cpu, consumer process on CPU $collector_cpu that copies each event out and nothing else (no decode, no
  histogram); the ring's protocol is the bus's (each event published by its lap bit, no producer index
  written), the producer keeps a private limit and loads the consumer's index only when it reaches it, as
  tb_span does. Run as flood is, each ceiling run next to a tailbusd run in the same mode (with --evict
  beside --evict-lines), the two taking turns going first.
  "per second of its CPU" divides by the consumer's own on-CPU time (schedstat; tailbusd's is its drain threads'), which other load does not inflate.
- Zero-drop search: $(IFS=,; echo "${counts[*]}") producer processes (each its own ring) on CPU(s) $producer_cpus,
  the consumer on CPU $collector_cpu ($ncpu CPUs here$([ "$max_producers" -gt "$n_pcpus" ] && echo ": more producers than producer CPUs, so they take turns on them, spinning with sched_yield() between batches")).
  Each producer is paced at a fixed rate (batches of 64 events, spinning on the clock between them; a late batch
  is sent at once; a step sends rate x $step_s s events). A rate passes when a try of it drops nothing (tries: $tries)
  and the producers kept it (sent them within $step_s s / 0.8, a margin for a preemption near the end; "slow" when
  they could not: then the producers' CPU, not the consumer, is the limit).
  Doubling from $(mevents "$search_start") M events/s (all producers), then $bisections bisections. tailbusd: one fresh
  instance per producer count (--slots 64), producers wait for it to follow their rings before each step.
  \`bench/bus/run --producers N\` (or BUS_PRODUCERS, BUS_PRODUCER_CPUS, BUS_COLLECTOR_CPU) sets the counts for a
  larger machine.

$(cat "$work/table.md")

Cross-process runs (the producers' own counters; for tailbusd, "consumer recorded" and "consumer saw dropped"
are summed from its health sidecar, for the ceiling they are its consumer's copied count and the producer's
drops; they match the producers' written and dropped: $recorded_ok; "late" counts events that
reached the collector after their interval was written):

$(cat "$work/flood.md")

Pairs: each run's tailbusd written rate (M events/s) over that of the ceiling run beside it, in the same mode
(each pair's two runs take turns going first; "best / best" takes each side's better mode of the run; the last
column, the one issue 5's target is read from, is tailbusd as it runs by default over the better of the copy's two
modes: the most the copy moved through a ring in that pair, whichever way it did it). The
line round trip (bench/bus/linetrip.c, median of 7 x 20,000 trips, taken just before the run's pairs) is how
long a cache line written on one of the two CPUs takes to be read on the other and answered, at the time
(every line of a ring crosses between them once a pass, and its index line more often):

$(cat "$work/pairs.md")

Zero-drop search (highest aggregate rate at which a $step_s s step dropped nothing; "stopped by": drops, or
the producers' own pace, or the search's cap):

$(cat "$work/search.md")

Zero-drop search with drain threads (\`bench/bus/scaling\`, run here on this build): for 1, 2, 4, 8 and 13
producers, tailbusd with the drain threads they need (at most 4) against as many ceilings side by side (one
consumer each), for each N this machine has the CPUs for:

$(cat "$work/scaling.md")

Reading
- tb_span with given timestamps costs $(num "$span_ns") ns and $(num "$span_i") instructions per event; it $beats the in-thread
  HDR record ($(num "$hdr_ns") ns, $(num "$hdr_i") instructions) by $(quotient "$hdr_ns" "$span_ns" 1)x in time and ${instr_ratio}x in instructions. Against the
  plain 16-byte store ($(num "$store_ns") ns in L1, $(num "$ring_ns") ns over a ring-sized array; $(num "$store_i") instructions, loop included) the ring
  adds about $(difference "$span_ns" "$ring_ns") ns and $span_extra_i instructions. tb_span's own instructions, the loop around it
  ($(num "$harness_i"): the same loads with no call) subtracted, are $(num "$own_i"): the duration put in place and
  range-checked by one multiply, the metric's bits, the stop check, the two stores (the second carrying the
  lap bit that publishes the event) and the new slot pointer; all in the thread's own handle, with no shared
  index written and no load of a line the collector writes. The full-ring path, which folds the SPAN into a lane ($(num "$full_ns") ns, $(num "$full_i") instructions) is $drop_dearer the common path: it is an
  out-of-line call (tb__full, through the PLT of libtailbus-producer.so) that reads the collector's consumer
  index again and, the ring still being full, stores the slot's shared drop counter.
- Reading the bus clock dominates any event that reads it: tb_now() is $(num "$now_ns") ns (clock_gettime directly:
  $(num "$cg_ns") ns; the $clocksource vDSO read here), so tb_span(p, m, t0, tb_now(p)) is $(num "$span_now_ns") ns, of which tb_span is ~$(num "$span_ns").
- $percall
- Collector in process: $(num "$drain_rate") M events/s ($(num "$drain_ns") ns and $(num "${instr[drain]:-n/a}") instructions per event), which $drain_meets
  DESIGN's >= 100 M/s$(waited "$drain_wait"); this is the in-cache best case (the ring was just written by the same core). Where the
  instructions go (own share): $drain_breakdown.
  A ring written by the other CPU and finished before the drain: $(num "$xcore_rate") M events/s ($(num "$xcore_ns") ns/event),
  $xcore_says.
- Interval close at 64 metrics x 8 rings: $(num "$close_ms") ms per interval ($(num "${instr[close]:-n/a}") instructions), i.e. about
  ${close_pct}% of the collector's core at 1 s intervals$(waited "$close_wait"). Where the instructions go (inclusive, so nested
  functions overlap): $close_breakdown.
  $first_says
- Cross-process, one producer at full speed: the collector $keeps_up. With given timestamps flood attempts
  $(num "$g_att") M events/s (its on-CPU cost per attempt $(num "$g_ns") ns, against $(num "$span_ns") ns in process) and $(num "$g_wr") M/s get
  through (min $(num "$g_wr_min"), max $(num "$g_wr_max")); $(num "$g_drop")% are dropped. A producer doing nothing but tb_span outruns any one
  collector core: the collector needs ~$(num "$drain_ns") ns per event in cache, the producer ~$(num "$span_ns") ns. With tb_now() per
  event flood attempts $(num "$n_att") M/s ($(num "$n_ns") ns per attempt on CPU, against $(num "$span_now_ns") ns in process), $under the
  collector's in-process rate, yet $(num "$n_drop")% (min $(num "$n_drop_min"), max $(num "$n_drop_max")) are dropped: at these rates the ring holds only
  ~$ring_ms_now ms of events (~$ring_ms_given ms with given timestamps), so any pause of the drain loop longer than that -
  tailbusd waited for its CPU $td_w of the time in these runs, flood $fl_w - overflows it.
  Running at the same time, the producer's on-CPU cost per attempt $slower its in-process figure
  ($(num "$g_ns") vs $(num "$span_ns") ns, $(num "$n_ns") vs $(num "$span_now_ns") ns), consistent with the ring's index and event lines moving between the cores while both
  work on them ($xcore_aside).
- Against the ceiling: one producer at full speed gets $(num "$g_wr") M events/s through tailbusd (min $(num "$g_wr_min"), max $(num "$g_wr_max")) and $(num "$c_wr") M/s
  through the memcpy-only ring (min $(num "$c_wr_min"), max $(num "$c_wr_max"); $(num "$c_drop")% dropped). Run by run, tailbusd over the ceiling run
  beside it: median $(num "$pr_g") (min $(num "$pr_g_min"), max $(num "$pr_g_max")) over $flood_runs pairs in the same mode; with the lines
  read evicted on both sides $(num "$pr_e") (min $(num "$pr_e_min"), max $(num "$pr_e_max")), and each side's
  better mode $(num "$pr_b") (min $(num "$pr_b_min"), max $(num "$pr_b_max")). Against the most the copy moved in its pair, in either
  mode, tailbusd as it runs by default reaches $(num "$pr_m") (min $(num "$pr_m_min"), max $(num "$pr_m_max")), which $(at_least_word "$pr_m" 0.9) the 0.9 of
  issue 5. This, not the same-mode ratio, is the verdict, because in one mode alone the copy's producer is sometimes slowed (on this VM, when
  its consumer reads the line being written), which would flatter tailbusd. $pair_spread_says Per
  second of the consumer's own CPU $(num "$g_cpu") against $(num "$c_cpu") M events, a ratio of $(quotient "$g_cpu" "$c_cpu" 3) (the ceiling's
  consumer waited for its CPU $c_w of the time). Paced, the highest zero-drop rate: $zd_list.
  $zd_says
  $gap_says
- Evicting the lines read (tailbusd --evict-lines; ceiling --evict): a line the consumer has read stays in its
  cache until the producer writes there again, a ring later, and must then be taken back from the consumer's core.
  Flushed from every cache instead, it is written from memory. With it flood attempted $(num "$e_att") M events/s
  ($(num "$e_ns") ns an attempt on its CPU) against $(num "$g_att") ($(num "$g_ns") ns) without, a ratio of $(quotient "$e_att" "$g_att" 3), and tailbusd
  wrote $(num "$e_wr") M/s against $(num "$g_wr") ($(num "$e_drop")% dropped); the ceiling's producer attempted $(num "$ce_att") against $(num "$c_att")
  and $(num "$ce_wr") M/s against $(num "$c_wr") were copied out. It is not the default: what it saves depends on where the two
  cores are (on cores that share a cache it can only cost), and the flushes cost the drain itself.
- Housekeeping: the interval close at 64 metrics x 8 rings takes $(num "$close_cpu_ms") ms of the collector thread's CPU
  ($(num "$close_ms") ms of wall time), so at 1 s intervals $hk_pct% of a core; it $hk_meets the target of < 1%.
  The drain goes on between the metrics a close handles, so the longest the rings wait is one metric's
  share, about $(awk -v t="$close_ms" 'BEGIN { printf "%.3f", t / 64 }') ms here (the first close of a series half, one metric's share of
  its page faults, longer); at the single-producer zero-drop rate ($(num "$zd_bus1") M/s) the ring's $capacity events
  last $(awk -v c="$capacity" -v r="$zd_bus1" 'BEGIN { if (r > 0) printf "%.1f", c / (r * 1e3); else print "n/a" }') ms.
- Start-up: a producer that floods as soon as it attaches (no wait for tailbusd to follow its ring) lost
  $(num "$start_dropped") events, $(num "$start_drop")% of its attempts, in one run here, against $(num "$n_drop")% (median) for the same mode after the wait.
- Timings on this shared VM vary by tens of percent between runs and with other load (see CPU wait); the
  instruction counts do not, so quote instructions when comparing commits and ns against a budget.
EOF
