/* report_text.c - `tailbus load`'s report as text: what was run, the figures
 * of one rate (latency from the intended time, service time, late sends and
 * why, the p50 series) or the table of a sweep with its knee and tail.
 *
 * Latencies are scaled to ns, us, ms or s; a percentile with fewer than
 * TB_MIN_SAMPLES_BEYOND samples beyond it is starred. The rules' verdicts come
 * from tailbus/sweep.h; this file only words them.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "../cli.h"
#include "load.h"
#include "tailbus/analysis.h"

/* A latency in ns as text, in the largest unit that keeps it >= 1. */
static void print_figures(const char *label, const tb_summary *s)
{
	char v[6][32];
	tb_cli_fmt_ns(v[0], sizeof(v[0]), (double)s->pct[P50]);
	tb_cli_fmt_ns(v[1], sizeof(v[1]), (double)s->pct[P90]);
	tb_cli_fmt_ns(v[2], sizeof(v[2]), (double)s->pct[P99]);
	tb_cli_fmt_ns(v[3], sizeof(v[3]), (double)s->pct[P999]);
	tb_cli_fmt_ns(v[4], sizeof(v[4]), (double)s->pct[P9999]);
	tb_cli_fmt_ns(v[5], sizeof(v[5]), (double)s->max);
	printf("  %-22s p50 %s  p90 %s%s  p99 %s%s  p99.9 %s%s  p99.99 %s%s  max %s\n", label, v[0],
	       v[1], s->insufficient[P90] ? "*" : "", v[2], s->insufficient[P99] ? "*" : "", v[3],
	       s->insufficient[P999] ? "*" : "", v[4], s->insufficient[P9999] ? "*" : "", v[5]);
}

static void print_series(const struct result *res)
{
	if (res->nseries < 2)
		return;
	char per[32];
	snprintf(per, sizeof(per), "p50 per %" PRId64 " s:",
		 (int64_t)(res->series_ns / TB_NS_PER_SEC));
	printf("  %-22s ", res->series_ns == TB_NS_PER_SEC ? "p50 per second:" : per);
	for (size_t i = 0; i < res->nseries; i++) {
		char v[32];
		tb_cli_fmt_ns(v, sizeof(v), (double)res->series[i].p50);
		printf("%s%s", i ? ", " : "", v);
	}
	printf("\n");
	if (res->growing)
		printf("  NOT STEADY: p50 grows over the run: the engine serves fewer requests than\n"
		       "  are offered and its queue grows; these percentiles depend on the duration\n");
}

static void print_late(const struct result *res, const struct config *c, uint64_t count)
{
	char lag[32], thr[32], gap[32];
	tb_cli_fmt_ns(thr, sizeof(thr), (double)c->late_ns);
	tb_cli_fmt_ns(lag, sizeof(lag), (double)res->max_lag_ns);
	tb_cli_fmt_ns(gap, sizeof(gap), (double)res->max_gap_ns);
	printf("  late sends             %" PRIu64 " of %" PRIu64 " (more than %s after intended; "
	       "the latest %s)\n",
	       res->late, count, thr, lag);
	if (!res->late)
		return;
	printf("    held back            %" PRIu64 "%s\n", res->late_held,
	       !res->late_held ? ""
	       : c->closed     ? " (a closed loop waits for each response)"
			       : " (the queue to the engine was full: it cannot keep up)");
	printf("    generator busy       %" PRIu64 "%s\n", res->late_busy,
	       res->late_busy ? " (due while it sent or served others: more than one thread "
				"can schedule)"
			      : "");
	printf("    thread descheduled   %" PRIu64 " (it lost its core %.2f%% of the run, %" PRIu64
	       " times, the longest %s: the machine, not the load)\n",
	       res->late_descheduled,
	       res->run_ns > 0 ? 100.0 * (double)res->stolen_ns / (double)res->run_ns : 0.0,
	       res->gaps, gap);
}

static void print_run(const struct result *res, const struct config *c)
{
	uint64_t count = (uint64_t)res->open.total;
	printf("  offered %" PRIu64 "/s, achieved %.1f/s (sent %.1f/s)\n", res->rate, res->achieved,
	       res->send_rate);
	printf("  requests               %" PRIu64 " measured, %" PRIu64 " in warm-up (%s)\n", count,
	       res->warmup, res->metric_warmup);
	if (c->closed)
		print_figures("from send (closed):", &res->closed);
	print_figures(c->closed ? "from intended (truth):" : "from intended:", &res->open);
	print_figures("service (done-start):", &res->service);
	print_late(res, c, count);
	if (res->stalls)
		printf("  engine stalls          %" PRIu64 "\n", res->stalls);
	if (res->unsent || res->unserved)
		printf("  UNFINISHED: %" PRIu64 " requests never sent and %" PRIu64
		       " never served before the drain limit (--drain); their latency is missing\n",
		       res->unsent, res->unserved);
	print_series(res);
}

static void print_header(const struct config *c, size_t nruns)
{
	char svc[32], stall[32];
	tb_cli_fmt_ns(svc, sizeof(svc), (double)c->service_ns);
	printf("tailbus load: %s loop, %s arrivals, ", c->closed ? "closed" : "open",
	       c->poisson ? "Poisson" : "constant-rate");
	if (nruns > 1)
		printf("%" PRId64 "..%" PRId64 "/s in %zu steps", c->sweep_from, c->sweep_to, nruns);
	else
		printf("%" PRIu64 "/s", c->rate);
	printf(" for %.3f s (first %.3f s warm-up), seed %" PRIu64 "\n", (double)c->duration_ns / 1e9,
	       (double)c->warmup_ns / 1e9, c->seed);
	printf("engine: FIFO, %s per request", svc);
	if (c->stall_ns > 0) {
		tb_cli_fmt_ns(stall, sizeof(stall), (double)c->stall_ns);
		printf(", frozen %s every %.3f s", stall, (double)c->stall_every_ns / 1e9);
	}
	printf("; %s\n", c->engine_cpu < 0 ? "generator and engine share one thread"
					   : "engine on its own thread");
}

static void print_sweep(const struct result *res, size_t n, int knee, int tail,
			const struct config *c)
{
	printf("\nlatency from intended time, per offered rate (metrics '%s.r<rate>'):\n", c->metric);
	printf("%10s %11s %9s %10s %10s %10s %10s %7s %11s%s\n", "offered/s", "achieved/s", "count",
	       "p50", "p99", "p99.9", "max", "late", "lost core", c->closed ? "  p99 closed" : "");
	bool unfinished = false;
	for (size_t k = 0; k < n; k++) {
		unfinished |= res[k].unsent || res[k].unserved;
		char v[6][32];
		tb_cli_fmt_ns(v[4], sizeof(v[4]), (double)res[k].engine_max_gap_ns);
		tb_cli_fmt_ns(v[5], sizeof(v[5]), (double)res[k].closed.pct[P99]);
		tb_cli_fmt_ns(v[0], sizeof(v[0]), (double)res[k].open.pct[P50]);
		tb_cli_fmt_ns(v[1], sizeof(v[1]), (double)res[k].open.pct[P99]);
		tb_cli_fmt_ns(v[2], sizeof(v[2]), (double)res[k].open.pct[P999]);
		tb_cli_fmt_ns(v[3], sizeof(v[3]), (double)res[k].open.max);
		printf("%10" PRIu64 " %11.1f %9" PRId64 " %10s %9s%s %9s%s %10s %7" PRIu64 " %11s", res[k].rate,
		       res[k].achieved, res[k].open.total, v[0], v[1],
		       res[k].open.insufficient[P99] ? "*" : " ", v[2],
		       res[k].open.insufficient[P999] ? "*" : " ", v[3], res[k].late, v[4]);
		if (c->closed)
			printf(" %12s", v[5]);
		printf("%s\n", (int)k == knee ? "  <- knee" : "");
	}
	printf("(* fewer than %d samples beyond: too few to trust; lost core: the longest time the\n"
	       " engine's thread was not running, a stall the machine added)\n",
	       TB_MIN_SAMPLES_BEYOND);
	if (unfinished)
		printf("UNFINISHED: some rates left requests unsent or unserved at the drain limit "
		       "(--drain); --json has the counts\n");
	if (knee >= 0)
		printf("knee: %" PRIu64 "/s, the first rate whose p99 is more than %.0fx the lowest "
		       "rate's (by more than the machine's longest hiccup) or that achieves less than "
		       "%.0f%% of what it offers\n",
		       res[knee].rate, TB_SWEEP_KNEE_P99_RATIO, TB_SWEEP_KNEE_ACHIEVED * 100);
	else
		printf("knee: none in this range (no p99 above %.0fx the lowest rate's, every rate "
		       "achieved)\n",
		       TB_SWEEP_KNEE_P99_RATIO);
	if (tail == TB_TAIL_STALL)
		printf("periodic stall suspected: p99.9 is %.0fx p50 or more at each of the %d lowest "
		       "rates, where queueing cannot explain it, and longer than the engine's thread "
		       "ever lost its core\n",
		       TB_SWEEP_STALL_TAIL_RATIO, TB_SWEEP_STALL_LOW_RATES);
	else if (tail == TB_TAIL_MACHINE)
		printf("p99.9 is %.0fx p50 or more at the %d lowest rates, but no longer than the "
		       "engine's thread lost its core: the machine's hiccups, not a stall in the engine\n",
		       TB_SWEEP_STALL_TAIL_RATIO, TB_SWEEP_STALL_LOW_RATES);
}

/* The report as text: what was run, on what machine, into which bus, and
 * the figures of one rate or the table of a sweep. */
void load_report_text(const struct config *c, const struct result *res, size_t n, int knee,
		      int tail, const struct bus_state *b)
{
	print_header(c, n);
	tb_cli_env_line(stdout);
	if (b->off)
		printf("recording off (--record off): nothing sent to the bus, in-process figures "
		       "only\n");
	else
		printf("bus '%s': %s\n", c->bus,
		       b->error ? "unavailable, in-process figures only"
		       : b->dropped ? "EVENTS DROPPED, the log is incomplete"
				    : "every event recorded");
	if (n > 1) {
		print_sweep(res, n, knee, tail, c);
		return;
	}
	printf("\n%" PRIu64 "/s as metric '%s'%s\n", res->rate, res->metric,
	       c->closed ? " (and '.closed')" : "");
	print_run(res, c);
	printf("(* fewer than %d samples beyond this percentile: too few to trust)\n",
	       TB_MIN_SAMPLES_BEYOND);
}
