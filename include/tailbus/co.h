/* tailbus/co.h - coordinated-omission correction: HdrHistogram's back-fill.
 *
 * A closed-loop client that waited v for a reply did not send the requests
 * it was due to send meanwhile, every I (the expected interval). The
 * correction puts them back: a sample v > I stands for v itself and v - I,
 * v - 2I, ... down to values >= I, that is v / I - 1 back-filled values
 * (docs/formats.md; Java's recordValueWithExpectedInterval and
 * copyCorrectedForCoordinatedOmission). I <= 0 means no correction.
 *
 * This is only right for data from a closed-loop client: latencies measured
 * from the intended time (open loop, every tailbusd log) already count the
 * wait, and back-filling would count it twice (tb_log_open_loop).
 *
 * The rule is written once, here, for its three uses: a raw sample log (the
 * drills of tailbus/analysis.h), samples recorded into a histogram, and a
 * whole histogram re-recorded bucket by bucket.
 */
#ifndef TAILBUS_CO_H
#define TAILBUS_CO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tailbus/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* More back-filled values than this for one bucket of a histogram means the
 * interval is far too small for the data (most likely in the wrong unit):
 * tb_co_copy_corrected refuses it rather than record billions of values. */
#define TB_CO_MAX_BACKFILL 10000000LL

/* How many values the correction adds after a sample v: v / I - 1 when
 * I > 0 and v > I, else 0. */
uint64_t tb_co_backfill_count(int64_t v, int64_t interval);

/* Record n samples of value into h, each back-filled (the missing values
 * recorded n times too). Returns 0 or a tb_hist_record_n error. */
int tb_co_record_n(tb_hist *h, int64_t value, int64_t n, int64_t interval);

/* dst = src corrected: every bucket of src re-recorded as its count of its
 * highest equivalent value, back-filled. dst must be empty and have src's
 * lowest value and digits; it grows to src's max. Returns 0, -E2BIG (a
 * bucket would back-fill more than TB_CO_MAX_BACKFILL values), or a
 * tb_hist_grow or tb_hist_record_n error. */
int tb_co_copy_corrected(tb_hist *dst, const tb_hist *src, int64_t interval);

/* Length of the corrected log of `n` raw samples with expected interval I:
 * each sample v contributes itself plus tb_co_backfill_count(v, I) values.
 * Writes it to *len. Returns 0, -EINVAL for a NULL pointer, or -EOVERFLOW
 * when the length does not fit in size_t. */
int tb_co_corrected_len(const int64_t *raw, size_t n, int64_t interval, size_t *len);

/* Corrected log: for each raw v in order, v, then v - I, v - 2I, ... while
 * the value is >= I (only when I > 0 and v > I; I <= 0 copies raw). Writes to
 * out[0..cap). Returns the number written, -ENOSPC when cap is smaller than
 * tb_co_corrected_len() (out is then untouched), -EINVAL or -EOVERFLOW. */
ssize_t tb_co_correct_run(const int64_t *raw, size_t n, int64_t interval,
			  int64_t *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
