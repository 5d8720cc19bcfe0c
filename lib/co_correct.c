/* co_correct.c - coordinated-omission back-fill (tailbus/co.h).
 *
 * Every form of the correction walks the same sequence: after a sample
 * v > I > 0, the values v - I, v - 2I, ... while >= I (backfill_from and
 * backfill_next below). v > I > 0 means v - I cannot wrap and each step
 * stays >= 0. The histogram forms record through tb_hist_record_n, so a
 * back-filled value above the histogram's H is clamped and counted like
 * any other; tb_co_copy_corrected grows dst first so none is.
 *
 * Invariants: no global state, no printing; negative errnos out.
 */
#include "tailbus/co.h"

#include <errno.h>
#include <limits.h>

#include "tailbus/hist.h"

uint64_t tb_co_backfill_count(int64_t v, int64_t interval)
{
	if (interval <= 0 || v <= interval)
		return 0;
	return (uint64_t)(v / interval - 1);
}

int tb_co_record_n(tb_hist *h, int64_t value, int64_t n, int64_t interval)
{
	int rc = tb_hist_record_n(h, value, n);
	if (rc || tb_co_backfill_count(value, interval) == 0)
		return rc;
	for (int64_t missing = value - interval; missing >= interval; missing -= interval) {
		if ((rc = tb_hist_record_n(h, missing, n)) < 0)
			return rc;
	}
	return 0;
}

int tb_hist_record_corrected(tb_hist *h, int64_t value, int64_t interval)
{
	return tb_co_record_n(h, value, 1, interval);
}

int tb_co_copy_corrected(tb_hist *dst, const tb_hist *src, int64_t interval)
{
	int rc = tb_hist_grow(dst, tb_hist_max(src));
	tb_hist_iter it;
	tb_hist_iter_recorded(&it, src);
	while (rc == 0 && tb_hist_iter_next(&it)) {
		if (tb_co_backfill_count(it.value, interval) >= (uint64_t)TB_CO_MAX_BACKFILL)
			rc = -E2BIG;
		else
			rc = tb_co_record_n(dst, it.value, it.count, interval);
	}
	return rc;
}

int tb_co_corrected_len(const int64_t *raw, size_t n, int64_t interval, size_t *len)
{
	uint64_t total = n;

	if (len == NULL || (n > 0 && raw == NULL))
		return -EINVAL;
	if (n > SSIZE_MAX)
		return -EOVERFLOW;
	for (size_t i = 0; i < n; i++) {
		uint64_t extra = tb_co_backfill_count(raw[i], interval);

		if (extra > (uint64_t)SSIZE_MAX - total)
			return -EOVERFLOW;
		total += extra;
	}
	*len = (size_t)total;
	return 0;
}

ssize_t tb_co_correct_run(const int64_t *raw, size_t n, int64_t interval,
			  int64_t *out, size_t cap)
{
	size_t len, k = 0;
	int err = tb_co_corrected_len(raw, n, interval, &len);

	if (err)
		return err;
	if (len > cap)
		return -ENOSPC;
	if (len > 0 && out == NULL)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		out[k++] = raw[i];
		if (tb_co_backfill_count(raw[i], interval) == 0)
			continue;
		for (int64_t m = raw[i] - interval; m >= interval; m -= interval)
			out[k++] = m;
	}
	return (ssize_t)k;
}
