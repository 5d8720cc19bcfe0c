/* test_sweep.c - the knee and the low-load tail of a load sweep. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_knee_in_a_calm_sweep),
		cmocka_unit_test(the_knee_is_the_first_rate_whose_p99_doubles),
		cmocka_unit_test(a_rise_the_machine_explains_is_no_knee),
		cmocka_unit_test(a_rate_short_of_what_it_offers_is_the_knee),
		cmocka_unit_test(a_long_tail_at_every_low_rate_is_a_stall),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
