/* folds.c - taking what producers folded into their slots' fold lanes.
 *
 * A SPAN that finds its ring full is counted by its producer in a fold lane
 * of its slot: a 2-digit histogram of its metric (seg_abi.h). The collector
 * records each lane's growth since it last read it into the (slot, metric)
 * series of the interval being closed, at the highest value each 2-digit
 * count stands for (so a folded event is never reported below its value,
 * and at most 1/128 above it), with the per-metric counts: events, and of
 * them folded, negative and clamped. How much of each count it has taken
 * is kept in the lane (`taken`), so a restarted collector goes on where
 * the last one stopped.
 *
 * A folded event counts in the interval whose close takes it: the one it
 * completed in, unless it completed within that close's grace (20 ms) of
 * the interval's end, or in the close itself. The lanes are untrusted: a
 * count below what was taken, more than TB_FOLD_MOST events in one read, or
 * a metric that is not registered, is counted as one bad event of the ring
 * and nothing of that read is recorded; the lane then starts again from
 * what it holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"

/* The most one read of a lane may take: 2^40 events, an hour of folding at
 * 300 M/s a thousand times over, and little enough that no count of ours
 * can overflow from it. */
#define TB_FOLD_MOST (UINT64_C(1) << 40)

int tb_folds_init(tb_collector *c)
{
	tb_hist shape;
	int rc = tb_hist_init(&shape, 1, TB_FOLD_HIGHEST, 2);
	if (rc < 0)
		return rc;
	if (shape.counts_len != TB_FOLD_COUNTS || shape.sub_bucket_half_count_mag != TB_FOLD_SUB_MAG ||
	    shape.unit_magnitude != 0) {
		tb_hist_free(&shape);
		return -EINVAL;
	}
	c->fold_value = malloc(TB_FOLD_COUNTS * sizeof(int64_t));
	if (!c->fold_value) {
		tb_hist_free(&shape);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < TB_FOLD_COUNTS; i++) {
		int64_t v = tb_hist_highest_equivalent(&shape, tb_hist_value_at_index(&shape, i));
		c->fold_value[i] = v < TB_FOLD_HIGHEST ? v : TB_FOLD_HIGHEST;
	}
	tb_hist_free(&shape);
	return 0;
}

/* What a producer-written counter grew by since `*taken`, which it then
 * becomes; false if it went down or grew by more than TB_FOLD_MOST. */
static bool growth(const uint64_t *count, uint64_t *taken, uint64_t *by)
{
	uint64_t now = __atomic_load_n(count, __ATOMIC_RELAXED), was = *taken;
	*taken = now;
	*by = now - was;
	return now >= was && *by <= TB_FOLD_MOST;
}

/* Where one read of a slot's lanes goes. */
typedef struct fold_target {
	int bank;
	tb_metric_counts *counts;
	uint64_t *grew;
	uint64_t *exhausted;
	/* a drain thread's release: only a series already taken or faulted in
	 * (tb_folds_series_at_hand saw to the lanes as they were then) */
	bool ready_only;
} fold_target;

static void take_lane(tb_collector *c, uint32_t i, tb_fold_lane *lane, const fold_target *t)
{
	tb_slot_follow *f = &c->slots[i];
	uint32_t metric_plus_one = __atomic_load_n(&lane->metric_plus_one, __ATOMIC_ACQUIRE);
	/* first the counts, each read once: how much each grew, and whether
	 * every one is possible; what is taken moves on either way */
	uint64_t sum = 0, negative = 0, clamped = 0;
	bool ok = growth(&lane->negative, &lane->negative_taken, &negative);
	ok &= growth(&lane->clamped, &lane->clamped_taken, &clamped); /* taken either way */
	uint64_t *grew = t->grew;
	for (int32_t k = 0; k < TB_FOLD_COUNTS; k++) {
		uint64_t now = __atomic_load_n(&lane->counts[k], __ATOMIC_RELAXED);
		uint64_t was = lane->taken[k];
		grew[k] = 0;
		if (now == was)
			continue;
		lane->taken[k] = now;
		if (now < was || (grew[k] = now - was) > TB_FOLD_MOST - sum) {
			ok = false;
			continue;
		}
		sum += grew[k];
	}
	if (sum == 0 && negative == 0 && clamped == 0 && ok)
		return;
	uint16_t m = (uint16_t)(metric_plus_one - 1);
	tb_series_need need;
	if (!ok || metric_plus_one == 0 || metric_plus_one > TB_MAX_METRICS || !tb_collector_metric_ready(c, m) ||
	    /* its metric rewritten since the release looked: no series is
	     * faulted in for it here, and the lane is its producer's doing */
	    (t->ready_only && !tb_series_at_hand(c, i, m, &need))) {
		f->tally[t->bank].bad_events++;
		return;
	}
	tb_metric_counts *mc = &t->counts[m];
	mc->events += sum;
	mc->folded += sum;
	mc->negative += negative;
	mc->clamped += clamped;
	f->tally[t->bank].folded += sum;
	tb_accounts_folds_taken(c, i, sum);
	tb_series *s = tb_collector_series(c, i, m, t->exhausted);
	if (!s)
		return; /* counted, not recorded, as a drain does */
	for (int32_t k = 0; k < TB_FOLD_COUNTS; k++) {
		if (grew[k])
			tb_hist_record_n(&s->hist[t->bank], c->fold_value[k], (int64_t)grew[k]);
	}
}

void tb_folds_take_slot(tb_collector *c, uint32_t i, int bank, bool all, tb_metric_counts *counts,
			uint64_t *grew, uint64_t *exhausted, bool ready_only)
{
	tb_slot_follow *f = &c->slots[i];
	if (!f->followed || f->quarantined)
		return;
	fold_target t = {.bank = bank, .counts = counts, .grew = grew, .exhausted = exhausted,
			 .ready_only = ready_only};
	all |= f->folds_unsure;
	f->folds_unsure = false;
	for (uint32_t k = 0; k < c->seg.layout.fold_lanes; k++) {
		tb_fold_lane *lane = tb_seg_fold_lane(&c->seg, i, k);
		/* cleared before the counts are read: a fold after this read
		 * sets it again */
		if (__atomic_exchange_n(&lane->dirty, 0, __ATOMIC_ACQ_REL) != 0 || all)
			take_lane(c, i, lane, &t);
	}
}

/* Whether take_lane would record something of a lane now, changing
 * nothing: a count grew since it was last taken, and none went down (a
 * lane with a count gone down is counted bad, nothing recorded). Under
 * slot_lock, as take_lane moves what was taken. */
static bool grown(const tb_fold_lane *lane)
{
	uint64_t negative = __atomic_load_n(&lane->negative, __ATOMIC_RELAXED);
	uint64_t clamped = __atomic_load_n(&lane->clamped, __ATOMIC_RELAXED);
	if (negative < lane->negative_taken || clamped < lane->clamped_taken)
		return false;
	bool grew = negative > lane->negative_taken || clamped > lane->clamped_taken;
	for (int32_t k = 0; k < TB_FOLD_COUNTS; k++) {
		uint64_t now = __atomic_load_n(&lane->counts[k], __ATOMIC_RELAXED);
		if (now < lane->taken[k])
			return false;
		grew |= now > lane->taken[k];
	}
	return grew;
}

bool tb_folds_series_at_hand(tb_collector *c, uint32_t i, tb_series_need *need)
{
	tb_series_need one;
	need->want = 0;
	need->waiting = false;
	const tb_slot_follow *f = &c->slots[i];
	if (!f->followed || f->quarantined)
		return true;
	for (uint32_t k = 0; k < c->seg.layout.fold_lanes; k++) {
		const tb_fold_lane *lane = tb_seg_fold_lane(&c->seg, i, k);
		uint32_t metric_plus_one = __atomic_load_n(&lane->metric_plus_one, __ATOMIC_ACQUIRE);
		if (metric_plus_one == 0 || metric_plus_one > TB_MAX_METRICS ||
		    !tb_collector_metric_ready(c, (uint16_t)(metric_plus_one - 1)) || !grown(lane))
			continue; /* nothing to record (a bad lane is counted, not recorded) */
		if (!tb_series_at_hand(c, i, (uint16_t)(metric_plus_one - 1), &one)) {
			*need = one;
			return false;
		}
		if (one.want > need->want) /* a refill: the caller asks for it */
			need->want = one.want;
	}
	return true;
}
