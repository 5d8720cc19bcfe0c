/* analysis.c - measurement drills: exact quantiles, drift-free and Poisson
 * schedules and a single FIFO server model.
 *
 * Everything here is exact integer arithmetic over caller arrays; the only
 * floating point is the quantile level q, turned into an integer rank once
 * (quantile_rank below) and never used again, and a Poisson gap, rounded
 * to whole ns as soon as it is drawn. The idea of each part:
 *
 *   - quantiles: walk a sorted value->count map, summing counts, and stop at
 *     the first value whose running sum reaches the nearest rank
 *     max(1, ceil(q * total)). The map is validated (sorted, counts >= 0,
 *     total fits in int64_t) before any answer is given.
 *   - correction: declared here through tailbus/co.h, written in co_correct.c
 *     with the histogram forms of the same rule.
 *   - schedules: due(i) = start + floor(i * 1e9 / rate) in 128-bit integers;
 *     i * 1e9 < 2^94, so neither the product nor the sum can wrap. A Poisson
 *     schedule adds exponential gaps, each from one draw of the caller's
 *     tb_splitmix64 sequence.
 *   - FIFO server: one step function advances "busy until" by one request;
 *     every public function is that step in a loop, picking what to report.
 *
 * Invariants: no allocation, no global state, no printing; every function
 * returns 0 (or a count) or a negative errno, and validates its input.
 */
#include "tailbus/analysis.h"
#include "tailbus/rand.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

__extension__ typedef unsigned __int128 tb_u128;
__extension__ typedef __int128 tb_i128;

/* A product q * total within total * 4 * DBL_EPSILON of an integer is taken
 * to be that integer. A double q is off from the decimal the caller meant by
 * up to half an ulp (DBL_EPSILON / 2), and the product adds at most one more
 * rounding where long double is only a double; 4 ulps covers both with
 * margin. The snap stays below half a rank while total < 2^49; beyond that a
 * double q cannot name a rank more finely than this anyway. */
#define TB_RANK_SNAP_ULPS 4.0L

/* --- Exact quantiles ---------------------------------------------------- */

int tb_value_counts_total(const tb_value_count *pairs, size_t n, int64_t *total)
{
	int64_t sum = 0;

	if (total == NULL || (n > 0 && pairs == NULL))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (pairs[i].count < 0 || (i > 0 && pairs[i].value < pairs[i - 1].value))
			return -EINVAL;
		if (__builtin_add_overflow(sum, pairs[i].count, &sum))
			return -EOVERFLOW;
	}
	*total = sum;
	return 0;
}

int tb_quantile_rank(double q, int64_t total, int64_t *rank)
{
	long double x, nearest, snap, r;

	if (rank == NULL || isnan(q) || total < 0)
		return -EINVAL;
	if (total == 0) {
		*rank = 0;
		return 0;
	}
	q = q < 0.0 ? 0.0 : (q > 1.0 ? 1.0 : q);
	x = (long double)q * (long double)total;
	nearest = roundl(x);
	snap = (long double)total * (long double)DBL_EPSILON * TB_RANK_SNAP_ULPS;
	r = fabsl(x - nearest) <= snap ? nearest : ceill(x);
	if (r < 1.0L)
		*rank = 1;
	else if (r >= (long double)total)
		*rank = total;
	else
		*rank = (int64_t)r;
	return 0;
}

int tb_quantile(const tb_value_count *pairs, size_t n, double q, int64_t *value)
{
	int64_t total, rank = 0, seen = 0;
	int err;

	if (value == NULL)
		return -EINVAL;
	err = tb_value_counts_total(pairs, n, &total);
	if (err == 0)
		err = tb_quantile_rank(q, total, &rank);
	if (err)
		return err;
	*value = 0;
	for (size_t i = 0; i < n && rank > 0; i++) {
		seen += pairs[i].count;
		if (seen >= rank) {
			*value = pairs[i].value;
			break;
		}
	}
	return 0;
}

static int compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static size_t count_distinct_sorted(const int64_t *sorted, size_t n)
{
	size_t distinct = n > 0;

	for (size_t i = 1; i < n; i++)
		distinct += sorted[i] != sorted[i - 1];
	return distinct;
}

ssize_t tb_value_counts_from_samples(int64_t *samples, size_t n,
				     tb_value_count *out, size_t cap)
{
	size_t k = 0;

	if (n == 0)
		return 0;
	if (samples == NULL || n > SSIZE_MAX)
		return samples == NULL ? -EINVAL : -EOVERFLOW;
	qsort(samples, n, sizeof(*samples), compare_int64);
	if (count_distinct_sorted(samples, n) > cap)
		return -ENOSPC;
	if (out == NULL)
		return -EINVAL;
	out[0] = (tb_value_count){ .value = samples[0], .count = 1 };
	for (size_t i = 1; i < n; i++) {
		if (samples[i] == out[k].value)
			out[k].count++;
		else
			out[++k] = (tb_value_count){ .value = samples[i], .count = 1 };
	}
	return (ssize_t)(k + 1);
}

/* --- Drift-free schedules ------------------------------------------------ */

int tb_schedule_at(int64_t start_ns, uint64_t rate_per_sec, uint64_t i, int64_t *due_ns)
{
	tb_u128 offset;
	tb_i128 due;

	if (rate_per_sec == 0 || due_ns == NULL)
		return -EINVAL;
	offset = (tb_u128)i * (tb_u128)TB_NS_PER_SEC / rate_per_sec;
	due = (tb_i128)start_ns + (tb_i128)offset;
	if (due > INT64_MAX)
		return -EOVERFLOW;
	*due_ns = (int64_t)due;
	return 0;
}

ssize_t tb_schedule_fill(int64_t start_ns, uint64_t rate_per_sec, int64_t *out, size_t n)
{
	int64_t last;
	int err;

	if (rate_per_sec == 0 || n == 0)
		return 0;
	if (out == NULL)
		return -EINVAL;
	if (n > SSIZE_MAX)
		return -EOVERFLOW;
	/* Due times never decrease: if the last one fits, they all do. */
	err = tb_schedule_at(start_ns, rate_per_sec, n - 1, &last);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		(void)tb_schedule_at(start_ns, rate_per_sec, i, &out[i]);
	return (ssize_t)n;
}

uint64_t tb_schedule_count(int64_t duration_ns, uint64_t rate_per_sec)
{
	if (duration_ns <= 0)
		return 0;
	/* requests i with floor(i * 1e9 / rate) < D */
	tb_u128 n = ((tb_u128)duration_ns * rate_per_sec + TB_NS_PER_SEC - 1) / TB_NS_PER_SEC;
	return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

/* --- Poisson schedules ---------------------------------------------------- */

/* u uniform in [0, 1) from the top 53 bits of the next number; the gap
 * -ln(1 - u) / rate is exponential (inverse transform; log1p keeps small u
 * exact). */
int tb_schedule_poisson_next(int64_t prev_ns, uint64_t rate_per_sec, uint64_t *state,
			     int64_t *due_ns)
{
	double u;
	int64_t gap, due;

	if (rate_per_sec == 0 || state == NULL || due_ns == NULL)
		return -EINVAL;
	u = (double)(tb_splitmix64(state) >> 11) * 0x1.0p-53;
	gap = llround(-log1p(-u) * (double)TB_NS_PER_SEC / (double)rate_per_sec);
	if (__builtin_add_overflow(prev_ns, gap, &due))
		return -EOVERFLOW;
	*due_ns = due;
	return 0;
}

/* --- Single FIFO server --------------------------------------------------- */

/* Where request i stands: when it was sent and when it completed. */
struct fifo_step {
	int64_t send;
	int64_t done;
};

/* The server before the first request: idle since forever. */
#define FIFO_IDLE_SINCE INT64_MIN

/* Advance the model by request i; *busy_until is done[i-1] and becomes done[i]. */
static int fifo_step(const int64_t *intended, const int64_t *service, size_t i,
		     int64_t *busy_until, struct fifo_step *s)
{
	if (service[i] < 0 || (i > 0 && intended[i] < intended[i - 1]))
		return -EINVAL;
	s->send = intended[i] > *busy_until ? intended[i] : *busy_until;
	if (__builtin_add_overflow(s->send, service[i], &s->done))
		return -EOVERFLOW;
	*busy_until = s->done;
	return 0;
}

enum fifo_output { FIFO_DONE, FIFO_CLOSED_LATENCY, FIFO_SEND_LAG, FIFO_OPEN_LATENCY };

static int fifo_pick(enum fifo_output what, int64_t intended, const struct fifo_step *s,
		     int64_t *out)
{
	switch (what) {
	case FIFO_DONE:
		*out = s->done;
		return 0;
	case FIFO_CLOSED_LATENCY:
		*out = s->done - s->send; /* == service, >= 0: cannot wrap */
		return 0;
	case FIFO_SEND_LAG:
		return __builtin_sub_overflow(s->send, intended, out) ? -EOVERFLOW : 0;
	case FIFO_OPEN_LATENCY:
		return __builtin_sub_overflow(s->done, intended, out) ? -EOVERFLOW : 0;
	}
	return -EINVAL;
}

static int fifo_run(const int64_t *intended, const int64_t *service, size_t n,
		    enum fifo_output what, int64_t *out)
{
	int64_t busy_until = FIFO_IDLE_SINCE;
	struct fifo_step s;

	if (n > 0 && (intended == NULL || service == NULL || out == NULL))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int err = fifo_step(intended, service, i, &busy_until, &s);

		if (err == 0)
			err = fifo_pick(what, intended[i], &s, &out[i]);
		if (err)
			return err;
	}
	return 0;
}

int tb_fifo_done(const int64_t *intended, const int64_t *service, size_t n, int64_t *done)
{
	return fifo_run(intended, service, n, FIFO_DONE, done);
}

int tb_fifo_closed_loop_latencies(const int64_t *intended, const int64_t *service,
				  size_t n, int64_t *latency)
{
	return fifo_run(intended, service, n, FIFO_CLOSED_LATENCY, latency);
}

int tb_fifo_send_lag(const int64_t *intended, const int64_t *service, size_t n, int64_t *lag)
{
	return fifo_run(intended, service, n, FIFO_SEND_LAG, lag);
}

int tb_fifo_open_loop_latencies(const int64_t *intended, const int64_t *service,
				size_t n, int64_t *latency)
{
	return fifo_run(intended, service, n, FIFO_OPEN_LATENCY, latency);
}

ssize_t tb_fifo_closed_loop_issued(const int64_t *intended, const int64_t *service,
				   size_t n, int64_t end_ns)
{
	int64_t busy_until = FIFO_IDLE_SINCE;
	struct fifo_step s;

	if (n > 0 && (intended == NULL || service == NULL))
		return -EINVAL;
	if (n > SSIZE_MAX)
		return -EOVERFLOW;
	/* Send times never decrease, so the issued requests are a prefix. */
	for (size_t i = 0; i < n; i++) {
		int err = fifo_step(intended, service, i, &busy_until, &s);

		if (err)
			return err;
		if (s.send >= end_ns)
			return (ssize_t)i;
	}
	return (ssize_t)n;
}

ssize_t tb_fifo_open_loop_issued(const int64_t *intended, size_t n, int64_t end_ns)
{
	size_t issued = 0;

	if (n > 0 && intended == NULL)
		return -EINVAL;
	if (n > SSIZE_MAX)
		return -EOVERFLOW;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && intended[i] < intended[i - 1])
			return -EINVAL;
		issued += intended[i] < end_ns;
	}
	return (ssize_t)issued;
}
