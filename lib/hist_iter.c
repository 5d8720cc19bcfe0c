/* hist_iter.c - walking a histogram: recorded buckets and percentile levels.
 *
 * The percentile iterator reproduces HdrHistogram's, step for step, because
 * the .hgrm text that tools and people diff is made of its rows. It walks the
 * counts array once; a row is due when the bucket under the cursor has counts
 * and the cumulative percentile has reached the next level. Levels get denser
 * towards 100%: between p and 100 there are `ticks_per_half_distance` levels
 * for every halving of the distance (so 5 ticks give 10 rows from 0 to 50%,
 * 10 from 50 to 75%, ...). After the last bucket one extra row is reported at
 * exactly 100%, repeating the maximum.
 *
 * The cursor state (index, whether its count was already added, running
 * total) mirrors the reference so that floating-point comparisons happen on
 * the same values in the same order.
 */
#include "tailbus/hist.h"

#include <math.h>
#include <string.h>

/* Beyond 2^62 ticks the next level is indistinguishable from the current one
 * in a double; cap the exponent so the integer arithmetic cannot overflow. */
#define MAX_TICK_EXPONENT 62

static void iter_init(tb_hist_iter *it, const tb_hist *h, enum tb_hist_iter_kind kind)
{
	memset(it, 0, sizeof(*it));
	it->h = h;
	it->kind = kind;
	it->index = -1;
	it->next_index = 0;
}

void tb_hist_iter_recorded(tb_hist_iter *it, const tb_hist *h)
{
	iter_init(it, h, TB_ITER_RECORDED);
}

void tb_hist_iter_percentiles(tb_hist_iter *it, const tb_hist *h, int ticks_per_half_distance)
{
	iter_init(it, h, TB_ITER_PERCENTILE);
	it->ticks_per_half_distance = ticks_per_half_distance > 0 ? ticks_per_half_distance : 1;
	it->level_to = 0.0;
}

static bool recorded_next(tb_hist_iter *it)
{
	const tb_hist *h = it->h;
	for (int32_t i = it->next_index; i < h->counts_len; i++) {
		if (h->counts[i] == 0)
			continue;
		it->index = i;
		it->count = h->counts[i];
		it->cumulative += it->count;
		it->value = tb_hist_highest_equivalent(h, tb_hist_value_at_index(h, i));
		it->percentile = 100.0 * (double)it->cumulative / (double)h->total;
		it->next_index = i + 1;
		return true;
	}
	it->next_index = h->counts_len;
	return false;
}

/* The next level: 100 / (ticks * 2^(floor(log2(100 / (100 - level))) + 1)) on. */
static double next_level(double level, int32_t ticks_per_half_distance)
{
	if (100.0 - level <= 0.0)
		return INFINITY;
	int64_t exponent = (int64_t)(log(100.0 / (100.0 - level)) / log(2)) + 1;
	if (exponent > MAX_TICK_EXPONENT)
		exponent = MAX_TICK_EXPONENT;
	int64_t ticks = (int64_t)ticks_per_half_distance * (INT64_C(1) << exponent);
	return level + 100.0 / (double)ticks;
}

/* it->index is the cursor; while it->next_index == it->index the count under
 * the cursor has not been added to the running total yet. */
static bool percentile_next(tb_hist_iter *it)
{
	const tb_hist *h = it->h;
	if (h->total == 0)
		return false;
	if (it->cumulative >= h->total) {
		if (it->last_step_done)
			return false;
		it->last_step_done = true;
		it->level_to = 100.0;
	}
	if (it->index < 0)
		it->index = 0;
	while (it->index < h->counts_len) {
		int64_t count = h->counts[it->index];
		if (it->next_index == it->index) {
			it->cumulative += count;
			it->next_index = it->index + 1;
		}
		double reached = 100.0 * (double)it->cumulative / (double)h->total;
		if (count != 0 && reached >= it->level_to) {
			it->count = count;
			it->value = tb_hist_highest_equivalent(h, tb_hist_value_at_index(h, it->index));
			it->percentile = it->level_to;
			it->level_to = next_level(it->level_to, it->ticks_per_half_distance);
			return true;
		}
		it->index++;
	}
	return false;
}

bool tb_hist_iter_next(tb_hist_iter *it)
{
	return it->kind == TB_ITER_RECORDED ? recorded_next(it) : percentile_next(it);
}
