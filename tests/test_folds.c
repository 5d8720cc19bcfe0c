/* test_folds.c - fold lanes (folds.c), in process: what a producer folds
 * when its ring is full is taken by the close into the interval being
 * closed, once, from dirty lanes only, distrusting impossible counts, and
 * from a slot before it is handed back. A real collector and producer
 * (collector_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector_fixture.h"

/* A ring's folded events, both banks: what its next two closes report. */
static uint64_t ring_folded(const tb_slot_follow *f)
{
	return f->tally[0].folded + f->tally[1].folded;
}

/* What the closer does with the fold lanes, into drain thread 0's counts. */
static void take_slot_folds(struct fixture *f, uint32_t i, int bank, bool all)
{
	tb_drainer *d = &f->c.drainers[0];
	pthread_mutex_lock(&f->c.slot_lock);
	tb_folds_take_slot(&f->c, i, bank, all, d->counts[bank], d->fold_grew, &d->series_exhausted, false);
	pthread_mutex_unlock(&f->c.slot_lock);
}

static void take_folds(struct fixture *f, int bank)
{
	for (uint32_t i = 0; i < f->c.seg.layout.slot_count; i++)
		take_slot_folds(f, i, bank, false);
}

/* The series histogram of metric k on slot 0, bank `bank`. */
static tb_hist *series_hist(struct fixture *f, int bank, int k)
{
	tb_series *s = f->c.slots[0].t.series_of[tb_metric_id(f->m[k])];
	assert_non_null(s);
	return &s->hist[bank];
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
	tb_collector_config cfg;
	fixture_stop(f, &cfg);
	/* the producer folds on while no collector runs */
	fill_then_fold(f, 2, 25, 700);
	fixture_restart(f, &cfg);
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
	lane->metric_plus_one = 200;
	lane->counts[k] += 5;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(ring_bad(&f->c.slots[0]), 2);
	assert_int_equal(f->c.drainers[0].counts[cur][id1].folded, 12);
	/* an id past every metric, and a read of more than 2^40 */
	lane->metric_plus_one = TB_MAX_METRICS + 1;
	lane->counts[k] += 1;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(ring_bad(&f->c.slots[0]), 3);
	lane->metric_plus_one = id1 + 1u;
	lane->counts[k] += UINT64_C(1) << 41;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(ring_bad(&f->c.slots[0]), 4);
	assert_int_equal(f->c.drainers[0].counts[cur][id1].folded, 12);
	assert_int_equal(tb_hist_total(series_hist(f, cur, 1)), 12);
}

/* At a drain thread's release (ready_only) a lane takes no series that is
 * not faulted in yet: a lane whose metric was rewritten after the release
 * looked is counted as a bad event of the ring, nothing recorded. Taken
 * otherwise (the closer), the same lane records. */
static void a_release_lane_takes_only_a_series_faulted_in(void **state)
{
	struct fixture *f = *state;
	int cur = f->c.drainers[0].cur;
	uint16_t id2 = (uint16_t)tb_metric_id(f->m[2]);
	tb_drainer *d = &f->c.drainers[0];
	__atomic_store_n(&f->c.series_ready, f->c.nseries, __ATOMIC_RELEASE); /* none spare */
	uint32_t taken = f->c.nseries;
	tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, 0, 0);
	lane->metric_plus_one = id2 + 1u; /* no series of it on ring 0 yet */
	lane->counts[tb_fold_index(300)] += 4;
	lane->dirty = 1;
	pthread_mutex_lock(&f->c.slot_lock);
	tb_folds_take_slot(&f->c, 0, cur, false, d->counts[cur], d->fold_grew, &d->series_exhausted, true);
	pthread_mutex_unlock(&f->c.slot_lock);
	assert_int_equal(f->c.nseries, taken);
	assert_int_equal(ring_bad(&f->c.slots[0]), 1);
	assert_int_equal(d->counts[cur][id2].folded, 0);
	lane->counts[tb_fold_index(300)] += 3;
	lane->dirty = 1;
	take_folds(f, cur);
	assert_int_equal(f->c.nseries, taken + 1);
	assert_int_equal(d->counts[cur][id2].folded, 3);
}

/* The closer takes n lanes of metrics new to ring 0 (metrics 1..n, k
 * folds of metric k) while the keeper has no series faulted in ahead:
 * each series is faulted in before the slot's lock, which a drain thread
 * following a new producer waits for, none as it is taken under that
 * lock; and the folds are logged. */
static void closer_takes_new_lanes(struct fixture *f, int n)
{
	int64_t len = f->c.cfg.interval_ns, start = f->c.drainers[0].interval_start_ns;
	__atomic_store_n(&f->c.series_ready, f->c.nseries, __ATOMIC_RELEASE); /* none spare */
	uint32_t taken = f->c.nseries;
	uint64_t on_take = f->c.series_faulted_on_take;
	for (int k = 1; k <= n; k++) {
		uint16_t id = (uint16_t)tb_metric_id(f->m[k]);
		assert_null(f->c.slots[0].t.series_of[id]); /* new to ring 0 */
		tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, 0, (uint32_t)k - 1);
		lane->metric_plus_one = id + 1u;
		lane->counts[tb_fold_index(300)] += (uint64_t)k;
		lane->dirty = 1;
	}
	assert_int_equal(tb_collector_close_interval(&f->c, len), 0);
	assert_int_equal(f->c.nseries, taken + (uint32_t)n);
	assert_int_equal(f->c.series_faulted_to, taken + (uint32_t)n);
	assert_int_equal(f->c.series_faulted_on_take, on_take);
	int64_t totals[METRICS];
	logged_totals(f, start, totals);
	for (int k = 1; k <= n; k++)
		assert_int_equal(totals[k], k);
}

static void the_closer_faults_a_lanes_series_in_before_the_slots_lock(void **state)
{
	closer_takes_new_lanes(*state, 1);
}

static void the_closer_faults_every_new_lanes_series_in_before_the_slots_lock(void **state)
{
	closer_takes_new_lanes(*state, 2);
}

/* A slot handed back FREE has what its owner folded taken first, and its
 * lanes free and empty for the next owner. */
static void a_freed_slot_has_its_folds_taken_and_its_lanes_reset(void **state)
{
	struct fixture *f = *state;
	fill_then_fold(f, 1, 30, 900);
	tb_detach(f->p);
	f->p = NULL;
	housekeep(f);
	assert_int_equal(tb_seg_slot(&f->c.seg, 0)->state, TB_SLOT_FREE);
	int h = f->c.drainers[0].open_bank;
	assert_int_equal(f->c.drainers[0].counts[h][tb_metric_id(f->m[1])].folded, 30);
	const tb_fold_lane *lane = tb_seg_fold_lane(&f->c.seg, 0, 0);
	assert_int_equal(lane->metric_plus_one, 0);
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
		cmocka_unit_test_setup_teardown(folded_spans_count_in_the_closing_interval,
						setup, teardown),
		cmocka_unit_test_setup_teardown(only_dirty_lanes_are_read, setup, teardown),
		cmocka_unit_test_setup_teardown(a_restarted_collector_takes_only_new_folds,
						setup, teardown),
		cmocka_unit_test_setup_teardown(impossible_lanes_are_counted_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(a_release_lane_takes_only_a_series_faulted_in, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_closer_faults_a_lanes_series_in_before_the_slots_lock,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			the_closer_faults_every_new_lanes_series_in_before_the_slots_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_freed_slot_has_its_folds_taken_and_its_lanes_reset,
			setup, teardown),
		cmocka_unit_test_setup_teardown(fold_values_are_each_counts_highest,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
