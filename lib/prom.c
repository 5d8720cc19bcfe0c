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

/* The sum of a walk's values, in nanoseconds, kept exactly (each bucket
 * adds its midpoint times its count) and turned into seconds once at the
 * end: one integer multiply-add a bucket, and a sum that does not depend on
 * the order the buckets were added in. */
static double sum_seconds(unsigned __int128 sum_ns)
{
	return (double)sum_ns / NS_PER_S;
}

/* A position in the native buckets: index k = (e - 1) n + j, upper bound
 * bounds[j] x 2^e seconds. `fits_ns` is the largest whole number of
 * nanoseconds that the bucket holds, in the same arithmetic as
 * cursor_find's (ns / 1e9 <= upper): a value up to it needs no division. */
struct native_cursor {
	const double *bounds;
	int n, j, e;
	int32_t k;
	double upper;
	int64_t fits_ns;
};

static double ns_to_s(int64_t ns)
{
	return (double)ns / NS_PER_S;
}

/* Division by 1e9 rounds monotonically, so the values the bucket holds are
 * a prefix of the integers: step from upper x 1e9 to its last member. */
static void cursor_set_upper(struct native_cursor *c)
{
	c->upper = ldexp(c->bounds[c->j], c->e);
	double f = floor(c->upper * NS_PER_S);
	if (!(f < 9e18)) { /* past any int64 value: everything fits */
		c->fits_ns = INT64_MAX;
		return;
	}
	int64_t n = f < 0 ? -1 : (int64_t)f;
	while (ns_to_s(n + 1) <= c->upper)
		n++;
	while (n >= 0 && ns_to_s(n) > c->upper)
		n--;
	c->fits_ns = n;
}

static void cursor_at(struct native_cursor *c, int32_t k)
{
	c->k = k;
	c->j = (int)(((k % c->n) + c->n) % c->n);
	c->e = (int)((k - c->j) / c->n) + 1;
	cursor_set_upper(c);
}

/* Advance to the bucket holding ns, never backwards. */
static int32_t cursor_find(struct native_cursor *c, int64_t ns)
{
	if (ns <= c->fits_ns)
		return c->k;
	double v = ns_to_s(ns);
	while (v > c->upper) {
		c->k++;
		if (++c->j == c->n) {
			c->j = 0;
			c->e++;
		}
		cursor_set_upper(c);
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

/* The end of the slots a walk looks at: the slot of the largest value
 * recorded (hist.h keeps max_raw exact), so a narrow distribution costs
 * little. */
static int32_t walk_end(const tb_hist *h)
{
	int32_t end = tb_hist_index_of(h, h->max_raw < h->highest ? h->max_raw : h->highest) + 1;
	return end < h->counts_len ? end : h->counts_len;
}

/* The slots of one HDR bucket (an octave): slot i holds the values
 * [(i - base) << shift, ((i - base) + 1) << shift), i in [from, to). */
struct octave {
	int32_t from, to, base, shift;
};

static void octave_of(const tb_hist *h, int32_t i, struct octave *o)
{
	int32_t half = h->sub_bucket_half_count;
	int32_t b = (i >> h->sub_bucket_half_count_mag) - 1;
	if (b < 0) { /* the first bucket: 2 x half slots from 0 */
		*o = (struct octave){0, 2 * half, 0, h->unit_magnitude};
		return;
	}
	*o = (struct octave){(b + 1) * half, (b + 2) * half, b * half, b + h->unit_magnitude};
}

/* The largest value slot i reports (its highest equivalent). */
static int64_t slot_highest(const struct octave *o, int32_t i)
{
	return ((int64_t)(i - o->base + 1) << o->shift) - 1;
}

/* One walk of h into either view or both (NULL: not wanted; `native`
 * prepared by native_prepare). It moves in runs of slots that fall into
 * the same classic bucket and the same native bucket, found from the
 * bounds, and sums each run's counts in a tight loop: the cost is a few
 * instructions a slot, however many slots are filled. */
static void walk_views(const tb_hist *h, const double *bounds, tb_prom_native *native,
		       tb_prom_classic *classic)
{
	struct native_cursor c = {.bounds = bounds, .fits_ns = INT64_MAX};
	bool buckets = native && native->n; /* false: every value goes to the zero bucket */
	uint32_t used = 0;
	if (buckets) {
		c.n = 1 << native->schema;
		cursor_at(&c, native->first);
	}
	int64_t bound[TB_PROM_CLASSIC_BOUNDS + 1];
	for (int k = 0; k < TB_PROM_CLASSIC_BOUNDS; k++)
		bound[k] = tb_prom_classic_bound_ns(k);
	bound[TB_PROM_CLASSIC_BOUNDS] = INT64_MAX; /* +Inf */
	int k = 0; /* the first classic bound >= the run's values */
	unsigned __int128 sum_ns = 0;
	int32_t end = walk_end(h);
	struct octave o;
	octave_of(h, 0, &o);
	for (int32_t i = 0; i < end;) {
		if (i == o.to)
			octave_of(h, i, &o);
		int64_t highest = slot_highest(&o, i);
		int64_t limit = INT64_MAX; /* the run's values stay <= limit */
		if (classic) {
			while (bound[k] < highest)
				k++;
			limit = bound[k];
		}
		int32_t bucket = 0;
		bool zero = native && (!buckets || highest == 0); /* to the zero bucket */
		if (buckets && !zero) {
			bucket = cursor_find(&c, highest);
			if (c.fits_ns < limit)
				limit = c.fits_ns;
		}
		/* the run: slots i .. run_end - 1, all of highest <= limit */
		int32_t run_end = o.to < end ? o.to : end;
		if (highest == 0) {
			run_end = i + 1; /* the value 0 alone */
		} else if (limit < INT64_MAX) {
			/* limit >= highest, so the run holds slot i at least */
			int64_t last = ((limit + 1) >> o.shift) + o.base; /* first slot past limit */
			if (last < run_end)
				run_end = (int32_t)last;
		}
		uint64_t n = 0;
		unsigned __int128 at = 0; /* sum of count x (slot - base) */
		for (int32_t x = i; x < run_end; x++) {
			uint64_t v = (uint64_t)h->counts[x];
			n += v;
			at += (unsigned __int128)v * (uint64_t)(x - o.base);
		}
		i = run_end;
		if (!n)
			continue;
		/* each slot's midpoint: (slot - base) << shift, plus half its width */
		sum_ns += (at << o.shift) + (unsigned __int128)n * (uint64_t)((INT64_C(1) << o.shift) >> 1);
		if (classic)
			classic->cumulative[k] += n;
		if (!native)
			continue;
		native->count += n;
		if (zero) {
			native->zero_count += n;
			continue;
		}
		uint32_t j = (uint32_t)(bucket - native->first);
		if (j >= native->n) /* past h's max: cannot happen while hist.h keeps max_raw exact */
			j = native->n - 1;
		native->counts[j] += n;
		if (j + 1 > used)
			used = j + 1;
	}
	if (native) {
		native->n = used;
		native->sum = sum_seconds(sum_ns);
	}
	if (classic) {
		classic->sum = sum_seconds(sum_ns);
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
