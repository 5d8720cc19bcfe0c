/* load.c - `tailbus load`: an open-loop load generator and a reference FIFO
 * engine, recording every request's latency through the bus (load.h says
 * how, and which file does what).
 *
 * This file is the verb: it parses the options, attaches to the bus, runs
 * each rate, has the sweep's rules (tailbus/sweep.h) read the runs, reports,
 * and turns what went wrong into the exit status.
 *
 * Invariant: exit 0 only when every event reached the bus and every request
 * was sent and served; 1 when figures were printed but some are missing
 * (bus unavailable, drops, unfinished runs); 2 for bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "load.h"

/* A sweep's rates as tailbus/sweep.h reads them. */
static void sweep_points(const struct result *res, size_t n, tb_sweep_point *pts)
{
	for (size_t k = 0; k < n; k++)
		pts[k] = (tb_sweep_point){.rate = res[k].rate,
					  .achieved = res[k].achieved,
					  .count = (int64_t)res[k].open.total,
					  .p50 = res[k].open.pct[P50],
					  .p99 = res[k].open.pct[P99],
					  .p999 = res[k].open.pct[P999],
					  .machine_gap_ns = res[k].engine_max_gap_ns};
}

/* The rates to run: --rate alone, or the sweep's (tb_sweep_rates). */
static void sweep_rates(const struct config *c, uint64_t *rates, size_t *n)
{
	if (!c->sweep_steps) {
		rates[0] = c->rate;
		*n = 1;
		return;
	}
	*n = (size_t)c->sweep_steps;
	tb_sweep_rates((uint64_t)c->sweep_from, (uint64_t)c->sweep_to, *n, rates);
}

/* The rules' verdicts on the runs, then the plot and the report. */
static void report(const struct config *c, const struct result *res, size_t n,
		   const struct bus_state *b)
{
	tb_sweep_point pts[SWEEP_STEPS_MAX];
	sweep_points(res, n, pts);
	int rule = TB_KNEE_NONE;
	int knee = n > 1 ? tb_sweep_knee(pts, n, &rule) : -1;
	int tail = n > 1 ? tb_sweep_tail(pts, n, knee) : TB_TAIL_NORMAL;
	if (c->plot_dir && n > 1 && load_plot_sweep(c, res, n, knee, rule) < 0)
		tb_cli_error(VERB, "cannot write the plot in %s", c->plot_dir);
	if (c->json) {
		load_report_json(res, n, c, knee, tail, b);
		return;
	}
	load_report_text(c, res, n, knee, tail, b);
}

/* Roundup to a power of two: ck rings need one (and hold one less). */
static uint32_t ring_size_for(uint32_t queue)
{
	uint32_t n = QUEUE_MIN;
	while (n < queue + 1 && n < QUEUE_MAX)
		n <<= 1;
	return n;
}

/* Is `cpu` one this process may run on? Checked before anything is pinned. */
static bool cpu_allowed(int cpu)
{
	cpu_set_t set;
	return cpu < 0 || (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_ISSET(cpu, &set));
}

int tb_cmd_load(int argc, char **argv)
{
	struct config c = {.metric = DEFAULT_METRIC, .seed = 1, .late_ns = LATE_NS_DEFAULT,
			   .queue = QUEUE_DEFAULT, .cpu = -1, .engine_cpu = -1, .record = true};
	int rc = load_parse(argc, argv, &c);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	/* tb_attach has no directory argument: it searches $TAILBUS_DIR first,
	 * so --dir is that variable for this process (and its engine thread) */
	if (c.dir && setenv("TAILBUS_DIR", c.dir, 1) < 0) {
		tb_cli_error(VERB, "cannot use --dir '%s': %s", c.dir, strerror(errno));
		return TB_EXIT_USAGE;
	}
	c.queue = ring_size_for(c.queue);
	int bad_cpu = !cpu_allowed(c.cpu) ? c.cpu : !cpu_allowed(c.engine_cpu) ? c.engine_cpu : -1;
	if (bad_cpu >= 0 || (rc = load_pin_to(c.cpu)) < 0) {
		tb_cli_error(VERB, "cannot run on CPU %d: %s", bad_cpu >= 0 ? bad_cpu : c.cpu,
			     bad_cpu >= 0 ? "not among this process's CPUs" : strerror(-rc));
		return TB_EXIT_USAGE;
	}
	uint64_t rates[SWEEP_STEPS_MAX];
	size_t n;
	sweep_rates(&c, rates, &n);
	struct bus_state b = {.off = !c.record};
	/* with --record off no handle at all: the loop's clock reads take NULL */
	tb_producer *p = c.record ? load_attach_bus(&c, &b) : NULL;
	struct result *res = calloc(n, sizeof(*res));
	if ((c.record && !p) || !res) {
		tb_cli_error(VERB, "out of memory");
		free(res);
		tb_detach(p);
		return TB_EXIT_INPUT;
	}
	uint64_t engine_dropped = 0;
	rc = load_run_all(&c, p, res, rates, n, &engine_dropped);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot run the engine thread on CPU %d: %s", c.engine_cpu,
			     strerror(-rc));
	} else {
		if (p) {
			tb_producer_stats st;
			tb_producer_stats_get(p, &st);
			b.dropped = b.error ? 0 : st.dropped + engine_dropped;
		}
		report(&c, res, n, &b);
	}
	bool unfinished = false;
	for (size_t k = 0; k < n; k++) {
		unfinished |= res[k].unsent || res[k].unserved;
		free(res[k].series);
	}
	if (b.dropped)
		tb_cli_error(VERB, "%" PRIu64 " events did not fit in the bus ring: the log misses "
			     "them (is tailbusd running and keeping up?)",
			     b.dropped);
	free(res);
	tb_detach(p);
	if (rc < 0)
		return TB_EXIT_USAGE;
	return b.error || b.dropped || unfinished ? TB_EXIT_INPUT : TB_EXIT_OK;
}
