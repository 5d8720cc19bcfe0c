/* tailbus/sweep.h - reading a load sweep: which rates it offers, where the
 * knee is, whether the tail at low load says "periodic stall", and whether one
 * run's latency grows while it runs.
 *
 * A sweep offers a service a series of rates in ascending order and measures,
 * at each, what it achieved and the open-loop latency (from the intended
 * time). Two rules read it:
 *
 *   - the knee: the first rate whose p99 exceeds TB_SWEEP_KNEE_P99_RATIO x
 *     the lowest rate's p99 by more than the serving thread was ever off its
 *     core (that much is the machine's noise, not the load's), or that
 *     achieves less than TB_SWEEP_KNEE_ACHIEVED of what it offers;
 *   - a periodic stall: at each of the TB_SWEEP_STALL_LOW_RATES lowest rates,
 *     all below the knee, p99.9 is at least TB_SWEEP_STALL_TAIL_RATIO x p50.
 *     Queueing cannot stretch the tail that far at low load, and a one-off
 *     hiccup hits one rate where a periodic stall hits every one. A tail no
 *     longer than the serving thread was off its core is the machine's.
 *
 * Pure functions on caller arrays: no allocation, no state, no printing.
 */
#ifndef TAILBUS_SWEEP_H
#define TAILBUS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TB_SWEEP_KNEE_P99_RATIO 2.0
#define TB_SWEEP_KNEE_ACHIEVED 0.95
#define TB_SWEEP_STALL_TAIL_RATIO 10.0
#define TB_SWEEP_STALL_LOW_RATES 2
#define TB_SWEEP_GROWTH_RATIO 2.0
#define TB_SWEEP_ROW_MIN_COUNT 100

/* The `steps` rates of a sweep from `from` to `to` (from <= to), evenly
 * spaced and rounded to whole requests a second, into rates[0..steps); one
 * step is `from` alone. */
void tb_sweep_rates(uint64_t from, uint64_t to, size_t steps, uint64_t *rates);

/* One rate of a sweep. */
typedef struct tb_sweep_point {
	uint64_t rate;          /* offered, per second */
	double achieved;        /* served, per second */
	int64_t count;          /* samples behind the percentiles */
	int64_t p50, p99, p999; /* open-loop latency, ns */
	int64_t machine_gap_ns; /* the longest the serving thread was off its core */
} tb_sweep_point;

/* Which rule found a knee. */
enum tb_sweep_knee_rule { TB_KNEE_NONE = 0, TB_KNEE_P99 = 1, TB_KNEE_ACHIEVED = 2 };

/* The index of the knee among n points (rates ascending), or -1; *rule (if
 * given) says which rule found it. */
int tb_sweep_knee(const tb_sweep_point *p, size_t n, int *rule);

/* What the low-load tail says. */
enum tb_sweep_tail { TB_TAIL_NORMAL = 0, TB_TAIL_STALL = 1, TB_TAIL_MACHINE = 2 };

/* The tail verdict for n points with the knee at `knee` (-1: none). */
int tb_sweep_tail(const tb_sweep_point *p, size_t n, int knee);

/* One row of a run's series: latency of the requests completed in it, ns. */
typedef struct tb_sweep_row {
	int64_t count, p50, p99, max;
} tb_sweep_row;

/* Does latency grow over the run whose series is rows[0..n), served by a
 * thread that was off its core at most machine_gap_ns at a time? */
bool tb_sweep_growing(const tb_sweep_row *rows, size_t n, int64_t machine_gap_ns);

#ifdef __cplusplus
}
#endif
#endif
