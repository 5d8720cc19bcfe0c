/* hist.c - HDR histogram layout, recording, merging and summary figures.
 *
 * The layout is HdrHistogram's (docs/formats.md, HDR histogram layout). A value v is
 * placed by two integers: the bucket b, which is the power of two v falls in
 * above the first bucket, and the sub-bucket sb = v >> (b + unit_magnitude).
 * Bucket 0 uses all sub_bucket_count sub-buckets; every later bucket uses only
 * its upper half (the lower half would repeat the previous bucket at half the
 * resolution), which is why the counts array holds (bucket_count + 1) x
 * sub_bucket_half_count counts.
 *
 * All layout arithmetic is done on integers: the floating-point log2 that
 * some ports use is exact for the inputs allowed here, but integer code
 * cannot drift and is easier to check against the formulas.
 *
 * Invariants kept by every mutator: total is the sum of counts; min_raw and
 * max_raw bound the recorded raw values (so the reported max is exact up to
 * the bucket's highest equivalent value, as in HdrHistogram).
 */
#include "tailbus/hist.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int32_t clz64(uint64_t v)
{
	return v ? __builtin_clzll(v) : 64;
}

/* floor(log2(v)) for v >= 1 */
static int32_t log2_floor(uint64_t v)
{
	return 63 - clz64(v);
}

/* ceil(log2(2 * 10^S)): the bits needed to give single-unit resolution up to
 * 2 * 10^S, which is what keeps the relative error under 10^-S. */
static int32_t sub_bucket_count_magnitude(int sig_digits)
{
	uint64_t largest_single_unit = 2;
	for (int i = 0; i < sig_digits; i++)
		largest_single_unit *= 10;
	int32_t m = log2_floor(largest_single_unit);
	if ((UINT64_C(1) << m) < largest_single_unit)
		m++;
	return m;
}

static int32_t buckets_needed(int64_t highest, int32_t sub_bucket_count, int32_t unit_magnitude)
{
	int64_t smallest_untrackable = (int64_t)sub_bucket_count << unit_magnitude;
	int32_t n = 1;
	while (smallest_untrackable <= highest) {
		if (smallest_untrackable > INT64_MAX / 2)
			return n + 1;
		smallest_untrackable <<= 1;
		n++;
	}
	return n;
}

/* Fill the layout fields; returns the counts length or -EINVAL. */
static int32_t layout(tb_hist *h, int64_t lowest, int64_t highest, int sig_digits)
{
	if (lowest < 1 || sig_digits < TB_HIST_MIN_SIG_DIGITS || sig_digits > TB_HIST_MAX_SIG_DIGITS)
		return -EINVAL;
	if (highest < 2 || highest / 2 < lowest)
		return -EINVAL;
	int32_t unit_mag = log2_floor((uint64_t)lowest);
	int32_t count_mag = sub_bucket_count_magnitude(sig_digits);
	if (count_mag + unit_mag > TB_HIST_MAX_MAGNITUDE)
		return -EINVAL;
	int32_t half_mag = (count_mag > 1 ? count_mag : 1) - 1;

	memset(h, 0, sizeof(*h));
	h->lowest = lowest;
	h->highest = highest;
	h->sig_digits = sig_digits;
	h->unit_magnitude = unit_mag;
	h->sub_bucket_half_count_mag = half_mag;
	h->sub_bucket_count = INT32_C(1) << (half_mag + 1);
	h->sub_bucket_half_count = h->sub_bucket_count / 2;
	h->sub_bucket_mask = ((int64_t)h->sub_bucket_count - 1) << unit_mag;
	h->bucket_count = buckets_needed(highest, h->sub_bucket_count, unit_mag);
	int64_t len = ((int64_t)h->bucket_count + 1) * h->sub_bucket_half_count;
	if (len > INT32_MAX)
		return -EINVAL;
	h->counts_len = (int32_t)len;
	h->conversion_ratio = 1.0;
	return h->counts_len;
}

int32_t tb_hist_counts_len(int64_t lowest, int64_t highest, int sig_digits)
{
	tb_hist scratch;
	return layout(&scratch, lowest, highest, sig_digits);
}

int tb_hist_init_at(tb_hist *h, int64_t lowest, int64_t highest, int sig_digits,
		    int64_t *counts, size_t len)
{
	int rc = tb_hist_init_zeroed(h, lowest, highest, sig_digits, counts, len);
	if (rc == 0)
		memset(counts, 0, (size_t)h->counts_len * sizeof(*counts));
	return rc;
}

int tb_hist_init_zeroed(tb_hist *h, int64_t lowest, int64_t highest, int sig_digits,
			int64_t *counts, size_t len)
{
	int32_t need = layout(h, lowest, highest, sig_digits);
	if (need < 0)
		return need;
	if (!counts || len < (size_t)need)
		return -EINVAL;
	h->counts = counts;
	return 0;
}

int tb_hist_init(tb_hist *h, int64_t lowest, int64_t highest, int sig_digits)
{
	int32_t need = layout(h, lowest, highest, sig_digits);
	if (need < 0)
		return need;
	h->counts = calloc((size_t)need, sizeof(*h->counts));
	if (!h->counts)
		return -ENOMEM;
	h->owns_counts = 1;
	return 0;
}

int tb_hist_init_like(tb_hist *h, const tb_hist *like)
{
	int rc = tb_hist_init(h, like->lowest, like->highest, like->sig_digits);
	if (rc == 0)
		h->conversion_ratio = like->conversion_ratio;
	return rc;
}

void tb_hist_free(tb_hist *h)
{
	if (h && h->owns_counts)
		free(h->counts);
	if (h) {
		h->counts = NULL;
		h->owns_counts = 0;
	}
}

/* Every non-zero count lies at or below the index of max_raw (each mutator
 * notes the values it adds), so work on counts stops there. */
static int32_t used_len(const tb_hist *h)
{
	return tb_hist_index_of(h, h->max_raw) + 1;
}

/* Where the counts can be non-zero: index 0 (zeros), then from the index of
 * the smallest non-zero value on. */
static int32_t first_nonzero_index(const tb_hist *h)
{
	int32_t i = h->min_raw ? tb_hist_index_of(h, h->min_raw) : 1;
	return i < 1 ? 1 : i;
}

void tb_hist_reset(tb_hist *h)
{
	/* zeros sit at index 0, every other value between the indices of
	 * min_raw and max_raw: clear only those, so pages that recording never
	 * touched are never written (and never faulted in) */
	int32_t from = h->min_raw ? tb_hist_index_of(h, h->min_raw) : 0;
	h->counts[0] = 0;
	memset(h->counts + from, 0, (size_t)(used_len(h) - from) * sizeof(*h->counts));
	h->total = 0;
	h->min_raw = 0;
	h->max_raw = 0;
	h->clamped = 0;
}

bool tb_hist_same_layout(const tb_hist *a, const tb_hist *b)
{
	return a->lowest == b->lowest && a->highest == b->highest && a->sig_digits == b->sig_digits;
}

/* ---- layout arithmetic ---- */

static int32_t bucket_index(const tb_hist *h, int64_t v)
{
	return log2_floor((uint64_t)v | (uint64_t)h->sub_bucket_mask) - h->unit_magnitude -
	       h->sub_bucket_half_count_mag;
}

static int32_t sub_bucket_index(const tb_hist *h, int64_t v, int32_t b)
{
	return (int32_t)(v >> (b + h->unit_magnitude));
}

int32_t tb_hist_index_of(const tb_hist *h, int64_t value)
{
	return tb__hist_index(h, value);
}

int64_t tb_hist_value_at_index(const tb_hist *h, int32_t index)
{
	int32_t b = (index >> h->sub_bucket_half_count_mag) - 1;
	int32_t sb = (index & (h->sub_bucket_half_count - 1)) + h->sub_bucket_half_count;
	if (b < 0) {
		sb -= h->sub_bucket_half_count;
		b = 0;
	}
	return (int64_t)sb << (b + h->unit_magnitude);
}

int64_t tb_hist_size_of_range(const tb_hist *h, int64_t value)
{
	int32_t b = bucket_index(h, value);
	int32_t sb = sub_bucket_index(h, value, b);
	int32_t adjusted = sb >= h->sub_bucket_count ? b + 1 : b;
	return INT64_C(1) << (h->unit_magnitude + adjusted);
}

int64_t tb_hist_lowest_equivalent(const tb_hist *h, int64_t value)
{
	int32_t b = bucket_index(h, value);
	int32_t sb = sub_bucket_index(h, value, b);
	return (int64_t)sb << (b + h->unit_magnitude);
}

int64_t tb_hist_highest_equivalent(const tb_hist *h, int64_t value)
{
	/* the top bucket of a layout reaching INT64_MAX ends exactly at 2^63:
	 * subtract before adding */
	return tb_hist_lowest_equivalent(h, value) + (tb_hist_size_of_range(h, value) - 1);
}

int64_t tb_hist_median_equivalent(const tb_hist *h, int64_t value)
{
	return tb_hist_lowest_equivalent(h, value) + (tb_hist_size_of_range(h, value) >> 1);
}

bool tb_hist_values_equivalent(const tb_hist *h, int64_t a, int64_t b)
{
	return tb_hist_lowest_equivalent(h, a) == tb_hist_lowest_equivalent(h, b);
}

/* ---- recording ---- */

static void note_value(tb_hist *h, int64_t value)
{
	if (value > h->max_raw)
		h->max_raw = value;
	if (value != 0 && (h->min_raw == 0 || value < h->min_raw))
		h->min_raw = value;
}

int tb_hist_record_n(tb_hist *h, int64_t value, int64_t n)
{
	if (value < 0 || n < 0)
		return -EINVAL;
	if (n == 0)
		return 0;
	if (n > INT64_MAX - h->total)
		return -EOVERFLOW; /* no counter can pass the total */
	if (value > h->highest) {
		value = h->highest;
		h->clamped += n;
	}
	h->counts[tb_hist_index_of(h, value)] += n;
	h->total += n;
	note_value(h, value);
	return 0;
}

int tb_hist_set_count_at_index(tb_hist *h, int32_t index, int64_t count)
{
	if (index < 0 || index >= h->counts_len || count < 0)
		return -EINVAL;
	if (count - h->counts[index] > INT64_MAX - h->total)
		return -EOVERFLOW;
	h->total += count - h->counts[index];
	h->counts[index] = count;
	if (count > 0)
		note_value(h, tb_hist_value_at_index(h, index));
	return 0;
}

/* ---- merging ---- */

/* After src's counts were added to dst's (same layout): the totals and
 * extremes follow. */
static void add_summary(tb_hist *dst, const tb_hist *src)
{
	dst->total += src->total;
	dst->clamped += src->clamped;
	if (src->total > 0) {
		note_value(dst, src->max_raw);
		if (src->min_raw)
			note_value(dst, src->min_raw);
	}
}

int tb_hist_add(tb_hist *dst, const tb_hist *src)
{
	/* every counter is at most the total: checking the totals is enough */
	if (src->total > INT64_MAX - dst->total)
		return -EOVERFLOW;
	/* the same L and S place every value at the same index whatever H is:
	 * when dst's counts reach src's largest value, counts add up directly */
	if (dst->lowest == src->lowest && dst->sig_digits == src->sig_digits &&
	    used_len(src) <= dst->counts_len) {
		for (int32_t i = 0, n = used_len(src); i < n; i++)
			dst->counts[i] += src->counts[i];
		add_summary(dst, src);
		return 0;
	}
	for (int32_t i = 0, n = used_len(src); i < n; i++) {
		if (src->counts[i])
			tb_hist_record_n(dst, tb_hist_value_at_index(src, i), src->counts[i]);
	}
	dst->clamped += src->clamped;
	return 0;
}

int tb_hist_move(tb_hist *dst, tb_hist *src)
{
	if (!tb_hist_same_layout(dst, src)) {
		int rc = tb_hist_add(dst, src);
		if (rc == 0)
			tb_hist_reset(src);
		return rc;
	}
	if (src->total > INT64_MAX - dst->total)
		return -EOVERFLOW;
	int64_t *d = dst->counts, *s = src->counts;
	d[0] += s[0];
	s[0] = 0;
	/* eight counters are a cache line's worth (aligned or not: the grouping
	 * only decides what is tested together). counts_len is a multiple of
	 * sub_bucket_half_count, at least 16, so every group lies inside. */
	int32_t to = used_len(src);
	for (int32_t i = first_nonzero_index(src) & ~7; i < to; i += 8) {
		if (!(s[i] | s[i + 1] | s[i + 2] | s[i + 3] | s[i + 4] | s[i + 5] | s[i + 6] | s[i + 7]))
			continue;
		for (int32_t j = i; j < i + 8; j++) {
			d[j] += s[j];
			s[j] = 0;
		}
	}
	add_summary(dst, src);
	src->total = 0;
	src->min_raw = 0;
	src->max_raw = 0;
	src->clamped = 0;
	return 0;
}

int tb_hist_grow(tb_hist *h, int64_t highest)
{
	if (highest <= h->highest)
		return 0;
	if (!h->owns_counts)
		return -EINVAL;
	tb_hist grown;
	int32_t need = layout(&grown, h->lowest, highest, h->sig_digits);
	if (need < 0)
		return need;
	int64_t *counts = realloc(h->counts, (size_t)need * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	memset(counts + h->counts_len, 0, (size_t)(need - h->counts_len) * sizeof(*counts));
	h->counts = counts;
	h->highest = highest;
	h->bucket_count = grown.bucket_count;
	h->counts_len = need;
	return 0;
}

int tb_hist_add_growing(tb_hist *dst, const tb_hist *src)
{
	/* Growing H within the buckets the counts already cover changes no
	 * index and no bucket count, so growing to src's max whenever it is
	 * above H gives the layout HdrHistogram's resize gives. */
	int rc = tb_hist_grow(dst, tb_hist_max(src));
	return rc < 0 ? rc : tb_hist_add(dst, src);
}

/* Recompute min_raw/max_raw from the counts (after a subtraction the exact raw
 * extremes are unknown; bucket bounds are what remains). */
static void recompute_extremes(tb_hist *h)
{
	h->min_raw = 0;
	h->max_raw = 0;
	for (int32_t i = 0; i < h->counts_len; i++) {
		if (h->counts[i])
			note_value(h, tb_hist_value_at_index(h, i));
	}
}

int tb_hist_subtract(tb_hist *dst, const tb_hist *src)
{
	if (!tb_hist_same_layout(dst, src))
		return -EINVAL;
	for (int32_t i = 0; i < src->counts_len; i++) {
		if (src->counts[i] > dst->counts[i])
			return -EINVAL;
	}
	for (int32_t i = 0; i < src->counts_len; i++)
		dst->counts[i] -= src->counts[i];
	dst->total -= src->total;
	dst->clamped = dst->clamped > src->clamped ? dst->clamped - src->clamped : 0;
	int64_t max_raw = dst->max_raw;
	recompute_extremes(dst);
	/* keep the exact max when its bucket still has samples */
	if (dst->total && tb_hist_values_equivalent(dst, max_raw, dst->max_raw))
		dst->max_raw = max_raw;
	return 0;
}

/* ---- summary figures ---- */

int64_t tb_hist_total(const tb_hist *h)
{
	return h->total;
}

int64_t tb_hist_min(const tb_hist *h)
{
	if (h->total == 0)
		return 0;
	/* a recorded zero is the minimum even though min_raw tracks non-zero */
	if (h->counts[0] && tb_hist_value_at_index(h, 0) == 0)
		return 0;
	return tb_hist_lowest_equivalent(h, h->min_raw);
}

int64_t tb_hist_max(const tb_hist *h)
{
	return h->max_raw == 0 ? 0 : tb_hist_highest_equivalent(h, h->max_raw);
}

double tb_hist_mean(const tb_hist *h)
{
	if (h->total == 0)
		return 0.0;
	double sum = 0.0;
	for (int32_t i = 0; i < h->counts_len; i++) {
		if (h->counts[i])
			sum += (double)tb_hist_median_equivalent(h, tb_hist_value_at_index(h, i)) *
			       (double)h->counts[i];
	}
	return sum / (double)h->total;
}

double tb_hist_stddev(const tb_hist *h)
{
	if (h->total == 0)
		return 0.0;
	double mean = tb_hist_mean(h);
	double sum = 0.0;
	for (int32_t i = 0; i < h->counts_len; i++) {
		if (!h->counts[i])
			continue;
		double dev = (double)tb_hist_median_equivalent(h, tb_hist_value_at_index(h, i)) - mean;
		sum += dev * dev * (double)h->counts[i];
	}
	return sqrt(sum / (double)h->total);
}

/* Index of the bucket that reaches the Java rank for `percentile`, or -1. */
/* The Java rank of a percentile level (see tb_hist_value_at_percentile). */
static int64_t percentile_rank(const tb_hist *h, double percentile)
{
	double p = nextafter(percentile, -INFINITY);
	p = p < 0.0 ? 0.0 : (p > 100.0 ? 100.0 : p);
	int64_t rank = (int64_t)ceil(p / 100.0 * (double)h->total);
	return rank < 1 ? 1 : rank;
}

static int32_t percentile_index(const tb_hist *h, double percentile)
{
	int64_t rank = percentile_rank(h, percentile);
	int64_t running = h->counts[0];
	if (running >= rank)
		return 0;
	for (int32_t i = first_nonzero_index(h); i < h->counts_len; i++) {
		running += h->counts[i];
		if (running >= rank)
			return i;
	}
	return -1;
}

static int64_t percentile_value(const tb_hist *h, double percentile, int32_t i)
{
	if (i < 0)
		return 0;
	int64_t v = tb_hist_value_at_index(h, i);
	return percentile == 0.0 ? tb_hist_lowest_equivalent(h, v) : tb_hist_highest_equivalent(h, v);
}

int64_t tb_hist_value_at_percentile(const tb_hist *h, double percentile)
{
	return percentile_value(h, percentile, percentile_index(h, percentile));
}

void tb_hist_values_at_percentiles(const tb_hist *h, const double *levels, int n, int64_t *out)
{
	int64_t rank[64];
	bool ascending = n <= (int)(sizeof(rank) / sizeof(rank[0]));
	for (int k = 1; ascending && k < n; k++)
		ascending = levels[k] >= levels[k - 1]; /* false for NaN too */
	if (!ascending) {
		for (int j = 0; j < n; j++)
			out[j] = tb_hist_value_at_percentile(h, levels[j]);
		return;
	}
	for (int k = 0; k < n; k++)
		rank[k] = percentile_rank(h, levels[k]);
	int k = 0;
	int64_t running = h->counts[0];
	while (k < n && running >= rank[k]) {
		out[k] = percentile_value(h, levels[k], 0);
		k++;
	}
	/* by groups of eight counters (counts_len is a multiple of 16): a group
	 * that does not reach the next rank is added as a whole */
	for (int32_t g = first_nonzero_index(h) & ~7; k < n && g < h->counts_len; g += 8) {
		const int64_t *c = h->counts + g;
		int64_t sum = g == 0 ? 0 : c[0];
		for (int j = 1; j < 8; j++)
			sum += c[j];
		if (running + sum < rank[k]) {
			running += sum;
			continue;
		}
		for (int32_t i = g == 0 ? 1 : g; k < n && i < g + 8; i++) {
			running += h->counts[i];
			while (k < n && running >= rank[k]) {
				out[k] = percentile_value(h, levels[k], i);
				k++;
			}
		}
	}
	for (; k < n; k++) /* an empty histogram */
		out[k] = 0;
}

int64_t tb_hist_count_above_percentile(const tb_hist *h, double percentile)
{
	int32_t i = percentile_index(h, percentile);
	if (i < 0)
		return 0;
	int64_t at_or_below = 0;
	for (int32_t j = 0; j <= i; j++)
		at_or_below += h->counts[j];
	return h->total - at_or_below;
}
