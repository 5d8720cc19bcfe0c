/* test_drain.c - the collector's drain, in process: its fast path against
 * record_slow(), the bounds the fast path keeps, its passes over the rings, and a
 * ring that must not stall.
 *
 * The drain records the common event (a SPAN of a metric with a series on
 * its ring, in range, completing in the current interval) without record_slow();
 * everything else goes to record_slow(). The two must record alike, whichever
 * pass over the ring, and during a close. A real collector and producer
 * (collector_fixture.h), drained by hand.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "collector_fixture.h"

/* A ring's events, both banks: what its next two closes report. */
static uint64_t ring_events(const tb_slot_follow *f)
{
	return f->tally[0].events + f->tally[1].events;
}

/* The least non-zero value and the maximum as the histogram reports them
 * (at its precision, as HdrHistogram does) are those of the values `min`
 * and `max`, and the raw bounds bound them in their buckets. */
static void assert_bounds(const tb_hist *h, int64_t min, int64_t max)
{
	assert_int_equal(tb_hist_min(h), h->counts[0] ? 0 : tb_hist_lowest_equivalent(h, min));
	assert_int_equal(tb_hist_lowest_equivalent(h, h->min_raw), tb_hist_lowest_equivalent(h, min));
	assert_int_equal(tb_hist_max(h), tb_hist_highest_equivalent(h, max));
	assert_true(h->min_raw <= min && tb_hist_index_of(h, h->min_raw) == tb_hist_index_of(h, min));
	assert_true(h->max_raw >= max && h->max_raw <= h->highest);
	assert_int_equal(tb_hist_index_of(h, h->max_raw), tb_hist_index_of(h, max));
}

/* The drain's fast path keeps no minimum or maximum per event, only the
 * buckets it wrote to; settling a series bank finds its least non-zero
 * and its greatest value from them and the counts, and adds them to what
 * record_slow() recorded exactly. Settled after every drain, the histogram
 * reports the minimum and maximum of all it recorded. */
static void the_fast_path_keeps_the_least_and_greatest_value(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	int cur = f->c.drainers[0].cur;
	const int64_t top = TB_HIST_DEFAULT_HIGHEST;
	static const struct {
		uint64_t latencies[3];
		int64_t min, max;
	} steps[] = {
		{{500, 600, 601}, 500, 601}, /* the first makes the series, through record_slow() */
		{{6000, 50, 0}, 50, 6000}, /* a zero is never the non-zero minimum */
		{{700, 70, 5000}, 50, 6000},
		{{49, 6001, 3}, 3, 6001}, /* 6001: 6000's count */
		{{0, 0, 0}, 3, 6001},
		{{1, 2047, 8191}, 1, 8191}, /* the ends of buckets' counts */
		{{(uint64_t)top, 9, 10}, 1, top}, /* H: its bucket goes on past it */
	};
	tb_series *s = NULL;
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		for (int j = 0; j < 3; j++)
			spans(f, 2, 1, at(f, len / 2), steps[k].latencies[j]);
		tb_collector_drain_all(&f->c);
		s = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[2])];
		assert_non_null(s);
		assert_int_equal(s->hist[cur].total, 3 * (int64_t)(k + 1));
		/* all through the fast path: nothing waits in its record */
		assert_int_equal(s->fast[cur]->events, 0);
		const uint8_t *seen = s->fast[cur]->seen;
		if (k > 0) /* the buckets are there to settle */
			assert_non_null(memchr(seen, 1, TB_SERIES_BUCKETS));
		tb_series_settle_bounds(&f->c, cur);
		assert_null(memchr(seen, 1, TB_SERIES_BUCKETS));
		assert_bounds(&s->hist[cur], steps[k].min, steps[k].max);
	}
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[2])].events, 21);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[2])].clamped, 0);

	/* a lowest bucket that holds only zeros gives no minimum: the next does */
	spans(f, 0, 1, at(f, len / 2), 0); /* makes the series, through record_slow() */
	spans(f, 0, 1, at(f, len / 2), 0);
	spans(f, 0, 1, at(f, len / 2), 3001);
	spans(f, 0, 1, at(f, len / 2), 2048); /* the first count of its bucket */
	tb_collector_drain_all(&f->c);
	s = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[0])];
	assert_non_null(s);
	assert_int_equal(s->hist[cur].min_raw, 0);
	tb_series_settle_bounds(&f->c, cur);
	assert_bounds(&s->hist[cur], 2048, 3001);
	assert_int_equal(tb_hist_min(&s->hist[cur]), 0); /* a recorded zero is still the minimum */
	assert_int_equal(s->hist[cur].min_raw, 2048);
	assert_int_equal(s->hist[cur].max_raw, 3001); /* 3000 and 3001 share a count */
}

/* The fast path's table holds 32-bit offsets into the series pool: a pool
 * they cannot reach is refused at open, with a reason, before anything is
 * opened or allocated. */
static void a_series_pool_past_the_tables_reach_is_refused(void **state)
{
	struct fixture *f = *state;
	tb_collector_config cfg;
	tb_collector_config_default(&cfg);
	cfg.bus = BUS "-big";
	cfg.dir = f->seg_dir;
	cfg.writer.dir = f->log_dir;
	cfg.max_series = UINT32_MAX / (uint32_t)sizeof(tb_series);
	tb_collector c;
	const char *why = NULL;
	assert_int_equal(tb_collector_open(&c, &cfg, &why), -EINVAL);
	assert_non_null(why);
	assert_non_null(strstr(why, "max_series"));
	tb_collector_close(&c);
}

/* In the second pass over the ring, which expects lap bit 0 (the fast
 * path's table read from TB_LAP_BIT entries on), SPANs of a metric with a
 * series are the fast path's too. */
static void the_second_pass_takes_the_fast_path(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	uint32_t cap = f->c.seg.layout.ring_capacity;
	uint64_t done = at(f, f->c.cfg.interval_ns / 2);
	spans(f, 1, (int)cap, done, 1000);
	tb_collector_drain_all(&f->c);
	tb_series *s = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[1])];
	assert_non_null(s);
	spans(f, 1, 10, done, 1000);
	assert_int_equal(tb_collector_pass_all(&f->c), 10);
	assert_int_equal(s->fast[cur]->events, 10);
}

/* Passes made by hand (or after the drain threads stopped) have between
 * them whatever their caller ran, not only the drain thread's constant
 * work: a pause there is taken whole, less the time off CPU, and no step
 * of it is the machine's (collector.h, TB_DRAIN_MACHINE_STEP_NS). */
#define CALLER_NS 3000000LL
/* Run `ns` of this thread's CPU time: a thread preempted meanwhile (tests
 * run beside each other) still does that much work of its own. */
static void spin_on_cpu(int64_t ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	int64_t until = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + ns, now;
	do {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	} while (now < until);
}

static void the_callers_work_between_passes_by_hand_is_a_self_caused_pause(void **state)
{
	struct fixture *f = *state;
	tb_drainer *d = &f->c.drainers[0];
	tb_collector_pass_all(&f->c);
	spin_on_cpu(CALLER_NS); /* the first long pause reads the CPU time */
	tb_collector_pass_all(&f->c);
	__atomic_store_n(&d->stalls.longest_self_pause_ns, 0, __ATOMIC_RELAXED);
	spin_on_cpu(CALLER_NS);
	tb_collector_pass_all(&f->c);
	int64_t self = __atomic_load_n(&d->stalls.longest_self_pause_ns, __ATOMIC_RELAXED);
	if (self < CALLER_NS / 2)
		fail_msg("self-caused pause %lld ns after %lld ns of the caller's work", (long long)self,
			 CALLER_NS);
}

/* A pass made by another thread than the one whose CPU time was read last
 * (the run loop after the drain threads stopped, say): the other thread's
 * CPU time says nothing of this one's time off CPU, so the pause is taken
 * whole. Here the reader had run far longer than the thread that passes
 * next, which read as time off CPU would have hidden the pause; and the
 * reader has ended, so the next thread may be given its pthread_t. */
struct work_then_pass {
	struct fixture *f;
	int64_t work_ns;
};

static void *pass_after_work(void *arg)
{
	struct work_then_pass *w = arg;
	spin_on_cpu(w->work_ns);
	tb_collector_pass_all(&w->f->c);
	return NULL;
}

static void on_a_new_thread(struct fixture *f, int64_t work_ns)
{
	struct work_then_pass w = {f, work_ns};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, pass_after_work, &w), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void a_pass_by_another_thread_takes_the_pause_whole(void **state)
{
	struct fixture *f = *state;
	tb_drainer *d = &f->c.drainers[0];
	on_a_new_thread(f, 10 * CALLER_NS); /* the reader: its CPU time well ahead */
	__atomic_store_n(&d->stalls.longest_self_pause_ns, 0, __ATOMIC_RELAXED);
	on_a_new_thread(f, CALLER_NS);
	int64_t self = __atomic_load_n(&d->stalls.longest_self_pause_ns, __ATOMIC_RELAXED);
	if (self < CALLER_NS / 2)
		fail_msg("self-caused pause %lld ns after %lld ns of another thread's work", (long long)self,
			 CALLER_NS);
}

/* An interval that began before the producers' clock's zero (a long one,
 * soon after boot) still has its events taken by the fast path, and
 * counted as record_slow() counts them. */
static void an_interval_begun_before_the_clock_started_takes_the_fast_path(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	f->c.drainers[0].interval_start_ns = f->c.clock_offset_ns - 1000; /* 1 us before monotonic 0 */
	tb_drainer_set_open(&f->c.drainers[0]);
	spans(f, 1, 10, at(f, f->c.cfg.interval_ns / 2), 1000);
	assert_int_equal(tb_collector_pass_all(&f->c), 10);
	tb_series *s = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[1])];
	assert_non_null(s);
	assert_int_equal(s->fast[cur]->events, 9); /* the first made the series, through record_slow() */
	tb_collector_flush_fast(&f->c);
	assert_int_equal(s->hist[cur].total, 10);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[1])].events, 10);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[1])].late, 0);
}

/* The run loop's pass reads a ring that holds a whole batch at once, and
 * one that holds less only when its short read is due (TB_COLLECTOR_PARTIAL_NS
 * after the last); tb_collector_drain_all reads everything. */
static void the_paced_pass_reads_short_rings_only_when_due(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	tb_slot_follow *sf = &f->c.slots[f->p->slot];
	spans(f, 0, 10, at(f, len / 2), 1000);
	int64_t before = mono_ns();
	assert_int_equal(tb_collector_pass_paced(&f->c), 10); /* never read short yet: due */
	int64_t after = mono_ns();
	assert_true(sf->partial_after_ns >= before + TB_COLLECTOR_PARTIAL_NS &&
		    sf->partial_after_ns <= after + TB_COLLECTOR_PARTIAL_NS);
	sf->partial_after_ns = INT64_MAX; /* not due, whatever the time */
	spans(f, 0, 10, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_pass_paced(&f->c), 0);
	assert_false(f->c.drainers[0].last_pass_full);
	/* a whole batch behind those ten: taken at once, the ten first */
	spans(f, 0, TB_COLLECTOR_BATCH, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_pass_paced(&f->c), TB_COLLECTOR_BATCH);
	assert_true(f->c.drainers[0].last_pass_full);
	assert_int_equal(sf->partial_after_ns, INT64_MAX); /* a whole batch is not a short read */
	assert_int_equal(tb_collector_pass_paced(&f->c), 0);
	sf->partial_after_ns = 0; /* due */
	assert_int_equal(tb_collector_pass_paced(&f->c), 10);
	/* the plain pass and drain_all read short rings at any time */
	sf->partial_after_ns = INT64_MAX;
	spans(f, 0, 7, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_pass_all(&f->c), 7);
	spans(f, 0, 5, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_drain_all(&f->c), 5);
	assert_int_equal(f->c.drainers[0].counts[f->c.drainers[0].cur][tb_metric_id(f->m[0])].events,
			 10 + 10 + TB_COLLECTOR_BATCH + 7 + 5);
}

/* An event whose lap bit a made-up metric word spoiled (a struct filled by
 * hand, an uninitialised one) would read as not written for good, and the
 * ring would stall behind it. Once the producer's hint is past it, it is
 * counted as bad and skipped, and one pass later it does not read as new. */
static void a_spoiled_event_does_not_stall_the_ring(void **state)
{
	struct fixture *f = *state;
	uint32_t cap = f->c.seg.layout.ring_capacity;
	int64_t len = f->c.cfg.interval_ns;
	uint64_t done = at(f, len / 2);
	spans(f, 0, (int)cap, done, 1000); /* the first pass */
	tb_collector_drain_all(&f->c);
	/* the second pass wants the lap bit clear: this one has it set */
	tb_metric_t forged = {f->m[0].bits | TB_LAP_BIT};
	spans(f, 0, 10, done, 1000);
	tb_span(f->p, forged, done - 1000, done);
	spans(f, 0, (int)cap - 11, done, 1000);
	tb_collector_drain_all(&f->c);
	/* stopped at it: the producer has not said it is past it yet */
	assert_int_equal(events_of(f, 0), cap + 10);
	assert_int_equal(ring_bad(&f->c.slots[0]), 0);
	spans(f, 0, 1, done, 1000); /* past the ring's end: the hint, then the third pass */
	tb_collector_drain_all(&f->c);
	assert_int_equal(ring_bad(&f->c.slots[0]), 1);
	assert_int_equal(events_of(f, 0), 2 * (uint64_t)cap);
	/* the third pass, written up to the spoiled event's slot: that slot does
	 * not read as a new event, and the producer goes on writing */
	spans(f, 0, 9, done, 1000);
	tb_collector_drain_all(&f->c);
	assert_int_equal(ring_bad(&f->c.slots[0]), 1);
	assert_int_equal(events_of(f, 0), 2 * (uint64_t)cap + 9);
	spans(f, 0, 5, done, 1000);
	tb_collector_drain_all(&f->c);
	assert_int_equal(events_of(f, 0), 2 * (uint64_t)cap + 14);
	assert_false(f->c.slots[0].quarantined);
	tb_producer_stats st;
	tb_producer_stats_get(f->p, &st);
	assert_int_equal(st.dropped, 0);
}

/* The drain records the common event (a SPAN of a metric with a series on
 * its ring, in range, completing in the current interval) without record_slow();
 * everything else goes to record_slow(). The two must record alike: the same
 * stream of events, every case at and around each limit, written once to
 * each of two rings, one drained with record_slow() alone and the other as the
 * drain does by default, leaves the two rings' series equal and every
 * per-metric counter doubled. (START/END events are left out: they join
 * across rings, and only record_slow() takes them.) */
static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

#define STREAM 3000

/* SPANs, and where mark[k] a MARK (a reserved kind: counted bad) in the
 * middle of them, so that the fast path's run of SPANs breaks off */
static void write_stream(tb_producer *p, const tb_metric_t *m, const uint64_t *intended,
			 const uint64_t *done, const bool *mark)
{
	for (int k = 0; k < STREAM; k++) {
		if (mark[k])
			tb__emit(p, tb__span_field(intended[k], done[k]) | m[k].bits | TB_EV_MARK,
				 intended[k]);
		else
			tb_span(p, m[k], intended[k], done[k]);
	}
}

/* The stream of every case, drained by record_slow() alone from one ring and by
 * the drain from another, after `prefill` SPANs on each: 0, the stream in
 * the first pass over the ring; part of a ring, across its end; a whole
 * ring, all in the second pass, the drain stopping at a slot that holds a
 * first pass's event of id 16383 (the last entries of the fast path's
 * table). With `closing`, drained while a close is under way (after the
 * prefill, which makes every series). */
static void drain_matches_decode(void **state, uint32_t prefill, bool closing)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	const int64_t H = TB_HIST_DEFAULT_HIGHEST;
	tb_producer *q = tb_attach(BUS, "second-thread");
	assert_int_equal(tb_producer_error(q, NULL), 0);
	tb_metric_t qm[METRICS];
	for (int k = 0; k < METRICS; k++) {
		char name[16];
		snprintf(name, sizeof(name), "m%d", k);
		qm[k] = tb_metric(q, name);
		assert_int_equal(tb_metric_id(qm[k]), tb_metric_id(f->m[k]));
	}
	uint32_t cap = f->c.seg.layout.metric_capacity;
	/* ids never registered: one inside the segment's capacity, one past it */
	tb_metric_t unknown[2] = {{(uint64_t)(cap - 1) << TB_METRIC_SHIFT},
				  {(uint64_t)(TB_MAX_METRICS - 1) << TB_METRIC_SHIFT}};
	assert_true(cap - 1 > tb_metric_id(f->m[METRICS - 1]));
	static const int64_t latencies[] = {0, 1, 2, 1000, 2047, 2048, 123456789, H - 1, H, H + 1,
					    (int64_t)1 << 45, -1, -1000, (int64_t)1 << 47};
	const int64_t dones[] = {0,   1,	 len / 2, len - 1, len,	   len + 1,
				 len + len / 2, 2 * len - 1, 2 * len, 2 * len + 1, -1, -len / 2};
	static uint64_t intended[STREAM], done[STREAM];
	static tb_metric_t pm[STREAM], qms[STREAM];
	static bool mark[STREAM];
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (int k = 0; k < STREAM; k++) {
		uint64_t r = xorshift(&x);
		int64_t lat = latencies[r % (sizeof(latencies) / sizeof(latencies[0]))];
		if (r >> 60 == 0)
			lat = (int64_t)(xorshift(&x) % 1000000); /* any small one */
		uint64_t d = at(f, dones[(r >> 8) % (sizeof(dones) / sizeof(dones[0]))]);
		if ((r >> 16) % 97 == 0)
			d = (uint64_t)INT64_MAX - (r >> 40); /* completion sums that overflow */
		else if ((r >> 16) % 97 == 1)
			d = r >> 50; /* near the clock's start */
		intended[k] = d - (uint64_t)lat;
		done[k] = d;
		int which = (int)((r >> 24) % 16);
		if (which < METRICS) {
			pm[k] = f->m[which];
			qms[k] = qm[which];
		} else if (which == METRICS) {
			pm[k] = qms[k] = unknown[(r >> 32) & 1];
		} else if (which == METRICS + 1) { /* a MARK of a registered metric */
			pm[k] = f->m[0];
			qms[k] = qm[0];
			mark[k] = true;
		} else { /* mostly m0 */
			pm[k] = f->m[0];
			qms[k] = qm[0];
		}
	}
	tb_metric_counts before[2][METRICS], base[2][METRICS];
	uint32_t rcap = f->c.seg.layout.ring_capacity;
	assert_true(prefill <= rcap);
	uint64_t bad0 = 0;
	if (prefill) {
		/* both rings: SPANs in range of metrics with a series, but at the
		 * slot where the drain will stop after a whole ring: id 16383 */
		uint64_t pd = at(f, len / 2);
		for (uint32_t k = 0; k < prefill; k++) {
			bool u = prefill == rcap && k == (prefill + STREAM) % rcap;
			tb_metric_t a = u ? unknown[1] : f->m[k % METRICS], b = u ? unknown[1] : qm[k % METRICS];
			tb_span(f->p, a, pd - 1000, pd);
			tb_span(q, b, pd - 1000, pd);
		}
		tb_collector_drain_all(&f->c);
		bad0 = ring_bad(&f->c.slots[f->p->slot]);
		assert_int_equal(ring_bad(&f->c.slots[q->slot]), bad0);
	}
	/* during a close what is drained is the next bank's, the fast path's
	 * too (from the closing interval's end), and nothing is the closing bank's */
	if (closing)
		assert_true(tb_drainer_switch(&f->c.drainers[0], 0, true));
	int open = f->c.drainers[0].open_bank, shut = closing ? f->c.drainers[0].cur ^ 1 : -1;
	for (int h = 0; h < 2; h++)
		for (int m = 0; m < METRICS; m++)
			base[h][m] = f->c.drainers[0].counts[h][tb_metric_id(f->m[m])];
	int64_t shut_totals[2][METRICS] = {{0}};
	for (int m = 0; closing && m < METRICS; m++) {
		shut_totals[0][m] = tb_hist_total(&f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[m])]->hist[shut]);
		shut_totals[1][m] = tb_hist_total(&f->c.slots[q->slot].t.series_of[tb_metric_id(f->m[m])]->hist[shut]);
	}
	f->c.decode_only = true;
	write_stream(f->p, pm, intended, done, mark);
	tb_collector_drain_all(&f->c);
	for (int h = 0; h < 2; h++) {
		for (int m = 0; m < METRICS; m++) {
			before[h][m] = f->c.drainers[0].counts[h][tb_metric_id(f->m[m])];
			before[h][m].events -= base[h][m].events;
			before[h][m].negative -= base[h][m].negative;
			before[h][m].late -= base[h][m].late;
			before[h][m].clamped -= base[h][m].clamped;
		}
	}
	f->c.decode_only = false;
	f->c.evict = tb_evict_method(); /* flushing the lines read changes nothing read */
	write_stream(q, qms, intended, done, mark);
	tb_collector_drain_all(&f->c);
	uint32_t s0 = f->p->slot, s1 = q->slot;
	assert_int_not_equal(s0, s1);
	assert_int_equal(ring_events(&f->c.slots[s0]), STREAM + prefill);
	assert_int_equal(ring_events(&f->c.slots[s1]), STREAM + prefill);
	uint64_t marks = 0;
	for (int k = 0; k < STREAM; k++)
		marks += mark[k];
	assert_true(marks > 0 && ring_bad(&f->c.slots[s0]) - bad0 > marks); /* and the unknown ids */
	assert_int_equal(ring_bad(&f->c.slots[s1]), ring_bad(&f->c.slots[s0]));
	for (int h = 0; h < 2; h++) {
		for (int m = 0; m < METRICS; m++) {
			const tb_metric_counts *a = &before[h][m], *b = &f->c.drainers[0].counts[h][tb_metric_id(f->m[m])],
					       *z = &base[h][m];
			assert_int_equal(b->events - z->events, 2 * a->events);
			assert_int_equal(b->negative - z->negative, 2 * a->negative);
			assert_int_equal(b->late - z->late, 2 * a->late);
			assert_int_equal(b->clamped - z->clamped, 2 * a->clamped);
		}
		/* every case was there to compare */
		const tb_metric_counts *m0 = &before[h][0];
		if (h == shut) {
			for (int m = 0; m < METRICS; m++)
				assert_int_equal(before[h][m].events, 0);
			continue;
		}
		assert_true(m0->events > 0);
		assert_true(m0->negative > 0 && m0->clamped > 0);
	}
	assert_true(before[open][0].late > 0);
	for (int m = 0; m < METRICS; m++) {
		tb_series *a = f->c.slots[s0].t.series_of[tb_metric_id(f->m[m])];
		tb_series *b = f->c.slots[s1].t.series_of[tb_metric_id(f->m[m])];
		assert_non_null(a);
		assert_non_null(b);
		for (int h = 0; h < 2; h++) {
			const tb_hist *ha = &a->hist[h], *hb = &b->hist[h];
			assert_int_equal(hb->total, ha->total);
			/* the fast path's bounds are settled at bucket precision,
			 * record_slow()'s are exact: what the histograms report is the same */
			tb_series_settle_bounds(&f->c, h);
			assert_int_equal(tb_hist_min(hb), tb_hist_min(ha));
			assert_int_equal(tb_hist_max(hb), tb_hist_max(ha));
			assert_true(hb->min_raw <= ha->min_raw && hb->max_raw >= ha->max_raw);
			assert_int_equal(hb->clamped, ha->clamped);
			assert_memory_equal(hb->counts, ha->counts, (size_t)ha->counts_len * sizeof(int64_t));
		}
		if (closing) {
			assert_int_equal(tb_hist_total(&a->hist[shut]), shut_totals[0][m]);
			assert_int_equal(tb_hist_total(&b->hist[shut]), shut_totals[1][m]);
			assert_true(a->hist[open].total > 0);
		} else {
			assert_true(a->hist[f->c.drainers[0].cur].total > 0 && a->hist[f->c.drainers[0].cur ^ 1].total > 0);
		}
	}
	tb_detach(q);
}

static void the_drain_records_as_decode_does(void **state)
{
	drain_matches_decode(state, 0, false);
}

static void the_drain_records_as_decode_does_across_the_ring_end(void **state)
{
	drain_matches_decode(state, 2000, false);
}

static void the_drain_records_as_decode_does_in_the_second_pass(void **state)
{
	drain_matches_decode(state, 4096, false);
}

static void the_drain_records_as_decode_does_during_a_close(void **state)
{
	drain_matches_decode(state, 2000, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_paced_pass_reads_short_rings_only_when_due,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			an_interval_begun_before_the_clock_started_takes_the_fast_path,
			setup, teardown),
		cmocka_unit_test_setup_teardown(the_fast_path_keeps_the_least_and_greatest_value,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_drain_records_as_decode_does, setup, teardown),
		cmocka_unit_test_setup_teardown(the_second_pass_takes_the_fast_path,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_callers_work_between_passes_by_hand_is_a_self_caused_pause,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_pass_by_another_thread_takes_the_pause_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(a_series_pool_past_the_tables_reach_is_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			the_drain_records_as_decode_does_across_the_ring_end,
			setup, teardown),
		cmocka_unit_test_setup_teardown(the_drain_records_as_decode_does_in_the_second_pass,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_drain_records_as_decode_does_during_a_close,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_spoiled_event_does_not_stall_the_ring,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
