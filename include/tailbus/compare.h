/* tailbus/compare.h - comparing two configurations over several runs each:
 * the spread of a figure over one side's runs, the rule that calls a
 * difference, and the chance that the rule is fooled.
 *
 * Runs of one configuration differ from each other (placement, frequency,
 * neighbours), so a difference between sides A and B is called only when
 * their spreads (min..max over the runs) do not overlap: every run of one
 * side below every run of the other. No difference is called when a side has
 * a single run (no run-to-run noise is shown) or when the figure is a
 * percentile with too few samples beyond it (tailbus/summary.h).
 *
 * Non-overlapping spreads are a permutation argument: if A and B were the
 * same, every ordering of the a + b runs would be equally likely, and the
 * spreads would separate by chance with probability 2 / C(a + b, a).
 */
#ifndef TAILBUS_COMPARE_H
#define TAILBUS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One figure of one side over its runs. */
typedef struct tb_spread {
	const double *values; /* per run, in run order (the caller's, not copied) */
	size_t n; /* runs */
	double median; /* the middle value, or the mean of the middle two */
	double min, max;
} tb_spread;

typedef enum tb_verdict {
	TB_VERDICT_A_FASTER,
	TB_VERDICT_B_FASTER,
	TB_VERDICT_NO_DIFFERENCE,
	TB_VERDICT_SPREAD_UNKNOWN, /* a side has a single run */
	TB_VERDICT_TOO_FEW_SAMPLES, /* the figure is a percentile without enough samples */
} tb_verdict;

#define TB_VERDICTS 5

/* "a_faster", "b_faster", "no_difference", "spread_unknown",
 * "too_few_samples" (the JSON keys), indexed by tb_verdict. */
extern const char *const tb_verdict_keys[TB_VERDICTS];

/* Describe the n values (n > 0) into *sp: its values and n, their median,
 * min and max; the values are left as they are. Returns 0, -EINVAL for
 * n == 0 or a NULL pointer, or -ENOMEM. */
int tb_spread_of(const double *values, size_t n, tb_spread *sp);

/* The verdict on one figure: TB_VERDICT_SPREAD_UNKNOWN when a side has
 * fewer than two runs, else TB_VERDICT_TOO_FEW_SAMPLES when `insufficient`
 * (some run has too few samples beyond the percentile), else A or B faster
 * when its max is below the other's min, else TB_VERDICT_NO_DIFFERENCE. */
tb_verdict tb_compare_judge(const tb_spread *a, const tb_spread *b, bool insufficient);

/* Chance that the spreads of a and b runs separate when the two sides are
 * the same: 2 / C(a + b, a), at most 1 (0.33 for 2 and 2, 0.1 for 3 and 3). */
double tb_chance_separated(size_t a, size_t b);

#ifdef __cplusplus
}
#endif
#endif
