/* tailbus/summary.h - the figures every tailbus report shows, and when to trust them.
 *
 * A latency report is the distribution's spectrum with its sample count:
 * min, p50, p90, p99, p99.9, p99.99, max (never the mean alone). A percentile
 * is only as good as the samples beyond it: p99.9 of 1,000 samples is the
 * second-largest value, not a measurement of the tail. We mark a percentile
 * "insufficient" when fewer than TB_MIN_SAMPLES_BEYOND samples are expected
 * beyond it (so p99.9 needs about 100,000 samples, p99.99 a million).
 */
#ifndef TAILBUS_SUMMARY_H
#define TAILBUS_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include "tailbus/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_MIN_SAMPLES_BEYOND 100
#define TB_SUMMARY_PERCENTILES 5

/* 50, 90, 99, 99.9, 99.99 */
extern const double tb_summary_levels[TB_SUMMARY_PERCENTILES];
/* "p50", "p90", "p99", "p99_9", "p99_99" (the JSON keys) */
extern const char *const tb_summary_keys[TB_SUMMARY_PERCENTILES];
/* "p50", "p90", "p99", "p99.9", "p99.99" (for people) */
extern const char *const tb_summary_labels[TB_SUMMARY_PERCENTILES];

typedef struct tb_summary {
	int64_t total;
	int64_t min;
	int64_t max;
	double mean;
	double stddev;
	int64_t pct[TB_SUMMARY_PERCENTILES];
	bool insufficient[TB_SUMMARY_PERCENTILES];
} tb_summary;

/* True when at least TB_MIN_SAMPLES_BEYOND samples are expected above p. */
bool tb_percentile_sufficient(int64_t total, double percentile);
/* The highest percentile with at least TB_MIN_SAMPLES_BEYOND samples expected
 * above it, 100 * (1 - MIN / total): where a plot's insufficient region
 * starts. 0 when total is below MIN (no percentile has enough). */
double tb_percentile_sufficient_limit(int64_t total);
/* The highest percentile total samples resolve, 100 * (1 - 1 / total): only
 * the largest sample lies above it, so a percentile curve ends there with the
 * maximum (Java's .hgrm ends near it too: its last finite 1/(1-p) is about
 * total). 0 for total <= 1. */
double tb_percentile_resolved(int64_t total);
/* The figures of h, each percentile marked as tb_percentile_sufficient says.
 * h NULL stands for no samples (a window that merged no histogram): every
 * figure 0, every percentile insufficient. */
void tb_summarize(const tb_hist *h, tb_summary *s);

#ifdef __cplusplus
}
#endif
#endif
