/* tailbus/hist.h - HDR histogram with HdrHistogram's exact bucket layout.
 *
 * A histogram covers values from a lowest discernible value L (>= 1) up to a
 * highest trackable value H (>= 2L) with S significant decimal digits
 * (1..5). Values are grouped into buckets whose width doubles every power of
 * two, each split into 2^(half_mag+1) sub-buckets, so the relative error of any
 * recorded value stays under 10^-S. The counts array is laid out index for
 * index like HdrHistogram (Java and C), so the V2 encoding of our counts is
 * byte-compatible with theirs (see docs/formats.md, HDR histogram layout).
 *
 * Invariants:
 *   - total == sum(counts); min_raw/max_raw are the smallest non-zero and the
 *     largest raw value recorded (0 when none), kept exact on record and merge.
 *   - values above H are clamped to H and counted in `clamped`; negative values
 *     are refused with -EINVAL. Nothing is lost silently.
 *   - the library never allocates on record; tb_hist_init_at() lets the caller
 *     (collector, shared memory) own the counts.
 *
 * The struct is public so it can live in caller memory; treat every field as
 * read-only and go through the functions below.
 */
#ifndef TAILBUS_HIST_H
#define TAILBUS_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits from HdrHistogram: at most 5 significant digits, and the sub-bucket
 * magnitude plus the unit magnitude must leave room in a signed 64-bit value. */
#define TB_HIST_MIN_SIG_DIGITS 1
#define TB_HIST_MAX_SIG_DIGITS 5
#define TB_HIST_MAX_MAGNITUDE 62

/* The collector's default range: 1 ns .. 1 hour at 3 digits (docs/design.md, The collector). */
#define TB_HIST_DEFAULT_LOWEST 1
#define TB_HIST_DEFAULT_HIGHEST 3600000000000LL
#define TB_HIST_DEFAULT_SIG_DIGITS 3

typedef struct tb_hist {
	int64_t lowest;  /* L: lowest discernible value */
	int64_t highest; /* H: highest trackable value */
	int32_t sig_digits;
	int32_t unit_magnitude;           /* floor(log2 L) */
	int32_t sub_bucket_half_count_mag; /* half_mag */
	int32_t sub_bucket_count;
	int32_t sub_bucket_half_count;
	int32_t bucket_count;
	int32_t counts_len;
	int32_t owns_counts;
	int64_t sub_bucket_mask;
	int64_t total;
	int64_t min_raw; /* smallest non-zero raw value recorded, 0 if none */
	int64_t max_raw; /* largest raw value recorded, 0 if none */
	int64_t clamped; /* samples recorded above H and clamped to H */
	double conversion_ratio; /* integer-to-double ratio carried by V2 payloads */
	int64_t *counts;
} tb_hist;

/* Number of counters a (L, H, S) histogram needs, or -EINVAL. */
int32_t tb_hist_counts_len(int64_t lowest, int64_t highest, int sig_digits);

/* Initialise over caller-provided, zeroed or not, counts of `len` entries
 * (len >= tb_hist_counts_len()). Returns 0 or -EINVAL. */
int tb_hist_init_at(tb_hist *h, int64_t lowest, int64_t highest, int sig_digits,
		    int64_t *counts, size_t len);
/* As tb_hist_init_at, for counts the caller knows are zero (fresh anonymous
 * memory): nothing is written, so untouched pages stay uncommitted. */
int tb_hist_init_zeroed(tb_hist *h, int64_t lowest, int64_t highest, int sig_digits,
			int64_t *counts, size_t len);
/* Initialise and allocate the counts. Returns 0, -EINVAL or -ENOMEM. */
int tb_hist_init(tb_hist *h, int64_t lowest, int64_t highest, int sig_digits);
/* Initialise a histogram with the same layout as `like`. */
int tb_hist_init_like(tb_hist *h, const tb_hist *like);
/* Free counts allocated by tb_hist_init(); a no-op for caller memory. */
void tb_hist_free(tb_hist *h);
void tb_hist_reset(tb_hist *h);
/* True when both have the same L, H and S (and so the same counts layout). */
bool tb_hist_same_layout(const tb_hist *a, const tb_hist *b);

/* Record `n` samples of `value`. Above H: clamped to H and counted.
 * Returns 0, -EINVAL for a negative value or count, or -EOVERFLOW when the
 * total would pass INT64_MAX (nothing recorded in either case). */
int tb_hist_record_n(tb_hist *h, int64_t value, int64_t n);

/* The counts index of a value in [0, H] (tb_hist_index_of, inline): bucket
 * b, sub-bucket sb, at ((b + 1) << half_mag) + sb - half_count, which is
 * (b << half_mag) + sb since half_count is 2^half_mag. The sub-bucket mask
 * is never 0, so neither is the argument of the clz. */
static inline int32_t tb__hist_index(const tb_hist *h, int64_t v)
{
	int32_t b = 63 - __builtin_clzll((uint64_t)v | (uint64_t)h->sub_bucket_mask) -
		    h->unit_magnitude - h->sub_bucket_half_count_mag;
	int32_t sb = (int32_t)(v >> (b + h->unit_magnitude));
	return (b << h->sub_bucket_half_count_mag) + sb;
}

/* Record one value the caller knows lies in [0, H], into a histogram whose
 * total it knows cannot pass INT64_MAX (the collector: at most a second of
 * one ring's events). The inline hot path of tb_hist_record_n, for loops
 * that record hundreds of millions of values a second.
 *
 * The _as form reads the bucket layout from `shape`, a histogram of the
 * same layout (tb_hist_same_layout) that the caller keeps at hand: a loop
 * recording into many histograms of one layout copies it to a local once,
 * and the index costs no load per value. */
static inline void tb_hist_record_in_range_as(tb_hist *h, const tb_hist *shape, int64_t v)
{
	h->counts[tb__hist_index(shape, v)]++;
	h->total++;
	if (v > h->max_raw)
		h->max_raw = v;
	/* v != 0 and (no minimum yet or v below it), as one unsigned compare */
	if ((uint64_t)v - 1 < (uint64_t)h->min_raw - 1)
		h->min_raw = v;
}
static inline void tb_hist_record_in_range(tb_hist *h, int64_t v)
{
	tb_hist_record_in_range_as(h, h, v);
}
static inline int tb_hist_record(tb_hist *h, int64_t value)
{
	return tb_hist_record_n(h, value, 1);
}
/* Coordinated-omission back-fill (docs/formats.md): record value, then
 * value - I, value - 2I, ... while >= I. I <= 0 means no correction.
 * tb_co_record_n with n = 1 (tailbus/co.h, where the rule is written).
 * Returns 0 or a tb_hist_record_n error. */
int tb_hist_record_corrected(tb_hist *h, int64_t value, int64_t interval);

/* dst += src. Same L and S, and src's values within dst's counts: counts are
 * added; otherwise each bucket of src is re-recorded at its lowest equivalent
 * value (values above dst's H are clamped and counted). Returns 0, or -EOVERFLOW (dst unchanged) when the total
 * would pass INT64_MAX. */
int tb_hist_add(tb_hist *dst, const tb_hist *src);
/* dst += src, then src is left empty (as tb_hist_reset): the collector's
 * merge of a closed interval. One pass over src's used range that skips
 * every cache line of zero counts, so lines recording never wrote are
 * neither written nor faulted in. Returns 0 or -EOVERFLOW (both unchanged). */
int tb_hist_move(tb_hist *dst, tb_hist *src);
/* Raise H to `highest` keeping L and S (owned counts only: the counts index
 * of a value does not depend on H, so existing counts stay where they are).
 * Returns 0, -EINVAL (caller memory, or bad value) or -ENOMEM. */
int tb_hist_grow(tb_hist *h, int64_t highest);
/* dst += src, growing dst first when src's max is beyond what dst can record
 * (HdrHistogram's auto-resizing add). Returns 0 or a tb_hist_grow error. */
int tb_hist_add_growing(tb_hist *dst, const tb_hist *src);
/* dst -= src (for window deltas). Layouts must match and src must be
 * contained in dst; otherwise -EINVAL and dst is unchanged. */
int tb_hist_subtract(tb_hist *dst, const tb_hist *src);

/* Set a counter directly (decoders). Keeps total, min and max consistent.
 * Returns 0, -EINVAL for a bad index or a negative count, or -EOVERFLOW when
 * the total would pass INT64_MAX. */
int tb_hist_set_count_at_index(tb_hist *h, int32_t index, int64_t count);

/* Layout arithmetic (docs/formats.md, HDR histogram layout). Values must be >= 0. */
int32_t tb_hist_index_of(const tb_hist *h, int64_t value);
int64_t tb_hist_value_at_index(const tb_hist *h, int32_t index);
int64_t tb_hist_size_of_range(const tb_hist *h, int64_t value);
int64_t tb_hist_lowest_equivalent(const tb_hist *h, int64_t value);
int64_t tb_hist_highest_equivalent(const tb_hist *h, int64_t value);
int64_t tb_hist_median_equivalent(const tb_hist *h, int64_t value);
bool tb_hist_values_equivalent(const tb_hist *h, int64_t a, int64_t b);

/* Figures as HdrHistogram reports them. */
int64_t tb_hist_total(const tb_hist *h);
int64_t tb_hist_min(const tb_hist *h); /* lowest equivalent of the min (0 if empty) */
int64_t tb_hist_max(const tb_hist *h); /* highest equivalent of the max (0 if empty) */
double tb_hist_mean(const tb_hist *h);   /* bucket medians, weighted by count */
double tb_hist_stddev(const tb_hist *h); /* population standard deviation */
/* Java rule: rank = max(ceil(nextafter(p, -inf)/100 * total), 1); the highest
 * equivalent value of the bucket reaching it (lowest when p == 0). */
int64_t tb_hist_value_at_percentile(const tb_hist *h, double percentile);
/* The same for n levels in one walk of the counts; levels in ascending
 * order and at most 64 of them (otherwise each is looked up on its own). */
void tb_hist_values_at_percentiles(const tb_hist *h, const double *levels, int n, int64_t *out);
/* Number of samples strictly above the bucket holding value_at_percentile(p):
 * what a sufficiency mark looks at. */
int64_t tb_hist_count_above_percentile(const tb_hist *h, double percentile);

/* Iteration. Each step reports a counts index with its count. */
enum tb_hist_iter_kind { TB_ITER_RECORDED, TB_ITER_PERCENTILE };

typedef struct tb_hist_iter {
	const tb_hist *h;
	enum tb_hist_iter_kind kind;
	int32_t index;          /* counts index of this step */
	int64_t count;          /* count at that index */
	int64_t cumulative;     /* running total up to and including index */
	int64_t value;          /* highest equivalent value of the bucket */
	double percentile;      /* percentile level reported (percentile iterator) */
	/* private */
	int32_t next_index;
	int32_t ticks_per_half_distance;
	double level_to;
	bool last_step_done;
} tb_hist_iter;

/* Every non-empty bucket in ascending order. */
void tb_hist_iter_recorded(tb_hist_iter *it, const tb_hist *h);
/* HdrHistogram's percentile iterator: levels at `ticks_per_half_distance`
 * steps per halving of the distance to 100%, then a final step at 100%. */
void tb_hist_iter_percentiles(tb_hist_iter *it, const tb_hist *h, int ticks_per_half_distance);
bool tb_hist_iter_next(tb_hist_iter *it);

#ifdef __cplusplus
}
#endif
#endif
