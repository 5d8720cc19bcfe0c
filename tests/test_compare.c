/* test_compare.c - the statistics of `tailbus compare`: a spread's median,
 * min and max (odd and even counts, run order kept), the verdict rule (one
 * run a side, too few samples, overlapping and separated spreads, ties) and
 * the chance that spreads separate by chance (docs/cli.md's 33% and 10%).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/compare.h"

static tb_spread spread_of(const double *values, size_t n)
{
	tb_spread sp;
	memset(&sp, 0, sizeof(sp));
	assert_int_equal(tb_spread_of(values, n, &sp), 0);
	return sp;
}

static void spread_describes_without_reordering(void **state)
{
	(void)state;
	double odd[] = {30, 10, 20};
	tb_spread sp = spread_of(odd, 3);
	assert_true(sp.median == 20 && sp.min == 10 && sp.max == 30);
	assert_ptr_equal(sp.values, odd);
	assert_int_equal(sp.n, 3);
	assert_true(odd[0] == 30 && odd[1] == 10 && odd[2] == 20);

	double even[] = {40, 10, 25, 20};
	sp = spread_of(even, 4);
	assert_true(sp.median == 22.5 && sp.min == 10 && sp.max == 40);

	double one[] = {7};
	sp = spread_of(one, 1);
	assert_true(sp.median == 7 && sp.min == 7 && sp.max == 7);

	assert_int_equal(tb_spread_of(one, 0, &sp), -EINVAL);
	assert_int_equal(tb_spread_of(NULL, 1, &sp), -EINVAL);
	assert_int_equal(tb_spread_of(one, 1, NULL), -EINVAL);
}

static tb_verdict judged(const double *a, size_t na, const double *b, size_t nb, bool insufficient)
{
	tb_spread sa = spread_of(a, na), sb = spread_of(b, nb);
	return tb_compare_judge(&sa, &sb, insufficient);
}

static void judge_calls_only_separated_spreads(void **state)
{
	(void)state;
	double low[] = {10, 12, 11}, high[] = {20, 21, 22}, mid[] = {11.5, 30, 25};

	assert_int_equal(judged(low, 3, high, 3, false), TB_VERDICT_A_FASTER);
	assert_int_equal(judged(high, 3, low, 3, false), TB_VERDICT_B_FASTER);
	assert_int_equal(judged(low, 3, mid, 3, false), TB_VERDICT_NO_DIFFERENCE);
	/* touching spreads overlap: every run must be strictly below */
	double touch[] = {12, 13};
	assert_int_equal(judged(low, 3, touch, 2, false), TB_VERDICT_NO_DIFFERENCE);
	/* one run a side shows no noise, however far apart */
	assert_int_equal(judged(low, 1, high, 3, false), TB_VERDICT_SPREAD_UNKNOWN);
	assert_int_equal(judged(low, 3, high, 1, true), TB_VERDICT_SPREAD_UNKNOWN);
	/* a percentile with too few samples is never judged */
	assert_int_equal(judged(low, 3, high, 3, true), TB_VERDICT_TOO_FEW_SAMPLES);
	assert_int_equal(judged(low, 2, high, 2, true), TB_VERDICT_TOO_FEW_SAMPLES);

	assert_string_equal(tb_verdict_keys[TB_VERDICT_A_FASTER], "a_faster");
	assert_string_equal(tb_verdict_keys[TB_VERDICT_TOO_FEW_SAMPLES], "too_few_samples");
}

static void chance_is_two_over_the_orderings(void **state)
{
	(void)state;
	/* 2 / C(4, 2) = 1/3; 2 / C(6, 3) = 1/10; 2 / C(10, 5) = 1/126 */
	assert_true(fabs(tb_chance_separated(2, 2) - (1.0 / 3)) <= 1e-12);
	assert_true(fabs(tb_chance_separated(3, 3) - (0.1)) <= 1e-12);
	assert_true(fabs(tb_chance_separated(5, 5) - (2.0 / 252)) <= 1e-12);
	/* symmetric in the sides; 2 / C(5, 2) = 0.2 */
	assert_true(fabs(tb_chance_separated(2, 3) - (0.2)) <= 1e-12);
	assert_true(fabs(tb_chance_separated(3, 2) - (0.2)) <= 1e-12);
	/* a single run a side: certain, capped at 1 */
	assert_true(fabs(tb_chance_separated(1, 1) - (1.0)) <= 0);
	assert_true(fabs(tb_chance_separated(0, 4) - (1.0)) <= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spread_describes_without_reordering),
		cmocka_unit_test(judge_calls_only_separated_spreads),
		cmocka_unit_test(chance_is_two_over_the_orderings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
