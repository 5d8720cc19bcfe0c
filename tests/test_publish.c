/* test_publish.c - the live heap (publish.c), in process: what a close
 * publishes into the segment's live area, what it lets go when the heap is
 * full, what a reader in another process can copy meanwhile, and what a
 * restarted collector keeps. A real collector and producer
 * (collector_fixture.h), closing by hand.
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

#include <cmocka.h>

#include "collector_fixture.h"
#include "tailbus/live.h"
#include "tailbus/prom_export.h"

#define HEAP_INTERVALS 1024 /* records per metric: more than the small heap holds */
#define WIDE_BATCHES 4
#define WIDE_SPANS 3000 /* a batch: less than the fixture's ring */
#define WIDE_PER_INTERVAL (WIDE_BATCHES * WIDE_SPANS)

/* The smallest heap, and room for many more intervals than it holds. */
static int setup_small_heap(void **state)
{
	return open_fixture(state, HEAP_INTERVALS, TB_LIVE_HEAP_MIN);
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

/* A heap written one and a bank times over: the oldest intervals leave the live area
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
	/* a window of the kept intervals lost none; one more asks for one let go */
	assert_false(tb_live_let_go(&f->c.seg, busy, kept, kept, snap.newest.start_ns, len));
	assert_true(tb_live_let_go(&f->c.seg, busy, kept + 1, kept, snap.newest.start_ns, len));
	assert_false(tb_live_let_go(&f->c.seg, busy, kept + 1, 0, snap.newest.start_ns, len));
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

/* The collector stopped and started again on the same bus. */
static void reopen(struct fixture *f)
{
	tb_collector_config cfg;
	fixture_stop(f, &cfg);
	fixture_restart(f, &cfg);
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
	reopen(f); /* maps the segment again: lm1 is read anew */
	expect_live_counts(f, id0, 2, (const int64_t[]){1, 3});
	assert_int_equal(tb_seg_live(&f->c.seg, id1)->seq & 1, 0);
	assert_int_equal(tb_live_read_newest(&f->c.seg, id1, &snap), -ENOENT);
}

/* An exporter (host "h") of the fixture's bus (label "b"), mapped read-only
 * into *seg as tailbus export maps it. */
static tb_prom_export *exporter(struct fixture *f, tb_seg *seg)
{
	const char *why = NULL;
	assert_int_equal(tb_seg_open(seg, f->seg_dir, BUS, NULL, TB_SEG_READONLY, &why), 0);
	tb_prom_export *e;
	assert_int_equal(tb_prom_export_new(&e, "h", TB_PROM_SCHEMA_DEFAULT), 0);
	assert_int_equal(tb_prom_export_add_bus(e, seg, "b"), 0);
	return e;
}

/* tailbus_events_total of `metric` in the exporter's text exposition; -1
 * when it has no such series. *series (if given) gets how many it has. */
static double exported_events(tb_prom_export *e, const char *metric, int *series)
{
	tb_prom_buf out = {0};
	assert_int_equal(tb_prom_export_render(e, false, 0, &out), 0);
	char *text = strndup(out.data, out.len);
	assert_non_null(text);
	char key[128];
	snprintf(key, sizeof(key), "tailbus_events_total{bus=\"b\",metric=\"%s\",host=\"h\"} ", metric);
	const char *at = strstr(text, key);
	double v = at ? strtod(at + strlen(key), NULL) : -1;
	if (series)
		for (*series = 0; at; at = strstr(at + 1, key))
			++*series;
	free(text);
	tb_prom_buf_free(&out);
	return v;
}

static double exported_events_of_m0(tb_prom_export *e)
{
	double v = exported_events(e, "m0", NULL);
	assert_true(v >= 0);
	return v;
}

/* The exporter counts from its start: what a metric had published before
 * is its baseline, taken at the first read of the metric that succeeds,
 * not at the first poll, which may fail for it (the collector caught
 * mid-publish, its sequence counter odd): then the next poll must not add
 * the whole live area. */
static void the_exporters_baseline_waits_for_a_read_that_succeeds(void **state)
{
	struct fixture *f = *state;
	uint32_t id = tb_metric_id(f->m[0]);
	publish_counts(f, 2); /* 3 events before the exporter */
	tb_seg seg;
	tb_prom_export *e = exporter(f, &seg);
	uint64_t *seq = &tb_seg_live(&f->c.seg, id)->seq;
	uint64_t was = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
	__atomic_store_n(seq, was | 1, __ATOMIC_RELEASE); /* "mid-publish" */
	assert_true(tb_prom_export_poll(e) < 0);
	__atomic_store_n(seq, was, __ATOMIC_RELEASE);
	assert_int_equal(tb_prom_export_poll(e), 0);
	assert_true(exported_events_of_m0(e) == 0);
	spans(f, 0, 4, at(f, 1000), 100);
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, f->c.cfg.interval_ns), 0);
	assert_int_equal(tb_prom_export_poll(e), 0);
	assert_true(exported_events_of_m0(e) == 4);
	tb_prom_export_free(e);
	tb_seg_close(&seg);
}

/* Interval `age` of metric `id` with its frame in the live heap overwritten. */
static void scribble_frame(struct fixture *f, uint32_t id, uint32_t age)
{
	uint32_t cap = f->c.seg.layout.live_intervals;
	const tb_live_interval *iv =
		tb_seg_live_interval(&f->c.seg, id, (tb_seg_live(&f->c.seg, id)->newest + cap - age) % cap);
	assert_int_equal(iv->count, 2);
	uint64_t heap = f->c.seg.layout.live_heap_bytes;
	for (uint64_t k = 0; k < iv->hist_len; k++)
		tb_seg_live_heap_bytes(&f->c.seg)[(iv->frame_pos + k) % heap] = 0x55;
}

/* A live interval whose histogram does not decode (a producer scribbled on
 * the live heap): the exporter passes over it, says whose it was, and adds
 * the intervals after it, in that poll and the next ones. */
static void the_exporter_passes_over_a_corrupt_interval(void **state)
{
	struct fixture *f = *state;
	uint32_t id = tb_metric_id(f->m[0]);
	publish_counts(f, 1); /* before the exporter: its baseline */
	tb_seg seg;
	tb_prom_export *e = exporter(f, &seg);
	assert_int_equal(tb_prom_export_poll(e), 0);
	publish_counts(f, 3); /* 1, 2 and 3 events */
	scribble_frame(f, id, 1); /* the middle one */
	assert_int_equal(tb_prom_export_poll(e), -EBADMSG);
	assert_string_equal(tb_prom_export_where(e), "bus b, metric m0");
	const char *newest = NULL;
	assert_int_equal(tb_prom_export_passed_over(e, &newest), 1);
	assert_string_equal(newest, "bus b, metric m0");
	assert_true(exported_events_of_m0(e) == 1 + 3);
	assert_int_equal(tb_prom_export_poll(e), 0); /* not read again */
	assert_int_equal(tb_prom_export_passed_over(e, NULL), 1);
	assert_string_equal(tb_prom_export_where(e), "");
	publish_counts(f, 2); /* 1 and 2 events, the newest scribbled on */
	scribble_frame(f, id, 0);
	assert_int_equal(tb_prom_export_poll(e), -EBADMSG);
	assert_int_equal(tb_prom_export_poll(e), 0); /* passed over, though the newest */
	assert_true(exported_events_of_m0(e) == 1 + 3 + 1);
	/* a record whose frame it cannot have (no bytes) */
	publish_counts(f, 2);
	uint32_t cap = f->c.seg.layout.live_intervals;
	tb_seg_live_interval(&f->c.seg, id, (tb_seg_live(&f->c.seg, id)->newest + cap - 1) % cap)->hist_len = 0;
	assert_int_equal(tb_prom_export_poll(e), -EBADMSG);
	assert_string_equal(tb_prom_export_where(e), "bus b, metric m0");
	assert_true(exported_events_of_m0(e) == 1 + 3 + 1 + 2);
	/* two metrics' in one poll: both passed over, and counted */
	for (int m = 0; m < 2; m++)
		spans(f, m, 2, at(f, 1000), 100);
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, f->c.cfg.interval_ns), 0);
	scribble_frame(f, id, 0);
	scribble_frame(f, tb_metric_id(f->m[1]), 0);
	assert_int_equal(tb_prom_export_poll(e), -EBADMSG);
	assert_int_equal(tb_prom_export_passed_over(e, &newest), 5);
	assert_string_equal(newest, "bus b, metric m1");
	/* one passed over does not hide another metric's read that fails */
	for (int m = 0; m < 2; m++)
		spans(f, m, 2, at(f, 1000), 100);
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, f->c.cfg.interval_ns), 0);
	scribble_frame(f, id, 0);
	uint64_t *seq = &tb_seg_live(&f->c.seg, tb_metric_id(f->m[1]))->seq;
	uint64_t was = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
	__atomic_store_n(seq, was | 1, __ATOMIC_RELEASE); /* "mid-publish" */
	assert_int_equal(tb_prom_export_poll(e), -EAGAIN);
	assert_string_equal(tb_prom_export_where(e), "bus b, metric m1");
	assert_int_equal(tb_prom_export_passed_over(e, NULL), 6);
	__atomic_store_n(seq, was, __ATOMIC_RELEASE);
	tb_prom_export_free(e);
	tb_seg_close(&seg);
}

/* A name registered twice (a registrant stalled past the 10 ms a lookup
 * waits, another registered the name again further on, then the first
 * finished): the series the exporter followed first keeps the label and
 * its counts, which never go back; the other entry gets metric#<id>. */
static void an_exported_series_keeps_its_label(void **state)
{
	struct fixture *f = *state;
	int stalled = tb_seg_metric_register(&f->c.seg, "zz");
	assert_true(stalled >= 0);
	tb_metric_entry *e0 = tb_seg_metric(&f->c.seg, (uint32_t)stalled);
	e0->state = TB_METRIC_RESERVING;
	f->m[2] = tb_metric(f->p, "zz");
	uint32_t again = tb_metric_id(f->m[2]);
	assert_true(again != (uint32_t)stalled);
	tb_seg seg;
	tb_prom_export *e = exporter(f, &seg);
	assert_int_equal(tb_prom_export_poll(e), 0);
	for (int k = 0; k < 2; k++) {
		spans(f, 2, 5, at(f, 1000), 100);
		tb_collector_drain_all(&f->c);
		assert_int_equal(tb_collector_close_interval(&f->c, f->c.cfg.interval_ns), 0);
		assert_int_equal(tb_prom_export_poll(e), 0);
		if (k == 0)
			e0->state = TB_METRIC_READY; /* the stalled one finishes */
	}
	int series = 0;
	assert_true(exported_events(e, "zz", &series) == 10);
	assert_int_equal(series, 1);
	char other[32];
	snprintf(other, sizeof(other), "metric#%d", stalled);
	assert_true(exported_events(e, other, NULL) == 0);
	tb_prom_export_free(e);
	tb_seg_close(&seg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_exporter_passes_over_a_corrupt_interval, setup,
						teardown),
		cmocka_unit_test_setup_teardown(an_exported_series_keeps_its_label, setup, teardown),
		cmocka_unit_test_setup_teardown(
			the_live_heap_lets_the_oldest_intervals_go_and_keeps_the_rest_whole,
			setup_small_heap, teardown),
		cmocka_unit_test_setup_teardown(
			a_restarted_collector_keeps_the_live_area_it_can_vouch_for,
			setup, teardown),
		cmocka_unit_test_setup_teardown(the_exporters_baseline_waits_for_a_read_that_succeeds,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
