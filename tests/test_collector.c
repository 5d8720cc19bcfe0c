/* test_collector.c - the collector's interval close, in process.
 *
 * A real collector (collector_fixture.h: tb_collector_open on a fresh bus in
 * a private directory, log through the real writer) and a real producer
 * handle in the same process. The close of an interval takes milliseconds
 * (tens the first time a series bank is used), so the drain goes on between
 * the metrics it closes; what is checked is that events drained then are
 * neither lost nor written into the bank being closed: they count in the
 * next interval, as late when they completed in the closing one, exactly as
 * if they had been drained after the close. Also what a close writes beside
 * the log: the health sidecar's rows, the live record's counters, and the
 * accounts a collector started after a kill counts the loss from; and when
 * the run loop looks at the schedule next.
 *
 * The drain itself is test_drain.c's, slots test_slots.c's, the live heap
 * test_publish.c's and fold lanes test_folds.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_fixture.h"
#include "tailbus/live.h"

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
	 * its own bank is still open), late once drained; 25 of the next */
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
	 * into the new current bank, none into the closed one */
	assert_int_equal(tb_collector_pass_all(&f->c), 95);
	int next = f->c.drainers[0].cur;
	assert_int_equal(next, cur ^ 1);
	assert_int_equal(f->c.drainers[0].open_bank, next);
	assert_int_equal(f->c.drainers[0].late_before_ns, f->c.drainers[0].interval_start_ns);
	/* the next interval's 25 by the fast path, the late ones by record_slow() */
	tb_series *s1 = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[1])];
	assert_non_null(s1);
	assert_int_equal(s1->fast[next]->events, 25);
	tb_collector_flush_fast(&f->c);
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
 * next bank. */
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
	while ((k = tb_collector_pass_all(&f->c)) > 0)
		taken += k;
	assert_int_equal(taken, n);
	tb_series *s = f->c.slots[f->p->slot].t.series_of[tb_metric_id(f->m[1])];
	assert_non_null(s);
	assert_int_equal(s->fast[next]->events, n); /* all of them by the fast path */
	tb_collector_flush_fast(&f->c);
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
	while (tb_collector_pass_all(&f->c) > 0)
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

/* Interval after interval, each bank of a series used again: every close
 * writes, in its log lines and its sidecar rows, the events of its own
 * interval and no other's, whether the fast path recorded them (counted by
 * the histogram's total) or record_slow() did (a duration over H, clamped), and
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

/* The longest_gap_us column of the sidecar's ring row for the interval that
 * starts at start_ns, or -1 without one; *metric_empty: whether the metric
 * rows of that interval leave the column empty. */
static long long ring_gap(struct fixture *f, int64_t start_ns, bool *metric_empty)
{
	FILE *csv = sidecar_open(f);
	char line[512];
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
	tb_collector_pass_all(&f->c);
	struct timespec pause = {0, 200 * 1000 * 1000};
	nanosleep(&pause, NULL);
	tb_collector_pass_all(&f->c);
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

/* The live record carries what the sidecar's metric row counts beside its
 * count: negative and late events, unmatched START/END events. */
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
	assert_int_equal(tb_collector_pass_all(&f->c), 5);
}

/* Outside a close, late events still go to the current bank. */
static void late_outside_a_close_stays_in_the_current_half(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	spans(f, 2, 7, at(f, -f->c.cfg.interval_ns / 2), 500);
	tb_collector_drain_all(&f->c);
	assert_int_equal(series_total(f, cur, 2), 7);
	assert_int_equal(f->c.drainers[0].counts[cur][tb_metric_id(f->m[2])].late, 7);
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

/* An event that completes past the next interval (a producer's clock
 * ahead) is filed in the next interval, as ever, and counted there as
 * ahead; one of the next interval itself is not. */
static void an_event_past_the_next_interval_is_counted_ahead(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, 3, at(f, len + len / 2), 1000); /* the next interval's */
	spans(f, 0, 2, at(f, 3 * len + 5), 1000);   /* two further on */
	tb_collector_drain_all(&f->c);
	int64_t first = f->c.closer.start_ns;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(sidecar_sum(f, first, "metric", "m0", 3), 0);
	assert_int_equal(sidecar_sum(f, first + len, "metric", "m0", 3), 5);
	assert_int_equal(sidecar_sum(f, first + len, "metric", "m0", 13), 2);
}

/* What the segment's accounts say ring `slot` has taken and not logged. */
static uint32_t unlogged(struct fixture *f, uint32_t slot)
{
	return tb_seg_ring(&f->c.seg, slot)->c_head - tb_seg_slot(&f->c.seg, slot)->logged_head;
}

/* The accounts (accounts.c) follow every entry taken: what the open banks
 * hold until their interval is written, nothing after; a START waiting for
 * its END is unaccounted until it leaves the join table. A collector that
 * finds the last one killed (its pid still in the header) counts what was
 * unaccounted as lost and says so in its sidecar, once. */
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
	tb_collector_config cfg;
	fixture_stop(f, &cfg);
	tb_seg s;
	assert_int_equal(tb_seg_open(&s, f->seg_dir, BUS, &cfg.seg, 0, NULL), 0);
	((tb_seg_header *)s.base)->collector_pid = 99999;
	tb_seg_close(&s);
	fixture_restart(f, &cfg);
	assert_true(f->c.accounts.inherited);
	assert_int_equal(f->c.accounts.lost_ring, 71); /* the spans and the START */
	assert_int_equal(f->c.accounts.dead_from_ns, closing + len);
	assert_int_equal(unlogged(f, slot), 0);
	assert_int_equal(sidecar_sum(f, closing + len, "collector-lost", "collector:99999", 3), 71);

	/* stopped cleanly after that: nothing more to report */
	fixture_stop(f, &cfg);
	fixture_restart(f, &cfg);
	assert_false(f->c.accounts.inherited);
	assert_int_equal(f->c.accounts.lost_ring, 0);
}

/* The whole of a file, NUL-terminated; its length in *len. */
static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	char *buf = malloc(1 << 20);
	assert_non_null(buf);
	*len = fread(buf, 1, (1 << 20) - 1, fp);
	buf[*len] = '\0';
	fclose(fp);
	return buf;
}

/* A kill amid the write of an interval's log lines. The interval (10, 20
 * and 30 spans of m0..m2: three lines) is closed and written, then the
 * segment and the log are put back as the kill would have left them: its
 * accounts pending (the *_next fields theirs, logged_start_ns the one
 * before), and the log cut after `whole_lines` of its lines, half way
 * into the next (all of them: not cut, the write had completed). The collector started next must count the
 * interval lost whole when a part of it is missing, and cut the log back
 * to where it begins; and count nothing when it is all there. */
static void kill_amid_an_intervals_write(struct fixture *f, int whole_lines)
{
	uint32_t slot = (uint32_t)f->p->slot;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, 1, at(f, len / 2), 1000); /* an interval logged before */
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	tb_slot *s = tb_seg_slot(&f->c.seg, slot);
	uint32_t head_before = s->logged_head;
	int64_t logged_before = ((tb_seg_header *)f->c.seg.base)->logged_start_ns;
	for (int m = 0; m < METRICS; m++)
		spans(f, m, 10 * (m + 1), at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	int64_t closing = f->c.closer.start_ns;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	/* what the closer said it was writing: its three lines */
	assert_int_equal(((tb_seg_header *)f->c.seg.base)->pending_lines, METRICS);
	char log[4096];
	assert_int_equal(tb_writer_newest_log(f->log_dir, BUS, log, sizeof(log)), 0);
	tb_collector_config cfg;
	fixture_stop(f, &cfg);
	size_t size;
	char *text = slurp(log, &size);
	char *first = strstr(text, "\nTag=m0,"); /* the interval before's line */
	assert_non_null(first);
	first = strchr(first + 1, '\n'); /* the interval's first line follows */
	assert_non_null(first);
	size_t lines_at = (size_t)(first + 1 - text);
	/* the cut: whole_lines of its lines, then half of the next */
	char *cut = first + 1;
	for (int k = 0; k <= whole_lines && whole_lines < METRICS; k++) {
		char *end = strchr(cut, '\n');
		assert_non_null(end);
		cut = k < whole_lines ? end + 1 : cut + (end - cut) / 2;
	}
	assert_non_null(strstr(first, "\nTag=m2,")); /* its three lines, in one write */
	tb_seg seg;
	assert_int_equal(tb_seg_open(&seg, f->seg_dir, BUS, &cfg.seg, 0, NULL), 0);
	tb_seg_header *h = (tb_seg_header *)seg.base;
	tb_slot *ss = tb_seg_slot(&seg, slot);
	ss->logged_head_next = ss->logged_head;
	ss->logged_head = head_before;
	h->logged_start_ns = logged_before;
	h->pending_start_ns = closing;
	h->pending_lines = METRICS;
	h->parked_logged_next = h->parked_logged;
	h->collector_pid = 99999;
	tb_seg_close(&seg);
	if (whole_lines < METRICS)
		assert_int_equal(truncate(log, (off_t)(cut - text)), 0);
	fixture_restart(f, &cfg);
	assert_true(f->c.accounts.inherited);
	size_t after;
	char *now = slurp(log, &after);
	if (whole_lines == METRICS) {
		assert_int_equal(f->c.accounts.lost_ring, 0);
		assert_int_equal(after, size);
	} else {
		assert_int_equal(f->c.accounts.lost_ring, 60);
		assert_int_equal(after, lines_at); /* whole intervals again */
		assert_memory_equal(now, text, lines_at);
		assert_int_equal(sidecar_sum(f, closing, "collector-lost", "collector:99999", 3), 60);
	}
	free(text);
	free(now);
}

static void a_kill_amid_an_intervals_write_counts_it_lost_whole(void **state)
{
	kill_amid_an_intervals_write(*state, 1);
}

static void a_kill_amid_an_intervals_first_line_counts_it_lost(void **state)
{
	kill_amid_an_intervals_write(*state, 0);
}

static void a_kill_after_an_intervals_write_counts_nothing(void **state)
{
	kill_amid_an_intervals_write(*state, METRICS);
}

/* A sequence number used twice (two gateways counting from 0 on one
 * metric): the later START waits in the place of the earlier, which leaves
 * unmatched and is counted so, and the accounts stay whole: after the
 * close nothing is left unaccounted but what still waits. */
static void a_start_replaced_in_the_join_table_counts_unmatched(void **state)
{
	struct fixture *f = *state;
	int64_t len = f->c.cfg.interval_ns;
	uint32_t id = tb_metric_id(f->m[0]), slot = (uint32_t)f->p->slot;
	tb_start(f->p, f->m[0], 5, at(f, len / 4));
	tb_start(f->p, f->m[0], 5, at(f, len / 4 + 1000));
	tb_end(f->p, f->m[0], 5, at(f, len / 2));
	tb_end(f->p, f->m[0], 6, at(f, len / 2)); /* waits on */
	tb_end(f->p, f->m[0], 6, at(f, len / 2 + 10)); /* in its place */
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	tb_live_snapshot snap;
	assert_int_equal(tb_live_read_newest(&f->c.seg, id, &snap), 0);
	assert_int_equal(snap.newest.count, 1); /* the later START with its END */
	assert_int_equal(snap.newest.unmatched_start, 1);
	assert_int_equal(snap.newest.unmatched_end, 1);
	const tb_seg_header *h = (const tb_seg_header *)f->c.seg.base;
	assert_int_equal(unlogged(f, slot) + h->parked_logged, 1); /* END 6, waiting */
}

/* A collector refused (another serves the bus) or failed on its way up
 * leaves the header's pid as it found it: the running collector's, or a
 * killed one's whose accounts the next start reports. */
static void a_refused_collector_leaves_the_running_ones_pid(void **state)
{
	struct fixture *f = *state;
	const tb_seg_header *h = (const tb_seg_header *)f->c.seg.base;
	assert_int_equal(h->collector_pid, getpid());
	tb_collector_config cfg = f->c.cfg;
	cfg.fresh = false;
	tb_collector *second = calloc(1, sizeof(*second));
	assert_non_null(second);
	const char *why = NULL;
	assert_int_equal(tb_collector_open(second, &cfg, &why), -EBUSY);
	tb_collector_close(second); /* as tailbusd does after a failed open */
	free(second);
	assert_int_equal(h->collector_pid, getpid());
}

static void a_failed_restart_keeps_a_killed_collectors_loss(void **state)
{
	struct fixture *f = *state;
	uint32_t slot = (uint32_t)f->p->slot;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, 40, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	assert_int_equal(unlogged(f, slot), 40);
	tb_collector_config cfg;
	fixture_stop(f, &cfg); /* "killed": its pid left behind */
	tb_seg s;
	assert_int_equal(tb_seg_open(&s, f->seg_dir, BUS, &cfg.seg, 0, NULL), 0);
	((tb_seg_header *)s.base)->collector_pid = 99999;
	/* a start that fails once it has read the accounts: no log directory */
	tb_collector_config bad = cfg;
	bad.fresh = false;
	bad.writer.dir = "/dev/null/no-such-dir";
	tb_collector *failed = calloc(1, sizeof(*failed));
	assert_non_null(failed);
	const char *why = NULL;
	assert_true(tb_collector_open(failed, &bad, &why) < 0);
	tb_collector_close(failed);
	free(failed);
	assert_int_equal(((tb_seg_header *)s.base)->collector_pid, 99999);
	tb_seg_close(&s);
	fixture_restart(f, &cfg);
	assert_true(f->c.accounts.inherited);
	assert_int_equal(f->c.accounts.lost_ring, 40);
}

/* An open refused before the segment is opened closes no descriptor it
 * does not hold (tailbusd closes the collector after a failed open). */
static void a_refused_open_closes_no_descriptor_of_others(void **state)
{
	struct fixture *f = *state;
	int keep = dup(0);
	assert_true(keep >= 0);
	tb_collector_config cfg = f->c.cfg;
	cfg.fresh = false;
	cfg.drain_threads = TB_COLLECTOR_MAX_DRAINERS + 1;
	tb_collector *refused = calloc(1, sizeof(*refused));
	assert_non_null(refused);
	const char *why = NULL;
	assert_int_equal(tb_collector_open(refused, &cfg, &why), -EINVAL);
	tb_collector_close(refused);
	free(refused);
	bool open0 = fcntl(0, F_GETFD) >= 0;
	dup2(keep, 0);
	close(keep);
	assert_true(open0);
}

/* A collector stopped cleanly logs the interval it stops in, partial; one
 * started again within that interval begins at the next boundary, so no
 * interval start is logged or published twice (readers tell intervals by
 * their start). Minute intervals: the test does not cross a boundary. */
static void a_restart_within_a_logged_interval_begins_after_it(void **state)
{
	struct fixture *f = *state;
	tb_collector_config cfg;
	const int64_t len = 60 * 1000000000LL;
	fixture_stop(f, &cfg);
	cfg.interval_ns = len;
	fixture_restart(f, &cfg);
	int64_t first = f->c.closer.start_ns;
	spans(f, 0, 10, tb_now(f->p), 1000);
	tb_collector_drain_all(&f->c);
	assert_int_equal(tb_collector_close_interval(&f->c, len / 60), 0); /* as a stop does */
	fixture_stop(f, &cfg);
	fixture_restart(f, &cfg);
	assert_int_equal(f->c.closer.start_ns, first + len);
	assert_true(f->c.closer.start_ns > tb_collector_now(&f->c));
}

/* --series-reserve: the series faulted in ahead at open; with none, the
 * first event of a (slot, metric) pair drained by a thread that does not
 * wait for the keeper (here: the test's) faults its series in there,
 * counted; with enough, it does not. */
static void the_series_reserve_is_faulted_in_ahead(void **state)
{
	struct fixture *f = *state;
	tb_collector_config cfg;
	for (uint32_t reserve = 0; reserve <= 100; reserve += 100) {
		fixture_stop(f, &cfg);
		cfg.series_reserve = reserve;
		fixture_restart(f, &cfg);
		uint32_t taken = f->c.nseries;
		assert_true(f->c.series_ready >= taken + reserve);
		uint64_t before = f->c.series_unready;
		/* a metric this collector has no series for yet */
		spans(f, METRICS - 1, 10, at(f, f->c.cfg.interval_ns / 2), 1000);
		tb_collector_drain_all(&f->c);
		assert_int_equal(f->c.nseries, taken + 1);
		assert_int_equal(f->c.series_unready - before, reserve ? 0 : 1);
	}
}

/* A second producer handle, on the fixture's other ring. */
static tb_producer *second_producer(const char *name)
{
	tb_producer *p = tb_attach(BUS, name);
	assert_int_equal(tb_producer_error(p, NULL), 0);
	return p;
}

/* The collector reopened with no series reserve and drain thread 0 waiting
 * for series memory, as it does beside the keeper: no series is faulted
 * in ahead, so every new (ring, metric) pair waits for the keeper. */
static tb_drainer *waiting_drainer(struct fixture *f)
{
	tb_collector_config cfg;
	fixture_stop(f, &cfg);
	cfg.series_reserve = 0;
	fixture_restart(f, &cfg);
	assert_int_equal(f->c.nseries, 0);
	assert_int_equal(f->c.series_ready, 0);
	f->c.drainers[0].series_wait = true;
	return &f->c.drainers[0];
}

/* A drain thread takes no series the keeper has not faulted in: the
 * events of a new (ring, metric) pair stay in their ring (the consumer
 * index where it was, no count, nothing in the join table), the keeper is
 * asked once, and once it has faulted one in the same events are taken,
 * each once. */
static void a_new_series_waits_in_its_ring_for_the_keeper(void **state)
{
	struct fixture *f = *state;
	tb_drainer *d = waiting_drainer(f);
	uint32_t slot = f->p->slot;
	tb_ring_header *ring = tb_seg_ring(&f->c.seg, slot);
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, 10, at(f, len / 2), 1000);
	for (int pass = 0; pass < 3; pass++) {
		assert_int_equal(tb_drainer_pass(d, true), 0);
		assert_int_equal(__atomic_load_n(&ring->c_head, __ATOMIC_ACQUIRE), 0);
	}
	assert_int_equal(f->c.nseries, 0);
	assert_int_equal(f->c.series_wanted, 1);
	assert_int_equal(f->c.series_waits, 1); /* asked once, not at every pass */
	assert_int_equal(events_of(f, 0), 0);
	tb_series_prefault(&f->c); /* the keeper's turn */
	assert_int_equal(f->c.series_ready, 1);
	/* the next pass, though it reads whole batches only and the ring holds
	 * less: a waiting ring is not left alone as one read short is */
	assert_int_equal(tb_drainer_pass(d, true), 10);
	assert_int_equal(events_of(f, 0), 10);
	assert_int_equal(f->c.series_unready, 0);
	/* a START that parks records nothing and takes no series; the END that
	 * would match it waits, the table as it was, until the keeper has been */
	tb_start(f->p, f->m[1], 3, at(f, len / 4));
	tb_end(f->p, f->m[1], 3, at(f, len / 2));
	assert_int_equal(tb_drainer_pass(d, false), 1);
	assert_int_equal(f->c.nseries, 1);
	assert_int_equal(f->c.join.used, 1);
	assert_int_equal(tb_drainer_pass(d, false), 0);
	assert_int_equal(f->c.join.used, 1);
	assert_int_equal(f->c.series_wanted, 2);
	tb_series_prefault(&f->c);
	assert_int_equal(tb_drainer_pass(d, false), 1);
	assert_int_equal(f->c.join.used, 0);
	assert_int_equal(events_of(f, 1), 1);
	assert_int_equal(f->c.series_unready, 0);
	/* the close says how many series were waited for: in the header, for
	 * tailbus top; then 0 for an interval with none */
	const tb_seg_header *h = (const tb_seg_header *)f->c.seg.base;
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(h->series_waits, 2);
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(h->series_waits, 0);
}

/* Slot `slot`, detached, asked to be released at three housekeepings:
 * it stays DETACHED, its release waiting for the keeper. */
static tb_slot *release_waits(struct fixture *f, tb_drainer *d, uint32_t slot)
{
	tb_slot *s = tb_seg_slot(&f->c.seg, slot);
	for (int round = 0; round < 3; round++) {
		housekeep(f);
		tb_drainer_pass(d, false);
		assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_DETACHED);
	}
	return s;
}

/* A ring handed back with a fold lane of a metric it has no series for:
 * the lane records into one at the release, so the release waits for the
 * keeper as an event would, and the folded events are all counted. */
static void a_release_waits_for_the_series_its_fold_lanes_need(void **state)
{
	struct fixture *f = *state;
	tb_drainer *d = waiting_drainer(f);
	assert_true(f->c.seg.layout.fold_lanes > 0);
	tb_producer *gone = second_producer("folded");
	uint32_t slot = gone->slot;
	uint32_t id = tb_metric_id(tb_metric(gone, "m2"));
	tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, slot, 0);
	lane->metric_plus_one = id + 1; /* as a producer folding 5 SPANs of about 1 us */
	lane->counts[200] = 5;
	__atomic_store_n(&lane->dirty, 1, __ATOMIC_RELEASE);
	tb_detach(gone);
	tb_slot *s = release_waits(f, d, slot);
	assert_int_equal(f->c.nseries, 0);
	tb_series_prefault(&f->c);
	tb_drainer_pass(d, false);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	assert_int_equal(events_of(f, 2), 5);
	assert_int_equal(f->c.series_unready, 0);
}

/* A lane whose counts were all taken before (by a collector before this
 * one, say), or one that will be counted bad, has nothing to record at the
 * release: it takes no series, and the release does not wait for one. */
static void a_release_takes_no_series_for_a_lane_with_nothing_new(void **state)
{
	struct fixture *f = *state;
	tb_drainer *d = waiting_drainer(f);
	tb_producer *gone = second_producer("taken");
	uint32_t slot = gone->slot;
	tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, slot, 0);
	lane->metric_plus_one = tb_metric_id(tb_metric(gone, "m2")) + 1;
	lane->counts[200] = 5;
	lane->taken[200] = 5;
	/* and one whose count went down: counted bad at the release, nothing
	 * recorded, so no series either */
	tb_fold_lane *down = tb_seg_fold_lane(&f->c.seg, slot, 1);
	down->metric_plus_one = tb_metric_id(tb_metric(gone, "m1")) + 1;
	down->counts[100] = 3;
	down->taken[100] = 5;
	down->counts[101] = 9;
	tb_detach(gone);
	housekeep(f);
	tb_drainer_pass(d, false);
	assert_int_equal(__atomic_load_n(&tb_seg_slot(&f->c.seg, slot)->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	assert_int_equal(f->c.nseries, 0);
	assert_int_equal(f->c.series_waits, 0);
}

/* The keeper wakes when asked, not at its next look: with its looks an
 * hour apart, a series asked for is faulted in within seconds. */
static void the_keeper_wakes_when_asked(void **state)
{
	struct fixture *f = *state;
	tb_collector_config cfg;
	fixture_stop(f, &cfg);
	cfg.series_reserve = 0;
	cfg.test_keeper_look_ns = 3600 * INT64_C(1000000000);
	fixture_restart(f, &cfg);
	assert_int_equal(tb_keeper_start(&f->c), 0);
	struct timespec nap = {0, 20000000};
	for (int tries = 0; tries < 500 && __atomic_load_n(&f->c.keeper_looks, __ATOMIC_ACQUIRE) == 0; tries++)
		nanosleep(&nap, NULL);
	assert_true(__atomic_load_n(&f->c.keeper_looks, __ATOMIC_ACQUIRE) > 0);
	nanosleep(&nap, NULL); /* it has looked once, and is asleep on its futex by now */
	assert_int_equal(__atomic_load_n(&f->c.series_ready, __ATOMIC_ACQUIRE), 0);
	tb_series_ask(&f->c, 3, true);
	for (int tries = 0; tries < 500 && __atomic_load_n(&f->c.series_ready, __ATOMIC_ACQUIRE) < 3; tries++)
		nanosleep(&nap, NULL);
	assert_int_equal(__atomic_load_n(&f->c.series_ready, __ATOMIC_ACQUIRE), 3);
	tb_keeper_stop(&f->c);
}

/* The keeper is asked for a refill once: when a series taken leaves half
 * the reserve or less faulted in, for its own target, and not again at
 * each series taken while it faults them in one at a time. A wait while
 * the refill is on its way is still counted. */
static void the_keeper_is_asked_once_a_refill(void **state)
{
	struct fixture *f = *state;
	tb_collector_config cfg;
	fixture_stop(f, &cfg);
	cfg.series_reserve = 4;
	fixture_restart(f, &cfg);
	assert_int_equal(f->c.series_ready, 4);
	uint64_t none = 0;
	uint32_t slot = f->p->slot;
	f->c.keeper_running = 1; /* no thread: each wake-up shows in keeper_seq */
	uint32_t seq = f->c.keeper_seq;
	assert_non_null(tb_collector_series(&f->c, slot, tb_metric_id(f->m[0]), &none));
	assert_int_equal(f->c.keeper_seq, seq); /* 3 of 4 left */
	assert_non_null(tb_collector_series(&f->c, slot, tb_metric_id(f->m[1]), &none));
	assert_int_equal(f->c.keeper_seq, seq + 1); /* 2 left: a refill */
	assert_int_equal(f->c.series_wanted, tb_series_target(&f->c, 2));
	__atomic_store_n(&f->c.series_ready, 5, __ATOMIC_RELEASE); /* its first series */
	assert_non_null(tb_collector_series(&f->c, slot, tb_metric_id(f->m[2]), &none));
	assert_int_equal(f->c.keeper_seq, seq + 1); /* asked already */
	/* a drain thread that runs out while the refill is on its way waits,
	 * counted once, and wakes nobody: the keeper is at it */
	tb_series_need need;
	uint32_t other = slot ^ 1;
	for (int k = 0; k < 2; k++) {
		assert_true(tb_series_at_hand(&f->c, other, tb_metric_id(f->m[k]), &need));
		tb_series_ask(&f->c, need.want, need.waiting);
	}
	for (int look = 0; look < 2; look++) {
		assert_false(tb_series_at_hand(&f->c, other, tb_metric_id(f->m[2]), &need));
		tb_series_ask(&f->c, need.want, need.waiting);
	}
	assert_int_equal(f->c.series_waits, 1);
	assert_int_equal(f->c.keeper_seq, seq + 1);
	f->c.keeper_running = 0;
	assert_int_equal(none, 0);
}

/* A ring handed back while its events wait for series memory: the release
 * waits with them (the ring is not reset under them), and is carried out
 * once the keeper has been, every event counted. */
static void a_release_waits_for_the_series_its_events_need(void **state)
{
	struct fixture *f = *state;
	tb_drainer *d = waiting_drainer(f);
	tb_producer *gone = second_producer("gone");
	uint32_t slot = gone->slot;
	tb_metric_t m = tb_metric(gone, "m2");
	for (int k = 0; k < 7; k++)
		tb_span(gone, m, at(f, f->c.cfg.interval_ns / 2) - 500, at(f, f->c.cfg.interval_ns / 2));
	tb_detach(gone);
	tb_slot *s = release_waits(f, d, slot);
	assert_int_equal(events_of(f, 2), 0);
	tb_series_prefault(&f->c);
	tb_drainer_pass(d, false); /* the request, asked again, is carried out */
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	assert_int_equal(events_of(f, 2), 7);
	assert_int_equal(f->c.series_unready, 0);
}

/* Put the interval being closed due (its end plus the grace) `in_ns` after
 * `mono` on the monotonic clock. */
static void due_in(struct fixture *f, int64_t mono, int64_t in_ns)
{
	f->c.closer.start_ns = mono + in_ns + f->c.clock_offset_ns - f->c.cfg.interval_ns - f->c.cfg.grace_ns;
}

static void the_run_loop_looks_when_a_close_is_due(void **state)
{
	struct fixture *f = *state;
	const int64_t ms = 1000000, mono = 1000000 * ms;
	f->c.next_housekeep_ns = mono + 100 * ms;
	/* due well within a tick: looked at just after, not a tick later */
	due_in(f, mono, 30 * ms);
	assert_int_equal(tb_collector_next_look(&f->c, mono), mono + 30 * ms + TB_COLLECTOR_CLOSE_SLACK_NS);
	/* due far off: a tick, the segment watched meanwhile */
	due_in(f, mono, 900 * ms);
	assert_int_equal(tb_collector_next_look(&f->c, mono), mono + TB_COLLECTOR_TICK_NS);
	/* due at once, or overdue and not acked yet: never sooner than LOOK_MIN */
	due_in(f, mono, 2 * ms);
	assert_int_equal(tb_collector_next_look(&f->c, mono), mono + TB_COLLECTOR_LOOK_MIN_NS);
	due_in(f, mono, -5 * ms);
	assert_int_equal(tb_collector_next_look(&f->c, mono), mono + TB_COLLECTOR_LOOK_MIN_NS);
	/* housekeeping sooner than both */
	due_in(f, mono, 900 * ms);
	f->c.next_housekeep_ns = mono + 20 * ms;
	assert_int_equal(tb_collector_next_look(&f->c, mono), mono + 20 * ms);
	/* the three spacings in order, or the rule above means nothing */
	assert_true(TB_COLLECTOR_CLOSE_SLACK_NS < TB_COLLECTOR_LOOK_MIN_NS);
	assert_true(TB_COLLECTOR_LOOK_MIN_NS < TB_COLLECTOR_TICK_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(drained_during_close_count_in_the_next_interval,
						setup, teardown),
		cmocka_unit_test_setup_teardown(late_outside_a_close_stays_in_the_current_half,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_drain_goes_on_by_the_fast_path_after_a_switch,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_close_after_bare_passes_counts_every_event,
						setup, teardown),
		cmocka_unit_test_setup_teardown(every_close_counts_its_own_interval,
						setup, teardown),
		cmocka_unit_test_setup_teardown(ring_rows_carry_the_longest_gap_between_passes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_live_interval_carries_negative_late_and_unmatched,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_close_leaves_the_rings_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(drops_of_a_close_with_no_metric_show_with_the_next,
						setup, teardown),
		cmocka_unit_test_setup_teardown(an_event_past_the_next_interval_is_counted_ahead,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_run_loop_looks_when_a_close_is_due, setup, teardown),
		cmocka_unit_test_setup_teardown(the_series_reserve_is_faulted_in_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(a_new_series_waits_in_its_ring_for_the_keeper, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_release_waits_for_the_series_its_events_need, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_keeper_is_asked_once_a_refill, setup, teardown),
		cmocka_unit_test_setup_teardown(a_release_waits_for_the_series_its_fold_lanes_need, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_release_takes_no_series_for_a_lane_with_nothing_new, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_keeper_wakes_when_asked, setup, teardown),
		cmocka_unit_test_setup_teardown(a_killed_collectors_unlogged_events_are_counted_lost,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_start_replaced_in_the_join_table_counts_unmatched,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_refused_collector_leaves_the_running_ones_pid,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_kill_amid_an_intervals_write_counts_it_lost_whole, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_kill_amid_an_intervals_first_line_counts_it_lost, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_kill_after_an_intervals_write_counts_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_failed_restart_keeps_a_killed_collectors_loss,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_refused_open_closes_no_descriptor_of_others,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_restart_within_a_logged_interval_begins_after_it,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
