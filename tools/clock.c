/* clock.c - `tailbus clock`: which clock to trust, what a read costs, how fine it is.
 *
 *   tailbus clock [--json] [--samples N]
 *
 * The options, and the figures and verdicts of tailbus/clockcheck.h (which
 * clocks, how they are measured, the rules) printed as a table or one JSON
 * object, with the verdicts put into one paragraph of advice.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tailbus/clockcheck.h"
#include "tailbus/env.h"

#define VERB "clock"
#define DEFAULT_SAMPLES 100000
#define WRAP_COLUMNS 78
#define ADVICE_MAX 2048

struct run {
	tb_clockcheck c;
	tb_clock_verdict v;
	bool json;
	char advice[ADVICE_MAX];
};

/* ---- advice ---- */

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

static void advise(struct run *run)
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

/* ---- output ---- */

static const char *read_by(const struct run *run, size_t i)
{
	if (tb_clockcheck_is_tsc(run->c.r[i].kind))
		return "instruction";
	return run->v.syscall[i] ? "system call" : "vDSO";
}

static void print_wrapped(const char *text, const char *indent)
{
	const char *p = text;
	while (*p) {
		size_t width = WRAP_COLUMNS - strlen(indent), len = strlen(p), cut = len;
		if (len > width) {
			cut = width;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = width;
		}
		printf("%s%.*s\n", indent, (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

static void print_header(const struct run *run)
{
	const tb_env *e = &run->c.env;
	printf("clocksource  %s (available: %s)\n", e->clocksource, e->clocksources);
	printf("vDSO         %s\n", run->c.vdso ? "mapped: clock_gettime can run without a system call"
					       : "not mapped: every clock_gettime is a system call");
	printf("TSC flags    %s%s\n", e->tsc_flags,
	       run->v.tsc_invariant ? " (invariant)" : "");
	if (run->c.tsc_hz > 0)
		printf("TSC rate     %.3f MHz, calibrated against CLOCK_MONOTONIC over %d ms\n",
		       run->c.tsc_hz / 1e6, TB_CLOCKCHECK_CALIBRATE_NS / 1000000);
	printf("samples      %" PRId64 " back-to-back reads per clock", run->c.samples);
	if (run->c.pinned_cpu >= 0)
		printf(", pinned to CPU %d", run->c.pinned_cpu);
	printf("; cost: best of %d loops\n\n", TB_CLOCKCHECK_COST_ROUNDS);
}

static void print_ns(const struct run *run, size_t i, int64_t raw, int width)
{
	if (tb_clockcheck_is_tsc(run->c.r[i].kind))
		printf(" %*.1f", width, tb_clockcheck_ns(&run->c, i, raw));
	else
		printf(" %*" PRId64, width, raw);
}

static void print_table(const struct run *run)
{
	printf("%-22s %10s %8s %8s %8s %10s %8s %5s  %s\n", "clock", "res_ns", "cost_ns", "p50_ns",
	       "p99_ns", "max_ns", "min>0_ns", "back", "read by");
	for (size_t i = 0; i < run->c.count; i++) {
		const tb_clock_result *r = &run->c.r[i];
		printf("%-22s", run->c.r[i].name);
		if (!r->available) {
			printf(" not available: %s\n", r->why_not);
			continue;
		}
		printf(" %10.*f %8.1f", r->res_ns >= 1 ? 0 : 2, r->res_ns, r->cost_ns);
		print_ns(run, i, r->p50, 8);
		print_ns(run, i, r->p99, 8);
		print_ns(run, i, r->max, 10);
		if (r->min_nonzero)
			print_ns(run, i, r->min_nonzero, 8);
		else
			printf(" %8s", "-");
		printf(" %5" PRId64 "  %s%s\n", r->backwards, read_by(run, i),
		       i == run->v.use ? "  <- tb_now" : "");
	}
}

static void print_cycles(const struct run *run)
{
	bool any = false;
	for (size_t i = 0; i < run->c.count; i++) {
		const tb_clock_result *r = &run->c.r[i];
		if (!tb_clockcheck_is_tsc(run->c.r[i].kind) || !r->available)
			continue;
		if (!any)
			printf("\nTSC in cycles:\n%-22s %8s %8s %8s %10s %8s\n", "clock", "cost", "p50",
			       "p99", "max", "min>0");
		any = true;
		printf("%-22s %8.1f %8" PRId64 " %8" PRId64 " %10" PRId64, run->c.r[i].name,
		       r->cost_ns * run->c.tsc_hz / 1e9, r->p50, r->p99, r->max);
		if (r->min_nonzero)
			printf(" %8" PRId64 "\n", r->min_nonzero);
		else
			printf(" %8s\n", "-");
	}
}

static void print_syscalls(const struct run *run)
{
	double baseline = run->c.r[run->c.count - 1].cost_ns;
	printf("\nsystem calls (a forced clock_gettime system call costs %.0f ns here):\n", baseline);
	for (size_t i = 0; i < run->c.count; i++) {
		const tb_clock_result *r = &run->c.r[i];
		tb_clock_kind k = r->kind;
		if (!r->available || k == TB_CLOCK_SYSCALL)
			continue;
		if (tb_clockcheck_is_tsc(k))
			printf("  %s: one user-space instruction, %.1f ns: never a system call.\n",
			       run->c.r[i].name, r->cost_ns);
		else if (!run->v.syscall[i])
			printf("  %s: %.1f ns, %.0f%% of a system call: served by the vDSO, no system "
			       "call.\n", run->c.r[i].name, r->cost_ns, 100 * r->cost_ns / baseline);
		else
			printf("  %s: %.1f ns, %.0f%% of a system call: %s.\n", run->c.r[i].name,
			       r->cost_ns, 100 * r->cost_ns / baseline,
			       run->c.vdso ? "likely a system call (the vDSO fell back to the kernel)"
					 : "a system call (no vDSO)");
	}
}

static void print_text(const struct run *run)
{
	print_header(run);
	print_table(run);
	print_cycles(run);
	print_syscalls(run);
	printf("\nrecommendation:\n");
	print_wrapped(run->advice, "  ");
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void json_raw(const struct run *run, size_t i, const char *key, int64_t raw)
{
	printf(", \"%s_ns\": %.3f", key, tb_clockcheck_ns(&run->c, i, raw));
	if (tb_clockcheck_is_tsc(run->c.r[i].kind))
		printf(", \"%s_cycles\": %" PRId64, key, raw);
}

static void json_clock(const struct run *run, size_t i)
{
	const tb_clock_result *r = &run->c.r[i];
	printf("{\"name\": ");
	json_str(run->c.r[i].name);
	printf(", \"available\": %s", r->available ? "true" : "false");
	if (!r->available) {
		printf(", \"why_not\": ");
		json_str(r->why_not);
		putchar('}');
		return;
	}
	printf(", \"used_by_tb_now\": %s, \"read_by\": \"%s\", \"system_call\": %s",
	       i == run->v.use ? "true" : "false", read_by(run, i), run->v.syscall[i] ? "true" : "false");
	printf(", \"resolution_ns\": %.3f, \"cost_ns\": %.3f", r->res_ns, r->cost_ns);
	if (tb_clockcheck_is_tsc(run->c.r[i].kind))
		printf(", \"cost_cycles\": %.1f", r->cost_ns * run->c.tsc_hz / 1e9);
	json_raw(run, i, "p50", r->p50);
	json_raw(run, i, "p99", r->p99);
	json_raw(run, i, "max", r->max);
	if (r->min_nonzero)
		json_raw(run, i, "min_nonzero", r->min_nonzero);
	else
		printf(", \"min_nonzero_ns\": null");
	printf(", \"backwards\": %" PRId64 "}", r->backwards);
}

static void print_json(const struct run *run)
{
	printf("{\"clocksource\": ");
	json_str(run->c.env.clocksource);
	printf(", \"clocksources\": ");
	json_str(run->c.env.clocksources);
	printf(", \"tsc_flags\": ");
	json_str(run->c.env.tsc_flags);
	printf(", \"tsc_invariant\": %s, \"vdso\": %s, \"samples\": %" PRId64,
	       run->v.tsc_invariant ? "true" : "false", run->c.vdso ? "true" : "false", run->c.samples);
	if (run->c.tsc_hz > 0)
		printf(", \"tsc_hz\": %.0f", run->c.tsc_hz);
	else
		printf(", \"tsc_hz\": null");
	printf(", \"pinned_cpu\": %d, \"syscall_ns\": %.3f, \"clocks\": [", run->c.pinned_cpu,
	       run->c.r[run->c.count - 1].cost_ns);
	for (size_t i = 0; i < run->c.count; i++) {
		if (i)
			printf(", ");
		json_clock(run, i);
	}
	printf("], \"recommendation\": ");
	json_str(run->advice);
	printf("}\n");
}

/* ---- options ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus clock [--json] [--samples N] [--version]\n"
		"Shows the clocksource and TSC flags, then for each clock the cost of one read\n"
		"and the distribution of back-to-back deltas (p50, p99, max, smallest non-zero)\n"
		"over N reads (default %d, from %d to %d), whether a read makes a system\n"
		"call, and which clock to use.\n",
		DEFAULT_SAMPLES, TB_CLOCKCHECK_MIN_SAMPLES, TB_CLOCKCHECK_MAX_SAMPLES);
}

static int parse(int argc, char **argv, struct run *run)
{
	static const struct option longs[] = {{"json", no_argument, 0, 'j'},
					      {"samples", required_argument, 0, 'n'},
					      {"help", no_argument, 0, 'h'},
					      {"version", no_argument, 0, 'V'},
					      {0, 0, 0, 0}};
	static const tb_unit_spec samples = {TB_UNIT_COUNT, 1, TB_CLOCKCHECK_MIN_SAMPLES,
					     TB_CLOCKCHECK_MAX_SAMPLES};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
		switch (c) {
		case 'j': run->json = true; break;
		case 'n':
			if (!tb_cli_unit(VERB, "samples", optarg, &samples, &run->c.samples))
				return -EINVAL;
			break;
		case 'h': usage(stdout); return 1;
		case 'V': tb_cli_version(); return 1;
		default:
			tb_cli_bad_option(VERB, c, argv[optind - 1], usage);
			return -EINVAL;
		}
	}
	if (!tb_cli_no_operands(VERB, argc, argv)) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

int tb_cmd_clock(int argc, char **argv)
{
	static struct run run; /* large (one env, the advice); one per process */
	memset(&run, 0, sizeof(run));
	run.c.samples = DEFAULT_SAMPLES;
	int rc = parse(argc, argv, &run);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	rc = tb_clockcheck_init(&run.c, run.c.samples);
	if (rc == 0) {
		tb_env_collect(&run.c.env);
		rc = tb_clockcheck_measure(&run.c);
	}
	if (rc < 0) {
		tb_cli_error(VERB, "cannot measure %" PRId64 " samples: %s", run.c.samples,
			     strerror(-rc));
		return TB_EXIT_INPUT;
	}
	tb_clockcheck_judge(&run.c, &run.v);
	advise(&run);
	if (run.json)
		print_json(&run);
	else
		print_text(&run);
	return fflush(stdout) == 0 ? TB_EXIT_OK : TB_EXIT_INPUT;
}
