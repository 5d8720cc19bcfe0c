/* tailbus/prom.h - HDR histograms as Prometheus histograms, and their exposition.
 *
 * Two views of one HDR histogram of nanoseconds, both in seconds:
 *
 *   - native: Prometheus's sparse exponential buckets. At schema s (0..8)
 *     bucket i holds the values v with 2^((i-1)/2^s) < v <= 2^(i/2^s).
 *     Each HDR bucket's whole count goes to the native bucket that holds the
 *     HDR bucket's highest equivalent value (the value HDR reports for it),
 *     so every sample stays in the native bucket of the figure HDR would
 *     give for it; a quantile read from the native buckets lies in the same
 *     native bucket as HDR's, within a factor 2^(2^-s) of it. Recorded zeros
 *     (and negatives, which the collector records as 0) go to the zero bucket.
 *   - classic: cumulative `le` buckets on one fixed layout for every host,
 *     the R10 preferred numbers (1, 1.25, 1.6, 2, 2.5, 3.2, 4, 5, 6.3, 8) of
 *     each decade from 1 us to 100 s, then +Inf. An HDR bucket counts under
 *     the first bound at or above its highest equivalent value.
 *
 * Both mappings are functions of the HDR bucket alone, so mapping a merged
 * histogram equals adding the mappings of its parts: an exporter's running
 * sum and `tailbus replay` of the same logs give the same buckets.
 *
 * The exposition encoders append to a growable buffer: the text format 0.0.4
 * (classic histograms, counters, gauges) and the protobuf format (delimited
 * io.prometheus.client.MetricFamily messages, with native and classic
 * buckets). Nothing here prints; functions return 0 or a negative errno.
 */
#ifndef TAILBUS_PROM_H
#define TAILBUS_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailbus/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schemas Prometheus 2.42 stores (metrics.proto allows -4..8; tailbus
 * uses only those finer than a power of two). */
#define TB_PROM_SCHEMA_MIN 0
#define TB_PROM_SCHEMA_MAX 8
/* The bucket budget a default schema must respect: a metric spread over three
 * decades (ten octaves, say 10 us .. 10 ms) fills 2^s buckets per octave;
 * 160 is client_golang's customary NativeHistogramMaxBucketNumber. */
#define TB_PROM_BUCKET_BUDGET 160
#define TB_PROM_BUDGET_OCTAVES 10
/* The finest schema with 2^s * TB_PROM_BUDGET_OCTAVES <= the budget: 4. */
#define TB_PROM_SCHEMA_DEFAULT 4
/* Width of the zero bucket: client_golang's default (2^-128), which every
 * Prometheus with native histograms accepts. HDR records nothing between 0
 * and 1 ns, so only recorded zeros fall in it. */
#define TB_PROM_ZERO_THRESHOLD 2.938735877055719e-39
/* The classic layout: 10 bounds a decade, 1 us .. 100 s (8 decades). */
#define TB_PROM_CLASSIC_PER_DECADE 10
#define TB_PROM_CLASSIC_DECADES 8
#define TB_PROM_CLASSIC_BOUNDS (TB_PROM_CLASSIC_PER_DECADE * TB_PROM_CLASSIC_DECADES + 1)

/* The relative error bound of a quantile read from native buckets of schema
 * s against HDR's figure: 2^(2^-s) - 1 (4.4 % at s = 4, 0.27 % at s = 8). */
double tb_prom_native_bound(int schema);
/* The same for the classic layout: the widest ratio of two adjacent bounds,
 * less one (1.6 / 1.25 - 1 = 28 %). */
double tb_prom_classic_bound(void);

/* Native bucket index of a value of `ns` nanoseconds (> 0) at `schema`. */
int32_t tb_prom_native_index(int64_t ns, int schema);
/* The upper bound, in seconds, of native bucket `index` at `schema`. */
double tb_prom_native_upper(int32_t index, int schema);

/* The native buckets of a histogram: dense counts from `first` on. */
typedef struct tb_prom_native {
	int schema;
	uint64_t count, zero_count;
	double sum;      /* seconds: each HDR bucket's median equivalent x count */
	int32_t first;   /* index of counts[0] */
	uint32_t n;      /* counts used (0: no bucket outside the zero bucket) */
	uint64_t *counts;
} tb_prom_native;

/* Map `h` at `schema` into `out` (allocates; free with tb_prom_native_free).
 * Returns 0, -EINVAL (schema) or -ENOMEM. */
int tb_prom_native_from_hist(const tb_hist *h, int schema, tb_prom_native *out);
void tb_prom_native_free(tb_prom_native *n);

/* The classic view: bound k in nanoseconds (k < TB_PROM_CLASSIC_BOUNDS), and
 * its `le` text into buf, the same on every host ("1e-06", "1.25e-06", ...,
 * "100"). Returns 0, or -EINVAL for a bad k or a buffer under 16 bytes. */
int64_t tb_prom_classic_bound_ns(int k);
int tb_prom_classic_le(int k, char *buf, size_t cap);
/* Cumulative counts under each bound (the last element, index
 * TB_PROM_CLASSIC_BOUNDS, is +Inf: the total). */
typedef struct tb_prom_classic {
	uint64_t cumulative[TB_PROM_CLASSIC_BOUNDS + 1];
	double sum; /* seconds, as tb_prom_native's */
} tb_prom_classic;
void tb_prom_classic_from_hist(const tb_hist *h, tb_prom_classic *out);
/* Both views in one walk of the counts (what a protobuf scrape needs);
 * `classic` may be NULL. Returns as tb_prom_native_from_hist. */
int tb_prom_views_from_hist(const tb_hist *h, int schema, tb_prom_native *native,
			    tb_prom_classic *classic);

/* A growable byte buffer the encoders append to. */
typedef struct tb_prom_buf {
	char *data;
	size_t len, cap;
} tb_prom_buf;
void tb_prom_buf_free(tb_prom_buf *b);

/* The labels every tailbus series carries. `metric` may be NULL (per-bus series). */
typedef struct tb_prom_labels {
	const char *bus, *metric, *host;
} tb_prom_labels;

enum tb_prom_type { TB_PROM_COUNTER, TB_PROM_GAUGE, TB_PROM_HISTOGRAM };

/* One metric family: a name, its help, its type and its series. For a
 * histogram `hists` holds one histogram per series, otherwise `values`. */
typedef struct tb_prom_family {
	const char *name, *help;
	enum tb_prom_type type;
	size_t n;
	const tb_prom_labels *labels;
	const double *values;
	const tb_hist *const *hists;
} tb_prom_family;

/* Text format 0.0.4: HELP, TYPE and the series; histograms as classic
 * buckets, _sum and _count. Returns 0 or -ENOMEM. */
int tb_prom_text_family(tb_prom_buf *b, const tb_prom_family *f);
/* Protobuf: one length-delimited MetricFamily; histograms with both native
 * buckets at `schema` and the classic buckets. Returns 0, -EINVAL or -ENOMEM. */
int tb_prom_pb_family(tb_prom_buf *b, const tb_prom_family *f, int schema);

/* The content types of the two expositions. */
#define TB_PROM_TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TB_PROM_PB_TYPE \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
/* Whether an Accept header value asks for the delimited protobuf exposition
 * (a media range application/vnd.google.protobuf with proto=
 * io.prometheus.client.MetricFamily and encoding=delimited, and a q other
 * than 0). NULL or anything else: false (the text format). */
bool tb_prom_accepts_protobuf(const char *accept);

#ifdef __cplusplus
}
#endif
#endif
