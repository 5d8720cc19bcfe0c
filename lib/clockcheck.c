/* clockcheck.c - read each clock, measure its cost and floor, and judge the
 * figures (see tailbus/clockcheck.h).
 *
 * One loop per kind of clock (EACH_KIND), so no dispatch sits between two
 * reads. What the machine offers (the TSC flags, rdtscp, a vDSO) is probed
 * before a row is measured; a row that cannot be read says why in why_not.
 * The verdicts read only the struct, so they can be tested on hand-made
 * figures.
 */
#include "tailbus/clockcheck.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tailbus/hist.h"
#include "tailbus/env.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_TSC 1
#endif

/* Paired (CLOCK_MONOTONIC, TSC) readings: the tightest of this many is kept. */
#define PAIR_TRIES 16
#define NS_PER_SEC 1000000000LL
#define HIST_DIGITS 3

struct clock_def {
	const char *name;
	tb_clock_kind kind;
	clockid_t id;
};

static const struct clock_def clock_defs[] = {
	{"CLOCK_MONOTONIC", TB_CLOCK_POSIX, CLOCK_MONOTONIC},
	{"CLOCK_MONOTONIC_RAW", TB_CLOCK_POSIX, CLOCK_MONOTONIC_RAW},
	{"CLOCK_REALTIME", TB_CLOCK_POSIX, CLOCK_REALTIME},
	{"CLOCK_MONOTONIC_COARSE", TB_CLOCK_POSIX, CLOCK_MONOTONIC_COARSE},
#ifdef HAVE_TSC
	{"rdtsc", TB_CLOCK_TSC, 0},
	{"rdtsc+lfence", TB_CLOCK_TSC_LFENCE, 0},
	{"rdtscp", TB_CLOCK_TSCP, 0},
#endif
	/* The baseline: clock_gettime(CLOCK_MONOTONIC) forced into the kernel. */
	{"SYS_clock_gettime", TB_CLOCK_SYSCALL, CLOCK_MONOTONIC},
};
#define NCLOCKS (sizeof(clock_defs) / sizeof(clock_defs[0]))

_Static_assert(NCLOCKS <= TB_CLOCKCHECK_MAX, "TB_CLOCKCHECK_MAX holds every row");

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
	case TB_CLOCK_POSIX: STMT(read_posix((def)->id)); break;                       \
	case TB_CLOCK_SYSCALL: STMT(read_syscall((def)->id)); break;                   \
	TSC_CASES(STMT)                                                                \
	}
#ifdef HAVE_TSC
#define TSC_CASES(STMT)                                                                \
	case TB_CLOCK_TSC: STMT(read_tsc()); break;                                    \
	case TB_CLOCK_TSC_LFENCE: STMT(read_tsc_lfence()); break;                      \
	case TB_CLOCK_TSCP: STMT(read_tscp()); break;
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

/* Mean ns per read over n reads, best of TB_CLOCKCHECK_COST_ROUNDS. */
static double cost_ns(const struct clock_def *def, int64_t n)
{
	double best = 0;
	for (int round = 0; round < TB_CLOCKCHECK_COST_ROUNDS; round++) {
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

static bool tsc_usable(const tb_clockcheck *c, tb_clock_kind kind, char *why, size_t cap)
{
	int mode = 0;
	if (prctl(PR_GET_TSC, &mode) == 0 && mode == PR_TSC_SIGSEGV) {
		snprintf(why, cap, "reading the TSC is disabled for this process (prctl PR_SET_TSC)");
		return false;
	}
	const char *flags = c->env.tsc_flags;
	bool known = strcmp(flags, "unknown") != 0;
	if (known && !has_word(flags, "tsc")) {
		snprintf(why, cap, "the CPU has no TSC");
		return false;
	}
	if (kind != TB_CLOCK_TSCP)
		return true;
	unsigned a, b, cx, d;
	bool cpuid = __get_cpuid(CPUID_EXT_FEATURES, &a, &b, &cx, &d) && (d & CPUID_RDTSCP_BIT);
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
	while (read_posix(CLOCK_MONOTONIC) - ns0 < TB_CLOCKCHECK_CALIBRATE_NS)
		;
	tsc_pair(&ns1, &c1);
	return ns1 > ns0 ? (double)(c1 - c0) * 1e9 / (double)(ns1 - ns0) : 0;
}
#endif

static bool available(const tb_clockcheck *c, const struct clock_def *def, tb_clock_result *r)
{
	struct timespec res;
	switch (def->kind) {
	case TB_CLOCK_POSIX:
	case TB_CLOCK_SYSCALL:
		if (clock_getres(def->id, &res) < 0) {
			snprintf(r->why_not, sizeof(r->why_not), "clock_getres: %s", strerror(errno));
			return false;
		}
		r->res_ns = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
		return true;
	default:
#ifdef HAVE_TSC
		if (!tsc_usable(c, def->kind, r->why_not, sizeof(r->why_not)))
			return false;
		r->res_ns = c->tsc_hz > 0 ? 1e9 / c->tsc_hz : 0;
		return true;
#else
		(void)c;
		return false;
#endif
	}
}

/* ---- measuring ---- */

static int measure(tb_clockcheck *c, size_t i, int64_t *t, tb_hist *h)
{
	const struct clock_def *def = &clock_defs[i];
	tb_clock_result *r = &c->r[i];
	r->available = available(c, def, r);
	if (!r->available)
		return 0;
	r->cost_ns = cost_ns(def, c->samples);
	fill(def, t, c->samples + 1);
	tb_hist_reset(h);
	for (int64_t k = 0; k < c->samples; k++) {
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

int tb_clockcheck_init(tb_clockcheck *c, int64_t samples)
{
	if (!c || samples < TB_CLOCKCHECK_MIN_SAMPLES || samples > TB_CLOCKCHECK_MAX_SAMPLES)
		return -EINVAL;
	memset(c->r, 0, sizeof(c->r));
	c->samples = samples;
	c->vdso = false;
	c->tsc_hz = 0;
	c->pinned_cpu = -1;
	c->count = NCLOCKS;
	for (size_t i = 0; i < NCLOCKS; i++) {
		c->r[i].name = clock_defs[i].name;
		c->r[i].kind = clock_defs[i].kind;
	}
	return 0;
}

int tb_clockcheck_measure(tb_clockcheck *c)
{
	if (!c || c->count != NCLOCKS || c->samples < TB_CLOCKCHECK_MIN_SAMPLES ||
	    c->samples > TB_CLOCKCHECK_MAX_SAMPLES)
		return -EINVAL;
	int64_t *t = malloc((size_t)(c->samples + 1) * sizeof(*t));
	tb_hist h;
	if (!t || tb_hist_init(&h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, HIST_DIGITS) < 0) {
		free(t);
		return -ENOMEM;
	}
	cpu_set_t before;
	c->pinned_cpu = pin_here(&before);
	c->vdso = getauxval(AT_SYSINFO_EHDR) != 0;
#ifdef HAVE_TSC
	char why[TB_CLOCKCHECK_WHY_MAX];
	if (tsc_usable(c, TB_CLOCK_TSC, why, sizeof(why)))
		c->tsc_hz = calibrate_tsc_hz();
#endif
	int rc = 0;
	for (size_t i = 0; i < NCLOCKS && rc == 0; i++)
		rc = measure(c, i, t, &h);
	if (c->pinned_cpu >= 0)
		sched_setaffinity(0, sizeof(before), &before);
	tb_hist_free(&h);
	free(t);
	return rc;
}

/* ---- the rules ---- */

bool tb_clockcheck_is_tsc(tb_clock_kind kind)
{
	return kind == TB_CLOCK_TSC || kind == TB_CLOCK_TSC_LFENCE || kind == TB_CLOCK_TSCP;
}

double tb_clockcheck_ns(const tb_clockcheck *c, size_t i, int64_t raw)
{
	if (!tb_clockcheck_is_tsc(c->r[i].kind))
		return (double)raw;
	return c->tsc_hz > 0 ? (double)raw * 1e9 / c->tsc_hz : 0;
}

/* Why the kernel keeps time without the TSC, as far as we can tell. */
static tb_clock_tsc_distrust tsc_distrust(const tb_env *e)
{
	if (has_word(e->cmdline, "tsc=unstable"))
		return TB_TSC_CMDLINE_UNSTABLE;
	if (!has_word(e->clocksources, "tsc"))
		return TB_TSC_NOT_OFFERED;
	return TB_TSC_NOT_SELECTED;
}

/* Whether the TSC could stand in for CLOCK_MONOTONIC. */
static tb_clock_tsc_verdict tsc_verdict(const tb_clockcheck *c, bool invariant)
{
	const tb_clock_result *tsc = NULL;
	for (size_t i = 0; i < c->count; i++)
		if (c->r[i].kind == TB_CLOCK_TSC)
			tsc = &c->r[i];
	if (!tsc)
		return TB_TSC_NO_COUNTER;
	if (!tsc->available || c->tsc_hz <= 0)
		return TB_TSC_UNREADABLE;
	if (!strcmp(c->env.tsc_flags, "unknown"))
		return TB_TSC_FLAGS_UNKNOWN;
	if (!invariant)
		return TB_TSC_NOT_INVARIANT;
	if (!strcmp(c->env.clocksource, "tsc"))
		return TB_TSC_KERNEL_USES_IT;
	return TB_TSC_NOT_KERNELS;
}

int tb_clockcheck_judge(const tb_clockcheck *c, tb_clock_verdict *v)
{
	if (!c || !v || c->count < 2 || c->count > TB_CLOCKCHECK_MAX)
		return -EINVAL;
	memset(v, 0, sizeof(*v));
	double baseline = c->r[c->count - 1].cost_ns;
	for (size_t i = 0; i < c->count; i++) {
		const tb_clock_result *r = &c->r[i];
		if (r->kind == TB_CLOCK_SYSCALL)
			v->syscall[i] = true;
		else if (r->kind == TB_CLOCK_POSIX)
			v->syscall[i] = !c->vdso ||
					r->cost_ns >= TB_CLOCKCHECK_SYSCALL_RATIO * baseline;
	}
	const tb_env *e = &c->env;
	v->tsc_invariant = has_word(e->tsc_flags, "constant_tsc") &&
			   has_word(e->tsc_flags, "nonstop_tsc");
	v->use = TB_CLOCKCHECK_MONOTONIC;
	if (!v->syscall[TB_CLOCKCHECK_MONOTONIC])
		v->mono = TB_MONO_VDSO;
	else
		v->mono = c->vdso ? TB_MONO_SYSCALL_FALLBACK : TB_MONO_SYSCALL_NO_VDSO;
	v->clocksource_known = strcmp(e->clocksource, "unknown") != 0;
	v->kvm_clock = !strcmp(e->clocksource, "kvm-clock");
	v->tsc_offered = has_word(e->clocksources, "tsc");
	v->tsc = tsc_verdict(c, v->tsc_invariant);
	v->distrust = tsc_distrust(e);
	return 0;
}
