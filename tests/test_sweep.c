/* test_sweep.c - a load sweep's rates, its knee, its low-load tail, and the
 * growth of one run's latency. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "tailbus/sweep.h"

/* A point that is neither a knee nor a stall: p99 at 2x p50, all served. */
static tb_sweep_point calm(uint64_t rate)
{
	return (tb_sweep_point){.rate = rate, .achieved = (double)rate, .count = 100000,
				.p50 = 1000, .p99 = 2000, .p999 = 3000, .machine_gap_ns = 0};
}

static void no_knee_in_a_calm_sweep(void **state)
{
	(void)state;
	tb_sweep_point p[4] = {calm(1000), calm(2000), calm(3000), calm(4000)};
	int rule = -1;
	assert_int_equal(tb_sweep_knee(p, 4, &rule), -1);
	assert_int_equal(rule, TB_KNEE_NONE);
	assert_int_equal(tb_sweep_tail(p, 4, -1), TB_TAIL_NORMAL);
}

static void the_knee_is_the_first_rate_whose_p99_doubles(void **state)
{
	(void)state;
	tb_sweep_point p[4] = {calm(1000), calm(2000), calm(3000), calm(4000)};
	p[2].p99 = 4001; /* just past 2x the lowest rate's */
	p[3].p99 = 9000;
	int rule;
	assert_int_equal(tb_sweep_knee(p, 4, &rule), 2);
	assert_int_equal(rule, TB_KNEE_P99);
	p[2].p99 = 4000; /* exactly 2x is not past it */
	assert_int_equal(tb_sweep_knee(p, 4, &rule), 3);
}

static void a_rise_the_machine_explains_is_no_knee(void **state)
{
	(void)state;
	tb_sweep_point p[3] = {calm(1000), calm(2000), calm(3000)};
	p[1].p99 = 10000;
	p[1].machine_gap_ns = 8000; /* the rise, 8000 ns, is no more than the gap */
	assert_int_equal(tb_sweep_knee(p, 3, NULL), -1);
	p[1].machine_gap_ns = 7999;
	assert_int_equal(tb_sweep_knee(p, 3, NULL), 1);
}

static void a_rate_short_of_what_it_offers_is_the_knee(void **state)
{
	(void)state;
	tb_sweep_point p[3] = {calm(1000), calm(2000), calm(3000)};
	p[1].achieved = 0.94 * 2000;
	int rule;
	assert_int_equal(tb_sweep_knee(p, 3, &rule), 1);
	assert_int_equal(rule, TB_KNEE_ACHIEVED);
}

static void a_long_tail_at_every_low_rate_is_a_stall(void **state)
{
	(void)state;
	tb_sweep_point p[4] = {calm(1000), calm(2000), calm(3000), calm(4000)};
	p[0].p999 = p[1].p999 = 10 * 1000; /* 10x p50 at both lowest rates */
	assert_int_equal(tb_sweep_tail(p, 4, -1), TB_TAIL_STALL);
	p[1].p999 = 9999; /* one rate only: a hiccup */
	assert_int_equal(tb_sweep_tail(p, 4, -1), TB_TAIL_NORMAL);
	p[1].p999 = 10000;
	p[0].machine_gap_ns = 10000; /* no longer than the thread was off its core */
	assert_int_equal(tb_sweep_tail(p, 4, -1), TB_TAIL_MACHINE);
	/* a knee at the second rate leaves one low rate: too few to say */
	assert_int_equal(tb_sweep_tail(p, 4, 1), TB_TAIL_NORMAL);
}

static void a_sweep_spaces_its_rates_evenly(void **state)
{
	(void)state;
	uint64_t r[4];
	tb_sweep_rates(1000, 2000, 4, r);
	assert_int_equal(r[0], 1000);
	assert_int_equal(r[1], 1333);
	assert_int_equal(r[2], 1667);
	assert_int_equal(r[3], 2000);
	tb_sweep_rates(500, 500, 1, r);
	assert_int_equal(r[0], 500);
}

static void latency_grows_when_p50_doubles_beyond_the_machine(void **state)
{
	(void)state;
	tb_sweep_row rows[4] = {{100, 1000, 2000, 3000}, {100, 1500, 2000, 3000},
				{100, 2001, 4000, 5000}, {99, 9000, 9000, 9000}};
	/* the last row with enough samples is the third: just past 2x */
	assert_true(tb_sweep_growing(rows, 4, 0));
	assert_false(tb_sweep_growing(rows, 4, 1001)); /* the rise is the machine's */
	rows[2].p50 = 2000;                            /* exactly 2x is not past it */
	assert_false(tb_sweep_growing(rows, 4, 0));
	assert_false(tb_sweep_growing(rows, 1, 0)); /* one row: no trend */
	rows[0].count = 99;
	rows[2].p50 = 3000; /* first is now the second row: 2x its 1500 */
	assert_false(tb_sweep_growing(rows, 4, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_knee_in_a_calm_sweep),
		cmocka_unit_test(the_knee_is_the_first_rate_whose_p99_doubles),
		cmocka_unit_test(a_rise_the_machine_explains_is_no_knee),
		cmocka_unit_test(a_rate_short_of_what_it_offers_is_the_knee),
		cmocka_unit_test(a_long_tail_at_every_low_rate_is_a_stall),
		cmocka_unit_test(a_sweep_spaces_its_rates_evenly),
		cmocka_unit_test(latency_grows_when_p50_doubles_beyond_the_machine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
