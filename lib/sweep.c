/* sweep.c - the knee and the low-load tail of a load sweep (tailbus/sweep.h). */
#include "tailbus/sweep.h"

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
