/* compare.c - the statistics of `tailbus compare`: a figure's spread over
 * runs, the verdict rule and its chance of being fooled (tailbus/compare.h).
 *
 * The median sorts a copy of the values, so the caller's keep their run
 * order. The chance 2 / C(a + b, a) builds the binomial coefficient as a
 * running product (b + 1) / 1 * (b + 2) / 2 * ... in floating point, which
 * stays exact enough for any count of runs a person would make.
 */
#include "tailbus/compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const tb_verdict_keys[TB_VERDICTS] = {"a_faster", "b_faster", "no_difference",
						  "spread_unknown", "too_few_samples"};

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int tb_spread_of(const double *values, size_t n, tb_spread *sp)
{
	if (!n || !values || !sp)
		return -EINVAL;
	double *sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, values, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), by_value);
	sp->values = values;
	sp->n = n;
	sp->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
	sp->min = sorted[0];
	sp->max = sorted[n - 1];
	free(sorted);
	return 0;
}

tb_verdict tb_compare_judge(const tb_spread *a, const tb_spread *b, bool insufficient)
{
	if (a->n < 2 || b->n < 2)
		return TB_VERDICT_SPREAD_UNKNOWN;
	if (insufficient)
		return TB_VERDICT_TOO_FEW_SAMPLES;
	if (a->max < b->min)
		return TB_VERDICT_A_FASTER;
	if (b->max < a->min)
		return TB_VERDICT_B_FASTER;
	return TB_VERDICT_NO_DIFFERENCE;
}

double tb_chance_separated(size_t a, size_t b)
{
	double c = 1.0;
	for (size_t i = 1; i <= a; i++)
		c = c * (double)(b + i) / (double)i;
	return fmin(1.0, 2.0 / c);
}
