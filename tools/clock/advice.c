/* advice.c - `tailbus clock`'s verdicts in words: the paragraph of advice
 * (which clock tb_now reads and why, whether the TSC could replace it, what
 * the figures mean for a latency) and how each clock is read.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"

static void say(struct run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct run *run, const char *fmt, ...)
{
	size_t len = strlen(run->advice);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(run->advice + len, sizeof(run->advice) - len, fmt, ap);
	va_end(ap);
}

/* "250 ns", "4 ms": a duration for a sentence. */
static void human_ns(char *buf, size_t cap, double ns)
{
	if (ns >= 1e6)
		snprintf(buf, cap, "%.4g ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, cap, "%.4g us", ns / 1e3);
	else
		snprintf(buf, cap, "%.4g ns", ns);
}

static const char *tsc_distrust(tb_clock_tsc_distrust why)
{
	switch (why) {
	case TB_TSC_CMDLINE_UNSTABLE:
		return "it is not even offered as a clocksource: the kernel command line says "
		       "tsc=unstable";
	case TB_TSC_NOT_OFFERED: return "it is not among the available clocksources";
	default:
		return "tsc is available but not selected; switching (echo tsc > "
		       "/sys/devices/system/clocksource/clocksource0/current_clocksource) means "
		       "trusting it across CPUs and migrations";
	}
}

/* The plain rdtsc row (there is one whenever the verdict is past NO_COUNTER). */
static const tb_clock_result *plain_tsc(const struct run *run)
{
	for (size_t i = 0; i < run->c.count; i++)
		if (run->c.r[i].kind == TB_CLOCK_TSC)
			return &run->c.r[i];
	return NULL;
}

static void advise_tsc(struct run *run)
{
	const tb_clock_result *tsc = plain_tsc(run);
	switch (run->v.tsc) {
	case TB_TSC_NO_COUNTER:
		say(run, "No cycle counter is measured on this architecture. ");
		break;
	case TB_TSC_UNREADABLE:
		say(run, "The TSC cannot be read here, so CLOCK_MONOTONIC is the only choice. ");
		break;
	case TB_TSC_FLAGS_UNKNOWN:
		say(run, "The CPU flags could not be read (/proc/cpuinfo), so whether the TSC is "
			 "invariant is unknown: do not time anything with it. ");
		break;
	case TB_TSC_NOT_INVARIANT:
		say(run, "The TSC is not invariant here (constant_tsc and nonstop_tsc are not both "
			 "set): its rate follows the CPU frequency or stops in deep idle, so it must "
			 "not time anything. ");
		break;
	case TB_TSC_KERNEL_USES_IT:
		say(run, "A raw rdtsc (%.1f ns) would save %.0f ns a read, but needs its own "
			 "calibration and gives up the kernel's corrections; not worth it. ",
		    tsc->cost_ns, run->c.r[TB_CLOCKCHECK_MONOTONIC].cost_ns - tsc->cost_ns);
		break;
	case TB_TSC_NOT_KERNELS:
		say(run, "The TSC is invariant (constant_tsc, nonstop_tsc) and cheaper (%.1f ns a "
			 "read), but the kernel does not keep time with it here (%s), so tb_now "
			 "stays on CLOCK_MONOTONIC unless you know the host keeps the TSC "
			 "synchronised across CPUs and migrations and you calibrate it yourself. ",
		    tsc->cost_ns, tsc_distrust(run->v.distrust));
		break;
	}
}

void clock_advise(struct run *run)
{
	const tb_clock_result *mono = &run->c.r[TB_CLOCKCHECK_MONOTONIC];
	const tb_clock_result *coarse = &run->c.r[TB_CLOCKCHECK_COARSE];
	const char *cs = run->c.env.clocksource;
	switch (run->v.mono) {
	case TB_MONO_VDSO:
		say(run, "The kernel keeps time with %s and CLOCK_MONOTONIC reads it through the "
			 "vDSO in %.1f ns, with no system call: it is correct on every CPU%s, and "
			 "tb_now uses it. ",
		    run->v.clocksource_known ? cs : "a clocksource it did not name (sysfs unreadable)",
		    mono->cost_ns, run->v.kvm_clock ? " and across live migration" : "");
		break;
	case TB_MONO_SYSCALL_NO_VDSO:
		say(run, "CLOCK_MONOTONIC costs a system call here (%.0f ns) because no vDSO is "
			 "mapped into this process (booted with vdso=0?): every tb_now pays it. ",
		    mono->cost_ns);
		break;
	case TB_MONO_SYSCALL_FALLBACK:
		say(run, "CLOCK_MONOTONIC costs a system call here (%.0f ns: the vDSO cannot read "
			 "the clocksource, %s): every tb_now pays it. Prefer a clocksource the vDSO "
			 "can read (tsc, kvm-clock, hyperv_clocksource_tsc_page)%s. ",
		    mono->cost_ns, cs, run->v.tsc_offered ? ": tsc is available" : "");
		break;
	}
	advise_tsc(run);
	char res[32];
	human_ns(res, sizeof(res), coarse->res_ns);
	say(run, "A latency timed by two reads includes about %.0f ns of clock cost, and "
		 "nothing finer than the floor (p50 %" PRId64 " ns between back-to-back reads) is "
		 "resolved. CLOCK_MONOTONIC_RAW is not slewed by NTP but gains nothing over "
		 "microseconds, and CLOCK_MONOTONIC_COARSE (resolution %s) is far too coarse for "
		 "latency.",
	    mono->cost_ns, mono->p50, res);
}

const char *clock_read_by(const struct run *run, size_t i)
{
	if (tb_clockcheck_is_tsc(run->c.r[i].kind))
		return "instruction";
	return run->v.syscall[i] ? "system call" : "vDSO";
}

