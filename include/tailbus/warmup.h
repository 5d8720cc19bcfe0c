/* tailbus/warmup.h - where a run's warm-up ends: per-interval p50 and p99 stop drifting.
 *
 * The rule (`tailbus replay --warmup auto`), over a run's non-empty intervals
 * in time order: the warm-up ends at the first interval s such that, for p50
 * and for p99 alike,
 *   - the figure of interval s, and
 *   - the median of the figure over the TB_WARMUP_WINDOW intervals s, s+1, ...
 * both lie within +-tolerance of the median of that figure over intervals
 * s..n-1 (the rest of the run). The tolerance is TB_WARMUP_TOLERANCE (25%),
 * or, for a figure that is noisier in the second half of the run,
 * TB_WARMUP_NOISE_SIGMAS standard deviations of that noise (estimated from
 * differences of neighbouring intervals), at most TB_WARMUP_TOLERANCE_MAX
 * (50%). Intervals before s are the warm-up, and s must lie in the first half
 * of the run (the measurement is at least as long as the warm-up). A run needs
 * TB_WARMUP_MIN_INTERVALS non-empty intervals, else there are not enough
 * intervals to find a steady state; when no s qualifies (the run still drifts
 * in its second half) there is no steady state, and nothing is discarded.
 *
 * Why these choices:
 *   - medians of the rest of the run describe the steady state without
 *     letting the warm-up, or a rare stall, pull them as a mean would;
 *   - the window's median (not each of its intervals) must agree, so one
 *     stall, or the noise of p99 in a thin interval, does not restart the
 *     warm-up; interval s itself must agree too, so a window that still
 *     starts inside the warm-up (outvoted by the steady intervals after it)
 *     does not end it early;
 *   - 5 intervals (5 s at the collector's 1 s) is long enough that a quiet
 *     moment in a drifting warm-up does not end it;
 *   - +-25% is well above the interval-to-interval noise of p50 and of a p99
 *     with thousands of samples per interval, and well below the factors a
 *     cold cache, a JIT, a growing pool or a filling queue produce;
 *   - p99 of a thin interval (a few hundred samples) is much noisier, so its
 *     measured noise widens the tolerance (2.7 standard deviations: a steady
 *     interval falls outside less than 1% of the time) and a steady but noisy
 *     run does not look like an endless warm-up. Differences of neighbours
 *     see noise but not a slow drift, and the 50% cap keeps a wide tolerance
 *     from accepting everything below the median (a warm-up can also be
 *     faster than the steady state: a queue filling up).
 */
#ifndef TAILBUS_WARMUP_H
#define TAILBUS_WARMUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailbus/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_WARMUP_WINDOW 5
#define TB_WARMUP_TOLERANCE 0.25
#define TB_WARMUP_MIN_INTERVALS (2 * TB_WARMUP_WINDOW)
/* A noisy figure gets a wider tolerance: this many standard deviations of its
 * relative noise in the second half of the run, up to TB_WARMUP_TOLERANCE_MAX. */
#define TB_WARMUP_NOISE_SIGMAS 2.7
#define TB_WARMUP_TOLERANCE_MAX 0.5

/* Interval start times in logs have millisecond resolution: two starts this
 * close are the same time. */
#define TB_WARMUP_TIME_EPSILON 0.0005

enum tb_warmup_outcome {
	TB_WARMUP_FOUND,     /* the rule found the first steady interval */
	TB_WARMUP_TOO_FEW,   /* fewer than TB_WARMUP_MIN_INTERVALS non-empty intervals */
	TB_WARMUP_NO_STEADY, /* no window ever settles */
	TB_WARMUP_FIXED,     /* a warm-up of given length */
};

/* Apply the rule to n intervals (p50[i], p99[i] of the i-th non-empty one):
 * *steady is the first steady one when the outcome is TB_WARMUP_FOUND.
 * Returns the outcome, or -ENOMEM. Runs in O(n log n). */
int tb_warmup_find(const int64_t *p50, const int64_t *p99, size_t n, size_t *steady);

/* The figures of one interval histogram, as the series and the rule use them. */
typedef struct tb_interval_figures {
	double start;  /* absolute start, seconds since the epoch */
	double length; /* seconds */
	int64_t count, p50, p99, p99_9, max;
	bool warmup; /* set by tb_warmup_mark */
} tb_interval_figures;

void tb_interval_figures_of(const tb_hist *h, double start, double length,
			    tb_interval_figures *f);

typedef struct tb_warmup_result {
	enum tb_warmup_outcome outcome;
	double seconds;   /* where the steady state starts, after the first interval; NAN if none */
	size_t discarded; /* intervals marked as warm-up */
} tb_warmup_result;

/* Mark the warm-up of one run, its intervals given in time order: with
 * seconds >= 0, every interval starting less than `seconds` after the first;
 * with seconds < 0 (auto), the intervals before the first steady one.
 * Returns 0 or -ENOMEM. */
int tb_warmup_mark(tb_interval_figures *const *run, size_t n, double seconds,
		   tb_warmup_result *res);

#ifdef __cplusplus
}
#endif
#endif
