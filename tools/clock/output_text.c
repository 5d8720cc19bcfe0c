/* output_text.c - `tailbus clock` as text: the environment, one table row
 * per clock, the TSC rows in cycles, the system-call verdicts, and the
 * advice wrapped to WRAP_COLUMNS.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"

#define WRAP_COLUMNS 78

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
		printf(" %5" PRId64 "  %s%s\n", r->backwards, clock_read_by(run, i),
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

void clock_print_text(const struct run *run)
{
	print_header(run);
	print_table(run);
	print_cycles(run);
	print_syscalls(run);
	printf("\nrecommendation:\n");
	print_wrapped(run->advice, "  ");
}
