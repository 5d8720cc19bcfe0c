/* engine.c - `tailbus load`'s engine: a FIFO server of the generator's
 * requests, its stalls, and what it records for each completion.
 *
 * The engine spends --service-ns on each request, starting at max(arrival,
 * previous completion by the model), and freezes for --stall-ns every
 * --stall-every when asked. It runs on timestamps, not on when its loop
 * noticed: a request is served from max(its send time, the engine's previous
 * completion) whichever turn picks it up, so its capacity is exactly
 * 1/service. Each completion is recorded with tb_span(intended, done), and
 * with --closed also from the actual send; warm-up requests go to their own
 * metric and stay out of the histograms.
 *
 * Service time. Besides latency from the intended time, the engine times its
 * own work: done (the clock read at which it completes a request, the T1 it
 * records) minus the start of service, max(arrival, the previous request's
 * completion by the model). It is the service time plus the engine loop's
 * reaction (from when the work is due to end to the turn that sees it) plus
 * any stall during service: what the engine's own code and the machine under
 * it add, without the queueing in front of it. That is the figure the
 * observer effect is about: does recording slow the engine's own work?
 *
 * Invariants: the in-process histograms record exactly the values sent to
 * the bus, in the collector's layout; every counter is written before the
 * run (load_engine_init), so the timed loop touches no new page; with
 * --record off (no handle) the same loop runs without a recording call.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "tailbus/analysis.h"

/* The series (latency by time of completion) uses 2 significant digits (1%
 * buckets): enough to see a trend, 36 KiB a row instead of 270 KiB. A row is
 * a second, or as many whole seconds as keep a long run to SERIES_MAX_ROWS
 * rows (10 MiB). */
#define SERIES_SIG_DIGITS 2
#define SERIES_MAX_ROWS 300

static void engine_stall(struct engine *e, int64_t now)
{
	while (now >= e->next_stall) {
		int64_t from = e->next_stall, to = from + e->stall_ns;
		/* frozen: the request in service finishes S later, no new one starts */
		if (e->busy && e->target > from)
			e->target += e->stall_ns;
		if (e->free_at < to)
			e->free_at = to;
		e->stalls++;
		e->next_stall = from + e->stall_every_ns;
		if (e->next_stall >= e->stall_until_end)
			e->next_stall = INT64_MAX;
	}
}

static void engine_record(struct run *r, int64_t done)
{
	struct engine *e = &r->eng;
	const tb_load_req *q = &e->cur;
	/* e->p is NULL with --record off: the same loop, no recording call */
	if (q->intended < e->measure_from) {
		if (e->p)
			tb_span(e->p, e->m_warmup, (uint64_t)q->intended, (uint64_t)done);
		e->warmup++;
	} else {
		if (e->p)
			tb_span(e->p, e->m_main, (uint64_t)q->intended, (uint64_t)done);
		tb_hist_record(&e->open, done - q->intended);
		tb_hist_record(&e->service, done - e->started);
		if (e->closed) {
			if (e->p)
				tb_span(e->p, e->m_closed, (uint64_t)q->sent, (uint64_t)done);
			tb_hist_record(&e->closed_h, done - q->sent);
		}
		size_t row = (size_t)((done - e->measure_from) / e->series_ns);
		if (row < e->nseries)
			tb_hist_record(&e->series[row], done - q->intended);
		e->measured++;
		e->last_done = done;
	}
	/* release: a closed-loop generator on another thread sends the next
	 * request only after it sees this count */
	__atomic_store_n(&r->completed, __atomic_load_n(&r->completed, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

/* One turn of the engine at time `now`. Returns the number of requests it
 * completed or started. */
int load_engine_poll(struct run *r, int64_t now)
{
	struct engine *e = &r->eng;
	int actions = 0;
	engine_stall(e, now);
	for (;;) {
		if (e->busy) {
			if (now < e->target)
				return actions;
			engine_record(r, now);
			/* chain on the model's completion, not on when we noticed it */
			if (e->free_at < e->target)
				e->free_at = e->target;
			e->busy = false;
			actions++;
		}
		if (now < e->free_at || !ck_ring_dequeue_spsc_tb_load_req(&r->ring, r->buf, &e->cur))
			return actions;
		e->started = e->cur.sent > e->free_at ? e->cur.sent : e->free_at;
		e->target = e->started + e->service_ns;
		e->busy = true;
		actions++;
	}
}

/* Nothing in service and nothing queued. */
bool load_engine_idle(struct run *r)
{
	return !r->eng.busy && ck_ring_size(&r->ring) == 0;
}

/* Records through `p` under names[0..3): main, closed, warm-up. */
void load_engine_attach(struct engine *e, tb_producer *p, const char *const names[3])
{
	e->p = p;
	e->m_main = tb_metric(p, names[0]);
	e->m_closed = tb_metric(p, names[1]);
	e->m_warmup = tb_metric(p, names[2]);
}

static int hist_alloc(tb_hist *h, int digits)
{
	int32_t len = tb_hist_counts_len(TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, digits);
	if (len < 0)
		return len;
	int64_t *counts = malloc((size_t)len * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	/* writes every counter now, so no page is first touched in the timed loop */
	int rc = tb_hist_init_at(h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, digits,
				 counts, (size_t)len);
	if (rc < 0) {
		free(counts);
		return rc;
	}
	h->owns_counts = 1;
	return 0;
}

/* Frees what load_engine_init allocated (also after it failed). */
void load_engine_free(struct engine *e)
{
	tb_hist_free(&e->open);
	tb_hist_free(&e->closed_h);
	tb_hist_free(&e->service);
	for (size_t i = 0; i < e->nseries; i++)
		tb_hist_free(&e->series[i]);
	free(e->series);
}

/* Sizes the engine for a run of `c` and allocates its histograms. */
int load_engine_init(struct engine *e, const struct config *c)
{
	memset(e, 0, sizeof(*e));
	e->service_ns = c->service_ns;
	e->closed = c->closed;
	e->next_stall = INT64_MAX;
	int64_t span = c->duration_ns - c->warmup_ns + c->drain_ns;
	int64_t seconds = span / TB_NS_PER_SEC + 1;
	e->series_ns = TB_NS_PER_SEC * ((seconds + SERIES_MAX_ROWS - 1) / SERIES_MAX_ROWS);
	e->nseries = (size_t)(span / e->series_ns) + 2;
	e->series = calloc(e->nseries, sizeof(*e->series));
	if (!e->series)
		return -ENOMEM;
	int rc = hist_alloc(&e->open, TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc == 0)
		rc = hist_alloc(&e->closed_h, TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc == 0)
		rc = hist_alloc(&e->service, TB_HIST_DEFAULT_SIG_DIGITS);
	for (size_t i = 0; rc == 0 && i < e->nseries; i++)
		rc = hist_alloc(&e->series[i], SERIES_SIG_DIGITS);
	return rc;
}

/* The engine's state at the schedule's start. */
void load_engine_start(struct engine *e, const struct config *c, int64_t start)
{
	e->measure_from = start + c->warmup_ns;
	e->free_at = start;
	if (c->stall_ns > 0 && c->stall_every_ns > 0) {
		/* stalls sit mid-period in the measured window: W + T/2, W + 3T/2, ...
		 * so a measured window of k periods holds exactly k stalls */
		e->stall_every_ns = c->stall_every_ns;
		e->stall_ns = c->stall_ns;
		e->next_stall = e->measure_from + c->stall_every_ns / 2;
		e->stall_until_end = start + c->duration_ns;
		if (e->next_stall >= e->stall_until_end)
			e->next_stall = INT64_MAX;
	}
}
