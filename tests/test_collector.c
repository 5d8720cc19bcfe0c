/* test_collector.c - the collector's interval close, in process.
 *
 * A real collector (tb_collector_open on a fresh bus in a private
 * directory, log through the real writer) and a real producer handle in
 * the same process. The close of an interval takes milliseconds (tens the
 * first time a series half is used), so the drain goes on between the
 * metrics it closes; what is checked is that events drained then are
 * neither lost nor written into the half being closed: they count in the
 * next interval, as late when they completed in the closing one, exactly as
 * if they had been drained after the close.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector.h"
#include "tailbus/live.h"
#include "tailbus/log.h"
#include "tailbus/producer.h"

#define BUS "test-collector"
#define METRICS 3

struct fixture {
	char seg_dir[64], log_dir[64];
	tb_collector c;
	bool opened;
	int64_t start_mono; /* the current interval's start on the producers' clock */
	tb_producer *p;
	tb_metric_t m[METRICS];
};

/* A ring's tallies, both halves: what its next two closes report. */
static uint64_t ring_bad(const tb_slot_follow *f)
{
	return f->tally[0].bad_events + f->tally[1].bad_events;
}

static uint64_t ring_events(const tb_slot_follow *f)
{
	return f->tally[0].events + f->tally[1].events;
}

static uint64_t ring_folded(const tb_slot_follow *f)
{
	return f->tally[0].folded + f->tally[1].folded;
}

/* What the closer does with the fold lanes, into drain thread 0's counts. */
static void take_slot_folds(struct fixture *f, uint32_t i, int half, bool all)
{
	tb_drainer *d = &f->c.drainers[0];
	pthread_mutex_lock(&f->c.slot_lock);
	tb_folds_take_slot(&f->c, i, half, all, d->counts[half], d->fold_grew, &d->series_exhausted);
	pthread_mutex_unlock(&f->c.slot_lock);
}

static void take_folds(struct fixture *f, int half)
{
	for (uint32_t i = 0; i < f->c.seg.layout.slot_count; i++)
		take_slot_folds(f, i, half, false);
}

/* A collector on a new bus of 2 slots of 4096 events, its live area as
 * given (0: the defaults), and a producer attached with METRICS metrics. */
static int open_fixture(void **state, uint32_t live_intervals, uint64_t live_heap_bytes)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->seg_dir, sizeof(f->seg_dir), "/tmp/tb-test-collector-seg.XXXXXX");
	snprintf(f->log_dir, sizeof(f->log_dir), "/tmp/tb-test-collector-log.XXXXXX");
	assert_non_null(mkdtemp(f->seg_dir));
	assert_non_null(mkdtemp(f->log_dir));
	setenv("TAILBUS_DIR", f->seg_dir, 1);
	tb_collector_config cfg;
	tb_collector_config_default(&cfg);
	cfg.bus = BUS;
	cfg.dir = f->seg_dir;
	cfg.writer.dir = f->log_dir;
	cfg.fresh = true;
	cfg.seg.slot_count = 2;
	cfg.seg.ring_capacity = 4096;
	if (live_intervals)
		cfg.seg.live_intervals = live_intervals;
	if (live_heap_bytes)
		cfg.seg.live_heap_bytes = live_heap_bytes;
	const char *why = NULL;
	int rc = tb_collector_open(&f->c, &cfg, &why);
	if (rc < 0)
		fail_msg("tb_collector_open: %s (%s)", why ? why : "?", strerror(-rc));
	f->opened = true;
	f->p = tb_attach(BUS, "test-thread");
	assert_non_null(f->p);
	if (tb_producer_error(f->p, &why) != 0)
		fail_msg("tb_attach gave a no-op handle: %s", why);
	for (int k = 0; k < METRICS; k++) {
		char name[16];
		snprintf(name, sizeof(name), "m%d", k);
		f->m[k] = tb_metric(f->p, name);
		assert_int_not_equal(tb_metric_id(f->m[k]), TB_METRIC_NONE_ID);
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	tb_collector_housekeep(&f->c, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return open_fixture(state, 0, 0);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->p)
		tb_detach(f->p);
	if (f->opened)
		tb_collector_close(&f->c);
	tb_seg_unlink(f->seg_dir, BUS);
	rmdir(f->seg_dir);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->log_dir);
	assert_int_equal(system(cmd), 0);
	unsetenv("TAILBUS_DIR");
	free(f);
	return 0;
}

/* The producer's monotonic time of `offset_ns` into the collector's
 * current interval (negative: before it). */
static uint64_t at(struct fixture *f, int64_t offset_ns)
{
	if (f->opened) /* while none is (a restart), the last collector's */
		f->start_mono = f->c.drainers[0].interval_start_ns - f->c.clock_offset_ns;
	return (uint64_t)(f->start_mono + offset_ns);
}

static void spans(struct fixture *f, int metric, int n, uint64_t done, uint64_t latency)
{
	for (int k = 0; k < n; k++)
		tb_span(f->p, f->m[metric], done - latency, done);
}

static int64_t series_total(const struct fixture *f, int half, int metric)
{
	int64_t total = 0;
	for (uint32_t k = 0; k < f->c.nseries; k++) {
		if (f->c.series[k].metric == tb_metric_id(f->m[metric]))
			total += tb_hist_total(&f->c.series[k].hist[half]);
	}
	return total;
}

/* Flush the log and add up, per metric, the counts of its lines for the
 * interval that starts at start_ns (wall clock). */
static void logged_totals(struct fixture *f, int64_t start_ns, int64_t *totals)
{
	assert_int_equal(tb_writer_flush(f->c.writer), 0);
	DIR *d = opendir(f->log_dir);
	assert_non_null(d);
	char path[256] = "";
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n > 5 && strcmp(de->d_name + n - 5, ".hlog") == 0)
			snprintf(path, sizeof(path), "%s/%s", f->log_dir, de->d_name);
	}
	closedir(d);
	assert_true(path[0] != '\0');
	char *text;
	size_t len;
	assert_int_equal(tb_read_file(path, &text, &len), 0);
	tb_log_reader r;
	tb_log_reader_init(&r, text, len);
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	memset(totals, 0, METRICS * sizeof(*totals));
	int rc;
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		assert_int_equal(rc, 1);
		if (llround(e.start_abs_sec * 1e3) != start_ns / 1000000)
			continue;
		for (int k = 0; k < METRICS; k++) {
			char name[16];
			snprintf(name, sizeof(name), "m%d", k);
			if (strcmp(e.tag, name) == 0)
				totals[k] += tb_hist_total(&e.hist);
		}
	}
	tb_log_entry_free(&e);
	free(text);
}

static void sidecar_events(struct fixture *f, int64_t start_ns, int64_t *events);

static void drained_during_close_count_in_the_next_interval(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	int cur = f->c.drainers[0].cur;
	/* this interval: every metric has data, so the close has three to do */
	for (int k = 0; k < METRICS; k++)
		spans(f, k, 100, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	for (int k = 0; k < METRICS; k++)
		assert_int_equal(series_total(f, cur, k), 100);
	/* left in the ring when the close begins: 40 more of this interval
	 * for m0 (closed first) and 30 for m2 (closed last, so drained while
	 * its own half is still open), late once drained; 25 of the next */
	spans(f, 0, 40, at(f, len / 2), 2000);
	spans(f, 2, 30, at(f, len / 2), 2000);
	spans(f, 1, 25, at(f, len + len / 2), 3000);
	int64_t closing = f->c.drainers[0].interval_start_ns;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	/* the closed interval's lines hold what was drained before the close,
	 * nothing drained during it */
	int64_t logged[METRICS];
	logged_totals(f, closing, logged);
	for (int k = 0; k < METRICS; k++)
		assert_int_equal(logged[k], 100);
	/* the close drained nothing: the drain after it takes what was left,
	 * into the new current half, none into the closed one */
	assert_int_equal(tb_collector_drain_pass(&f->c), 95);
	int next = f->c.drainers[0].cur;
	assert_int_equal(next, cur ^ 1);
	assert_int_equal(f->c.drainers[0].open_half, next);
	assert_int_equal(f->c.drainers[0].late_before_ns, f->c.drainers[0].interval_start_ns);
	/* the next interval's 25 by the fast path, the late ones by decode() */
	tb_series *s1 = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[1])];
	assert_non_null(s1);
	assert_int_equal(s1->fast[next]->events, 25);
	tb_collector_fold_events(&f->c);
	assert_int_equal(series_total(f, next, 0), 40);
	assert_int_equal(f->c.drainers[0].counts[next][tb_metric_id(f->m[0])].events, 40);
	assert_int_equal(f->c.drainers[0].counts[next][tb_metric_id(f->m[0])].late, 40);
	assert_int_equal(series_total(f, next, 1), 25);
	assert_int_equal(f->c.drainers[0].counts[next][tb_metric_id(f->m[1])].events, 25);
	assert_int_equal(f->c.drainers[0].counts[next][tb_metric_id(f->m[1])].late, 0);
	assert_int_equal(series_total(f, next, 2), 30);
	assert_int_equal(f->c.drainers[0].counts[next][tb_metric_id(f->m[2])].late, 30);
}

/* A close leaves the rings to the drain: a ring holding many batches when
 * the interval switches is read after it by the fast path, all into the
 * next half. */
static void the_drain_goes_on_by_the_fast_path_after_a_switch(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	int cur = f->c.drainers[0].cur;
	for (int k = 0; k < METRICS; k++)
		spans(f, k, 10, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	int n = 12 * TB_COLLECTOR_BATCH; /* many passes' worth */
	assert_true(n < (int)f->c.seg.layout.ring_capacity);
	spans(f, 1, n, at(f, len + len / 2), 3000);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	int next = f->c.drainers[0].cur;
	assert_int_equal(next, cur ^ 1);
	uint64_t taken = 0, k;
	while ((k = tb_collector_drain_pass(&f->c)) > 0)
		taken += k;
	assert_int_equal(taken, n);
	tb_series *s = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[1])];
	assert_non_null(s);
	assert_int_equal(s->fast[next]->events, n); /* all of them by the fast path */
	tb_collector_fold_events(&f->c);
	assert_int_equal(series_total(f, next, 1), n);
	assert_int_equal(f->c.drainers[0].counts[next][tb_metric_id(f->m[1])].events, n);
	assert_int_equal(f->c.drainers[0].counts[next][tb_metric_id(f->m[1])].late, 0);
}

/* The drain's fast path counts events per series; a close reached straight
 * from drain passes (no tb_collector_drain_all, which folds them in) still
 * writes every metric with what it recorded. */
static void a_close_after_bare_passes_counts_every_event(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	for (int k = 0; k < METRICS; k++)
		spans(f, k, 50 + k, at(f, len / 2), 1000);
	while (tb_collector_drain_pass(&f->c) > 0)
		;
	int64_t closing = f->c.drainers[0].interval_start_ns;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	int64_t logged[METRICS];
	logged_totals(f, closing, logged);
	for (int k = 0; k < METRICS; k++)
		assert_int_equal(logged[k], 50 + k);
	/* and the health sidecar's per-metric event counts agree */
	int64_t events[METRICS];
	sidecar_events(f, closing, events);
	for (int k = 0; k < METRICS; k++)
		assert_int_equal(events[k], 50 + k);
}

/* Interval after interval, each half of a series used again: every close
 * writes, in its log lines and its sidecar rows, the events of its own
 * interval and no other's, whether the fast path recorded them (counted by
 * the histogram's total) or decode() did (a duration over H, clamped), and
 * whatever the fast path's values are (its bounds settled at the close). */
static void every_close_counts_its_own_interval(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	static const int n[] = {70, 50, 40, 20, 30};
	for (int i = 0; i < 5; i++) {
		spans(f, 0, n[i], at(f, len / 2), 1000);
		spans(f, 1, i + 1, at(f, len / 2), (uint64_t)TB_HIST_DEFAULT_HIGHEST + 1);
		/* after the first, all by the fast path: the close settles their bounds */
		spans(f, 2, 2, at(f, len / 2), 100 * (uint64_t)(i + 1));
		spans(f, 2, 3, at(f, len / 2), 3000000 * (uint64_t)(i + 1));
		tb_collector_drain_all(&f->c);
		int64_t closing = f->c.drainers[0].interval_start_ns;
		assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
		int64_t logged[METRICS], events[METRICS];
		logged_totals(f, closing, logged);
		sidecar_events(f, closing, events);
		assert_int_equal(logged[0], n[i]);
		assert_int_equal(events[0], n[i]);
		assert_int_equal(logged[1], i + 1);
		assert_int_equal(events[1], i + 1);
		assert_int_equal(logged[2], 5);
		assert_int_equal(events[2], 5);
	}
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
 * buckets it wrote to; settling a series half finds its least non-zero
 * and its greatest value from them and the counts, and adds them to what
 * decode() recorded exactly. Settled after every drain, the histogram
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
		{{500, 600, 601}, 500, 601}, /* the first makes the series, through decode() */
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
	spans(f, 0, 1, at(f, len / 2), 0); /* makes the series, through decode() */
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
	assert_int_equal(tb_collector_drain_pass(&f->c), 10);
	assert_int_equal(s->fast[cur]->events, 10);
}

/* An interval that began before the producers' clock's zero (a long one,
 * soon after boot) still has its events taken by the fast path, and
 * counted as decode() counts them. */
static void an_interval_begun_before_the_clock_started_takes_the_fast_path(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	f->c.drainers[0].interval_start_ns = f->c.clock_offset_ns - 1000; /* 1 us before monotonic 0 */
	tb_drainer_set_open(&f->c.drainers[0]);
	spans(f, 1, 10, at(f, f->c.cfg.interval_ns / 2), 1000);
	assert_int_equal(tb_collector_drain_pass(&f->c), 10);
	tb_series *s = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[1])];
	assert_non_null(s);
	assert_int_equal(s->fast[cur]->events, 9); /* the first made the series, through decode() */
	tb_collector_fold_events(&f->c);
	assert_int_equal(s->hist[cur].total, 10);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[1])].events, 10);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[1])].late, 0);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The run loop's pass reads a ring that holds a whole batch at once, and
 * one that holds less only when its short read is due (TB_COLLECTOR_PARTIAL_NS
 * after the last); tb_collector_drain_all reads everything. */
static void the_poll_pass_reads_short_rings_only_when_due(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	tb_slot_follow *sf = &f->c.slots[f->p->slot];
	spans(f, 0, 10, at(f, len / 2), 1000);
	int64_t before = mono_ns();
	assert_int_equal(tb_collector_poll_pass(&f->c), 10); /* never read short yet: due */
	int64_t after = mono_ns();
	assert_true(sf->partial_after_ns >= before + TB_COLLECTOR_PARTIAL_NS &&
		    sf->partial_after_ns <= after + TB_COLLECTOR_PARTIAL_NS);
	sf->partial_after_ns = INT64_MAX; /* not due, whatever the time */
	spans(f, 0, 10, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_poll_pass(&f->c), 0);
	assert_false(f->c.drainers[0].last_pass_full);
	/* a whole batch behind those ten: taken at once, the ten first */
	spans(f, 0, TB_COLLECTOR_BATCH, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_poll_pass(&f->c), TB_COLLECTOR_BATCH);
	assert_true(f->c.drainers[0].last_pass_full);
	assert_int_equal(sf->partial_after_ns, INT64_MAX); /* a whole batch is not a short read */
	assert_int_equal(tb_collector_poll_pass(&f->c), 0);
	sf->partial_after_ns = 0; /* due */
	assert_int_equal(tb_collector_poll_pass(&f->c), 10);
	/* the plain pass and drain_all read short rings at any time */
	sf->partial_after_ns = INT64_MAX;
	spans(f, 0, 7, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_drain_pass(&f->c), 7);
	spans(f, 0, 5, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_drain_all(&f->c), 5);
	assert_int_equal(f->c.drainers[0].counts[f->c.drainers[0].cur][tb_metric_id(f->m[0])].events,
			 10 + 10 + TB_COLLECTOR_BATCH + 7 + 5);
}

/* Column k (from 0) of a sidecar row: where it starts, or NULL. */
static const char *csv_field(const char *line, int k)
{
	while (k-- > 0 && line)
		if ((line = strchr(line, ',')))
			line++;
	return line;
}
#define SIDECAR_GAP_COLUMN 11    /* longest_gap_us */
#define SIDECAR_FOLDED_COLUMN 12 /* folded */

/* The longest_gap_us column of the sidecar's ring row for the interval that
 * starts at start_ns, or -1 without one; *metric_empty: whether the metric
 * rows of that interval leave the column empty. */
static long long ring_gap(struct fixture *f, int64_t start_ns, bool *metric_empty)
{
	assert_int_equal(tb_writer_flush(f->c.writer), 0);
	char cmd[256], line[512];
	snprintf(cmd, sizeof(cmd), "cat '%s'/*.health.csv", f->log_dir);
	FILE *csv = popen(cmd, "r");
	assert_non_null(csv);
	long long gap = -1;
	bool header = false;
	if (metric_empty)
		*metric_empty = true;
	while (fgets(line, sizeof(line), csv)) {
		if (strcmp(line, TB_SIDECAR_COLUMNS) == 0)
			header = true;
		double start;
		char scope[16];
		if (sscanf(line, "%lf,%15[^,],", &start, scope) != 2 ||
		    llround(start * 1e3) != start_ns / 1000000)
			continue;
		const char *g = csv_field(line, SIDECAR_GAP_COLUMN);
		assert_non_null(g);
		if (strcmp(scope, "ring") == 0)
			gap = atoll(g);
		else if (strcmp(scope, "metric") == 0 && metric_empty && *g != ',')
			*metric_empty = false;
	}
	assert_int_equal(pclose(csv), 0);
	assert_true(header);
	return gap;
}

/* Passes, with a pause of 200 ms between two of them. */
static void stall(struct fixture *f)
{
	tb_collector_drain_pass(&f->c);
	struct timespec pause = {0, 200 * 1000 * 1000};
	nanosleep(&pause, NULL);
	tb_collector_drain_pass(&f->c);
}

/* Close the current interval; its start. */
static int64_t close_now(struct fixture *f, bool with_events)
{
	int64_t len = f->c.cfg.interval_ns, start = f->c.drainers[0].interval_start_ns;
	if (with_events)
		spans(f, 0, 5, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	return start;
}

/* Each ring's sidecar row says the longest time between two drain passes
 * since the last close: a stall shows beside the rings' next rows, kept over
 * one close that wrote none (its rings read only after it), and no further. */
static void ring_rows_carry_the_longest_gap_between_passes(void **state)
{
	struct fixture *f = *state;
	bool metric_empty = false;
	stall(f);
	int64_t first = close_now(f, true);
	assert_true(ring_gap(f, first, &metric_empty) >= 200000); /* the pause, in us */
	assert_true(metric_empty);                                /* not a ring's figure */
	int64_t second = close_now(f, true);
	long long g = ring_gap(f, second, NULL);
	assert_true(g >= 0 && g < 200000); /* each close starts afresh */
	stall(f);
	close_now(f, false); /* no ring did anything: no rows */
	int64_t fourth = close_now(f, true);
	assert_true(ring_gap(f, fourth, NULL) >= 200000); /* kept for the next rows */
	stall(f);
	close_now(f, false);
	close_now(f, false);
	int64_t seventh = close_now(f, true);
	g = ring_gap(f, seventh, NULL);
	assert_true(g >= 0 && g < 200000); /* but over one close only */
}

/* The sum of column `col` of the sidecar's rows of `scope` (and `name`
 * unless NULL) for the interval that starts at start_ns. */
static long long sidecar_sum(struct fixture *f, int64_t start_ns, const char *scope,
			     const char *name, int col)
{
	assert_int_equal(tb_writer_flush(f->c.writer), 0);
	char cmd[256], line[512];
	snprintf(cmd, sizeof(cmd), "cat '%s'/*.health.csv", f->log_dir);
	FILE *csv = popen(cmd, "r");
	assert_non_null(csv);
	long long sum = 0;
	while (fgets(line, sizeof(line), csv)) {
		double start;
		char sc[24], nm[96];
		if (sscanf(line, "%lf,%23[^,],%95[^,],", &start, sc, nm) != 3 ||
		    llround(start * 1e3) != start_ns / 1000000 || strcmp(sc, scope) != 0 ||
		    (name && strcmp(nm, name) != 0))
			continue;
		const char *v = csv_field(line, col);
		assert_non_null(v);
		sum += atoll(v);
	}
	assert_int_equal(pclose(csv), 0);
	return sum;
}

/* The health sidecar's per-metric event counts for the interval that
 * starts at start_ns (wall clock). */
static void sidecar_events(struct fixture *f, int64_t start_ns, int64_t *events)
{
	for (int k = 0; k < METRICS; k++) {
		char name[8];
		snprintf(name, sizeof(name), "m%d", k);
		events[k] = sidecar_sum(f, start_ns, "metric", name, 3);
	}
}

/* The live record carries what the sidecar's metric row counts beside its
 * count: negative and late events, unmatched halves. */
static void a_live_interval_carries_negative_late_and_unmatched(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	uint32_t id = tb_metric_id(f->m[1]);
	uint64_t done = at(f, len / 2);
	for (int k = 0; k < 4; k++) /* completed before they were due */
		tb_span(f->p, f->m[1], done + 1000, done);
	spans(f, 1, 6, at(f, -len / 2), 1000); /* completed in the interval before */
	spans(f, 1, 10, done, 1000);
	tb_collector_drain_all(&f->c);
	tb_drainer *d = &f->c.drainers[0];
	d->counts[d->cur][id].unmatched_start += 2; /* as expiry counts them */
	d->counts[d->cur][id].unmatched_end += 1;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	tb_live_snapshot snap;
	assert_int_equal(tb_live_read_newest(&f->c.seg, id, &snap), 0);
	assert_int_equal(snap.newest.count, 20);
	assert_int_equal(snap.newest.negative, 4);
	assert_int_equal(snap.newest.late, 6);
	assert_int_equal(snap.newest.unmatched_start, 2);
	assert_int_equal(snap.newest.unmatched_end, 1);
}

/* A close takes nothing from the rings: the drain threads do, and what a
 * stopping collector leaves there is the next collector's. */
static void a_close_leaves_the_rings_alone(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, 10, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	spans(f, 1, 5, at(f, len / 2), 1000);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(tb_collector_drain_pass(&f->c), 5);
}

/* Outside a close, late events still go to the current half. */
static void late_outside_a_close_stays_in_the_current_half(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	spans(f, 2, 7, at(f, -f->c.cfg.interval_ns / 2), 500);
	tb_collector_drain_all(&f->c);
	assert_int_equal(series_total(f, cur, 2), 7);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[2])].late, 7);
}

static uint64_t events_of(struct fixture *f, int metric)
{
	uint32_t id = tb_metric_id(f->m[metric]);
	tb_collector_fold_events(&f->c); /* housekeeping drains without folding */
	return f->c.drainers[0].counts[0][id].events + f->c.drainers[0].counts[1][id].events;
}

static void housekeep(struct fixture *f)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	tb_collector_housekeep(&f->c, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/* A thread that writes exactly a ring and leaves; the next one to take its
 * slot is read as any other: its position hint starts where it starts, not
 * a ring behind, and its ring holds nothing of the last owner's. */
static void the_next_owner_of_a_slot_is_read_in_full(void **state)
{
	struct fixture *f = *state;
	uint32_t cap = f->c.seg.layout.ring_capacity;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, (int)cap, at(f, len / 2), 1000);
	tb_detach(f->p);
	f->p = NULL;
	housekeep(f); /* DETACHED: drained, handed back FREE */
	assert_int_equal(tb_seg_slot(&f->c.seg, 0)->state, TB_SLOT_FREE);
	assert_int_equal(events_of(f, 0), cap);
	f->p = tb_attach(BUS, "next-owner");
	assert_int_equal(tb_producer_error(f->p, NULL), 0);
	assert_int_equal(f->p->slot, 0);
	f->m[0] = tb_metric(f->p, "m0");
	spans(f, 0, 3, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	tb_collector_drain_all(&f->c);
	assert_false(f->c.slots[0].quarantined);
	assert_int_equal(events_of(f, 0), cap + 3);
	assert_int_equal(ring_bad(&f->c.slots[0]), 0);
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

/* A ring quarantined before this collector started is handed back once its
 * owner is gone, and kept while the owner runs. */
static void a_ring_quarantined_before_start_is_freed_when_its_owner_is_gone(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	s->pid = getpid();
	s->pid_start_time = tb_proc_start_time(getpid());
	__atomic_store_n(&s->state, TB_SLOT_QUARANTINED, __ATOMIC_RELEASE);
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_QUARANTINED); /* its owner runs */
	f->c.slots[1].pid = 0; /* as a collector that never saw it */
	s->pid = child;
	s->pid_start_time = 12345;
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_FREE);
}

/* A live ring's owner is looked at every housekeeping: a pid that is gone
 * frees the slot at the next look, and a pid now another process's (its
 * start time differs; only every tenth look reads it) within ten looks. */
static void a_gone_or_reused_owner_frees_its_slot(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_slot_follow *fo = &f->c.slots[1];
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	uint64_t mine = tb_proc_start_time(getpid());
	assert_true(mine != 0);

	/* owned by this process: followed, and kept for many looks */
	s->pid = getpid();
	s->pid_start_time = mine;
	__atomic_store_n(&s->state, TB_SLOT_LIVE, __ATOMIC_RELEASE);
	for (int k = 0; k < 25; k++)
		housekeep(f);
	assert_int_equal(s->state, TB_SLOT_LIVE);
	assert_true(fo->followed);

	/* the owner is gone, between two reads of the start time */
	fo->pid = child;
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_FREE);

	/* owned again; then its pid belongs to a process started at another
	 * time (this one, as a reused pid would): freed within ten looks */
	s->pid = getpid();
	s->pid_start_time = mine;
	__atomic_store_n(&s->state, TB_SLOT_LIVE, __ATOMIC_RELEASE);
	housekeep(f);
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_LIVE);
	fo->pid_start_time = mine + 1;
	int looks = 0;
	while (s->state == TB_SLOT_LIVE && looks < 10) {
		housekeep(f);
		looks++;
	}
	assert_int_equal(s->state, TB_SLOT_FREE);
}

/* The drain records the common event (a SPAN of a metric with a series on
 * its ring, in range, completing in the current interval) without decode();
 * everything else goes to decode(). The two must record alike: the same
 * stream of events, every case at and around each limit, written once to
 * each of two rings, one drained with decode() alone and the other as the
 * drain does by default, leaves the two rings' series equal and every
 * per-metric counter doubled. (START/END halves are left out: they join
 * across rings, and only decode() takes them.) */
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

/* The stream of every case, drained by decode() alone from one ring and by
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
	/* during a close what is drained is the next half's, the fast path's
	 * too (from the closing interval's end), and nothing is the closing half's */
	if (closing)
		assert_true(tb_drainer_switch(&f->c.drainers[0], 0, true));
	int open = f->c.drainers[0].open_half, shut = closing ? f->c.drainers[0].cur ^ 1 : -1;
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
			 * decode()'s are exact: what the histograms report is the same */
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

/* The live area shows a bus's drops beside a metric's interval. A close
 * that reads drops but publishes no metric (the ring's events completed in
 * the next interval) hands them to the next close's metrics, once. */
static void drops_of_a_close_with_no_metric_show_with_the_next(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	uint32_t id0 = tb_metric_id(f->m[0]);
	/* a full ring of the next interval's events, then 3 STARTs: dropped */
	spans(f, 0, 4096, at(f, len + 1000), 1000);
	for (int k = 0; k < 3; k++)
		tb_start(f->p, f->m[1], (uint64_t)k, at(f, 0));
	tb_producer_stats st;
	tb_producer_stats_get(f->p, &st);
	assert_int_equal(st.dropped, 3);
	assert_int_equal(tb_collector_drain_all(&f->c), 4096);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0); /* no metric: m0's are next */
	tb_live_snapshot snap;
	assert_int_equal(tb_live_read_newest(&f->c.seg, id0, &snap), -ENOENT);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(tb_live_read_newest(&f->c.seg, id0, &snap), 0);
	assert_int_equal(snap.newest.count, 4096);
	assert_int_equal(snap.newest.dropped, 3);
	/* and carried once only */
	spans(f, 0, 5, at(f, 1000), 1000);
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(tb_live_read_newest(&f->c.seg, id0, &snap), 0);
	assert_int_equal(snap.newest.count, 5);
	assert_int_equal(snap.newest.dropped, 0);
}

/* ---- the live heap (publish.c) ---- */

#define HEAP_INTERVALS 1024 /* records per metric: more than the small heap holds */
#define WIDE_BATCHES 4
#define WIDE_SPANS 3000 /* a batch: less than the fixture's ring */
#define WIDE_PER_INTERVAL (WIDE_BATCHES * WIDE_SPANS)

/* The smallest heap, and room for many more intervals than it holds. */
static int setup_small_heap(void **state)
{
	return open_fixture(state, HEAP_INTERVALS, TB_LIVE_HEAP_MIN);
}

/* Latencies log-spread over 1 ns .. 2^40 ns (18 minutes): thousands of
 * distinct buckets an interval, frames of some 5 KiB. */
static uint64_t wide_latency(uint64_t *z)
{
	uint64_t x = (*z += 0x9e3779b97f4a7c15ULL);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return 1 + ((x >> 8) & ((UINT64_C(1) << (x % 40 + 1)) - 1));
}

struct heap_reader {
	const char *dir;
	uint32_t id;
	volatile int stop;
	uint64_t whole, corrupt, other;
};

/* Another process's view: a read-only mapping, every interval of metric
 * `id` read over and over while the collector overwrites the heap. */
static void *read_heap(void *arg)
{
	struct heap_reader *r = arg;
	tb_seg seg;
	const char *why = NULL;
	if (tb_seg_open(&seg, r->dir, BUS, NULL, TB_SEG_READONLY, &why) < 0) {
		r->other++;
		return NULL;
	}
	tb_hist h = {0};
	while (!r->stop) {
		for (uint32_t age = 0; age < HEAP_INTERVALS; age++) {
			tb_live_interval iv;
			int rc = tb_live_read(&seg, r->id, age, &iv, &h);
			if (rc == 0 && iv.count == WIDE_PER_INTERVAL && tb_hist_total(&h) == iv.count)
				r->whole++;
			else if (rc == -EBADMSG || rc == 0)
				r->corrupt++;
			else if (rc != -ERANGE && rc != -ENOENT && rc != -EAGAIN)
				r->other++;
			if (rc < 0)
				break;
		}
	}
	tb_hist_free(&h);
	tb_seg_close(&seg);
	return NULL;
}

/* A heap written one and a half times over: the oldest intervals leave the live area
 * (of a busy metric and of a quiet one alike), every one left reads whole
 * and decodes to its count, and a reader copying meanwhile never takes a
 * frame that was being overwritten. */
static void the_live_heap_lets_the_oldest_intervals_go_and_keeps_the_rest_whole(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	uint64_t heap = f->c.seg.layout.live_heap_bytes, z = 42;
	uint32_t busy = tb_metric_id(f->m[0]), quiet = tb_metric_id(f->m[1]);
	struct heap_reader r = {.dir = f->seg_dir, .id = busy};
	pthread_t reader;
	assert_int_equal(pthread_create(&reader, NULL, read_heap, &r), 0);
	tb_live_snapshot snap;
	uint32_t closes = 0;
	for (; f->c.publisher.head < heap + heap / 2 && closes < HEAP_INTERVALS; closes++) {
		for (int b = 0; b < WIDE_BATCHES; b++) {
			for (int k = 0; k < WIDE_SPANS; k++) {
				uint64_t done = at(f, 1000 + k);
				tb_span(f->p, f->m[0], done - wide_latency(&z), done);
			}
			assert_int_equal(tb_collector_drain_all(&f->c), WIDE_SPANS);
		}
		if (closes == 0) {
			spans(f, 1, 1, at(f, 1000), 500);
			assert_int_equal(tb_collector_drain_all(&f->c), 1);
		}
		assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
		if (closes == 0)
			assert_int_equal(tb_live_read_newest(&f->c.seg, quiet, &snap), 0);
	}
	r.stop = 1;
	pthread_join(reader, NULL);
	assert_true(f->c.publisher.head >= heap + heap / 2);
	assert_int_equal(r.corrupt, 0);
	assert_int_equal(r.other, 0);
	assert_true(r.whole > 0);
	/* the quiet metric's one interval was among the oldest frames */
	assert_int_equal(tb_live_read_newest(&f->c.seg, quiet, &snap), -ENOENT);
	assert_int_equal(tb_live_read_newest(&f->c.seg, busy, &snap), 0);
	uint32_t kept = snap.count;
	assert_true(kept > 0 && kept < closes);
	/* the newest interval let go is the one just before the oldest kept */
	assert_int_equal(snap.let_go_start_ns, snap.newest.start_ns - (int64_t)kept * len);
	uint64_t bytes = 0;
	int64_t newer_start = INT64_MAX;
	tb_hist h = {0};
	for (uint32_t age = 0; age < kept; age++) {
		tb_live_interval iv;
		assert_int_equal(tb_live_read(&f->c.seg, busy, age, &iv, &h), 0);
		assert_int_equal(iv.count, WIDE_PER_INTERVAL);
		assert_int_equal(tb_hist_total(&h), WIDE_PER_INTERVAL);
		assert_true(newer_start == INT64_MAX || iv.start_ns == newer_start - len);
		newer_start = iv.start_ns;
		bytes += iv.hist_len;
	}
	tb_live_interval iv;
	assert_int_equal(tb_live_read(&f->c.seg, busy, kept, &iv, &h), -ERANGE);
	tb_hist_free(&h);
	/* what is kept fits the heap, and at most an eighth of it more than a
	 * frame was let go early */
	assert_true(bytes <= heap);
	assert_true(bytes + heap / 8 + 2 * (bytes / kept) >= heap);
}

static void reopen(struct fixture *f)
{
	tb_collector_config cfg = f->c.cfg;
	tb_collector_close(&f->c);
	f->opened = false;
	cfg.fresh = false;
	const char *why = NULL;
	int rc = tb_collector_open(&f->c, &cfg, &why);
	if (rc < 0)
		fail_msg("reopen: %s (%s)", why ? why : "?", strerror(-rc));
	f->opened = true;
}

/* What the segment's accounts say ring `slot` has taken and not logged. */
static uint32_t unlogged(struct fixture *f, uint32_t slot)
{
	return tb_seg_ring(&f->c.seg, slot)->c_head - tb_seg_slot(&f->c.seg, slot)->logged_head;
}

/* The accounts (accounts.c) follow every entry taken: what the open halves
 * hold until their interval is written, nothing after; a collector that
 * finds the last one killed (its pid still in the header) counts what it
 * held as lost and says so in its sidecar, once. */
static void a_killed_collectors_unlogged_events_are_counted_lost(void **state)
{
	struct fixture *f = *state;
	uint32_t slot = (uint32_t)f->p->slot;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, 100, at(f, len / 2), 1000);
	spans(f, 1, 20, at(f, len + len / 2), 1000); /* the next interval's */
	tb_collector_drain_all(&f->c);
	assert_int_equal(unlogged(f, slot), 120);
	int64_t closing = f->c.closer.start_ns;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	const tb_seg_header *h = (const tb_seg_header *)f->c.seg.base;
	assert_int_equal(unlogged(f, slot), 20);
	assert_int_equal(h->logged_start_ns, closing);
	assert_int_equal(h->pending_start_ns, 0);
	assert_int_equal(h->collector_accounts, 1);
	spans(f, 2, 50, at(f, len / 2), 1000);
	/* a pair that meets (one event in the log, two entries), and a START
	 * that waits for its END, which the kill takes with the join table */
	tb_start(f->p, f->m[0], 7, at(f, len / 4));
	tb_end(f->p, f->m[0], 7, at(f, len / 2));
	tb_start(f->p, f->m[0], 8, at(f, len / 4));
	tb_collector_drain_all(&f->c);
	assert_int_equal(unlogged(f, slot), 73);
	/* closed and written: only the waiting START is still unaccounted */
	closing = f->c.closer.start_ns;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(unlogged(f, slot) + h->parked_logged, 1);
	spans(f, 2, 70, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);

	/* "killed": gone without closing its intervals, its pid left behind
	 * (tb_collector_close clears it, as a clean stop does) */
	tb_collector_config cfg = f->c.cfg;
	cfg.fresh = false;
	tb_collector_close(&f->c);
	f->opened = false;
	tb_seg s;
	assert_int_equal(tb_seg_open(&s, f->seg_dir, BUS, &cfg.seg, 0, NULL), 0);
	((tb_seg_header *)s.base)->collector_pid = 99999;
	tb_seg_close(&s);
	const char *why = NULL;
	assert_int_equal(tb_collector_open(&f->c, &cfg, &why), 0);
	f->opened = true;
	assert_true(f->c.accounts.inherited);
	assert_int_equal(f->c.accounts.lost_ring, 71); /* the spans and the START */
	assert_int_equal(f->c.accounts.dead_from_ns, closing + len);
	assert_int_equal(unlogged(f, slot), 0);
	assert_int_equal(sidecar_sum(f, closing + len, "collector-lost", "collector:99999", 3), 71);

	/* stopped cleanly after that: nothing more to report */
	reopen(f);
	assert_false(f->c.accounts.inherited);
	assert_int_equal(f->c.accounts.lost_ring, 0);
}

/* Intervals k = 1..n of metric 0, with k events each. */
static void publish_counts(struct fixture *f, int n)
{
	for (int k = 1; k <= n; k++) {
		spans(f, 0, k, at(f, 1000), 100 * (uint64_t)k);
		tb_collector_drain_all(&f->c);
		assert_int_equal(tb_collector_close_interval(&f->c, f->c.cfg.interval_ns), 0);
	}
}

static void expect_live_counts(struct fixture *f, uint32_t id, int n, const int64_t *newest_first)
{
	tb_hist h = {0};
	tb_live_interval iv;
	for (int age = 0; age < n; age++) {
		assert_int_equal(tb_live_read(&f->c.seg, id, (uint32_t)age, &iv, &h), 0);
		assert_int_equal(iv.count, newest_first[age]);
		assert_int_equal(tb_hist_total(&h), newest_first[age]);
	}
	assert_int_equal(tb_live_read(&f->c.seg, id, (uint32_t)n, &iv, &h), -ERANGE);
	tb_hist_free(&h);
}

/* A restarted collector keeps the intervals the one before published,
 * whole, and publishes after them; it keeps no further back than the first
 * it cannot vouch for, and a counter left odd is made even, that metric
 * starting afresh. */
static void a_restarted_collector_keeps_the_live_area_it_can_vouch_for(void **state)
{
	struct fixture *f = *state;
	uint32_t id0 = tb_metric_id(f->m[0]), id1 = tb_metric_id(f->m[1]);
	publish_counts(f, 3);
	tb_live_snapshot snap;
	assert_int_equal(tb_live_read_newest(&f->c.seg, id0, &snap), 0);
	assert_int_equal(snap.let_go_start_ns, 0);
	spans(f, 1, 5, at(f, 1000), 100);
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, f->c.cfg.interval_ns), 0);
	reopen(f);
	expect_live_counts(f, id0, 3, (const int64_t[]){3, 2, 1});
	expect_live_counts(f, id1, 1, (const int64_t[]){5});
	publish_counts(f, 1);
	expect_live_counts(f, id0, 4, (const int64_t[]){1, 3, 2, 1});
	/* scribbled: the third newest of m0 longer than any frame; m1 mid-write */
	tb_live_metric *lm0 = tb_seg_live(&f->c.seg, id0), *lm1 = tb_seg_live(&f->c.seg, id1);
	uint32_t cap = f->c.seg.layout.live_intervals;
	tb_seg_live_interval(&f->c.seg, id0, (lm0->newest + cap - 2) % cap)->hist_len = TB_LIVE_FRAME_MAX + 1;
	lm1->seq |= 1;
	reopen(f);
	expect_live_counts(f, id0, 2, (const int64_t[]){1, 3});
	assert_int_equal(lm1->seq & 1, 0);
	assert_int_equal(tb_live_read_newest(&f->c.seg, id1, &snap), -ENOENT);
}

/* ---- fold lanes (folds.c) ---- */

#define RING 4096 /* the fixture's ring_capacity */

/* The series histogram of metric k on slot 0, half `half`. */
static tb_hist *series_hist(struct fixture *f, int half, int k)
{
	tb_series *s = f->c.slots[0].t.series_of[tb_metric_id(f->m[k])];
	assert_non_null(s);
	return &s->hist[half];
}

/* Fill the ring with `RING` spans of metric 0 (1000 ns), then send n more
 * of metric k with this latency: each finds the ring full and is folded. */
static void fill_then_fold(struct fixture *f, int k, int n, uint64_t latency)
{
	spans(f, 0, RING, at(f, 1000), 1000);
	tb_producer_stats st;
	tb_producer_stats_get(f->p, &st);
	uint64_t before = st.folded;
	spans(f, k, n, at(f, 2000), latency);
	tb_producer_stats_get(f->p, &st);
	assert_int_equal(st.folded - before, n);
}

/* What a full ring folded is recorded at the close into the interval being
 * closed, at the highest value of its 2-digit count (1000 ns: 1003), with
 * the metric's events; negative ones at 0 and counted, those past an hour
 * at an hour and counted as clamped. The log line, the metric's sidecar row
 * and the ring's show them (folded column), and a second look takes nothing
 * more. */
static void folded_spans_count_in_the_closing_interval(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns, start = f->c.drainers[0].interval_start_ns;
	int cur = f->c.drainers[0].cur;
	uint16_t id1 = (uint16_t)tb_metric_id(f->m[1]);
	fill_then_fold(f, 1, 100, 1000);
	uint64_t done = at(f, 3000);
	tb_span(f->p, f->m[1], done + 5, done);                          /* negative */
	tb_span(f->p, f->m[1], done - (uint64_t)TB_FOLD_HIGHEST - 7, done); /* past an hour */
	assert_int_equal(tb_collector_drain_all(&f->c), RING);
	/* not yet: folds are taken by the close */
	assert_int_equal(f->c.drainers[0].counts[cur][id1].events, 0);
	take_folds(f, cur);
	tb_metric_counts *mc = &f->c.drainers[0].counts[cur][id1];
	assert_int_equal(mc->events, 102);
	assert_int_equal(mc->folded, 102);
	assert_int_equal(mc->negative, 1);
	assert_int_equal(mc->clamped, 1);
	tb_hist *h = series_hist(f, cur, 1);
	assert_int_equal(tb_hist_total(h), 102);
	assert_int_equal(h->counts[tb_hist_index_of(h, 1003)], 100);
	assert_int_equal(h->counts[tb_hist_index_of(h, 1000)], 0);
	assert_int_equal(h->counts[0], 1);
	assert_int_equal(h->counts[tb_hist_index_of(h, h->highest)], 1);
	assert_int_equal(ring_folded(&f->c.slots[0]), 102);
	/* taken once: a second look finds nothing new */
	take_slot_folds(f, 0, cur, true);
	assert_int_equal(mc->events, 102);
	assert_int_equal(tb_hist_total(h), 102);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	int64_t totals[METRICS];
	logged_totals(f, start, totals);
	assert_int_equal(totals[0], RING);
	assert_int_equal(totals[1], 102);
	assert_int_equal(sidecar_sum(f, start, "metric", "m1", SIDECAR_FOLDED_COLUMN), 102);
	assert_int_equal(sidecar_sum(f, start, "metric", "m1", 3), 102); /* events */
	assert_int_equal(sidecar_sum(f, start, "metric", "m0", SIDECAR_FOLDED_COLUMN), 0);
	assert_int_equal(sidecar_sum(f, start, "ring", NULL, SIDECAR_FOLDED_COLUMN), 102);
	assert_int_equal(sidecar_sum(f, start, "ring", NULL, 3), RING + 102);
	assert_int_equal(sidecar_sum(f, start, "ring", NULL, 4), 0); /* dropped */
}

/* A lane is read only once marked dirty (else every close would read every
 * lane of every ring); a fold after a read marks it again. */
static void only_dirty_lanes_are_read(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	fill_then_fold(f, 1, 10, 500);
	tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, 0, 0);
	assert_int_equal(lane->dirty, 1);
	take_folds(f, cur);
	assert_int_equal(lane->dirty, 0);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[1])].folded, 10);
	/* counts that grew with dirty clear (as if the store of 1 were not yet
	 * seen) wait for the next fold's mark, and are taken whole then */
	lane->counts[tb_fold_index(500)] += 3;
	take_folds(f, cur);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[1])].folded, 10);
	spans(f, 1, 1, at(f, 2000), 500);
	take_folds(f, cur);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[1])].folded, 14);
}

/* What a collector took is kept in the lane: one started after it (the
 * first stopped) takes only what was folded since, none twice. */
static void a_restarted_collector_takes_only_new_folds(void **state)
{
	struct fixture *f = *state;
	fill_then_fold(f, 2, 40, 700);
	tb_collector_drain_all(&f->c);
	take_folds(f, f->c.drainers[0].cur);
	assert_int_equal(f->c.drainers[0].counts[f->c.drainers[0].cur][tb_metric_id(f->m[2])].folded, 40);
	tb_collector_config cfg = f->c.cfg;
	tb_collector_close(&f->c);
	f->opened = false;
	/* the producer folds on while no collector runs */
	fill_then_fold(f, 2, 25, 700);
	cfg.fresh = false;
	const char *why = NULL;
	int rc = tb_collector_open(&f->c, &cfg, &why);
	if (rc < 0)
		fail_msg("reopen: %s (%s)", why ? why : "?", strerror(-rc));
	f->opened = true;
	/* the new collector's first look reads every lane, dirty or not */
	tb_seg_fold_lane(&f->c.seg, 0, 0)->dirty = 0;
	take_folds(f, f->c.drainers[0].cur);
	assert_int_equal(f->c.drainers[0].counts[f->c.drainers[0].cur][tb_metric_id(f->m[2])].folded, 25);
	assert_int_equal(f->c.drainers[0].counts[f->c.drainers[0].cur][tb_metric_id(f->m[2])].events, 25);
}

/* Lanes are untrusted: a count below what was taken, a metric that is not
 * registered, or more than a read may take, is one bad event of the ring
 * and nothing recorded; the lane goes on from what it then holds. */
static void impossible_lanes_are_counted_bad(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	uint16_t id1 = (uint16_t)tb_metric_id(f->m[1]);
	fill_then_fold(f, 1, 10, 300);
	take_folds(f, cur);
	assert_int_equal(f->c.drainers[0].counts[cur][id1].folded, 10);
	tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, 0, 0);
	uint32_t k = tb_fold_index(300);
	/* a count that went down */
	lane->counts[k] -= 4;
	lane->counts[k + 1] += 6;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(f->c.drainers[0].counts[cur][id1].folded, 10);
	assert_int_equal(ring_bad(&f->c.slots[0]), 1);
	/* from what it holds now, honest folds are taken again */
	spans(f, 1, 2, at(f, 2000), 300);
	take_folds(f, cur);
	assert_int_equal(f->c.drainers[0].counts[cur][id1].folded, 12);
	/* a metric no one registered */
	lane->metric1 = 200;
	lane->counts[k] += 5;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(ring_bad(&f->c.slots[0]), 2);
	assert_int_equal(f->c.drainers[0].counts[cur][id1].folded, 12);
	/* an id past every metric, and a read of more than 2^40 */
	lane->metric1 = TB_MAX_METRICS + 1;
	lane->counts[k] += 1;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(ring_bad(&f->c.slots[0]), 3);
	lane->metric1 = id1 + 1u;
	lane->counts[k] += UINT64_C(1) << 41;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(ring_bad(&f->c.slots[0]), 4);
	assert_int_equal(f->c.drainers[0].counts[cur][id1].folded, 12);
	assert_int_equal(tb_hist_total(series_hist(f, cur, 1)), 12);
}

/* A slot handed back FREE has what its owner folded taken first, and its
 * lanes free and empty for the next owner. */
static void a_freed_slot_has_its_folds_taken_and_its_lanes_reset(void **state)
{
	struct fixture *f = *state;
	fill_then_fold(f, 1, 30, 900);
	tb_detach(f->p);
	f->p = NULL;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	tb_collector_housekeep(&f->c, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	assert_int_equal(tb_seg_slot(&f->c.seg, 0)->state, TB_SLOT_FREE);
	int h = f->c.drainers[0].open_half;
	assert_int_equal(f->c.drainers[0].counts[h][tb_metric_id(f->m[1])].folded, 30);
	const tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, 0, 0);
	assert_int_equal(lane->metric1, 0);
	assert_int_equal(lane->counts[tb_fold_index(900)], 0);
	assert_int_equal(lane->taken[tb_fold_index(900)], 0);
	assert_int_equal(lane->dirty, 0);
}

/* The values fold counts are recorded at: the highest of each 2-digit
 * count, at most an hour, and never below any value the count holds. */
static void fold_values_are_each_counts_highest(void **state)
{
	struct fixture *f = *state;
	const int64_t *fv = f->c.fold_value;
	for (uint64_t v = 0; v < 300000; v += v < 4096 ? 1 : 97) {
		uint32_t k = tb_fold_index(v);
		assert_true(fv[k] >= (int64_t)v);
		assert_true(fv[k] <= (int64_t)v + (int64_t)(v >> 7) + 1);
		assert_int_equal(tb_fold_index((uint64_t)fv[k]), k);
	}
	assert_int_equal(fv[tb_fold_index((uint64_t)TB_FOLD_HIGHEST)], TB_FOLD_HIGHEST);
	for (uint64_t v = 0; v < 256; v++)
		assert_int_equal(fv[v], (int64_t)v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(drained_during_close_count_in_the_next_interval, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_killed_collectors_unlogged_events_are_counted_lost, setup,
						teardown),
		cmocka_unit_test_setup_teardown(late_outside_a_close_stays_in_the_current_half, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_drain_goes_on_by_the_fast_path_after_a_switch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_close_after_bare_passes_counts_every_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(every_close_counts_its_own_interval, setup, teardown),
		cmocka_unit_test_setup_teardown(ring_rows_carry_the_longest_gap_between_passes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_poll_pass_reads_short_rings_only_when_due, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			an_interval_begun_before_the_clock_started_takes_the_fast_path, setup, teardown),
		cmocka_unit_test_setup_teardown(the_fast_path_keeps_the_least_and_greatest_value, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_live_interval_carries_negative_late_and_unmatched, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_close_leaves_the_rings_alone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_next_owner_of_a_slot_is_read_in_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_gone_or_reused_owner_frees_its_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(the_drain_records_as_decode_does, setup, teardown),
		cmocka_unit_test_setup_teardown(drops_of_a_close_with_no_metric_show_with_the_next, setup,
						teardown),
		cmocka_unit_test_setup_teardown(folded_spans_count_in_the_closing_interval, setup, teardown),
		cmocka_unit_test_setup_teardown(only_dirty_lanes_are_read, setup, teardown),
		cmocka_unit_test_setup_teardown(a_restarted_collector_takes_only_new_folds, setup, teardown),
		cmocka_unit_test_setup_teardown(impossible_lanes_are_counted_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(a_freed_slot_has_its_folds_taken_and_its_lanes_reset, setup,
						teardown),
		cmocka_unit_test_setup_teardown(fold_values_are_each_counts_highest, setup, teardown),
		cmocka_unit_test_setup_teardown(the_second_pass_takes_the_fast_path, setup, teardown),
		cmocka_unit_test_setup_teardown(a_series_pool_past_the_tables_reach_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_drain_records_as_decode_does_across_the_ring_end, setup, teardown),
		cmocka_unit_test_setup_teardown(the_drain_records_as_decode_does_in_the_second_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(the_drain_records_as_decode_does_during_a_close, setup, teardown),
		cmocka_unit_test_setup_teardown(
			the_live_heap_lets_the_oldest_intervals_go_and_keeps_the_rest_whole,
			setup_small_heap, teardown),
		cmocka_unit_test_setup_teardown(a_restarted_collector_keeps_the_live_area_it_can_vouch_for,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_spoiled_event_does_not_stall_the_ring, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_ring_quarantined_before_start_is_freed_when_its_owner_is_gone, setup,
			teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
