/* sweep.c - a load sweep's rates, its knee, its low-load tail, and the growth
 * of one run's latency (tailbus/sweep.h). */
#include <math.h>

#include "tailbus/sweep.h"

void tb_sweep_rates(uint64_t from, uint64_t to, size_t steps, uint64_t *rates)
{
	for (size_t k = 0; k < steps; k++) {
		double span = (double)(to - from);
		rates[k] = steps == 1 ? from
				      : (uint64_t)llround((double)from +
							  span * (double)k / (double)(steps - 1));
	}
}

int tb_sweep_knee(const tb_sweep_point *p, size_t n, int *rule)
{
	if (rule)
		*rule = TB_KNEE_NONE;
	if (n == 0)
		return -1;
	int64_t base = p[0].p99;
	for (size_t k = 1; k < n; k++) {
		int found = TB_KNEE_NONE;
		if (p[k].achieved < TB_SWEEP_KNEE_ACHIEVED * (double)p[k].rate)
			found = TB_KNEE_ACHIEVED;
		else if ((double)p[k].p99 > TB_SWEEP_KNEE_P99_RATIO * (double)base &&
			 p[k].p99 - base > p[k].machine_gap_ns)
			found = TB_KNEE_P99;
		if (found != TB_KNEE_NONE) {
			if (rule)
				*rule = found;
			return (int)k;
		}
	}
	return -1;
}

int tb_sweep_tail(const tb_sweep_point *p, size_t n, int knee)
{
	size_t low = knee < 0 ? n : (size_t)knee;
	if (low < TB_SWEEP_STALL_LOW_RATES)
		return TB_TAIL_NORMAL;
	int verdict = TB_TAIL_STALL;
	for (size_t k = 0; k < TB_SWEEP_STALL_LOW_RATES; k++) {
		if (p[k].count == 0 || (double)p[k].p999 < TB_SWEEP_STALL_TAIL_RATIO * (double)p[k].p50)
			return TB_TAIL_NORMAL;
		if (p[k].p999 <= p[k].machine_gap_ns)
			verdict = TB_TAIL_MACHINE;
	}
	return verdict;
}

bool tb_sweep_growing(const tb_sweep_row *rows, size_t n, int64_t machine_gap_ns)
{
	const tb_sweep_row *first = NULL, *last = NULL;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].count >= TB_SWEEP_ROW_MIN_COUNT) {
			if (!first)
				first = &rows[i];
			last = &rows[i];
		}
	}
	/* a rise no larger than the serving thread's longest gap is the machine */
	return first && last != first &&
	       (double)last->p50 > TB_SWEEP_GROWTH_RATIO * (double)first->p50 &&
	       last->p50 - first->p50 > machine_gap_ns;
}
