/* test_analysis.c - unit tests for the measurement drills (lib/analysis.c).
 *
 * Each test name states what must hold. The drills use the seed documents'
 * numbers: a bimodal 2 us / 500 us distribution, HdrHistogram's back-fill of
 * one stall, a 3/s schedule, and Gil Tene's "freeze the server for 100 s"
 * experiment measured by a closed-loop and an open-loop client. Approximate
 * figures are asserted within TOLERANCE (2 %) of the quoted number; exact
 * ones exactly. Quantiles come from tb_quantile() over the exact samples.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/analysis.h"
#include "tailbus/rand.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL

/* Quoted figures ("about 25 s") are checked to within 2 %. */
#define TOLERANCE 0.02

/* Gil Tene's experiment: 100 requests/s, 1 ms each, for 100 s; then the
 * server freezes for 100 s; the run lasts 200 s in all. */
#define GIL_RATE_PER_SEC 100
#define GIL_SERVICE_NS NS_PER_MS
#define GIL_FREEZE_AT_NS (100 * TB_NS_PER_SEC)
#define GIL_FREEZE_NS (100 * TB_NS_PER_SEC)
#define GIL_END_NS (200 * TB_NS_PER_SEC)
#define GIL_REQUESTS 20000 /* every request due before the end: 200 s x 100/s */

/* Scratch space for the larger drills (tests run one at a time). */
#define SCRATCH_LEN 20000
static int64_t scratch_a[SCRATCH_LEN];
static int64_t scratch_b[SCRATCH_LEN];
static int64_t scratch_c[SCRATCH_LEN];
static tb_value_count scratch_pairs[SCRATCH_LEN];

static void assert_near(double actual, double expected, double rel_tol)
{
	if (fabs(actual - expected) > fabs(expected) * rel_tol)
		fail_msg("%.6g is not within %.1f%% of %.6g", actual, rel_tol * 100, expected);
}

static double mean_of(const int64_t *v, size_t n)
{
	long double sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += v[i];
	return n ? (double)(sum / n) : 0.0;
}

/* Quantile q of n samples (sorted in place) through the value->count map. */
static int64_t quantile_of(int64_t *samples, size_t n, double q)
{
	ssize_t pairs = tb_value_counts_from_samples(samples, n, scratch_pairs,
						     ARRAY_LEN(scratch_pairs));
	int64_t value = -1;

	assert_true(pairs >= 0);
	assert_int_equal(tb_quantile(scratch_pairs, (size_t)pairs, q, &value), 0);
	return value;
}

static int64_t rank_of(double q, int64_t total)
{
	int64_t rank = -1;

	assert_int_equal(tb_quantile_rank(q, total, &rank), 0);
	return rank;
}

/* --- Exact quantiles ---------------------------------------------------- */

static void test_quantile_zero_is_smallest_value_with_a_count(void **state)
{
	const tb_value_count map[] = { { 1, 0 }, { 5, 2 }, { 9, 1 } };
	int64_t v = -1;

	(void)state;
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), 0.0, &v), 0);
	assert_int_equal(v, 5);
}

static void test_quantile_one_is_largest_value_with_a_count(void **state)
{
	const tb_value_count map[] = { { 1, 3 }, { 5, 2 }, { 9, 1 }, { 20, 0 } };
	int64_t v = -1;

	(void)state;
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), 1.0, &v), 0);
	assert_int_equal(v, 9);
}

static void test_quantile_clamps_q_outside_zero_to_one(void **state)
{
	const tb_value_count map[] = { { 3, 1 }, { 4, 5 }, { 7, 2 } };
	int64_t v = -1;

	(void)state;
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), -1.0, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), 2.0, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), -INFINITY, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), INFINITY, &v), 0);
	assert_int_equal(v, 7);
}

static void test_quantile_of_empty_map_is_zero(void **state)
{
	const tb_value_count zeros[] = { { 4, 0 }, { 8, 0 } };
	int64_t v = -1;

	(void)state;
	assert_int_equal(tb_quantile(NULL, 0, 0.5, &v), 0);
	assert_int_equal(v, 0);
	v = -1;
	assert_int_equal(tb_quantile(zeros, ARRAY_LEN(zeros), 1.0, &v), 0);
	assert_int_equal(v, 0);
}

/* {1, 2, 2, 2, 2}: q = 0.25 asks for rank ceil(1.25) = 2, which is a 2. */
static void test_quantile_rank_is_ceil_of_q_times_total(void **state)
{
	const tb_value_count map[] = { { 1, 1 }, { 2, 4 } };
	int64_t v = -1;

	(void)state;
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), 0.25, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), 0.2, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(tb_quantile(map, ARRAY_LEN(map), 0.21, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(rank_of(0.25, 5), 2);
	assert_int_equal(rank_of(0.0, 5), 1);
	assert_int_equal(rank_of(1e-300, 5), 1);
	assert_int_equal(rank_of(0.5, 0), 0);
}

/* 0.9999 and 0.1 are stored slightly above the decimal, so a plain
 * ceil(q * total) would give one rank too many. */
static void test_quantile_rank_is_exact_for_decimal_levels(void **state)
{
	(void)state;
	assert_int_equal(rank_of(0.999, 1000), 999);
	assert_int_equal(rank_of(0.9999, 10000), 9999);
	assert_int_equal(rank_of(0.99999, 100000), 99999);
	assert_int_equal(rank_of(0.1, 10), 1);
	assert_int_equal(rank_of(0.7, 10), 7);
	assert_int_equal(rank_of(99.9 / 100.0, 1000), 999);
	assert_int_equal(rank_of(0.9999, 10001), 10000); /* 9999.9999 -> 10000 */
	assert_int_equal(rank_of(0.5, 3), 2);
}

/* Every level k / den for den = 10^2..10^5 against integer ceil(k * t / den). */
static void test_quantile_rank_matches_integer_ceil_for_all_decimal_levels(void **state)
{
	const int64_t dens[] = { 100, 1000, 10000, 100000 };
	const int64_t totals[] = { 1, 3, 7, 10, 999, 1000, 1001, 10000, 20000, 1000000, 123456789 };

	(void)state;
	for (size_t d = 0; d < ARRAY_LEN(dens); d++) {
		for (int64_t k = 0; k <= dens[d]; k++) {
			double q = (double)k / (double)dens[d];

			for (size_t t = 0; t < ARRAY_LEN(totals); t++) {
				int64_t want = (k * totals[t] + dens[d] - 1) / dens[d];

				if (rank_of(q, totals[t]) != (want < 1 ? 1 : want))
					fail_msg("q=%lld/%lld total=%lld: rank %lld, want %lld",
						 (long long)k, (long long)dens[d],
						 (long long)totals[t],
						 (long long)rank_of(q, totals[t]), (long long)want);
			}
		}
	}
}

static void test_quantile_rank_stays_within_total_for_huge_totals(void **state)
{
	(void)state;
	assert_int_equal(rank_of(1.0, INT64_MAX), INT64_MAX);
	assert_int_equal(rank_of(0.0, INT64_MAX), 1);
	assert_true(rank_of(0.5, INT64_MAX) <= INT64_MAX / 2 + 1);
}

static void test_quantile_rejects_unsorted_negative_nan_and_overflow(void **state)
{
	const tb_value_count unsorted[] = { { 5, 1 }, { 3, 1 } };
	const tb_value_count negative[] = { { 3, 1 }, { 5, -1 } };
	const tb_value_count overflow[] = { { 3, INT64_MAX }, { 5, 1 } };
	const tb_value_count ok[] = { { 3, 1 } };
	int64_t v = 42, rank = 42;

	(void)state;
	assert_int_equal(tb_quantile(unsorted, 2, 0.5, &v), -EINVAL);
	assert_int_equal(tb_quantile(negative, 2, 0.5, &v), -EINVAL);
	assert_int_equal(tb_quantile(overflow, 2, 0.5, &v), -EOVERFLOW);
	assert_int_equal(tb_quantile(ok, 1, NAN, &v), -EINVAL);
	assert_int_equal(tb_quantile(NULL, 1, 0.5, &v), -EINVAL);
	assert_int_equal(tb_quantile(ok, 1, 0.5, NULL), -EINVAL);
	assert_int_equal(v, 42);
	assert_int_equal(tb_quantile_rank(0.5, -1, &rank), -EINVAL);
	assert_int_equal(tb_quantile_rank(0.5, 1, NULL), -EINVAL);
	assert_int_equal(rank, 42);
}

static void test_value_counts_total_sums_counts_of_sorted_map(void **state)
{
	const tb_value_count map[] = { { -2, 1 }, { 0, 0 }, { 0, 2 }, { 9, 4 } };
	int64_t total = -1;

	(void)state;
	assert_int_equal(tb_value_counts_total(map, ARRAY_LEN(map), &total), 0);
	assert_int_equal(total, 7);
}

static void test_value_counts_from_samples_sorts_and_merges(void **state)
{
	int64_t samples[] = { 7, -1, 3, 7, 3, 3, 100, -1 };
	const tb_value_count want[] = { { -1, 2 }, { 3, 3 }, { 7, 2 }, { 100, 1 } };
	const int64_t sorted[] = { -1, -1, 3, 3, 3, 7, 7, 100 };
	tb_value_count out[8];

	(void)state;
	assert_int_equal(tb_value_counts_from_samples(samples, ARRAY_LEN(samples), out,
						      ARRAY_LEN(out)), ARRAY_LEN(want));
	assert_memory_equal(out, want, sizeof(want));
	assert_memory_equal(samples, sorted, sizeof(sorted));
	assert_int_equal(tb_value_counts_from_samples(NULL, 0, NULL, 0), 0);
}

static void test_value_counts_from_samples_refuses_short_buffer_untouched(void **state)
{
	int64_t samples[] = { 1, 2, 3 };
	tb_value_count out[2] = { { 11, 11 }, { 22, 22 } };

	(void)state;
	assert_int_equal(tb_value_counts_from_samples(samples, 3, out, 2), -ENOSPC);
	assert_int_equal(out[0].value, 11);
	assert_int_equal(out[1].count, 22);
	assert_int_equal(tb_value_counts_from_samples(NULL, 3, out, 2), -EINVAL);
	assert_int_equal(tb_value_counts_from_samples(samples, 3, NULL, 3), -EINVAL);
}

/* 99 % of samples at 2 us and 1 % at 500 us: the mean (6.98 us) describes no
 * request; p50 is 2 us and p99.9 is 500 us. */
static void test_bimodal_2us_500us_has_mean_7us_p50_2us_p999_500us(void **state)
{
	const size_t fast = 9900, slow = 100;

	(void)state;
	for (size_t i = 0; i < fast + slow; i++)
		scratch_a[i] = i % 100 == 99 ? 500 * NS_PER_US : 2 * NS_PER_US;
	assert_near(mean_of(scratch_a, fast + slow), 6980.0, 1e-9);
	assert_int_equal(quantile_of(scratch_a, fast + slow, 0.50), 2 * NS_PER_US);
	assert_int_equal(quantile_of(scratch_a, fast + slow, 0.99), 2 * NS_PER_US);
	assert_int_equal(quantile_of(scratch_a, fast + slow, 0.999), 500 * NS_PER_US);
	assert_int_equal(quantile_of(scratch_a, fast + slow, 0.0), 2 * NS_PER_US);
	assert_int_equal(quantile_of(scratch_a, fast + slow, 1.0), 500 * NS_PER_US);
}

/* --- Coordinated-omission correction ------------------------------------ */

/* One 100 ms stall while samples were expected every 10 us hides 9,999. */
static void test_co_back_fills_9999_values_after_100ms_at_10us_interval(void **state)
{
	const int64_t raw[] = { 100000000 };
	const int64_t interval = 10000;
	size_t len = 0;

	(void)state;
	assert_int_equal(tb_co_corrected_len(raw, 1, interval, &len), 0);
	assert_int_equal(len, 10000);
	assert_int_equal(tb_co_correct_run(raw, 1, interval, scratch_a, SCRATCH_LEN), 10000);
	assert_int_equal(scratch_a[0], 100000000);
	assert_int_equal(scratch_a[1], 100000000 - interval);
	assert_int_equal(scratch_a[9999], interval);
}

/* 10,000 x 1 us and one 100 ms stall at a 10 us interval: 20,000 samples. */
static void test_co_raw_10000_at_1us_plus_stall_gives_20000_samples(void **state)
{
	const int64_t interval = 10000;
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < 10000; i++)
		scratch_b[i] = 1000;
	scratch_b[10000] = 100000000;
	assert_int_equal(tb_co_corrected_len(scratch_b, 10001, interval, &len), 0);
	assert_int_equal(len, 20000);
	assert_int_equal(tb_co_correct_run(scratch_b, 10001, interval, scratch_a, len), 20000);
	assert_int_equal(scratch_a[9999], 1000);
	assert_int_equal(scratch_a[10000], 100000000);
	assert_int_equal(scratch_a[19999], interval);
}

static void test_co_copies_raw_when_interval_is_not_positive(void **state)
{
	const int64_t raw[] = { 5, 1000000000000LL, 0, INT64_MAX };
	int64_t out[4];

	(void)state;
	assert_int_equal(tb_co_correct_run(raw, 4, 0, out, 4), 4);
	assert_memory_equal(out, raw, sizeof(raw));
	assert_int_equal(tb_co_correct_run(raw, 4, -10, out, 4), 4);
	assert_memory_equal(out, raw, sizeof(raw));
}

static void test_co_does_not_back_fill_values_up_to_the_interval(void **state)
{
	const int64_t raw[] = { 10, 9, -5, INT64_MIN, 0, 25 };
	const int64_t want[] = { 10, 9, -5, INT64_MIN, 0, 25, 15 };
	int64_t out[7];

	(void)state;
	assert_int_equal(tb_co_correct_run(raw, 6, 10, out, 7), 7);
	assert_memory_equal(out, want, sizeof(want));
}

static void test_co_refuses_short_buffer_and_overflowing_length(void **state)
{
	const int64_t raw[] = { 35 };
	const int64_t huge[] = { INT64_MAX, INT64_MAX };
	int64_t out[2] = { 7, 7 };
	size_t len = 99;

	(void)state;
	assert_int_equal(tb_co_correct_run(raw, 1, 10, out, 2), -ENOSPC);
	assert_int_equal(out[0], 7);
	assert_int_equal(tb_co_corrected_len(huge, 2, 1, &len), -EOVERFLOW);
	assert_int_equal(len, 99);
	assert_int_equal(tb_co_corrected_len(NULL, 1, 1, &len), -EINVAL);
	assert_int_equal(tb_co_correct_run(raw, 1, 10, NULL, 3), -EINVAL);
}

/* The histogram forms follow the same rule: a histogram copied corrected
 * holds what recording each of its samples corrected gives. */
static void test_co_histogram_copy_equals_per_sample_back_fill(void **state)
{
	const int64_t values[] = { 5, 10, 35, 1000, 1000, 20000 };
	const int64_t interval = 10;
	tb_hist src, want, got;

	(void)state;
	assert_int_equal(tb_hist_init(&src, 1, 100000, 3), 0);
	assert_int_equal(tb_hist_init(&want, 1, 100000, 3), 0);
	assert_int_equal(tb_hist_init(&got, 1, 2, 3), 0);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		assert_int_equal(tb_hist_record(&src, values[i]), 0);
		/* each bucket stands for its highest equivalent value */
		assert_int_equal(tb_hist_record_corrected(&want,
				 tb_hist_highest_equivalent(&src, values[i]), interval), 0);
	}
	assert_int_equal(tb_co_copy_corrected(&got, &src, interval), 0);
	assert_int_equal(tb_hist_total(&got), tb_hist_total(&want));
	assert_int_equal(tb_hist_max(&got), tb_hist_max(&want));
	for (int32_t i = 0; i < got.counts_len; i++)
		assert_int_equal(got.counts[i], want.counts[i]);
	assert_int_equal(tb_co_backfill_count(35, 10), 2);
	assert_int_equal(tb_co_backfill_count(10, 10), 0);
	assert_int_equal(tb_co_backfill_count(35, 0), 0);
	/* an interval far too small for the data is refused, not back-filled */
	tb_hist_reset(&got);
	assert_int_equal(tb_hist_grow(&src, 4 * TB_CO_MAX_BACKFILL), 0);
	assert_int_equal(tb_hist_record(&src, 2 * TB_CO_MAX_BACKFILL), 0);
	assert_int_equal(tb_co_copy_corrected(&got, &src, 1), -E2BIG);
	tb_hist_free(&src);
	tb_hist_free(&want);
	tb_hist_free(&got);
}

/* --- Drift-free schedules ------------------------------------------------ */

static int64_t due_at(int64_t start, uint64_t rate, uint64_t i)
{
	int64_t due = -1;

	assert_int_equal(tb_schedule_at(start, rate, i, &due), 0);
	return due;
}

static void test_schedule_at_3_per_sec_floors_exact_thirds(void **state)
{
	const int64_t want[] = { 0, 333333333, 666666666, 1000000000, 1333333333 };
	int64_t out[5];

	(void)state;
	assert_int_equal(tb_schedule_fill(0, 3, out, 5), 5);
	assert_memory_equal(out, want, sizeof(want));
}

/* Summing 333,333,333 three million times would be 1,000,000 ns early. */
static void test_schedule_entry_3_million_is_exactly_1e15_after_start(void **state)
{
	const int64_t start = 123456789;

	(void)state;
	assert_int_equal(due_at(start, 3, 3000000) - start, 1000000000000000LL);
	assert_int_equal(due_at(start, 3, 3000001) - start, 1000000000000000LL + 333333333);
	assert_int_equal(due_at(0, 7, 7000000000ULL), 1000000000000000000LL);
	assert_int_equal(due_at(-5, UINT64_MAX, UINT64_MAX), TB_NS_PER_SEC - 5);
}

static void test_schedule_rate_zero_is_empty(void **state)
{
	int64_t out[3] = { 7, 7, 7 };
	int64_t due = 7;

	(void)state;
	assert_int_equal(tb_schedule_fill(0, 0, out, 3), 0);
	assert_int_equal(out[0], 7);
	assert_int_equal(tb_schedule_at(0, 0, 0, &due), -EINVAL);
	assert_int_equal(due, 7);
}

static void test_schedule_refuses_times_past_int64_untouched(void **state)
{
	int64_t out[2] = { 7, 7 };
	int64_t due = 7;

	(void)state;
	assert_int_equal(tb_schedule_at(INT64_MAX - 10, 1, 1, &due), -EOVERFLOW);
	assert_int_equal(due, 7);
	assert_int_equal(tb_schedule_fill(INT64_MAX - 10, 1, out, 2), -EOVERFLOW);
	assert_int_equal(out[0], 7);
	assert_int_equal(tb_schedule_fill(0, 1, NULL, 2), -EINVAL);
	assert_int_equal(due_at(INT64_MAX - TB_NS_PER_SEC, 1, 1), INT64_MAX);
}

/* The count agrees with tb_schedule_at: the last request counted is due
 * before the end, the next one is not. */
static void test_schedule_count_is_the_requests_due_before_the_end(void **state)
{
	(void)state;
	assert_int_equal(tb_schedule_count(TB_NS_PER_SEC, 3), 3);
	assert_int_equal(tb_schedule_count(TB_NS_PER_SEC + 1, 3), 4);
	assert_int_equal(tb_schedule_count(TB_NS_PER_SEC / 3, 3), 1);
	assert_int_equal(tb_schedule_count(TB_NS_PER_SEC / 3 + 1, 3), 2);
	assert_int_equal(due_at(0, 3, 1), TB_NS_PER_SEC / 3);
	assert_int_equal(tb_schedule_count(0, 1000), 0);
	assert_int_equal(tb_schedule_count(-5, 1000), 0);
	assert_int_equal(tb_schedule_count(INT64_MAX, 1000000000), (uint64_t)INT64_MAX);
}

/* --- Poisson schedules ---------------------------------------------------- */

/* The same seed gives the same schedule; another seed another one. */
static void test_poisson_same_seed_same_schedule(void **state)
{
	uint64_t a = 42, b = 42, c = 43;
	int64_t da = 1000, db = 1000, dc = 1000;
	bool differs = false;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		int64_t prev = da;
		assert_int_equal(tb_schedule_poisson_next(da, 1000, &a, &da), 0);
		assert_int_equal(tb_schedule_poisson_next(db, 1000, &b, &db), 0);
		assert_int_equal(tb_schedule_poisson_next(dc, 1000, &c, &dc), 0);
		assert_int_equal(da, db);
		assert_true(da >= prev);
		differs |= da != dc;
	}
	assert_int_equal(a, b);
	assert_true(differs);
}

/* Over many draws the mean gap is close to 1e9 / rate ns (the standard
 * error of the mean of 200,000 exponential gaps is 0.22% of the mean). */
static void test_poisson_mean_gap_is_one_over_the_rate(void **state)
{
	const uint64_t rates[] = { 1, 1000, 250000 };
	const int n = 200000;

	(void)state;
	for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		uint64_t seed = 7;
		int64_t due = 0;
		for (int i = 0; i < n; i++)
			assert_int_equal(tb_schedule_poisson_next(due, rates[k], &seed, &due), 0);
		double mean = (double)due / n, want = (double)TB_NS_PER_SEC / (double)rates[k];
		assert_true(fabs(mean - want) < 0.01 * want);
	}
}

static void test_poisson_refuses_rate_zero_and_overflow(void **state)
{
	uint64_t seed = 1;
	int64_t due = 7;

	(void)state;
	assert_int_equal(tb_schedule_poisson_next(0, 0, &seed, &due), -EINVAL);
	assert_int_equal(tb_schedule_poisson_next(0, 1, NULL, &due), -EINVAL);
	assert_int_equal(tb_schedule_poisson_next(0, 1, &seed, NULL), -EINVAL);
	assert_int_equal(due, 7);
	assert_int_equal(seed, 1);
	/* at rate 1 a gap is about a second: past INT64_MAX; the state advanced */
	assert_int_equal(tb_schedule_poisson_next(INT64_MAX - 10, 1, &seed, &due), -EOVERFLOW);
	assert_int_equal(due, 7);
	assert_true(seed != 1);
}

/* --- Single FIFO server --------------------------------------------------- */

/* Intended every 10 ns; request 1 takes 25 ns, so 2 and 3 queue behind it. */
static const int64_t small_intended[] = { 0, 10, 20, 30, 40, 100 };
static const int64_t small_service[] = { 5, 25, 5, 5, 5, 5 };

static void test_fifo_done_waits_for_busy_server(void **state)
{
	const int64_t want[] = { 5, 35, 40, 45, 50, 105 };
	int64_t done[6];

	(void)state;
	assert_int_equal(tb_fifo_done(small_intended, small_service, 6, done), 0);
	assert_memory_equal(done, want, sizeof(want));
}

static void test_fifo_closed_loop_measures_from_late_send(void **state)
{
	const int64_t want_latency[] = { 5, 25, 5, 5, 5, 5 };
	const int64_t want_lag[] = { 0, 0, 15, 10, 5, 0 };
	const int64_t want_open[] = { 5, 25, 20, 15, 10, 5 };
	int64_t latency[6], lag[6], open[6];

	(void)state;
	assert_int_equal(tb_fifo_closed_loop_latencies(small_intended, small_service, 6, latency), 0);
	assert_int_equal(tb_fifo_send_lag(small_intended, small_service, 6, lag), 0);
	assert_int_equal(tb_fifo_open_loop_latencies(small_intended, small_service, 6, open), 0);
	assert_memory_equal(latency, want_latency, sizeof(want_latency));
	assert_memory_equal(lag, want_lag, sizeof(want_lag));
	assert_memory_equal(open, want_open, sizeof(want_open));
}

/* Random bursty arrivals and service times (fixed seed, reproducible). */
static void random_run(uint64_t *seed, int64_t *intended, int64_t *service, size_t n)
{
	int64_t t = (int64_t)(tb_splitmix64(seed) % 1000) - 500;

	for (size_t i = 0; i < n; i++) {
		t += tb_splitmix64(seed) % 4 == 0 ? 0 : (int64_t)(tb_splitmix64(seed) % 100);
		intended[i] = t;
		service[i] = (int64_t)(tb_splitmix64(seed) % 120);
	}
}

static void test_fifo_open_loop_latency_is_closed_loop_latency_plus_send_lag(void **state)
{
	enum { RUNS = 200, N = 500 };
	uint64_t seed = 0x7a11b05ULL;
	int64_t intended[N], service[N], closed[N], lag[N], open[N];

	(void)state;
	for (int run = 0; run < RUNS; run++) {
		size_t n = 1 + tb_splitmix64(&seed) % N;

		random_run(&seed, intended, service, n);
		assert_int_equal(tb_fifo_closed_loop_latencies(intended, service, n, closed), 0);
		assert_int_equal(tb_fifo_send_lag(intended, service, n, lag), 0);
		assert_int_equal(tb_fifo_open_loop_latencies(intended, service, n, open), 0);
		for (size_t i = 0; i < n; i++) {
			if (open[i] != closed[i] + lag[i] || lag[i] < 0 || closed[i] != service[i])
				fail_msg("run %d request %zu: open %lld closed %lld lag %lld", run,
					 i, (long long)open[i], (long long)closed[i],
					 (long long)lag[i]);
		}
	}
}

static void test_fifo_rejects_unsorted_intended_negative_service_and_overflow(void **state)
{
	const int64_t unsorted[] = { 0, 10, 5 };
	const int64_t sorted[] = { 0, 10, 20 };
	const int64_t service[] = { 1, 1, 1 };
	const int64_t negative[] = { 1, -1, 1 };
	const int64_t late[] = { INT64_MAX - 1, INT64_MAX, INT64_MAX };
	int64_t out[3];

	(void)state;
	assert_int_equal(tb_fifo_done(unsorted, service, 3, out), -EINVAL);
	assert_int_equal(tb_fifo_done(sorted, negative, 3, out), -EINVAL);
	assert_int_equal(tb_fifo_done(late, service, 3, out), -EOVERFLOW);
	assert_int_equal(tb_fifo_done(sorted, service, 3, NULL), -EINVAL);
	assert_int_equal(tb_fifo_done(NULL, NULL, 0, NULL), 0);
	assert_int_equal(tb_fifo_open_loop_issued(unsorted, 3, 100), -EINVAL);
	assert_int_equal(tb_fifo_closed_loop_issued(sorted, negative, 3, 100), -EINVAL);
}

/* Behind the 25 ns request the closed loop sends 2 at 35, 3 at 40 and 4 at
 * 45, while the open loop sends each when due (0, 10, 20, 30, 40, 100). */
static void test_fifo_issued_counts_sends_before_the_horizon(void **state)
{
	(void)state;
	assert_int_equal(tb_fifo_closed_loop_issued(small_intended, small_service, 6, 40), 3);
	assert_int_equal(tb_fifo_closed_loop_issued(small_intended, small_service, 6, 41), 4);
	assert_int_equal(tb_fifo_open_loop_issued(small_intended, 6, 40), 4);
	assert_int_equal(tb_fifo_open_loop_issued(small_intended, 6, 45), 5);
	assert_int_equal(tb_fifo_open_loop_issued(small_intended, 6, 1000), 6);
	assert_int_equal(tb_fifo_open_loop_issued(small_intended, 6, 0), 0);
	assert_int_equal(tb_fifo_closed_loop_issued(small_intended, small_service, 6, 1000), 6);
}

/* --- Gil Tene's experiment ------------------------------------------------ */

/* Intended times at 100/s from 0, 1 ms service, and the freeze: the request
 * due at 100 s takes 100 s. `backlog_service` is the service time of the
 * requests that arrive during the freeze. */
static void gil_run(int64_t *intended, int64_t *service, int64_t backlog_service)
{
	assert_int_equal(tb_schedule_fill(0, GIL_RATE_PER_SEC, intended, GIL_REQUESTS),
			 GIL_REQUESTS);
	for (size_t i = 0; i < GIL_REQUESTS; i++) {
		if (intended[i] < GIL_FREEZE_AT_NS)
			service[i] = GIL_SERVICE_NS;
		else if (intended[i] == GIL_FREEZE_AT_NS)
			service[i] = GIL_FREEZE_NS;
		else
			service[i] = backlog_service;
	}
}

/* Closed loop: 10,000 x 1 ms and one 100 s. The mean (11 ms) hints at
 * trouble, the percentiles hide it: p99.99 is 1 ms. */
static void test_gil_closed_loop_sees_10001_samples_and_p9999_of_1ms(void **state)
{
	ssize_t issued;

	(void)state;
	gil_run(scratch_a, scratch_b, GIL_SERVICE_NS);
	issued = tb_fifo_closed_loop_issued(scratch_a, scratch_b, GIL_REQUESTS, GIL_END_NS);
	assert_int_equal(issued, 10001);
	assert_int_equal(tb_fifo_closed_loop_latencies(scratch_a, scratch_b, (size_t)issued,
						       scratch_c), 0);
	assert_near(mean_of(scratch_c, (size_t)issued), 10.9989 * NS_PER_MS, TOLERANCE);
	assert_int_equal(quantile_of(scratch_c, (size_t)issued, 0.50), NS_PER_MS);
	assert_int_equal(quantile_of(scratch_c, (size_t)issued, 0.9999), NS_PER_MS);
	assert_int_equal(quantile_of(scratch_c, (size_t)issued, 1.0), 100 * TB_NS_PER_SEC);
}

/* Open loop as Gil counts it: requests queued behind the freeze are answered
 * the moment it ends (only the freeze costs time), so their latencies run
 * linearly from 100 s down to 10 ms: p50 1 ms, p75 50 s, p99 98 s, mean 25 s. */
static void test_gil_open_loop_sees_p75_50s_p99_98s_mean_25s(void **state)
{
	ssize_t issued;

	(void)state;
	gil_run(scratch_a, scratch_b, 0);
	issued = tb_fifo_open_loop_issued(scratch_a, GIL_REQUESTS, GIL_END_NS);
	assert_int_equal(issued, GIL_REQUESTS);
	assert_int_equal(tb_fifo_open_loop_latencies(scratch_a, scratch_b, GIL_REQUESTS,
						     scratch_c), 0);
	assert_near(mean_of(scratch_c, GIL_REQUESTS), 25.0 * TB_NS_PER_SEC, TOLERANCE);
	assert_near(quantile_of(scratch_c, GIL_REQUESTS, 0.50), NS_PER_MS, TOLERANCE);
	assert_near(quantile_of(scratch_c, GIL_REQUESTS, 0.75), 50.0 * TB_NS_PER_SEC, TOLERANCE);
	assert_near(quantile_of(scratch_c, GIL_REQUESTS, 0.99), 98.0 * TB_NS_PER_SEC, TOLERANCE);
	assert_int_equal(quantile_of(scratch_c, GIL_REQUESTS, 1.0), 100 * TB_NS_PER_SEC);
}

/* With the backlog still costing 1 ms each, the queue drains at 9 ms per
 * 10 ms slot, so the open loop sees worse than Gil's arithmetic: latencies
 * 100 - 0.009 k s, p75 exactly 55 s and a mean of 27.50275 s. */
static void test_gil_open_loop_with_1ms_backlog_drain_is_worse_p75_55s(void **state)
{
	(void)state;
	gil_run(scratch_a, scratch_b, GIL_SERVICE_NS);
	assert_int_equal(tb_fifo_open_loop_latencies(scratch_a, scratch_b, GIL_REQUESTS,
						     scratch_c), 0);
	assert_near(mean_of(scratch_c, GIL_REQUESTS), 27.50275 * TB_NS_PER_SEC, 1e-9);
	assert_int_equal(quantile_of(scratch_c, GIL_REQUESTS, 0.50), NS_PER_MS);
	assert_int_equal(quantile_of(scratch_c, GIL_REQUESTS, 0.75), 55 * TB_NS_PER_SEC);
	assert_int_equal(quantile_of(scratch_c, GIL_REQUESTS, 0.99), 98200 * NS_PER_MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantile_zero_is_smallest_value_with_a_count),
		cmocka_unit_test(test_quantile_one_is_largest_value_with_a_count),
		cmocka_unit_test(test_quantile_clamps_q_outside_zero_to_one),
		cmocka_unit_test(test_quantile_of_empty_map_is_zero),
		cmocka_unit_test(test_quantile_rank_is_ceil_of_q_times_total),
		cmocka_unit_test(test_quantile_rank_is_exact_for_decimal_levels),
		cmocka_unit_test(test_quantile_rank_matches_integer_ceil_for_all_decimal_levels),
		cmocka_unit_test(test_quantile_rank_stays_within_total_for_huge_totals),
		cmocka_unit_test(test_quantile_rejects_unsorted_negative_nan_and_overflow),
		cmocka_unit_test(test_value_counts_total_sums_counts_of_sorted_map),
		cmocka_unit_test(test_value_counts_from_samples_sorts_and_merges),
		cmocka_unit_test(test_value_counts_from_samples_refuses_short_buffer_untouched),
		cmocka_unit_test(test_bimodal_2us_500us_has_mean_7us_p50_2us_p999_500us),
		cmocka_unit_test(test_co_back_fills_9999_values_after_100ms_at_10us_interval),
		cmocka_unit_test(test_co_raw_10000_at_1us_plus_stall_gives_20000_samples),
		cmocka_unit_test(test_co_copies_raw_when_interval_is_not_positive),
		cmocka_unit_test(test_co_does_not_back_fill_values_up_to_the_interval),
		cmocka_unit_test(test_co_refuses_short_buffer_and_overflowing_length),
		cmocka_unit_test(test_co_histogram_copy_equals_per_sample_back_fill),
		cmocka_unit_test(test_schedule_at_3_per_sec_floors_exact_thirds),
		cmocka_unit_test(test_schedule_entry_3_million_is_exactly_1e15_after_start),
		cmocka_unit_test(test_schedule_rate_zero_is_empty),
		cmocka_unit_test(test_schedule_refuses_times_past_int64_untouched),
		cmocka_unit_test(test_schedule_count_is_the_requests_due_before_the_end),
		cmocka_unit_test(test_poisson_same_seed_same_schedule),
		cmocka_unit_test(test_poisson_mean_gap_is_one_over_the_rate),
		cmocka_unit_test(test_poisson_refuses_rate_zero_and_overflow),
		cmocka_unit_test(test_fifo_done_waits_for_busy_server),
		cmocka_unit_test(test_fifo_closed_loop_measures_from_late_send),
		cmocka_unit_test(test_fifo_open_loop_latency_is_closed_loop_latency_plus_send_lag),
		cmocka_unit_test(test_fifo_rejects_unsorted_intended_negative_service_and_overflow),
		cmocka_unit_test(test_fifo_issued_counts_sends_before_the_horizon),
		cmocka_unit_test(test_gil_closed_loop_sees_10001_samples_and_p9999_of_1ms),
		cmocka_unit_test(test_gil_open_loop_sees_p75_50s_p99_98s_mean_25s),
		cmocka_unit_test(test_gil_open_loop_with_1ms_backlog_drain_is_worse_p75_55s),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
