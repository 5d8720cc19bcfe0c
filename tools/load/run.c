/* run.c - one `tailbus load` run per rate: set up the queue and the engine,
 * run the timed loops, and collect what they measured into a struct result.
 *
 * A sweep runs each rate in turn with the same queue buffer, and names its
 * metrics "<metric>.r<rate>[.closed|.warmup]"; a single rate uses <metric>.
 *
 * Invariants: every request intended before the schedule's end is counted
 * as served, unserved or unsent (nothing is left out silently); achieved and
 * send rates are per second of the measured window; all allocation happens
 * before or after the timed loops.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "tailbus/log.h"

/* Latency by time of completion, as rows, and whether it grows. */
static void collect_series(struct result *res, const struct engine *e)
{
	size_t n = 0;
	for (size_t i = 0; i < e->nseries; i++) {
		if (tb_hist_total(&e->series[i]))
			n = i + 1;
	}
	res->series = calloc(n ? n : 1, sizeof(*res->series));
	if (!res->series)
		return;
	res->nseries = n;
	res->series_ns = e->series_ns;
	for (size_t i = 0; i < n; i++) {
		const tb_hist *h = &e->series[i];
		tb_sweep_row *row = &res->series[i];
		row->count = tb_hist_total(h);
		row->p50 = tb_hist_value_at_percentile(h, 50.0);
		row->p99 = tb_hist_value_at_percentile(h, 99.0);
		row->max = tb_hist_max(h);
	}
	res->growing = tb_sweep_growing(res->series, n, e->spin.max_gap_ns);
}

/* What was left undone at the deadline. */
static void count_leftovers(struct run *r, struct result *res)
{
	res->unsent = load_gen_unsent(&r->gen);
	res->unserved = ck_ring_size(&r->ring) + (r->eng.busy ? 1 : 0);
}

/* One run's figures, from what its generator and engine counted. */
static void collect(struct run *r, const struct config *c, struct result *res)
{
	const struct gen *g = &r->gen;
	const struct engine *e = &r->eng;
	res->rate = c->rate;
	tb_summarize(&e->open, &res->open);
	tb_summarize(&e->service, &res->service);
	if (c->closed)
		tb_summarize(&e->closed_h, &res->closed);
	/* served (sent) per second of the measured window, from its start to the
	 * end of the schedule or to the last completion (send) if later: an
	 * engine that keeps up achieves exactly the offered rate */
	int64_t served_ns = (e->last_done > g->end ? e->last_done : g->end) - e->measure_from;
	res->achieved = (double)e->measured * 1e9 / (double)served_ns;
	int64_t sent_ns = (g->last_send > g->end ? g->last_send : g->end) - g->measure_from;
	res->send_rate = (double)g->sent_measured * 1e9 / (double)sent_ns;
	res->warmup = e->warmup;
	res->late = g->late;
	res->late_held = g->late_held;
	res->late_descheduled = g->late_descheduled;
	res->late_busy = g->late_busy;
	res->max_lag_ns = g->max_lag_ns;
	res->gaps = g->spin.gaps;
	res->stolen_ns = g->spin.stolen_ns;
	res->max_gap_ns = g->spin.max_gap_ns;
	res->engine_max_gap_ns = e->spin.max_gap_ns;
	res->stalls = e->stalls;
	res->run_ns = g->ended - g->start; /* the sending loop's time, its gaps' denominator */
	count_leftovers(r, res);
	collect_series(res, e);
}

/* The run's metric names: <metric>[.r<rate>], with TB_CLOSED_LOOP_SUFFIX and .warmup. */
static void metric_names(const struct config *c, bool sweep, struct result *res)
{
	if (sweep)
		snprintf(res->metric, sizeof(res->metric), "%s.r%" PRIu64, c->metric, c->rate);
	else
		snprintf(res->metric, sizeof(res->metric), "%s", c->metric);
	snprintf(res->metric_closed, sizeof(res->metric_closed), "%s" TB_CLOSED_LOOP_SUFFIX,
		 res->metric);
	snprintf(res->metric_warmup, sizeof(res->metric_warmup), "%s.warmup", res->metric);
}

/* Run one rate. `p` records in one-thread mode; with an engine thread it is
 * the generator's clock only and the thread attaches its own handle, whose
 * drops are added to *dropped. */
static int run_rate(struct run *r, const struct config *c, tb_producer *p, struct result *res,
		    uint64_t *dropped)
{
	int rc = load_engine_init(&r->eng, c);
	if (rc < 0) {
		load_engine_free(&r->eng);
		return rc;
	}
	ck_ring_init(&r->ring, c->queue);
	r->completed = 0;
	r->gen_done = 0;
	const char *names[3] = {res->metric, res->metric_closed, res->metric_warmup};
	if (c->engine_cpu < 0) {
		load_run_one_thread(r, c, names, p); /* p is NULL with --record off */
	} else if ((rc = load_run_two_threads(r, c, names, p, dropped)) < 0) {
		load_engine_free(&r->eng);
		return rc;
	}
	collect(r, c, res);
	load_engine_free(&r->eng);
	return rc;
}

int load_run_all(struct config *c, tb_producer *p, struct result *res, const uint64_t *rates,
		 size_t n, uint64_t *dropped)
{
	struct run *r = aligned_alloc(TB_CACHELINE, (sizeof(struct run) + TB_CACHELINE - 1) /
							    TB_CACHELINE * TB_CACHELINE);
	tb_load_req *buf = malloc(c->queue * sizeof(*buf));
	int rc = r && buf ? 0 : -ENOMEM;
	if (buf) /* every page touched now, not on the first lap of the timed loop */
		memset(buf, 0, c->queue * sizeof(*buf));
	for (size_t k = 0; rc == 0 && k < n; k++) {
		memset(r, 0, sizeof(*r));
		r->buf = buf;
		c->rate = rates[k];
		metric_names(c, c->sweep_steps > 0, &res[k]);
		rc = run_rate(r, c, p, &res[k], dropped);
	}
	free(buf);
	free(r);
	return rc;
}
