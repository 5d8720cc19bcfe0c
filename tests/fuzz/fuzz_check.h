/* fuzz_check.h - invariants the fuzz targets hold every decoded histogram to.
 *
 * A decoder that accepts bytes must hand back a histogram that keeps the
 * promises of tailbus/hist.h: total is the sum of the counts, no count is
 * negative, max_raw lies in the highest non-empty bucket (so the V2 encoder,
 * which stops at the index of max_raw, writes every count), and percentiles
 * never decrease as the level rises. A broken promise is a bug in the
 * library, not in the input, so it aborts: libFuzzer then saves the input as
 * a crash, and the replay driver exits non-zero.
 *
 * Header-only (static functions) so each target and the replay driver compile
 * it in without another library.
 */
#ifndef TAILBUS_FUZZ_CHECK_H
#define TAILBUS_FUZZ_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/hist.h"

/* Abort with a sentence naming the broken invariant. */
#define FUZZ_CHECK(cond, ...)                                                        \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__,   \
				__LINE__, #cond);                                    \
			fprintf(stderr, __VA_ARGS__);                                \
			fputc('\n', stderr);                                         \
			abort();                                                     \
		}                                                                    \
	} while (0)

/* Memory. The largest valid layout (S=5, L=1, H=INT64_MAX) has 6,160,384
 * counters (49 MB) and an inner buffer of at most 9 bytes per counter (55 MB),
 * so a decoder that keeps its allocations to what the input's layout needs
 * never comes near the limits the harness sets: 512 MB per allocation
 * (libFuzzer's -malloc_limit_mb in run_fuzz.sh) and 1 GiB of address space
 * (replay.c, in builds without AddressSanitizer). An allocation that fails
 * under them, or trips them, means a few input bytes asked for far more
 * memory than any histogram needs. */
#define FUZZ_ENOMEM_IS_A_BUG \
	"no valid input needs more than ~110 MB; the decoder allocated from an unchecked length"

/* Percentile levels checked for monotonicity: the two ends (p0 takes the
 * lowest equivalent value, p100 the highest, so both bucket edges are
 * computed) and one level between. Each costs a walk over the counts, the
 * target's largest cost after decoding, so there are only three. */
static const double fuzz_check_levels[] = {0.0, 50.0, 100.0};

/* Counts are checked in chunks: a chunk that memcmp() finds all zero (most
 * of them: decoded histograms are sparse, and the largest layout has six
 * million counters) is skipped without a per-counter loop. */
#define FUZZ_ZERO_CHUNK 4096
static const int64_t fuzz_zeros[FUZZ_ZERO_CHUNK];

static inline void fuzz_check_hist(const tb_hist *h)
{
	FUZZ_CHECK(h->counts != NULL, "a histogram handed back without counts");
	FUZZ_CHECK(h->counts_len == tb_hist_counts_len(h->lowest, h->highest, h->sig_digits),
		   "counts_len %d for L=%lld H=%lld S=%d", h->counts_len, (long long)h->lowest,
		   (long long)h->highest, h->sig_digits);
	int64_t sum = 0;
	int32_t top = -1, low = -1; /* highest non-empty index; lowest above 0 */
	for (int32_t i = 0; i < h->counts_len; i++) {
		int32_t left = h->counts_len - i;
		int32_t n = left < FUZZ_ZERO_CHUNK ? left : FUZZ_ZERO_CHUNK;
		if (i % FUZZ_ZERO_CHUNK == 0 &&
		    memcmp(h->counts + i, fuzz_zeros, (size_t)n * sizeof(int64_t)) == 0) {
			i += n - 1;
			continue;
		}
		int64_t c = h->counts[i];
		FUZZ_CHECK(c >= 0, "count %lld at index %d", (long long)c, i);
		FUZZ_CHECK(!__builtin_add_overflow(sum, c, &sum),
			   "the counts sum past INT64_MAX at index %d, so no int64 total can equal it", i);
		if (c)
			top = i;
		if (c && i > 0 && low < 0)
			low = i;
	}
	FUZZ_CHECK(h->total == sum, "total %lld, sum of counts %lld", (long long)h->total,
		   (long long)sum);
	/* min_raw is the least value above 0 (0 where nothing above 0 was
	 * recorded): at the lowest count above index 0, or at index 0, which
	 * holds every value below 2^unit_magnitude, not 0 alone */
	if (low < 0 && h->min_raw == 0)
		; /* only zeros, or nothing */
	else if (low < 0 || h->min_raw == 0 || tb_hist_index_of(h, h->min_raw) != low)
		FUZZ_CHECK(h->min_raw > 0 && tb_hist_index_of(h, h->min_raw) == 0 && h->counts[0] > 0 &&
				   h->unit_magnitude > 0,
			   "min_raw %lld, lowest count above index 0 at index %d (unit magnitude %d)",
			   (long long)h->min_raw, low, h->unit_magnitude);
	if (sum == 0)
		return;
	if (h->max_raw > 0)
		FUZZ_CHECK(tb_hist_index_of(h, h->max_raw) == top,
			   "max_raw %lld is at index %d, highest non-empty index is %d",
			   (long long)h->max_raw, tb_hist_index_of(h, h->max_raw), top);
	else
		FUZZ_CHECK(top == 0, "max_raw 0 with counts up to index %d", top);
	int64_t prev = INT64_MIN;
	for (size_t k = 0; k < sizeof(fuzz_check_levels) / sizeof(fuzz_check_levels[0]); k++) {
		int64_t v = tb_hist_value_at_percentile(h, fuzz_check_levels[k]);
		FUZZ_CHECK(v >= prev, "p%g = %lld below the previous level's %lld",
			   fuzz_check_levels[k], (long long)v, (long long)prev);
		prev = v;
	}
}

/* Two histograms hold the same layout and the same counts. */
static inline void fuzz_check_same(const tb_hist *a, const tb_hist *b, const char *what)
{
	FUZZ_CHECK(tb_hist_same_layout(a, b), "%s: layout (%lld, %lld, %d) became (%lld, %lld, %d)",
		   what, (long long)a->lowest, (long long)a->highest, a->sig_digits,
		   (long long)b->lowest, (long long)b->highest, b->sig_digits);
	FUZZ_CHECK(a->counts_len == b->counts_len, "%s: counts_len %d became %d", what,
		   a->counts_len, b->counts_len);
	FUZZ_CHECK(a->total == b->total, "%s: total %lld became %lld", what, (long long)a->total,
		   (long long)b->total);
	if (memcmp(a->counts, b->counts, (size_t)a->counts_len * sizeof(int64_t)) != 0) {
		for (int32_t i = 0; i < a->counts_len; i++)
			FUZZ_CHECK(a->counts[i] == b->counts[i],
				   "%s: count at index %d: %lld became %lld", what, i,
				   (long long)a->counts[i], (long long)b->counts[i]);
	}
	FUZZ_CHECK(a->min_raw == b->min_raw, "%s: min_raw %lld became %lld", what,
		   (long long)a->min_raw, (long long)b->min_raw);
	FUZZ_CHECK(a->max_raw == b->max_raw, "%s: max_raw %lld became %lld", what,
		   (long long)a->max_raw, (long long)b->max_raw);
	FUZZ_CHECK(memcmp(&a->conversion_ratio, &b->conversion_ratio, sizeof(double)) == 0,
		   "%s: conversion ratio %g became %g", what, a->conversion_ratio,
		   b->conversion_ratio);
}

#endif
