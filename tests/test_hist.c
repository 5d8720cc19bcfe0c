/* test_hist.c - the histogram layout, recording rules and figures.
 *
 * Numbers come from docs/formats.md and the HdrHistogram test suites
 * ("raw" and "cor" fixtures), so a layout or rounding that differs from the
 * reference by one bucket fails here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/hist.h"
#include "tailbus/rand.h"

#define HOUR_NS 3600000000000LL
#define RAW_H 3600000000LL

static void make_raw(tb_hist *h)
{
	assert_int_equal(tb_hist_init(h, 1, RAW_H, 3), 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(tb_hist_record(h, 1000), 0);
	assert_int_equal(tb_hist_record(h, 100000000), 0);
}

static void make_cor(tb_hist *h)
{
	assert_int_equal(tb_hist_init(h, 1, RAW_H, 3), 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(tb_hist_record_corrected(h, 1000, 10000), 0);
	assert_int_equal(tb_hist_record_corrected(h, 100000000, 10000), 0);
}

static void layout_matches_hdrhistogram_check_values(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_counts_len(1, RAW_H, 3), 23552);
	assert_int_equal(tb_hist_counts_len(1, HOUR_NS, 3), 33792);
	assert_int_equal(tb_hist_init(&h, 1, RAW_H, 3), 0);
	assert_int_equal(h.sub_bucket_count, 2048);
	assert_int_equal(h.bucket_count, 22);
	assert_int_equal(tb_hist_index_of(&h, 4096), 3072);
	assert_int_equal(tb_hist_lowest_equivalent(&h, 4096), 4096);
	assert_int_equal(tb_hist_highest_equivalent(&h, 4096), 4099);
	assert_int_equal(tb_hist_index_of(&h, 1000000), 11169);
	assert_int_equal(tb_hist_lowest_equivalent(&h, 1000000), 999936);
	assert_int_equal(tb_hist_highest_equivalent(&h, 1000000), 1000447);
	assert_int_equal(tb_hist_index_of(&h, 100000000), 17909);
	assert_int_equal(tb_hist_highest_equivalent(&h, 100000000), 100007935);
	tb_hist_free(&h);
}

static void value_at_index_inverts_index_of_everywhere(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1000, HOUR_NS, 2), 0);
	for (int32_t i = 0; i < h.counts_len; i++) {
		int64_t v = tb_hist_value_at_index(&h, i);
		assert_int_equal(tb_hist_index_of(&h, v), i);
		assert_int_equal(tb_hist_index_of(&h, tb_hist_highest_equivalent(&h, v)), i);
	}
	tb_hist_free(&h);
}

static void bad_layouts_are_refused(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 0, 1000, 3), -EINVAL);
	assert_int_equal(tb_hist_init(&h, 1, 1, 3), -EINVAL);
	assert_int_equal(tb_hist_init(&h, 100, 150, 3), -EINVAL);
	assert_int_equal(tb_hist_init(&h, 1, 1000, 0), -EINVAL);
	assert_int_equal(tb_hist_init(&h, 1, 1000, 6), -EINVAL);
	assert_int_equal(tb_hist_init(&h, INT64_C(1) << 50, INT64_MAX, 5), -EINVAL);
}

static void raw_fixture_percentiles_and_moments(void **state)
{
	(void)state;
	tb_hist h;
	make_raw(&h);
	assert_int_equal(tb_hist_total(&h), 10001);
	const double at_1000[] = {30, 50, 90, 99, 99.9, 99.99};
	for (size_t i = 0; i < sizeof(at_1000) / sizeof(at_1000[0]); i++)
		assert_int_equal(tb_hist_value_at_percentile(&h, at_1000[i]), 1000);
	assert_int_equal(tb_hist_value_at_percentile(&h, 99.999), 100007935);
	assert_int_equal(tb_hist_value_at_percentile(&h, 100), 100007935);
	assert_int_equal(tb_hist_max(&h), 100007935);
	assert_int_equal(tb_hist_min(&h), 1000);
	assert_float_equal(tb_hist_mean(&h), 10996.417, 0.0005);
	assert_float_equal(tb_hist_stddev(&h), 999641.716, 0.0005);
	tb_hist_free(&h);
}

static void cor_fixture_back_fills_coordinated_omission(void **state)
{
	(void)state;
	tb_hist h;
	make_cor(&h);
	assert_int_equal(tb_hist_total(&h), 20000);
	assert_int_equal(tb_hist_value_at_percentile(&h, 50), 1000);
	assert_int_equal(tb_hist_value_at_percentile(&h, 75), 50003967);
	assert_int_equal(tb_hist_value_at_percentile(&h, 90), 80019455);
	assert_int_equal(tb_hist_value_at_percentile(&h, 99), 98041855);
	assert_int_equal(tb_hist_value_at_percentile(&h, 99.9), 99811327);
	assert_int_equal(tb_hist_value_at_percentile(&h, 99.99), 100007935);
	assert_int_equal(tb_hist_value_at_percentile(&h, 100), 100007935);
	assert_float_equal(tb_hist_mean(&h), 25003006.699, 0.0005);
	assert_float_equal(tb_hist_stddev(&h), 32276410.479, 0.0005);
	tb_hist_free(&h);
}

static void corrected_record_adds_9999_values_for_1e8_at_1e4(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, RAW_H, 3), 0);
	assert_int_equal(tb_hist_record_corrected(&h, 100000000, 10000), 0);
	assert_int_equal(tb_hist_total(&h), 10000);
	tb_hist_reset(&h);
	/* interval 0 and negative intervals mean no correction and must not loop */
	assert_int_equal(tb_hist_record_corrected(&h, 100000000, 0), 0);
	assert_int_equal(tb_hist_record_corrected(&h, 100000000, -5), 0);
	assert_int_equal(tb_hist_total(&h), 2);
	/* a value at or below the interval adds nothing */
	assert_int_equal(tb_hist_record_corrected(&h, 10000, 10000), 0);
	assert_int_equal(tb_hist_total(&h), 3);
	tb_hist_free(&h);
}

static void java_rank_rule_p25_of_12222_is_2(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, RAW_H, 3), 0);
	const int64_t data[] = {1, 2, 2, 2, 2};
	for (size_t i = 0; i < 5; i++)
		tb_hist_record(&h, data[i]);
	/* Java: rank ceil(0.25 * 5) = 2 -> 2. HdrHistogram_c rounds to 1. */
	assert_int_equal(tb_hist_value_at_percentile(&h, 25), 2);
	assert_int_equal(tb_hist_value_at_percentile(&h, 20), 1);
	assert_int_equal(tb_hist_value_at_percentile(&h, 0), 1);
	assert_int_equal(tb_hist_value_at_percentile(&h, -3), 1);
	assert_int_equal(tb_hist_value_at_percentile(&h, 250), 2);
	tb_hist_free(&h);
}

static void empty_histogram_reports_zeros(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, RAW_H, 3), 0);
	assert_int_equal(tb_hist_value_at_percentile(&h, 99), 0);
	assert_int_equal(tb_hist_min(&h), 0);
	assert_int_equal(tb_hist_max(&h), 0);
	assert_float_equal(tb_hist_mean(&h), 0.0, 0.0);
	assert_float_equal(tb_hist_stddev(&h), 0.0, 0.0);
	tb_hist_free(&h);
}

static void out_of_range_values_are_clamped_and_counted_or_refused(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, RAW_H, 3), 0);
	assert_int_equal(tb_hist_record_n(&h, RAW_H * 10, 3), 0);
	assert_int_equal(h.clamped, 3);
	assert_int_equal(tb_hist_total(&h), 3);
	assert_true(tb_hist_values_equivalent(&h, tb_hist_max(&h), RAW_H));
	assert_int_equal(tb_hist_record(&h, -1), -EINVAL);
	assert_int_equal(tb_hist_record_n(&h, 5, -1), -EINVAL);
	assert_int_equal(tb_hist_total(&h), 3);
	tb_hist_free(&h);
}

static void zero_is_recorded_and_is_the_minimum(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, RAW_H, 3), 0);
	tb_hist_record(&h, 0);
	tb_hist_record(&h, 7);
	assert_int_equal(tb_hist_min(&h), 0);
	assert_int_equal(tb_hist_value_at_percentile(&h, 50), 0);
	assert_int_equal(tb_hist_max(&h), 7);
	tb_hist_free(&h);
}

static void fill_random(tb_hist *h, uint64_t *seed, int n)
{
	for (int i = 0; i < n; i++) {
		int shift = (int)(tb_splitmix64(seed) % 40);
		tb_hist_record(h, (int64_t)(tb_splitmix64(seed) >> (63 - shift)));
	}
}

static void assert_same_counts(const tb_hist *a, const tb_hist *b)
{
	assert_int_equal(a->counts_len, b->counts_len);
	assert_memory_equal(a->counts, b->counts, (size_t)a->counts_len * sizeof(int64_t));
	assert_int_equal(a->total, b->total);
	assert_int_equal(tb_hist_max(a), tb_hist_max(b));
	assert_int_equal(tb_hist_min(a), tb_hist_min(b));
}

/* tb_hist_move is tb_hist_add followed by tb_hist_reset of the source, for
 * sparse and dense sources, zeros, the last counter, and a source of
 * another layout. */
static void move_is_add_then_reset(void **state)
{
	(void)state;
	uint64_t seed = 7;
	for (int round = 0; round < 40; round++) {
		tb_hist src, dst, want, empty;
		/* other layouts too */
		int64_t highest = round % 3 == 0 ? HOUR_NS : 1000 + (int64_t)(tb_splitmix64(&seed) % 100000);
		tb_hist_init(&src, 1, highest, 1 + round % 3);
		assert_int_equal(src.counts_len % 16, 0); /* tb_hist_move relies on it */
		tb_hist_init_like(&dst, &src);
		tb_hist_init_like(&want, &src);
		tb_hist_init_like(&empty, &src);
		fill_random(&dst, &seed, 300);
		int n = round % 4 == 0 ? 3 : 2000; /* sparse or dense */
		for (int i = 0; i < n; i++) {
			int64_t v = (int64_t)(tb_splitmix64(&seed) % (uint64_t)highest);
			tb_hist_record(&src, round % 5 == 0 ? 0 : v);
		}
		tb_hist_record(&src, highest); /* the top counter, in the last line */
		tb_hist_add(&want, &dst);
		tb_hist_add(&want, &src);
		assert_int_equal(tb_hist_move(&dst, &src), 0);
		assert_same_counts(&dst, &want);
		assert_int_equal(dst.clamped, want.clamped);
		assert_same_counts(&src, &empty);
		assert_int_equal(src.clamped, 0);
		tb_hist_free(&src);
		tb_hist_free(&dst);
		tb_hist_free(&want);
		tb_hist_free(&empty);
	}
	/* another layout: re-recorded, and the source still ends empty */
	tb_hist a, b;
	tb_hist_init(&a, 1, HOUR_NS, 3);
	tb_hist_init(&b, 1000, HOUR_NS, 2);
	tb_hist_record(&b, 123456);
	assert_int_equal(tb_hist_move(&a, &b), 0);
	assert_int_equal(tb_hist_total(&a), 1);
	assert_int_equal(tb_hist_total(&b), 0);
	assert_true(tb_hist_values_equivalent(&b, tb_hist_max(&a), 123456));
	/* a total past INT64_MAX is refused and changes neither */
	b.total = INT64_MAX;
	assert_int_equal(tb_hist_move(&a, &b), -EOVERFLOW);
	assert_int_equal(tb_hist_total(&a), 1);
	tb_hist_free(&a);
	tb_hist_free(&b);
}

/* One walk for many levels gives what one walk per level gives. */
static void percentiles_in_one_walk_match_one_at_a_time(void **state)
{
	(void)state;
	uint64_t seed = 11;
	const double levels[] = {0, 1, 25, 50, 50, 90, 99, 99.9, 99.99, 99.999, 100};
	const int n = (int)(sizeof(levels) / sizeof(levels[0]));
	int64_t got[sizeof(levels) / sizeof(levels[0])];
	for (int round = 0; round < 30; round++) {
		tb_hist h;
		tb_hist_init(&h, 1, HOUR_NS, 3);
		int samples = round == 0 ? 0 : (round < 5 ? round : 1 + (int)(tb_splitmix64(&seed) % 5000));
		for (int i = 0; i < samples; i++)
			tb_hist_record(&h, round % 7 == 0 ? 0 : (int64_t)(tb_splitmix64(&seed) >> (24 + round % 30)));
		tb_hist_values_at_percentiles(&h, levels, n, got);
		for (int k = 0; k < n; k++)
			assert_int_equal(got[k], tb_hist_value_at_percentile(&h, levels[k]));
		tb_hist_free(&h);
	}
	/* levels out of order are each looked up on their own */
	tb_hist h;
	tb_hist_init(&h, 1, HOUR_NS, 3);
	for (int v = 1; v <= 1000; v++)
		tb_hist_record(&h, v);
	const double unordered[] = {99, 50, 100};
	tb_hist_values_at_percentiles(&h, unordered, 3, got);
	assert_int_equal(got[0], tb_hist_value_at_percentile(&h, 99));
	assert_int_equal(got[1], 500);
	assert_int_equal(got[2], 1000);
	tb_hist_free(&h);
}

static void merge_is_associative_and_commutative(void **state)
{
	(void)state;
	uint64_t seed = 42;
	for (int round = 0; round < 20; round++) {
		tb_hist a, b, c, ab_c, a_bc, bc, ca;
		tb_hist_init(&a, 1, HOUR_NS, 3);
		tb_hist_init_like(&b, &a);
		tb_hist_init_like(&c, &a);
		fill_random(&a, &seed, 1000);
		fill_random(&b, &seed, 500);
		fill_random(&c, &seed, 2000);
		/* (a + b) + c */
		tb_hist_init_like(&ab_c, &a);
		tb_hist_add(&ab_c, &a);
		tb_hist_add(&ab_c, &b);
		tb_hist_add(&ab_c, &c);
		/* a + (b + c) */
		tb_hist_init_like(&bc, &a);
		tb_hist_add(&bc, &b);
		tb_hist_add(&bc, &c);
		tb_hist_init_like(&a_bc, &a);
		tb_hist_add(&a_bc, &a);
		tb_hist_add(&a_bc, &bc);
		assert_same_counts(&ab_c, &a_bc);
		/* c + a + b in another order */
		tb_hist_init_like(&ca, &a);
		tb_hist_add(&ca, &c);
		tb_hist_add(&ca, &b);
		tb_hist_add(&ca, &a);
		assert_same_counts(&ab_c, &ca);
		assert_int_equal(tb_hist_total(&ab_c), 3500);
		tb_hist *all[] = {&a, &b, &c, &ab_c, &a_bc, &bc, &ca};
		for (size_t i = 0; i < 7; i++)
			tb_hist_free(all[i]);
	}
}

static void subtract_undoes_add_and_refuses_underflow(void **state)
{
	(void)state;
	uint64_t seed = 7;
	tb_hist a, b, sum;
	tb_hist_init(&a, 1, HOUR_NS, 3);
	tb_hist_init_like(&b, &a);
	tb_hist_init_like(&sum, &a);
	fill_random(&a, &seed, 3000);
	fill_random(&b, &seed, 3000);
	tb_hist_add(&sum, &a);
	tb_hist_add(&sum, &b);
	assert_int_equal(tb_hist_subtract(&sum, &b), 0);
	assert_memory_equal(sum.counts, a.counts, (size_t)a.counts_len * sizeof(int64_t));
	assert_int_equal(sum.total, a.total);
	/* b is not contained in a: refused, a unchanged */
	int64_t before = a.total;
	assert_int_equal(tb_hist_subtract(&a, &b), -EINVAL);
	assert_int_equal(a.total, before);
	tb_hist_free(&a);
	tb_hist_free(&b);
	tb_hist_free(&sum);
}

static void add_across_layouts_records_lowest_equivalents(void **state)
{
	(void)state;
	tb_hist coarse, fine;
	tb_hist_init(&coarse, 20000, HOUR_NS, 2);
	tb_hist_init(&fine, 1, 2, 3);
	tb_hist_record_n(&coarse, 330000, 4);
	tb_hist_record(&coarse, 1800000000);
	assert_int_equal(tb_hist_add_growing(&fine, &coarse), 0);
	assert_int_equal(tb_hist_total(&fine), 5);
	assert_int_equal(fine.clamped, 0);
	/* 330000 lies in the coarse bucket [327680, 344063]; the reference
	 * re-records 327680 and reports its fine bucket's highest value */
	assert_int_equal(tb_hist_value_at_percentile(&fine, 50), 327935);
	assert_true(tb_hist_max(&fine) >= tb_hist_lowest_equivalent(&coarse, 1800000000));
	tb_hist_free(&coarse);
	tb_hist_free(&fine);
}

static void grow_keeps_counts_in_place(void **state)
{
	(void)state;
	tb_hist h;
	tb_hist_init(&h, 1, 2, 3);
	tb_hist_record(&h, 1);
	assert_int_equal(tb_hist_grow(&h, HOUR_NS), 0);
	assert_int_equal(h.counts_len, tb_hist_counts_len(1, HOUR_NS, 3));
	tb_hist_record(&h, 1000000000);
	assert_int_equal(tb_hist_total(&h), 2);
	assert_int_equal(tb_hist_value_at_percentile(&h, 50), 1);
	int64_t counts[4096];
	tb_hist fixed;
	assert_int_equal(tb_hist_init_at(&fixed, 1, 1000, 3, counts, 4096), 0);
	assert_int_equal(tb_hist_grow(&fixed, HOUR_NS), -EINVAL);
	tb_hist_free(&h);
}

static void init_at_uses_caller_memory_and_checks_its_size(void **state)
{
	(void)state;
	int64_t counts[33792];
	tb_hist h;
	assert_int_equal(tb_hist_init_at(&h, 1, HOUR_NS, 3, counts, 100), -EINVAL);
	assert_int_equal(tb_hist_init_at(&h, 1, HOUR_NS, 3, counts, 33792), 0);
	tb_hist_record(&h, 12345);
	assert_int_equal(counts[tb_hist_index_of(&h, 12345)], 1);
	tb_hist_free(&h); /* no-op for caller memory */
	assert_int_equal(counts[tb_hist_index_of(&h, 12345)], 1);
}

static void recorded_iterator_visits_each_bucket_once(void **state)
{
	(void)state;
	tb_hist h;
	make_raw(&h);
	tb_hist_iter it;
	tb_hist_iter_recorded(&it, &h);
	assert_true(tb_hist_iter_next(&it));
	assert_int_equal(it.value, 1000);
	assert_int_equal(it.count, 10000);
	assert_true(tb_hist_iter_next(&it));
	assert_int_equal(it.value, 100007935);
	assert_int_equal(it.cumulative, 10001);
	assert_false(tb_hist_iter_next(&it));
	tb_hist_free(&h);
}

static void percentile_iterator_ends_with_a_100_percent_step(void **state)
{
	(void)state;
	tb_hist h;
	make_raw(&h);
	tb_hist_iter it;
	tb_hist_iter_percentiles(&it, &h, 5);
	int rows = 0;
	double last_level = -1;
	int64_t last_value = 0;
	while (tb_hist_iter_next(&it)) {
		assert_true(it.percentile > last_level);
		last_level = it.percentile;
		last_value = it.value;
		rows++;
	}
	assert_float_equal(last_level, 100.0, 0.0);
	assert_int_equal(last_value, 100007935);
	/* the Java reference prints 69 rows for this histogram */
	assert_int_equal(rows, 69);
	tb_hist_free(&h);
}

static void top_bucket_of_a_full_range_layout_does_not_overflow(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, INT64_MAX, 3), 0);
	assert_int_equal(tb_hist_record(&h, INT64_MAX), 0);
	assert_true(tb_hist_max(&h) == INT64_MAX);
	assert_true(tb_hist_value_at_percentile(&h, 100) == INT64_MAX);
	tb_hist_free(&h);
}

static void totals_past_int64_max_are_refused_not_wrapped(void **state)
{
	(void)state;
	tb_hist a, b;
	tb_hist_init(&a, 1, HOUR_NS, 3);
	tb_hist_init_like(&b, &a);
	assert_int_equal(tb_hist_record_n(&a, 1000, INT64_C(1) << 62), 0);
	assert_int_equal(tb_hist_record_n(&b, 1000, INT64_C(1) << 62), 0);
	/* 2^62 + 2^62 = 2^63, one past INT64_MAX: refused, a unchanged */
	assert_int_equal(tb_hist_add(&a, &b), -EOVERFLOW);
	assert_int_equal(a.total, INT64_C(1) << 62);
	tb_hist_free(&a);
	tb_hist_free(&b);
	tb_hist_init(&a, 1, HOUR_NS, 3);
	tb_hist_init_like(&b, &a);
	tb_hist_record_n(&a, 1000, INT64_MAX - 5);
	tb_hist_record_n(&b, 2000, 10);
	int64_t before = a.total;
	assert_int_equal(tb_hist_add(&a, &b), -EOVERFLOW);
	assert_int_equal(a.total, before);
	assert_int_equal(tb_hist_record_n(&a, 7, 6), -EOVERFLOW);
	assert_int_equal(tb_hist_set_count_at_index(&a, 5, 6), -EOVERFLOW);
	assert_int_equal(a.total, before);
	tb_hist_free(&a);
	tb_hist_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layout_matches_hdrhistogram_check_values),
		cmocka_unit_test(value_at_index_inverts_index_of_everywhere),
		cmocka_unit_test(bad_layouts_are_refused),
		cmocka_unit_test(raw_fixture_percentiles_and_moments),
		cmocka_unit_test(cor_fixture_back_fills_coordinated_omission),
		cmocka_unit_test(corrected_record_adds_9999_values_for_1e8_at_1e4),
		cmocka_unit_test(java_rank_rule_p25_of_12222_is_2),
		cmocka_unit_test(empty_histogram_reports_zeros),
		cmocka_unit_test(out_of_range_values_are_clamped_and_counted_or_refused),
		cmocka_unit_test(zero_is_recorded_and_is_the_minimum),
		cmocka_unit_test(merge_is_associative_and_commutative),
		cmocka_unit_test(move_is_add_then_reset),
		cmocka_unit_test(percentiles_in_one_walk_match_one_at_a_time),
		cmocka_unit_test(subtract_undoes_add_and_refuses_underflow),
		cmocka_unit_test(add_across_layouts_records_lowest_equivalents),
		cmocka_unit_test(grow_keeps_counts_in_place),
		cmocka_unit_test(init_at_uses_caller_memory_and_checks_its_size),
		cmocka_unit_test(recorded_iterator_visits_each_bucket_once),
		cmocka_unit_test(percentile_iterator_ends_with_a_100_percent_step),
		cmocka_unit_test(top_bucket_of_a_full_range_layout_does_not_overflow),
		cmocka_unit_test(totals_past_int64_max_are_refused_not_wrapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
