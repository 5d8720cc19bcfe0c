/* clock.c - `tailbus clock`: which clock to trust, what a read costs, how fine it is.
 *
 *   tailbus clock [--json] [--samples N]
 *
 * For each clock tb_now() could use (CLOCK_MONOTONIC, what it does use), or a
 * user might consider (CLOCK_MONOTONIC_RAW, CLOCK_REALTIME,
 * CLOCK_MONOTONIC_COARSE, and on x86 the TSC through rdtsc, lfence+rdtsc and
 * rdtscp), two things are measured on one pinned CPU:
 *   - the cost of a read: N reads in a loop timed with CLOCK_MONOTONIC, best
 *     of COST_ROUNDS rounds (a round hit by an interrupt is discarded);
 *   - the floor: N+1 reads back to back into an array, whose N deltas go into
 *     an HDR histogram (p50, p99, max) with the smallest non-zero delta (the
 *     step the clock can resolve) and the count of deltas that went backwards.
 * TSC figures are in cycles and in ns, using a TSC frequency calibrated
 * against CLOCK_MONOTONIC over CALIBRATE_NS.
 *
 * Whether a clock_gettime() call made a system call is judged against a
 * baseline measured in the same run: clock_gettime forced through syscall(2).
 * A read costing less than SYSCALL_RATIO of that was served by the vDSO.
 * Then the environment (clocksource, TSC flags, boot options) and the figures
 * become one paragraph of advice.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tailbus/env.h"
#include "tailbus/hist.h"
#include "tailbus/json.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_TSC 1
#endif

#define VERB "clock"
#define DEFAULT_SAMPLES 100000
/* Fewer than 100 samples leave no sample beyond p99; 10^7 is 80 MB of array. */
#define MIN_SAMPLES 100
#define MAX_SAMPLES 10000000
#define COST_ROUNDS 3
/* The TSC is calibrated over ~100 ms: a 1 us error in the end points is 10 ppm. */
#define CALIBRATE_NS 100000000
/* Paired (CLOCK_MONOTONIC, TSC) readings: the tightest of this many is kept. */
#define PAIR_TRIES 16
/* A vDSO read costs a few tens of ns, a system call hundreds: a read at half
 * the cost of a forced system call or more is taken to be one. */
#define SYSCALL_RATIO 0.5
#define NS_PER_SEC 1000000000LL
#define HIST_DIGITS 3
#define WRAP_COLUMNS 78
#define ADVICE_MAX 2048

enum kind { K_POSIX, K_SYSCALL, K_TSC, K_TSC_LFENCE, K_TSCP };

struct clock_def {
	const char *name;
	enum kind kind;
	clockid_t id;
};

static const struct clock_def clock_defs[] = {
	{"CLOCK_MONOTONIC", K_POSIX, CLOCK_MONOTONIC},
	{"CLOCK_MONOTONIC_RAW", K_POSIX, CLOCK_MONOTONIC_RAW},
	{"CLOCK_REALTIME", K_POSIX, CLOCK_REALTIME},
	{"CLOCK_MONOTONIC_COARSE", K_POSIX, CLOCK_MONOTONIC_COARSE},
#ifdef HAVE_TSC
	{"rdtsc", K_TSC, 0},
	{"rdtsc+lfence", K_TSC_LFENCE, 0},
	{"rdtscp", K_TSCP, 0},
#endif
	/* The baseline: clock_gettime(CLOCK_MONOTONIC) forced into the kernel. */
	{"SYS_clock_gettime", K_SYSCALL, CLOCK_MONOTONIC},
};
#define NCLOCKS (sizeof(clock_defs) / sizeof(clock_defs[0]))
/* Rows the advice and the system-call verdicts refer to. */
#define MONO 0 /* CLOCK_MONOTONIC, what tb_now() reads */
#define COARSE 3
#define PLAIN_TSC 4 /* rdtsc, when HAVE_TSC */
#define BASELINE (NCLOCKS - 1)

/* What one clock measured. TSC rows keep cycles in the raw fields. */
struct result {
	bool available;
	char why_not[160];
	double res_ns; /* clock_getres, or one cycle */
	double cost_ns;
	int64_t p50, p99, max, min_nonzero; /* raw units; min_nonzero 0: none seen */
	int64_t backwards;
	bool syscall;
};

struct run {
	tb_env env;
	int64_t samples;
	bool json;
	bool vdso;
	bool tsc_invariant;
	double tsc_hz; /* 0: not calibrated */
	int pinned_cpu; /* -1: not pinned */
	struct result r[NCLOCKS];
	char advice[ADVICE_MAX];
};

/* ---- reading the clocks ---- */

static inline int64_t read_posix(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static inline int64_t read_syscall(clockid_t id)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

#ifdef HAVE_TSC
/* rdtsc may execute before earlier instructions finish: cheapest, unordered. */
static inline int64_t read_tsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (int64_t)((uint64_t)hi << 32 | lo);
}

/* lfence waits for every earlier instruction, so the read is ordered after them. */
static inline int64_t read_tsc_lfence(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return (int64_t)((uint64_t)hi << 32 | lo);
}

/* rdtscp waits for earlier instructions and also returns the CPU's TSC_AUX. */
static inline int64_t read_tscp(void)
{
	uint32_t lo, hi, aux;
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
	return (int64_t)((uint64_t)hi << 32 | lo);
}
#endif

/* One loop per kind, so no dispatch sits between two reads. */
#define EACH_KIND(def, STMT)                                                           \
	switch ((def)->kind) {                                                         \
	case K_POSIX: STMT(read_posix((def)->id)); break;                              \
	case K_SYSCALL: STMT(read_syscall((def)->id)); break;                          \
	TSC_CASES(STMT)                                                                \
	}
#ifdef HAVE_TSC
#define TSC_CASES(STMT)                                                                \
	case K_TSC: STMT(read_tsc()); break;                                           \
	case K_TSC_LFENCE: STMT(read_tsc_lfence()); break;                             \
	case K_TSCP: STMT(read_tscp()); break;
#else
#define TSC_CASES(STMT) default: break;
#endif

static void fill(const struct clock_def *def, int64_t *t, int64_t n)
{
#define FILL(READ)                            \
	for (int64_t i = 0; i < n; i++)       \
		t[i] = READ;
	EACH_KIND(def, FILL)
#undef FILL
}

/* Mean ns per read over n reads, best of COST_ROUNDS. */
static double cost_ns(const struct clock_def *def, int64_t n)
{
	double best = 0;
	for (int round = 0; round < COST_ROUNDS; round++) {
		volatile uint64_t sink = 0; /* unsigned: the sum may wrap */
		int64_t t0 = read_posix(CLOCK_MONOTONIC);
#define SPIN(READ)                            \
	for (int64_t i = 0; i < n; i++)       \
		sink += (uint64_t)(READ);
		EACH_KIND(def, SPIN)
#undef SPIN
		double mean = (double)(read_posix(CLOCK_MONOTONIC) - t0) / (double)n;
		if (round == 0 || mean < best)
			best = mean;
		(void)sink;
	}
	return best;
}

/* ---- what can be measured here ---- */

/* word is one of the blank-separated words of an env field (tailbus/env.h). */
static bool has_word(const char *list, const char *word)
{
	return tb_env_has_word(list, strlen(list), word);
}

#ifdef HAVE_TSC
/* CPUID 0x80000001 EDX bit 27: RDTSCP. */
#define CPUID_EXT_FEATURES 0x80000001u
#define CPUID_RDTSCP_BIT (1u << 27)

static bool tsc_usable(const struct run *run, enum kind kind, char *why, size_t cap)
{
	int mode = 0;
	if (prctl(PR_GET_TSC, &mode) == 0 && mode == PR_TSC_SIGSEGV) {
		snprintf(why, cap, "reading the TSC is disabled for this process (prctl PR_SET_TSC)");
		return false;
	}
	const char *flags = run->env.tsc_flags;
	bool known = strcmp(flags, "unknown") != 0;
	if (known && !has_word(flags, "tsc")) {
		snprintf(why, cap, "the CPU has no TSC");
		return false;
	}
	if (kind != K_TSCP)
		return true;
	unsigned a, b, c, d;
	bool cpuid = __get_cpuid(CPUID_EXT_FEATURES, &a, &b, &c, &d) && (d & CPUID_RDTSCP_BIT);
	if (!cpuid || (known && !has_word(flags, "rdtscp"))) {
		snprintf(why, cap, "the CPU does not offer rdtscp (%s)",
			 cpuid ? "not in /proc/cpuinfo flags" : "CPUID says no");
		return false;
	}
	return true;
}

/* A (CLOCK_MONOTONIC, TSC) pair read as close together as we can: the TSC
 * read between two clock reads, the tightest bracket of PAIR_TRIES. */
static void tsc_pair(int64_t *ns, int64_t *cycles)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < PAIR_TRIES; i++) {
		int64_t a = read_posix(CLOCK_MONOTONIC);
		int64_t c = read_tsc_lfence();
		int64_t b = read_posix(CLOCK_MONOTONIC);
		if (b - a < best) {
			best = b - a;
			*ns = a + (b - a) / 2;
			*cycles = c;
		}
	}
}

static double calibrate_tsc_hz(void)
{
	int64_t ns0 = 0, c0 = 0, ns1 = 0, c1 = 0; /* set by tsc_pair (its loop always runs) */
	tsc_pair(&ns0, &c0);
	while (read_posix(CLOCK_MONOTONIC) - ns0 < CALIBRATE_NS)
		;
	tsc_pair(&ns1, &c1);
	return ns1 > ns0 ? (double)(c1 - c0) * 1e9 / (double)(ns1 - ns0) : 0;
}
#endif

static bool available(const struct run *run, const struct clock_def *def, struct result *r)
{
	struct timespec res;
	switch (def->kind) {
	case K_POSIX:
	case K_SYSCALL:
		if (clock_getres(def->id, &res) < 0) {
			snprintf(r->why_not, sizeof(r->why_not), "clock_getres: %s", strerror(errno));
			return false;
		}
		r->res_ns = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
		return true;
	default:
#ifdef HAVE_TSC
		if (!tsc_usable(run, def->kind, r->why_not, sizeof(r->why_not)))
			return false;
		r->res_ns = run->tsc_hz > 0 ? 1e9 / run->tsc_hz : 0;
		return true;
#else
		(void)run;
		return false;
#endif
	}
}

/* ---- measuring ---- */

static int measure(struct run *run, size_t i, int64_t *t, tb_hist *h)
{
	const struct clock_def *def = &clock_defs[i];
	struct result *r = &run->r[i];
	r->available = available(run, def, r);
	if (!r->available)
		return 0;
	r->cost_ns = cost_ns(def, run->samples);
	fill(def, t, run->samples + 1);
	tb_hist_reset(h);
	for (int64_t k = 0; k < run->samples; k++) {
		int64_t d = t[k + 1] - t[k];
		if (d < 0) {
			r->backwards++;
			continue;
		}
		if (d > 0 && (r->min_nonzero == 0 || d < r->min_nonzero))
			r->min_nonzero = d;
		int rc = tb_hist_record(h, d);
		if (rc < 0)
			return rc;
	}
	r->p50 = tb_hist_value_at_percentile(h, 50.0);
	r->p99 = tb_hist_value_at_percentile(h, 99.0);
	r->max = tb_hist_max(h);
	return 0;
}

/* Pin to the CPU we are on, so no read is split by a migration. */
static int pin_here(cpu_set_t *before)
{
	int cpu = sched_getcpu();
	cpu_set_t one;
	if (cpu < 0 || sched_getaffinity(0, sizeof(*before), before) < 0)
		return -1;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one) == 0 ? cpu : -1;
}

static void classify(struct run *run)
{
	double baseline = run->r[BASELINE].cost_ns;
	for (size_t i = 0; i < NCLOCKS; i++) {
		const struct clock_def *def = &clock_defs[i];
		struct result *r = &run->r[i];
		if (def->kind == K_SYSCALL)
			r->syscall = true;
		else if (def->kind == K_POSIX)
			r->syscall = !run->vdso || r->cost_ns >= SYSCALL_RATIO * baseline;
	}
}

static int measure_all(struct run *run)
{
	int64_t *t = malloc((size_t)(run->samples + 1) * sizeof(*t));
	tb_hist h;
	if (!t || tb_hist_init(&h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, HIST_DIGITS) < 0) {
		free(t);
		return -ENOMEM;
	}
	cpu_set_t before;
	run->pinned_cpu = pin_here(&before);
	run->vdso = getauxval(AT_SYSINFO_EHDR) != 0;
#ifdef HAVE_TSC
	char why[160];
	if (tsc_usable(run, K_TSC, why, sizeof(why)))
		run->tsc_hz = calibrate_tsc_hz();
#endif
	int rc = 0;
	for (size_t i = 0; i < NCLOCKS && rc == 0; i++)
		rc = measure(run, i, t, &h);
	if (run->pinned_cpu >= 0)
		sched_setaffinity(0, sizeof(before), &before);
	classify(run);
	tb_hist_free(&h);
	free(t);
	return rc;
}

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

static bool is_tsc_kind(enum kind k)
{
	return k == K_TSC || k == K_TSC_LFENCE || k == K_TSCP;
}

static double to_ns(const struct run *run, size_t i, int64_t raw)
{
	if (!is_tsc_kind(clock_defs[i].kind))
		return (double)raw;
	return run->tsc_hz > 0 ? (double)raw * 1e9 / run->tsc_hz : 0;
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

/* Why the kernel keeps time without the TSC, as far as we can tell. */
static const char *tsc_distrust(const struct run *run)
{
	if (has_word(run->env.cmdline, "tsc=unstable"))
		return "it is not even offered as a clocksource: the kernel command line says "
		       "tsc=unstable";
	if (!has_word(run->env.clocksources, "tsc"))
		return "it is not among the available clocksources";
	return "tsc is available but not selected; switching (echo tsc > "
	       "/sys/devices/system/clocksource/clocksource0/current_clocksource) means trusting "
	       "it across CPUs and migrations";
}

static void advise_tsc(struct run *run)
{
#ifndef HAVE_TSC
	say(run, "No cycle counter is measured on this architecture. ");
	return;
#endif
	const struct result *tsc = &run->r[PLAIN_TSC];
	if (!tsc->available || run->tsc_hz <= 0) {
		say(run, "The TSC cannot be read here, so CLOCK_MONOTONIC is the only choice. ");
		return;
	}
	if (!strcmp(run->env.tsc_flags, "unknown")) {
		say(run, "The CPU flags could not be read (/proc/cpuinfo), so whether the TSC is "
			 "invariant is unknown: do not time anything with it. ");
		return;
	}
	if (!run->tsc_invariant) {
		say(run, "The TSC is not invariant here (constant_tsc and nonstop_tsc are not both "
			 "set): its rate follows the CPU frequency or stops in deep idle, so it must "
			 "not time anything. ");
		return;
	}
	if (!strcmp(run->env.clocksource, "tsc")) {
		say(run, "A raw rdtsc (%.1f ns) would save %.0f ns a read, but needs its own "
			 "calibration and gives up the kernel's corrections; not worth it. ",
		    tsc->cost_ns, run->r[MONO].cost_ns - tsc->cost_ns);
		return;
	}
	say(run, "The TSC is invariant (constant_tsc, nonstop_tsc) and cheaper (%.1f ns a read), "
		 "but the kernel does not keep time with it here (%s), so tb_now stays on "
		 "CLOCK_MONOTONIC unless you know the host keeps the TSC synchronised across CPUs "
		 "and migrations and you calibrate it yourself. ",
	    tsc->cost_ns, tsc_distrust(run));
}

static void advise(struct run *run)
{
	const struct result *mono = &run->r[MONO], *coarse = &run->r[COARSE];
	const char *cs = run->env.clocksource;
	bool known = strcmp(cs, "unknown") != 0;
	if (!mono->syscall)
		say(run, "The kernel keeps time with %s and CLOCK_MONOTONIC reads it through the "
			 "vDSO in %.1f ns, with no system call: it is correct on every CPU%s, and "
			 "tb_now uses it. ",
		    known ? cs : "a clocksource it did not name (sysfs unreadable)", mono->cost_ns,
		    strcmp(cs, "kvm-clock") ? "" : " and across live migration");
	else if (!run->vdso)
		say(run, "CLOCK_MONOTONIC costs a system call here (%.0f ns) because no vDSO is "
			 "mapped into this process (booted with vdso=0?): every tb_now pays it. ",
		    mono->cost_ns);
	else
		say(run, "CLOCK_MONOTONIC costs a system call here (%.0f ns: the vDSO cannot read "
			 "the clocksource, %s): every tb_now pays it. Prefer a clocksource the vDSO "
			 "can read (tsc, kvm-clock, hyperv_clocksource_tsc_page)%s. ",
		    mono->cost_ns, cs,
		    has_word(run->env.clocksources, "tsc") ? ": tsc is available" : "");
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

static const char *read_by(size_t i, const struct result *r)
{
	if (is_tsc_kind(clock_defs[i].kind))
		return "instruction";
	return r->syscall ? "system call" : "vDSO";
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
	const tb_env *e = &run->env;
	printf("clocksource  %s (available: %s)\n", e->clocksource, e->clocksources);
	printf("vDSO         %s\n", run->vdso ? "mapped: clock_gettime can run without a system call"
					       : "not mapped: every clock_gettime is a system call");
	printf("TSC flags    %s%s\n", e->tsc_flags,
	       run->tsc_invariant ? " (invariant)" : "");
	if (run->tsc_hz > 0)
		printf("TSC rate     %.3f MHz, calibrated against CLOCK_MONOTONIC over %d ms\n",
		       run->tsc_hz / 1e6, CALIBRATE_NS / 1000000);
	printf("samples      %" PRId64 " back-to-back reads per clock", run->samples);
	if (run->pinned_cpu >= 0)
		printf(", pinned to CPU %d", run->pinned_cpu);
	printf("; cost: best of %d loops\n\n", COST_ROUNDS);
}

static void print_ns(const struct run *run, size_t i, int64_t raw, int width)
{
	if (is_tsc_kind(clock_defs[i].kind))
		printf(" %*.1f", width, to_ns(run, i, raw));
	else
		printf(" %*" PRId64, width, raw);
}

static void print_table(const struct run *run)
{
	printf("%-22s %10s %8s %8s %8s %10s %8s %5s  %s\n", "clock", "res_ns", "cost_ns", "p50_ns",
	       "p99_ns", "max_ns", "min>0_ns", "back", "read by");
	for (size_t i = 0; i < NCLOCKS; i++) {
		const struct result *r = &run->r[i];
		printf("%-22s", clock_defs[i].name);
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
		printf(" %5" PRId64 "  %s%s\n", r->backwards, read_by(i, r),
		       i == MONO ? "  <- tb_now" : "");
	}
}

static void print_cycles(const struct run *run)
{
	bool any = false;
	for (size_t i = 0; i < NCLOCKS; i++) {
		const struct result *r = &run->r[i];
		if (!is_tsc_kind(clock_defs[i].kind) || !r->available)
			continue;
		if (!any)
			printf("\nTSC in cycles:\n%-22s %8s %8s %8s %10s %8s\n", "clock", "cost", "p50",
			       "p99", "max", "min>0");
		any = true;
		printf("%-22s %8.1f %8" PRId64 " %8" PRId64 " %10" PRId64, clock_defs[i].name,
		       r->cost_ns * run->tsc_hz / 1e9, r->p50, r->p99, r->max);
		if (r->min_nonzero)
			printf(" %8" PRId64 "\n", r->min_nonzero);
		else
			printf(" %8s\n", "-");
	}
}

static void print_syscalls(const struct run *run)
{
	double baseline = run->r[BASELINE].cost_ns;
	printf("\nsystem calls (a forced clock_gettime system call costs %.0f ns here):\n", baseline);
	for (size_t i = 0; i < NCLOCKS; i++) {
		const struct result *r = &run->r[i];
		enum kind k = clock_defs[i].kind;
		if (!r->available || k == K_SYSCALL)
			continue;
		if (is_tsc_kind(k))
			printf("  %s: one user-space instruction, %.1f ns: never a system call.\n",
			       clock_defs[i].name, r->cost_ns);
		else if (!r->syscall)
			printf("  %s: %.1f ns, %.0f%% of a system call: served by the vDSO, no system "
			       "call.\n", clock_defs[i].name, r->cost_ns, 100 * r->cost_ns / baseline);
		else
			printf("  %s: %.1f ns, %.0f%% of a system call: %s.\n", clock_defs[i].name,
			       r->cost_ns, 100 * r->cost_ns / baseline,
			       run->vdso ? "likely a system call (the vDSO fell back to the kernel)"
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

static void json_raw(const struct run *run, size_t i, const char *key, int64_t raw)
{
	printf(", \"%s_ns\": %.3f", key, to_ns(run, i, raw));
	if (is_tsc_kind(clock_defs[i].kind))
		printf(", \"%s_cycles\": %" PRId64, key, raw);
}

static void json_clock(const struct run *run, size_t i)
{
	const struct result *r = &run->r[i];
	printf("{\"name\": ");
	tb_json_string(stdout, clock_defs[i].name);
	printf(", \"available\": %s", r->available ? "true" : "false");
	if (!r->available) {
		printf(", \"why_not\": ");
		tb_json_string(stdout, r->why_not);
		putchar('}');
		return;
	}
	printf(", \"used_by_tb_now\": %s, \"read_by\": \"%s\", \"system_call\": %s",
	       i == MONO ? "true" : "false", read_by(i, r), r->syscall ? "true" : "false");
	printf(", \"resolution_ns\": %.3f, \"cost_ns\": %.3f", r->res_ns, r->cost_ns);
	if (is_tsc_kind(clock_defs[i].kind))
		printf(", \"cost_cycles\": %.1f", r->cost_ns * run->tsc_hz / 1e9);
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
	tb_json_string(stdout, run->env.clocksource);
	printf(", \"clocksources\": ");
	tb_json_string(stdout, run->env.clocksources);
	printf(", \"tsc_flags\": ");
	tb_json_string(stdout, run->env.tsc_flags);
	printf(", \"tsc_invariant\": %s, \"vdso\": %s, \"samples\": %" PRId64,
	       run->tsc_invariant ? "true" : "false", run->vdso ? "true" : "false", run->samples);
	if (run->tsc_hz > 0)
		printf(", \"tsc_hz\": %.0f", run->tsc_hz);
	else
		printf(", \"tsc_hz\": null");
	printf(", \"pinned_cpu\": %d, \"syscall_ns\": %.3f, \"clocks\": [", run->pinned_cpu,
	       run->r[BASELINE].cost_ns);
	for (size_t i = 0; i < NCLOCKS; i++) {
		if (i)
			printf(", ");
		json_clock(run, i);
	}
	printf("], \"recommendation\": ");
	tb_json_string(stdout, run->advice);
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
		DEFAULT_SAMPLES, MIN_SAMPLES, MAX_SAMPLES);
}

static int parse(int argc, char **argv, struct run *run)
{
	static const struct option longs[] = {{"json", no_argument, 0, 'j'},
					      {"samples", required_argument, 0, 'n'},
					      {"help", no_argument, 0, 'h'},
					      {"version", no_argument, 0, 'V'},
					      {0, 0, 0, 0}};
	static const tb_unit_spec samples = {TB_UNIT_COUNT, 1, MIN_SAMPLES, MAX_SAMPLES};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
		switch (c) {
		case 'j': run->json = true; break;
		case 'n':
			if (!tb_cli_unit(VERB, "samples", optarg, &samples, &run->samples))
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
	run.samples = DEFAULT_SAMPLES;
	int rc = parse(argc, argv, &run);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	tb_env_collect(&run.env);
	run.tsc_invariant = has_word(run.env.tsc_flags, "constant_tsc") &&
			    has_word(run.env.tsc_flags, "nonstop_tsc");
	rc = measure_all(&run);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot measure %" PRId64 " samples: %s", run.samples,
			     strerror(-rc));
		return TB_EXIT_INPUT;
	}
	advise(&run);
	if (run.json)
		print_json(&run);
	else
		print_text(&run);
	return fflush(stdout) == 0 ? TB_EXIT_OK : TB_EXIT_INPUT;
}
