/* prom_pb.c - the Prometheus protobuf exposition, through protobuf-c.
 *
 * Each family is one io.prometheus.client.MetricFamily message (metrics.proto
 * as Debian ships it in golang-github-prometheus-client-model-dev, compiled
 * by protoc-c at build time), preceded by its length as a varint: the
 * "encoding=delimited" stream Prometheus scrapes.
 *
 * A histogram series carries both views of tailbus/prom.h: the native
 * buckets (schema, zero threshold and count, positive spans and integer
 * deltas) and the classic `le` buckets. A Prometheus with native histograms
 * enabled stores the native ones; any other reads the classic ones.
 *
 * Spans: a run of consecutive native indexes whose counts are not zero is
 * one span; its offset is the gap from the end of the span before (for the
 * first span, its absolute index). Deltas run across spans: each bucket's
 * count less the count of the bucket before it (0 before the first).
 */
#include "tailbus/prom.h"
#include "tailbus/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.pb-c.h"

typedef Io__Prometheus__Client__LabelPair label_pair;
typedef Io__Prometheus__Client__Metric metric_msg;
typedef Io__Prometheus__Client__Histogram hist_msg;
typedef Io__Prometheus__Client__Bucket bucket_msg;
typedef Io__Prometheus__Client__BucketSpan span_msg;

#define LABELS_MAX 3
#define LE_BUF 32
/* A varint of a 64-bit length takes at most 10 bytes. */
#define VARINT_MAX 10

/* Everything one series' message points at, freed together. */
struct series {
	label_pair label[LABELS_MAX];
	label_pair *labelp[LABELS_MAX];
	metric_msg metric;
	Io__Prometheus__Client__Counter counter;
	Io__Prometheus__Client__Gauge gauge;
	hist_msg hist;
	bucket_msg bucket[TB_PROM_CLASSIC_BOUNDS];
	bucket_msg *bucketp[TB_PROM_CLASSIC_BOUNDS];
	span_msg *spans;
	span_msg **spanp;
	int64_t *deltas;
	tb_prom_native native;
};

static void set_labels(struct series *s, const tb_prom_labels *l)
{
	const char *names[LABELS_MAX] = {"bus", "metric", "host"};
	const char *values[LABELS_MAX] = {l->bus, l->metric, l->host};
	size_t n = 0;
	for (int i = 0; i < LABELS_MAX; i++) {
		if (!values[i])
			continue;
		io__prometheus__client__label_pair__init(&s->label[n]);
		s->label[n].name = (char *)names[i];
		s->label[n].value = (char *)values[i];
		s->labelp[n] = &s->label[n];
		n++;
	}
	s->metric.n_label = n;
	s->metric.label = s->labelp;
}

/* The native view (s->native, mapped): spans and deltas of the dense counts. */
static int set_native(struct series *s, int schema)
{
	const tb_prom_native *n = &s->native;
	hist_msg *m = &s->hist;
	m->has_schema = m->has_zero_threshold = m->has_zero_count = 1;
	m->schema = schema;
	m->zero_threshold = TB_PROM_ZERO_THRESHOLD;
	m->zero_count = n->zero_count;
	size_t buckets = n->n ? n->n : 1;
	s->spans = calloc(buckets, sizeof(*s->spans));
	s->spanp = calloc(buckets, sizeof(*s->spanp));
	s->deltas = calloc(buckets, sizeof(*s->deltas));
	if (!s->spans || !s->spanp || !s->deltas)
		return -ENOMEM;
	int64_t previous = 0;
	int32_t end_of_last = 0; /* index after the last span */
	for (uint32_t i = 0; i < n->n; i++) {
		if (n->counts[i] == 0)
			continue;
		int32_t index = n->first + (int32_t)i;
		bool extends = m->n_positive_span && index == end_of_last;
		if (!extends) {
			span_msg *sp = &s->spans[m->n_positive_span];
			io__prometheus__client__bucket_span__init(sp);
			sp->has_offset = sp->has_length = 1;
			sp->offset = m->n_positive_span ? index - end_of_last : index;
			s->spanp[m->n_positive_span++] = sp;
		}
		s->spanp[m->n_positive_span - 1]->length++;
		end_of_last = index + 1;
		s->deltas[m->n_positive_delta++] = (int64_t)n->counts[i] - previous;
		previous = (int64_t)n->counts[i];
	}
	m->positive_span = s->spanp;
	m->positive_delta = s->deltas;
	return 0;
}

static void set_classic(struct series *s, const tb_prom_classic *cl)
{
	const tb_prom_classic *c = cl;
	hist_msg *m = &s->hist;
	m->has_sample_count = m->has_sample_sum = 1;
	m->sample_count = c->cumulative[TB_PROM_CLASSIC_BOUNDS];
	m->sample_sum = c->sum;
	for (int k = 0; k < TB_PROM_CLASSIC_BOUNDS; k++) {
		bucket_msg *b = &s->bucket[k];
		io__prometheus__client__bucket__init(b);
		b->has_cumulative_count = b->has_upper_bound = 1;
		b->cumulative_count = c->cumulative[k];
		b->upper_bound = (double)tb_prom_classic_bound_ns(k) / 1e9;
		s->bucketp[k] = b;
	}
	m->n_bucket = TB_PROM_CLASSIC_BOUNDS;
	m->bucket = s->bucketp;
}

static int set_series(struct series *s, const tb_prom_family *f, size_t i, int schema)
{
	io__prometheus__client__metric__init(&s->metric);
	set_labels(s, &f->labels[i]);
	switch (f->type) {
	case TB_PROM_COUNTER:
		io__prometheus__client__counter__init(&s->counter);
		s->counter.has_value = 1;
		s->counter.value = f->values[i];
		s->metric.counter = &s->counter;
		return 0;
	case TB_PROM_GAUGE:
		io__prometheus__client__gauge__init(&s->gauge);
		s->gauge.has_value = 1;
		s->gauge.value = f->values[i];
		s->metric.gauge = &s->gauge;
		return 0;
	case TB_PROM_HISTOGRAM: {
		tb_prom_classic classic;
		int rc = tb_prom_views_from_hist(f->hists[i], schema, &s->native, &classic);
		if (rc < 0)
			return rc;
		io__prometheus__client__histogram__init(&s->hist);
		set_classic(s, &classic);
		s->metric.histogram = &s->hist;
		return set_native(s, schema);
	}
	}
	return -EINVAL;
}

static void free_series(struct series *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].spans);
		free(s[i].spanp);
		free(s[i].deltas);
		tb_prom_native_free(&s[i].native);
	}
	free(s);
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	do {
		out[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

static int append_delimited(tb_prom_buf *b, const ProtobufCMessage *msg)
{
	size_t size = protobuf_c_message_get_packed_size(msg);
	if (tb_grow((void **)&b->data, &b->cap, b->len + VARINT_MAX + size, 4096) < 0)
		return -ENOMEM;
	b->len += put_varint((uint8_t *)b->data + b->len, size);
	b->len += protobuf_c_message_pack(msg, (uint8_t *)b->data + b->len);
	return 0;
}

int tb_prom_pb_family(tb_prom_buf *b, const tb_prom_family *f, int schema)
{
	if (schema < TB_PROM_SCHEMA_MIN || schema > TB_PROM_SCHEMA_MAX)
		return -EINVAL;
	struct series *s = calloc(f->n ? f->n : 1, sizeof(*s));
	metric_msg **metrics = calloc(f->n ? f->n : 1, sizeof(*metrics));
	int rc = s && metrics ? 0 : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		rc = set_series(&s[i], f, i, schema);
		metrics[i] = &s[i].metric;
	}
	if (rc == 0) {
		Io__Prometheus__Client__MetricFamily mf = IO__PROMETHEUS__CLIENT__METRIC_FAMILY__INIT;
		mf.name = (char *)f->name;
		mf.help = (char *)f->help;
		mf.has_type = 1;
		mf.type = f->type == TB_PROM_COUNTER ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER :
			  f->type == TB_PROM_GAUGE ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE :
						     IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM;
		mf.n_metric = f->n;
		mf.metric = metrics;
		rc = append_delimited(b, &mf.base);
	}
	free(metrics);
	free_series(s, f->n);
	return rc;
}
