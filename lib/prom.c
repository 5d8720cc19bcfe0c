/* prom.c - HDR histograms mapped to Prometheus buckets (see tailbus/prom.h).
 *
 * Both views walk the recorded HDR buckets once and place each whole count by
 * the bucket's highest equivalent value, so the mapping is additive: the map
 * of a sum of histograms is the sum of their maps, which is what lets a
 * Prometheus `sum(...)` over hosts equal `tailbus replay` of their merged logs.
 *
 * The native index follows client_golang's rule: with v = frac * 2^exp and
 * frac in [0.5, 1) (frexp), the index at schema s (n = 2^s buckets an
 * octave) is (exp - 1) * n + j, j the first of the n in-octave lower bounds
 * 2^(j/n) / 2 that is >= frac. Only the bounds of one octave are computed, on
 * the caller's stack, so the mapping keeps no global state.
 *
 * A scrape maps every metric's histogram, so the walk is the cost that
 * matters: it scans the counts array directly (a zero costs one load) and,
 * since the HDR buckets come in ascending order, moves through the native and
 * classic buckets with them instead of searching for each: bucket k's upper
 * bound is bounds[j] x 2^e for k = (e - 1) n + j, the same comparison the
 * index rule makes, so the walk and tb_prom_native_index always agree.
 */
#include "tailbus/prom.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_S 1e9

/* The R10 preferred numbers of a decade, x100 so they are integers. */
static const int r10[TB_PROM_CLASSIC_PER_DECADE] = {100, 125, 160, 200, 250, 320, 400, 500, 630, 800};
/* 1 us is r10[0] (100) x 10 ns: decade d's bounds are r10[m] x 10^(d+1) ns. */
#define CLASSIC_FIRST_SCALE_NS 10

double tb_prom_native_bound(int schema)
{
	return exp2(exp2(-(double)schema)) - 1;
}

double tb_prom_classic_bound(void)
{
	double worst = 0;
	for (int m = 0; m < TB_PROM_CLASSIC_PER_DECADE; m++) {
		double next = m + 1 < TB_PROM_CLASSIC_PER_DECADE ? r10[m + 1] : r10[0] * 10;
		if (next / r10[m] - 1 > worst)
			worst = next / r10[m] - 1;
	}
	return worst;
}

static void octave_bounds(int schema, double *bounds)
{
	int n = 1 << schema;
	for (int j = 0; j < n; j++)
		bounds[j] = exp2((double)j / n) / 2;
}

static int32_t index_with(double v, int schema, const double *bounds)
{
	int exp;
	double frac = frexp(v, &exp);
	int n = 1 << schema, lo = 0, hi = n; /* first j with bounds[j] >= frac, n if none */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (bounds[mid] >= frac)
			hi = mid;
		else
			lo = mid + 1;
	}
	return (int32_t)(exp - 1) * n + lo;
}

int32_t tb_prom_native_index(int64_t ns, int schema)
{
	double bounds[1 << TB_PROM_SCHEMA_MAX];
	octave_bounds(schema, bounds);
	return index_with((double)ns / NS_PER_S, schema, bounds);
}

double tb_prom_native_upper(int32_t index, int schema)
{
	return exp2((double)index / (1 << schema));
}

/* One non-empty HDR bucket: the value HDR reports for it (its highest
 * equivalent), its midpoint (for the sum) and its count. */
struct hdr_bucket {
	int64_t highest, median, count;
};

/* A walk over the non-empty buckets. It stops at the bucket of the largest
 * value recorded (hist.h keeps max_raw exact), so a narrow distribution
 * costs little. */
struct hdr_walk {
	const tb_hist *h;
	int32_t at, end;
};

static void walk_init(struct hdr_walk *w, const tb_hist *h)
{
	w->h = h;
	w->at = 0;
	w->end = tb_hist_index_of(h, h->max_raw < h->highest ? h->max_raw : h->highest) + 1;
	if (w->end > h->counts_len)
		w->end = h->counts_len;
}

/* The next non-empty bucket; false at the end. */
static bool next_bucket(struct hdr_walk *w, struct hdr_bucket *out)
{
	const tb_hist *h = w->h;
	for (int32_t i = w->at; i < w->end; i++) {
		if (!h->counts[i])
			continue;
		int32_t b = (i >> h->sub_bucket_half_count_mag) - 1;
		int64_t sb = (i & (h->sub_bucket_half_count - 1)) + h->sub_bucket_half_count;
		if (b < 0) {
			sb -= h->sub_bucket_half_count;
			b = 0;
		}
		int64_t lowest = sb << (b + h->unit_magnitude);
		int64_t size = INT64_C(1) << (b + h->unit_magnitude);
		out->highest = lowest + (size - 1);
		out->median = lowest + (size >> 1);
		out->count = h->counts[i];
		w->at = i + 1;
		return true;
	}
	w->at = w->end;
	return false;
}

static double bucket_sum_s(const struct hdr_bucket *b)
{
	return (double)b->median * (double)b->count / NS_PER_S;
}

/* A position in the native buckets: index k = (e - 1) n + j, upper bound
 * bounds[j] x 2^e. */
struct native_cursor {
	const double *bounds;
	int n, j, e;
	int32_t k;
	double upper;
};

static void cursor_at(struct native_cursor *c, int32_t k)
{
	c->k = k;
	c->j = (int)(((k % c->n) + c->n) % c->n);
	c->e = (int)((k - c->j) / c->n) + 1;
	c->upper = ldexp(c->bounds[c->j], c->e);
}

/* Advance to the bucket holding v (seconds), never backwards. */
static int32_t cursor_find(struct native_cursor *c, double v)
{
	while (v > c->upper) {
		c->k++;
		if (++c->j == c->n) {
			c->j = 0;
			c->e++;
		}
		c->upper = ldexp(c->bounds[c->j], c->e);
	}
	return c->k;
}

/* Size out's dense counts for h's range (allocates; none for zeros only). */
static int native_prepare(const tb_hist *h, int schema, const double *bounds, tb_prom_native *out)
{
	memset(out, 0, sizeof(*out));
	out->schema = schema;
	if (tb_hist_max(h) == 0) /* empty, or only zeros */
		return 0;
	/* The index range: from the smallest non-zero bucket to the largest. */
	int64_t low = tb_hist_min(h) > 0 ? tb_hist_min(h) : 1;
	int32_t first = index_with((double)tb_hist_highest_equivalent(h, low) / NS_PER_S, schema, bounds);
	int32_t last = index_with((double)tb_hist_max(h) / NS_PER_S, schema, bounds);
	if (last < first)
		last = first;
	out->counts = calloc((size_t)(last - first + 1), sizeof(*out->counts));
	if (!out->counts)
		return -ENOMEM;
	out->first = first;
	out->n = (uint32_t)(last - first + 1);
	return 0;
}

/* One walk of h into either view or both (NULL: not wanted; `native`
 * prepared by native_prepare). */
static void walk_views(const tb_hist *h, const double *bounds, tb_prom_native *native,
		       tb_prom_classic *classic)
{
	struct native_cursor c = {.bounds = bounds};
	uint32_t used = 0;
	if (native) {
		c.n = 1 << native->schema;
		cursor_at(&c, native->first);
	}
	int64_t bound[TB_PROM_CLASSIC_BOUNDS];
	for (int k = 0; k < TB_PROM_CLASSIC_BOUNDS; k++)
		bound[k] = tb_prom_classic_bound_ns(k);
	int k = 0; /* the first classic bound >= the bucket's value; TB_PROM_CLASSIC_BOUNDS: +Inf */
	double sum = 0;
	struct hdr_bucket hb;
	struct hdr_walk w;
	walk_init(&w, h);
	while (next_bucket(&w, &hb)) {
		sum += bucket_sum_s(&hb);
		if (classic) {
			while (k < TB_PROM_CLASSIC_BOUNDS && bound[k] < hb.highest)
				k++;
			classic->cumulative[k] += (uint64_t)hb.count;
		}
		if (!native)
			continue;
		native->count += (uint64_t)hb.count;
		if (hb.highest == 0 || !native->n) {
			native->zero_count += (uint64_t)hb.count;
			continue;
		}
		uint32_t i = (uint32_t)(cursor_find(&c, (double)hb.highest / NS_PER_S) - native->first);
		if (i >= native->n) /* past h's max: cannot happen while hist.h keeps max_raw exact */
			i = native->n - 1;
		native->counts[i] += (uint64_t)hb.count;
		if (i + 1 > used)
			used = i + 1;
	}
	if (native) {
		native->n = used;
		native->sum = sum;
	}
	if (classic) {
		classic->sum = sum;
		for (int j = 1; j <= TB_PROM_CLASSIC_BOUNDS; j++)
			classic->cumulative[j] += classic->cumulative[j - 1];
	}
}

int tb_prom_native_from_hist(const tb_hist *h, int schema, tb_prom_native *out)
{
	return tb_prom_views_from_hist(h, schema, out, NULL);
}

int tb_prom_views_from_hist(const tb_hist *h, int schema, tb_prom_native *native,
			    tb_prom_classic *classic)
{
	if (schema < TB_PROM_SCHEMA_MIN || schema > TB_PROM_SCHEMA_MAX)
		return -EINVAL;
	double bounds[1 << TB_PROM_SCHEMA_MAX];
	octave_bounds(schema, bounds);
	if (classic)
		memset(classic, 0, sizeof(*classic));
	int rc = native ? native_prepare(h, schema, bounds, native) : 0;
	if (rc == 0)
		walk_views(h, bounds, native, classic);
	return rc;
}

void tb_prom_native_free(tb_prom_native *n)
{
	free(n->counts);
	n->counts = NULL;
	n->n = 0;
}

int64_t tb_prom_classic_bound_ns(int k)
{
	if (k < 0 || k >= TB_PROM_CLASSIC_BOUNDS)
		return -EINVAL;
	int64_t scale = CLASSIC_FIRST_SCALE_NS;
	for (int d = 0; d < k / TB_PROM_CLASSIC_PER_DECADE; d++)
		scale *= 10;
	return r10[k % TB_PROM_CLASSIC_PER_DECADE] * scale;
}

/* %g of the bound in seconds: at most 3 significant digits, exactly the
 * preferred number ("6.3e-06", "0.0001", "100"). */
#define LE_DIGITS 3
#define LE_MIN_BUF 16

int tb_prom_classic_le(int k, char *buf, size_t cap)
{
	int64_t ns = tb_prom_classic_bound_ns(k);
	if (ns < 0 || cap < LE_MIN_BUF)
		return -EINVAL;
	snprintf(buf, cap, "%.*g", LE_DIGITS, (double)ns / NS_PER_S);
	return 0;
}

void tb_prom_classic_from_hist(const tb_hist *h, tb_prom_classic *out)
{
	memset(out, 0, sizeof(*out));
	walk_views(h, NULL, NULL, out);
}
