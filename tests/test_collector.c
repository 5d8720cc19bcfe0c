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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector.h"
#include "tailbus/log.h"
#include "tailbus/producer.h"

#define BUS "test-collector"
#define METRICS 3

struct fixture {
	char seg_dir[64], log_dir[64];
	tb_collector c;
	bool opened;
	tb_producer *p;
	tb_metric_t m[METRICS];
};

static int setup(void **state)
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
static uint64_t at(const struct fixture *f, int64_t offset_ns)
{
	return (uint64_t)(f->c.interval_start_ns - f->c.clock_offset_ns + offset_ns);
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

static void drained_during_close_count_in_the_next_interval(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	int cur = f->c.cur;
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
	int64_t closing = f->c.interval_start_ns;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	/* the closed interval's lines hold what was drained before the close,
	 * nothing drained during it */
	int64_t logged[METRICS];
	logged_totals(f, closing, logged);
	for (int k = 0; k < METRICS; k++)
		assert_int_equal(logged[k], 100);
	/* the close drained the ring: nothing is left for a pass after it */
	assert_int_equal(tb_collector_drain_pass(&f->c), 0);
	/* and it all went to the new current half, none into the closed one */
	int next = f->c.cur;
	assert_int_equal(next, cur ^ 1);
	assert_int_equal(f->c.open_half, next);
	assert_int_equal(f->c.late_before_ns, f->c.interval_start_ns);
	assert_int_equal(series_total(f, next, 0), 40);
	assert_int_equal(f->c.counts[next][tb_metric_id(f->m[0])].events, 40);
	assert_int_equal(f->c.counts[next][tb_metric_id(f->m[0])].late, 40);
	assert_int_equal(series_total(f, next, 1), 25);
	assert_int_equal(f->c.counts[next][tb_metric_id(f->m[1])].events, 25);
	assert_int_equal(f->c.counts[next][tb_metric_id(f->m[1])].late, 0);
	assert_int_equal(series_total(f, next, 2), 30);
	assert_int_equal(f->c.counts[next][tb_metric_id(f->m[2])].late, 30);
}

/* The closes at shutdown take nothing from the rings: what they took would
 * go to a half no one closes, where left it is the next collector's. */
static void closes_at_shutdown_leave_the_rings_alone(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, 10, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	spans(f, 1, 5, at(f, len / 2), 1000);
	f->c.stopping = true;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	f->c.stopping = false;
	assert_int_equal(tb_collector_drain_pass(&f->c), 5);
}

/* Outside a close, late events still go to the current half. */
static void late_outside_a_close_stays_in_the_current_half(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.cur;
	spans(f, 2, 7, at(f, -f->c.cfg.interval_ns / 2), 500);
	tb_collector_drain_all(&f->c);
	assert_int_equal(series_total(f, cur, 2), 7);
	assert_int_equal(f->c.counts[cur][tb_metric_id(f->m[2])].late, 7);
}

static uint64_t events_of(const struct fixture *f, int metric)
{
	uint32_t id = tb_metric_id(f->m[metric]);
	return f->c.counts[0][id].events + f->c.counts[1][id].events;
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
	assert_int_equal(f->c.slots[0].bad_events, 0);
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
	assert_int_equal(f->c.slots[0].bad_events, 0);
	spans(f, 0, 1, done, 1000); /* past the ring's end: the hint, then the third pass */
	tb_collector_drain_all(&f->c);
	assert_int_equal(f->c.slots[0].bad_events, 1);
	assert_int_equal(events_of(f, 0), 2 * (uint64_t)cap);
	/* the third pass, written up to the spoiled event's slot: that slot does
	 * not read as a new event, and the producer goes on writing */
	spans(f, 0, 9, done, 1000);
	tb_collector_drain_all(&f->c);
	assert_int_equal(f->c.slots[0].bad_events, 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(drained_during_close_count_in_the_next_interval, setup,
						teardown),
		cmocka_unit_test_setup_teardown(late_outside_a_close_stays_in_the_current_half, setup,
						teardown),
		cmocka_unit_test_setup_teardown(closes_at_shutdown_leave_the_rings_alone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_next_owner_of_a_slot_is_read_in_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_spoiled_event_does_not_stall_the_ring, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_ring_quarantined_before_start_is_freed_when_its_owner_is_gone, setup,
			teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
