/* tailbus/clockcheck.h - measuring the clocks tb_now() could read, and the
 * rules that turn the figures into verdicts.
 *
 * The clocks are CLOCK_MONOTONIC (what tb_now() reads), CLOCK_MONOTONIC_RAW,
 * CLOCK_REALTIME, CLOCK_MONOTONIC_COARSE, on x86 the TSC through rdtsc,
 * lfence+rdtsc and rdtscp, and last a baseline: clock_gettime(CLOCK_MONOTONIC)
 * forced through syscall(2). For each, on one pinned CPU:
 *   - the cost of a read: N reads in a loop timed with CLOCK_MONOTONIC, best
 *     of TB_CLOCKCHECK_COST_ROUNDS rounds (a round hit by an interrupt is
 *     discarded);
 *   - the floor: N+1 reads back to back, whose N deltas go into an HDR
 *     histogram (p50, p99, max) with the smallest non-zero delta (the step the
 *     clock can resolve) and the count of deltas that went backwards.
 * TSC rows keep cycles in their raw fields; the TSC frequency is calibrated
 * against CLOCK_MONOTONIC over TB_CLOCKCHECK_CALIBRATE_NS.
 *
 * tb_clockcheck_judge() derives the verdicts from the figures and the
 * environment alone (no clock is read): which reads made a system call (a
 * clock_gettime() costing less than TB_CLOCKCHECK_SYSCALL_RATIO of the
 * baseline was served by the vDSO), whether the TSC is invariant, how
 * CLOCK_MONOTONIC is read and whether the TSC could replace it.
 */
#ifndef TAILBUS_CLOCKCHECK_H
#define TAILBUS_CLOCKCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailbus/env.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fewer than 100 samples leave no sample beyond p99; 10^7 is 80 MB of array. */
#define TB_CLOCKCHECK_MIN_SAMPLES 100
#define TB_CLOCKCHECK_MAX_SAMPLES 10000000
#define TB_CLOCKCHECK_COST_ROUNDS 3
/* The TSC is calibrated over ~100 ms: a 1 us error in the end points is 10 ppm. */
#define TB_CLOCKCHECK_CALIBRATE_NS 100000000
/* A vDSO read costs a few tens of ns, a system call hundreds: a read at half
 * the cost of a forced system call or more is taken to be one. */
#define TB_CLOCKCHECK_SYSCALL_RATIO 0.5
/* Most rows any architecture has. */
#define TB_CLOCKCHECK_MAX 8
#define TB_CLOCKCHECK_WHY_MAX 160

/* Rows every architecture has: CLOCK_MONOTONIC first, the coarse clock
 * fourth; the system-call baseline is always the last row. */
#define TB_CLOCKCHECK_MONOTONIC 0
#define TB_CLOCKCHECK_COARSE 3

typedef enum tb_clock_kind {
	TB_CLOCK_POSIX,
	TB_CLOCK_SYSCALL,
	TB_CLOCK_TSC,
	TB_CLOCK_TSC_LFENCE,
	TB_CLOCK_TSCP,
} tb_clock_kind;

/* What one clock measured. TSC rows keep cycles in the raw fields. */
typedef struct tb_clock_result {
	const char *name; /* "CLOCK_MONOTONIC", "rdtsc", ... */
	tb_clock_kind kind;
	bool available;
	char why_not[TB_CLOCKCHECK_WHY_MAX];
	double res_ns; /* clock_getres, or one cycle */
	double cost_ns;
	int64_t p50, p99, max, min_nonzero; /* raw units; min_nonzero 0: none seen */
	int64_t backwards;
} tb_clock_result;

typedef struct tb_clockcheck {
	tb_env env; /* the caller fills it (tb_env_collect) */
	int64_t samples;
	bool vdso; /* a vDSO is mapped into this process */
	double tsc_hz; /* 0: not calibrated */
	int pinned_cpu; /* -1: not pinned */
	size_t count; /* rows in r; the last is the system-call baseline */
	tb_clock_result r[TB_CLOCKCHECK_MAX];
} tb_clockcheck;

/* How CLOCK_MONOTONIC is read. */
typedef enum tb_clock_mono_read {
	TB_MONO_VDSO,		/* through the vDSO, no system call */
	TB_MONO_SYSCALL_NO_VDSO, /* a system call: no vDSO is mapped */
	TB_MONO_SYSCALL_FALLBACK, /* a system call: the vDSO cannot read the clocksource */
} tb_clock_mono_read;

/* Whether the TSC could replace CLOCK_MONOTONIC. */
typedef enum tb_clock_tsc_verdict {
	TB_TSC_NO_COUNTER,     /* this architecture has no cycle counter measured */
	TB_TSC_UNREADABLE,     /* rdtsc cannot be read, or was not calibrated */
	TB_TSC_FLAGS_UNKNOWN,  /* the CPU flags could not be read */
	TB_TSC_NOT_INVARIANT,  /* constant_tsc and nonstop_tsc are not both set */
	TB_TSC_KERNEL_USES_IT, /* the clocksource is tsc: CLOCK_MONOTONIC already reads it */
	TB_TSC_NOT_KERNELS,    /* invariant, but the kernel keeps time without it */
} tb_clock_tsc_verdict;

/* Why the kernel keeps time without the TSC (with TB_TSC_NOT_KERNELS). */
typedef enum tb_clock_tsc_distrust {
	TB_TSC_CMDLINE_UNSTABLE, /* tsc=unstable on the kernel command line */
	TB_TSC_NOT_OFFERED,	 /* not among the available clocksources */
	TB_TSC_NOT_SELECTED,	 /* available but not the current clocksource */
} tb_clock_tsc_distrust;

typedef struct tb_clock_verdict {
	bool syscall[TB_CLOCKCHECK_MAX]; /* per row: the read is a system call */
	bool tsc_invariant;		 /* constant_tsc and nonstop_tsc */
	size_t use;			 /* the row tb_now should read */
	tb_clock_mono_read mono;
	bool clocksource_known; /* env.clocksource is not "unknown" */
	bool kvm_clock;		/* the clocksource is kvm-clock (right across live migration) */
	bool tsc_offered;	/* tsc is among the available clocksources */
	tb_clock_tsc_verdict tsc;
	tb_clock_tsc_distrust distrust;
} tb_clock_verdict;

/* Set up c for this architecture's clocks: the rows named, nothing measured,
 * samples as given. Returns 0, or -EINVAL for NULL or samples out of
 * [TB_CLOCKCHECK_MIN_SAMPLES, TB_CLOCKCHECK_MAX_SAMPLES]. c->env is left
 * for the caller to fill. */
int tb_clockcheck_init(tb_clockcheck *c, int64_t samples);

/* Measure every row (see above), pinned to the current CPU for the duration
 * and unpinned after. Once per tb_clockcheck_init (the counts add up), with
 * c->env filled. Returns 0, -ENOMEM, or -EINVAL. */
int tb_clockcheck_measure(tb_clockcheck *c);

/* Derive v from c's figures and environment; reads no clock. Returns 0 or
 * -EINVAL. */
int tb_clockcheck_judge(const tb_clockcheck *c, tb_clock_verdict *v);

/* The TSC kinds (read by a user-space instruction). */
bool tb_clockcheck_is_tsc(tb_clock_kind kind);
/* Row i's raw value in ns (TSC cycles through c->tsc_hz; 0 uncalibrated). */
double tb_clockcheck_ns(const tb_clockcheck *c, size_t i, int64_t raw);

#ifdef __cplusplus
}
#endif
#endif
