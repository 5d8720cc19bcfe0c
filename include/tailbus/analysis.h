/* tailbus/analysis.h - measurement drills: exact quantiles, coordinated-omission
 * correction, drift-free schedules and a single FIFO server model.
 *
 * These functions are the arithmetic behind the project's doctrine (latency is
 * a distribution, measured from the intended time), small enough to check by
 * hand and to drive the teaching drills in the tests. They work on plain
 * arrays, exactly, with no histogram and no bucketing:
 *
 *   - a distribution is a value->count map: an array of tb_value_count sorted
 *     by value (non-decreasing), every count >= 0. The nearest-rank quantile
 *     q is the smallest value v such that at least rank(q) = max(1,
 *     ceil(q * total)) samples are <= v; q is clamped to [0, 1].
 *   - a schedule is start_ns + floor(i * 1e9 / rate), computed from i alone,
 *     so no rounding accumulates however long the run; a Poisson schedule
 *     is the running sum of exponential gaps from a seeded sequence.
 *   - the FIFO server serves requests in order; request i starts at
 *     max(send time, previous completion) and takes service[i] ns.
 *
 * Conventions: every function returns 0 (or a count) on success and a
 * negative errno on failure, never prints, never allocates and never keeps
 * state (a Poisson schedule's sequence state is the caller's); output goes to caller-provided buffers. Functions that return a count
 * return ssize_t, like read(2). Times and values are int64_t nanoseconds.
 */
#ifndef TAILBUS_ANALYSIS_H
#define TAILBUS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tailbus/co.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_NS_PER_SEC 1000000000LL

/* One entry of a value->count map. */
typedef struct tb_value_count {
	int64_t value;
	int64_t count;
} tb_value_count;

/* --- Exact quantiles ---------------------------------------------------- */

/* Sum of the counts of `n` pairs into *total. Returns 0, -EINVAL when the
 * pairs are not sorted by value, a count is negative or a pointer is NULL
 * with n > 0, or -EOVERFLOW when the sum does not fit in int64_t. */
int tb_value_counts_total(const tb_value_count *pairs, size_t n, int64_t *total);

/* Nearest rank of quantile q among `total` samples: max(1, ceil(q * total))
 * with q clamped to [0, 1]; 0 when total is 0. A product within a few ulps of
 * an integer counts as that integer, so q = 0.999 of 1000 is rank 999 even
 * though 0.999 is not exact in binary. Returns 0, or -EINVAL for a NaN q,
 * a negative total or a NULL rank. */
int tb_quantile_rank(double q, int64_t total, int64_t *rank);

/* Nearest-rank quantile q of the map into *value: the smallest value with at
 * least tb_quantile_rank(q) samples <= it. q <= 0 gives the smallest value
 * with a non-zero count, q >= 1 the largest; an empty map (total 0) gives 0.
 * Returns 0 or the errors of tb_value_counts_total() and tb_quantile_rank(). */
int tb_quantile(const tb_value_count *pairs, size_t n, double q, int64_t *value);

/* Build the value->count map of `n` raw samples: sorts `samples` in place,
 * then writes one pair per distinct value, ascending, into out[0..cap).
 * Returns the number of pairs (cap >= n always suffices), -ENOSPC when more
 * than `cap` pairs are needed (out is then untouched; samples stay sorted),
 * or -EINVAL for a NULL pointer with n > 0. */
ssize_t tb_value_counts_from_samples(int64_t *samples, size_t n,
				     tb_value_count *out, size_t cap);

/* --- Coordinated-omission correction: tailbus/co.h (co_correct.c) ------ */

/* --- Drift-free schedules ------------------------------------------------ */

/* Due time of request i at `rate_per_sec`: start_ns + floor(i * 1e9 / rate),
 * computed in 128-bit arithmetic from i alone. Writes it to *due_ns.
 * Returns 0, -EINVAL for rate 0 (no request is ever due) or a NULL due_ns,
 * or -EOVERFLOW when the time does not fit in int64_t. */
int tb_schedule_at(int64_t start_ns, uint64_t rate_per_sec, uint64_t i, int64_t *due_ns);

/* Due times of requests 0..n-1 into out[0..n). Returns n, 0 for rate 0 (an
 * empty schedule), -EINVAL for a NULL out with n > 0, or -EOVERFLOW. */
ssize_t tb_schedule_fill(int64_t start_ns, uint64_t rate_per_sec, int64_t *out, size_t n);

/* How many requests of a schedule at `rate_per_sec` are due less than
 * duration_ns after its start: ceil(duration_ns * rate / 1e9), 0 for a
 * duration <= 0, UINT64_MAX when the count does not fit. */
uint64_t tb_schedule_count(int64_t duration_ns, uint64_t rate_per_sec);

/* --- Poisson schedules ---------------------------------------------------- */

/* Due time of the request after one due at prev_ns in a Poisson schedule at
 * `rate_per_sec`: prev_ns plus an exponential gap of mean 1e9 / rate ns,
 * rounded to whole ns, drawn from the tb_splitmix64 sequence *state
 * (tailbus/rand.h), which it advances by one. The first request is due one
 * gap after the start (prev_ns = start). The same seed gives the same
 * schedule. Writes it to *due_ns. Returns 0, -EINVAL for rate 0 or a NULL
 * pointer, or -EOVERFLOW when the time does not fit in int64_t (*state is
 * advanced all the same). */
int tb_schedule_poisson_next(int64_t prev_ns, uint64_t rate_per_sec, uint64_t *state,
			     int64_t *due_ns);

/* --- Single FIFO server --------------------------------------------------- */

/* All functions below take `n` requests with intended send times intended[]
 * (non-decreasing) and service times service[] (>= 0) and return 0, -EINVAL
 * for unsorted times, a negative service time or a NULL pointer with n > 0,
 * or -EOVERFLOW when a completion time does not fit in int64_t; on error
 * the output array may be partly written.
 * The server is busy until done[i-1], so in both loops
 *     done[i] = max(intended[i], done[i-1]) + service[i].
 * A closed-loop client sends i only when i-1 has completed:
 *     send[i] = max(intended[i], done[i-1]). */

/* Completion times done[0..n). */
int tb_fifo_done(const int64_t *intended, const int64_t *service, size_t n, int64_t *done);

/* What a closed-loop client measures: latency[i] = done[i] - send[i]. */
int tb_fifo_closed_loop_latencies(const int64_t *intended, const int64_t *service,
				  size_t n, int64_t *latency);

/* How late the closed-loop client sends: lag[i] = send[i] - intended[i]. */
int tb_fifo_send_lag(const int64_t *intended, const int64_t *service, size_t n, int64_t *lag);

/* What an open-loop client measures: latency[i] = done[i] - intended[i]
 * (= closed-loop latency[i] + lag[i]). */
int tb_fifo_open_loop_latencies(const int64_t *intended, const int64_t *service,
				size_t n, int64_t *latency);

/* Requests a closed-loop client that ran until end_ns issued: the leading
 * requests whose actual send time is < end_ns (send times never decrease).
 * Returns that count or the errors above; requests past the first one not
 * issued are not examined. */
ssize_t tb_fifo_closed_loop_issued(const int64_t *intended, const int64_t *service,
				   size_t n, int64_t end_ns);

/* Requests an open-loop client that ran until end_ns issued: those with
 * intended < end_ns. Returns that count, or -EINVAL for unsorted times or a
 * NULL intended with n > 0. */
ssize_t tb_fifo_open_loop_issued(const int64_t *intended, size_t n, int64_t end_ns);

#ifdef __cplusplus
}
#endif
#endif
