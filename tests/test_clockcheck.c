/* test_clockcheck.c - the clock rules on hand-made figures: which reads are
 * system calls (SYSCALL_RATIO of the baseline, or no vDSO), whether the TSC
 * is invariant, how CLOCK_MONOTONIC is read, whether the TSC could replace it
 * and why the kernel does not use it; and the rows every architecture has.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/clockcheck.h"

#define BASELINE_NS 800.0

static tb_clockcheck check; /* large (one env) */

static size_t baseline_row(void)
{
	return check.count - 1;
}

/* The row of a kind, or -1 where this architecture has none. */
static int row_of(tb_clock_kind kind)
{
	for (size_t i = 0; i < check.count; i++)
		if (check.r[i].kind == kind)
			return (int)i;
	return -1;
}

/* A machine as a KVM guest on a modern x86 host looks: clocksource tsc, a
 * vDSO, an invariant TSC, every clock read, the vDSO reads at 30 ns. */
static int setup(void **state)
{
	(void)state;
	memset(&check, 0, sizeof(check));
	assert_int_equal(tb_clockcheck_init(&check, 1000), 0);
	strcpy(check.env.clocksource, "tsc");
	strcpy(check.env.clocksources, "tsc kvm-clock");
	strcpy(check.env.tsc_flags, "tsc rdtscp constant_tsc nonstop_tsc");
	strcpy(check.env.cmdline, "ro quiet");
	check.vdso = true;
	check.tsc_hz = 2e9;
	for (size_t i = 0; i < check.count; i++) {
		check.r[i].available = true;
		check.r[i].cost_ns = tb_clockcheck_is_tsc(check.r[i].kind) ? 12 : 30;
	}
	check.r[TB_CLOCKCHECK_COARSE].cost_ns = 10;
	check.r[baseline_row()].cost_ns = BASELINE_NS;
	return 0;
}

static tb_clock_verdict judge(void)
{
	tb_clock_verdict v;
	assert_int_equal(tb_clockcheck_judge(&check, &v), 0);
	return v;
}

static void rows_every_architecture_has(void **state)
{
	(void)state;
	assert_true(check.count >= 5 && check.count <= TB_CLOCKCHECK_MAX);
	assert_string_equal(check.r[TB_CLOCKCHECK_MONOTONIC].name, "CLOCK_MONOTONIC");
	assert_string_equal(check.r[TB_CLOCKCHECK_COARSE].name, "CLOCK_MONOTONIC_COARSE");
	assert_string_equal(check.r[baseline_row()].name, "SYS_clock_gettime");
	assert_int_equal(check.r[baseline_row()].kind, TB_CLOCK_SYSCALL);
	assert_int_equal(check.samples, 1000);
	assert_int_equal(check.pinned_cpu, -1);
}

static void init_refuses_bad_samples(void **state)
{
	(void)state;
	assert_int_equal(tb_clockcheck_init(NULL, 1000), -EINVAL);
	assert_int_equal(tb_clockcheck_init(&check, TB_CLOCKCHECK_MIN_SAMPLES - 1), -EINVAL);
	assert_int_equal(tb_clockcheck_init(&check, TB_CLOCKCHECK_MAX_SAMPLES + 1), -EINVAL);
	assert_int_equal(tb_clockcheck_init(&check, TB_CLOCKCHECK_MIN_SAMPLES), 0);
	tb_clock_verdict v;
	assert_int_equal(tb_clockcheck_judge(NULL, &v), -EINVAL);
	assert_int_equal(tb_clockcheck_judge(&check, NULL), -EINVAL);
}

static void cheap_reads_are_the_vdso(void **state)
{
	(void)state;
	tb_clock_verdict v = judge();
	for (size_t i = 0; i < baseline_row(); i++)
		assert_false(v.syscall[i]);
	assert_true(v.syscall[baseline_row()]);
	assert_int_equal(v.mono, TB_MONO_VDSO);
	assert_int_equal(v.use, TB_CLOCKCHECK_MONOTONIC);
	assert_true(v.clocksource_known);
	assert_false(v.kvm_clock);
	assert_true(v.tsc_offered);
}

/* At SYSCALL_RATIO of the baseline a read is a system call; just under, not. */
static void syscall_ratio_is_the_line(void **state)
{
	(void)state;
	double line = TB_CLOCKCHECK_SYSCALL_RATIO * BASELINE_NS;
	check.r[TB_CLOCKCHECK_MONOTONIC].cost_ns = line;
	check.r[1].cost_ns = line - 1;
	tb_clock_verdict v = judge();
	assert_true(v.syscall[TB_CLOCKCHECK_MONOTONIC]);
	assert_false(v.syscall[1]);
	assert_int_equal(v.mono, TB_MONO_SYSCALL_FALLBACK);
}

/* Without a vDSO every clock_gettime is a system call, however cheap. */
static void no_vdso_means_system_calls(void **state)
{
	(void)state;
	check.vdso = false;
	tb_clock_verdict v = judge();
	for (size_t i = 0; i < check.count; i++)
		assert_int_equal(v.syscall[i], !tb_clockcheck_is_tsc(check.r[i].kind));
	assert_int_equal(v.mono, TB_MONO_SYSCALL_NO_VDSO);
}

static void invariance_needs_both_flags(void **state)
{
	(void)state;
	assert_true(judge().tsc_invariant);
	strcpy(check.env.tsc_flags, "tsc constant_tsc");
	assert_false(judge().tsc_invariant);
	/* whole words only */
	strcpy(check.env.tsc_flags, "tsc constant_tsc_x nonstop_tsc");
	assert_false(judge().tsc_invariant);
}

static void clocksource_names(void **state)
{
	(void)state;
	strcpy(check.env.clocksource, "kvm-clock");
	strcpy(check.env.clocksources, "kvm-clock tsc_early");
	tb_clock_verdict v = judge();
	assert_true(v.kvm_clock);
	assert_false(v.tsc_offered);
	strcpy(check.env.clocksource, "unknown");
	assert_false(judge().clocksource_known);
}

/* The TSC verdicts in the order the rules take them. */
static void tsc_verdicts(void **state)
{
	(void)state;
	int tsc = row_of(TB_CLOCK_TSC);
	if (tsc < 0) {
		assert_int_equal(judge().tsc, TB_TSC_NO_COUNTER);
		return;
	}
	assert_int_equal(judge().tsc, TB_TSC_KERNEL_USES_IT);

	strcpy(check.env.clocksource, "kvm-clock");
	tb_clock_verdict v = judge();
	assert_int_equal(v.tsc, TB_TSC_NOT_KERNELS);
	assert_int_equal(v.distrust, TB_TSC_NOT_SELECTED);

	strcpy(check.env.clocksources, "kvm-clock");
	assert_int_equal(judge().distrust, TB_TSC_NOT_OFFERED);
	strcpy(check.env.cmdline, "ro tsc=unstable quiet");
	assert_int_equal(judge().distrust, TB_TSC_CMDLINE_UNSTABLE);

	strcpy(check.env.tsc_flags, "tsc constant_tsc");
	assert_int_equal(judge().tsc, TB_TSC_NOT_INVARIANT);
	strcpy(check.env.tsc_flags, "unknown");
	assert_int_equal(judge().tsc, TB_TSC_FLAGS_UNKNOWN);
	check.tsc_hz = 0;
	assert_int_equal(judge().tsc, TB_TSC_UNREADABLE);
	check.tsc_hz = 2e9;
	check.r[tsc].available = false;
	assert_int_equal(judge().tsc, TB_TSC_UNREADABLE);
}

static void cycles_to_ns(void **state)
{
	(void)state;
	assert_true(tb_clockcheck_ns(&check, TB_CLOCKCHECK_MONOTONIC, 25) == 25.0);
	int tsc = row_of(TB_CLOCK_TSC);
	if (tsc < 0)
		return;
	assert_true(tb_clockcheck_ns(&check, (size_t)tsc, 20) == 10.0);
	check.tsc_hz = 0;
	assert_true(tb_clockcheck_ns(&check, (size_t)tsc, 20) == 0.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(rows_every_architecture_has, setup),
		cmocka_unit_test_setup(init_refuses_bad_samples, setup),
		cmocka_unit_test_setup(cheap_reads_are_the_vdso, setup),
		cmocka_unit_test_setup(syscall_ratio_is_the_line, setup),
		cmocka_unit_test_setup(no_vdso_means_system_calls, setup),
		cmocka_unit_test_setup(invariance_needs_both_flags, setup),
		cmocka_unit_test_setup(clocksource_names, setup),
		cmocka_unit_test_setup(tsc_verdicts, setup),
		cmocka_unit_test_setup(cycles_to_ns, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
