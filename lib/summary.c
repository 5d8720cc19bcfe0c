/* summary.c - the standard figures of a histogram and their sufficiency marks.
 *
 * The expected number of samples beyond percentile p of n samples is
 * n * (100 - p) / 100; below TB_MIN_SAMPLES_BEYOND the percentile is marked.
 * The test is done on the expected count, not on the samples above the
 * reported bucket, so that a plateau of equal values does not hide a thin tail.
 */
#include "tailbus/summary.h"

#include <string.h>

const double tb_summary_levels[TB_SUMMARY_PERCENTILES] = {50.0, 90.0, 99.0, 99.9, 99.99};
const char *const tb_summary_keys[TB_SUMMARY_PERCENTILES] = {"p50", "p90", "p99", "p99_9",
							      "p99_99"};
const char *const tb_summary_labels[TB_SUMMARY_PERCENTILES] = {"p50", "p90", "p99", "p99.9",
								"p99.99"};

bool tb_percentile_sufficient(int64_t total, double percentile)
{
	/* compare n * (100 - p) >= 100 * MIN without dividing */
	return (double)total * (100.0 - percentile) >= 100.0 * TB_MIN_SAMPLES_BEYOND * (1 - 1e-9);
}

double tb_percentile_sufficient_limit(int64_t total)
{
	if (total < TB_MIN_SAMPLES_BEYOND)
		return 0.0;
	return 100.0 * (1.0 - (double)TB_MIN_SAMPLES_BEYOND / (double)total);
}

double tb_percentile_resolved(int64_t total)
{
	return total <= 1 ? 0.0 : 100.0 * (1.0 - 1.0 / (double)total);
}

void tb_summarize(const tb_hist *h, tb_summary *s)
{
	if (!h) {
		memset(s, 0, sizeof(*s));
		for (int i = 0; i < TB_SUMMARY_PERCENTILES; i++)
			s->insufficient[i] = true;
		return;
	}
	s->total = tb_hist_total(h);
	s->min = tb_hist_min(h);
	s->max = tb_hist_max(h);
	s->mean = tb_hist_mean(h);
	s->stddev = tb_hist_stddev(h);
	tb_hist_values_at_percentiles(h, tb_summary_levels, TB_SUMMARY_PERCENTILES, s->pct);
	for (int i = 0; i < TB_SUMMARY_PERCENTILES; i++)
		s->insufficient[i] = !tb_percentile_sufficient(s->total, tb_summary_levels[i]);
}
