/* test_prom.c - HDR histograms as Prometheus buckets (tailbus/prom.h).
 *
 * What must hold: every HDR bucket lands in the native bucket that holds its
 * highest equivalent value, at every schema; the mapping is additive (the map
 * of a merge is the sum of the maps: hosts merge in Prometheus as in replay);
 * a quantile read from the native buckets is within the stated bound of
 * HDR's; the classic layout is the documented one; the protobuf a scrape
 * gets decodes (with protobuf-c, from Debian's metrics.proto) to the same
 * buckets; and the Accept header is read right, whatever it holds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "metrics.pb-c.h"
#include "tailbus/prom.h"
#include "tailbus/rand.h"

#define NS_PER_S 1e9

/* A histogram of the collector's layout with `n` log-spread values, 1 ns .. ~1 h. */
static void random_hist(tb_hist *h, uint64_t seed, int n)
{
	assert_int_equal(tb_hist_init(h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
				      TB_HIST_DEFAULT_SIG_DIGITS), 0);
	for (int i = 0; i < n; i++) {
		double e = (double)(tb_splitmix64(&seed) % 1000000) / 1000000.0 * 41.0; /* 2^0 .. 2^41 ns */
		int64_t v = (int64_t)exp2(e);
		if (tb_splitmix64(&seed) % 50 == 0)
			v = 0;
		assert_int_equal(tb_hist_record_n(h, v, (int64_t)(1 + tb_splitmix64(&seed) % 3)), 0);
	}
}

static void native_index_brackets_its_value(void **state)
{
	(void)state;
	for (int s = TB_PROM_SCHEMA_MIN; s <= TB_PROM_SCHEMA_MAX; s++) {
		assert_int_equal(tb_prom_native_index(1000000000, s), 0);   /* 1 s: the upper bound of 0 */
		assert_int_equal(tb_prom_native_index(2000000000, s), 1 << s); /* 2 s */
		assert_int_equal(tb_prom_native_index(500000000, s), -(1 << s)); /* 0.5 s */
		assert_int_equal(tb_prom_native_index(1000000001, s), 1);
		uint64_t seed = (uint64_t)s;
		for (int i = 0; i < 10000; i++) {
			int64_t ns = 1 + (int64_t)(tb_splitmix64(&seed) % 3600000000000ULL) / (1 + (int64_t)(tb_splitmix64(&seed) % 1000000));
			int32_t k = tb_prom_native_index(ns, s);
			double v = (double)ns / NS_PER_S;
			assert_true(tb_prom_native_upper(k - 1, s) < v * (1 + 1e-12));
			assert_true(v <= tb_prom_native_upper(k, s) * (1 + 1e-12));
		}
	}
}

static void native_map_is_additive(void **state)
{
	(void)state;
	tb_hist a, b, sum;
	random_hist(&a, 1, 3000);
	random_hist(&b, 2, 500);
	assert_int_equal(tb_hist_init_like(&sum, &a), 0);
	assert_int_equal(tb_hist_add(&sum, &a), 0);
	assert_int_equal(tb_hist_add(&sum, &b), 0);
	for (int s = TB_PROM_SCHEMA_MIN; s <= TB_PROM_SCHEMA_MAX; s++) {
		tb_prom_native na, nb, ns;
		assert_int_equal(tb_prom_native_from_hist(&a, s, &na), 0);
		assert_int_equal(tb_prom_native_from_hist(&b, s, &nb), 0);
		assert_int_equal(tb_prom_native_from_hist(&sum, s, &ns), 0);
		assert_int_equal(ns.count, (uint64_t)sum.total);
		assert_int_equal(ns.zero_count, na.zero_count + nb.zero_count);
		uint64_t seen = ns.zero_count;
		for (uint32_t i = 0; i < ns.n; i++) {
			int32_t k = ns.first + (int32_t)i;
			uint64_t want = 0;
			if (k >= na.first && k < na.first + (int32_t)na.n)
				want += na.counts[k - na.first];
			if (k >= nb.first && k < nb.first + (int32_t)nb.n)
				want += nb.counts[k - nb.first];
			assert_int_equal(ns.counts[i], want);
			seen += ns.counts[i];
		}
		assert_int_equal(seen, ns.count);
		tb_prom_native_free(&na);
		tb_prom_native_free(&nb);
		tb_prom_native_free(&ns);
	}
	tb_hist_free(&a);
	tb_hist_free(&b);
	tb_hist_free(&sum);
}

/* Prometheus's histogram_quantile on native buckets: the bucket where the
 * cumulative count reaches q * count, interpolated linearly within it. */
static double prom_quantile(const tb_prom_native *n, double q)
{
	double rank = q * (double)n->count, cum = (double)n->zero_count;
	if (rank <= cum)
		return 0;
	for (uint32_t i = 0; i < n->n; i++) {
		double c = (double)n->counts[i];
		if (c && cum + c >= rank) {
			double lo = tb_prom_native_upper(n->first + (int32_t)i - 1, n->schema);
			double hi = tb_prom_native_upper(n->first + (int32_t)i, n->schema);
			return lo + (hi - lo) * (rank - cum) / c;
		}
		cum += c;
	}
	return tb_prom_native_upper(n->first + (int32_t)n->n - 1, n->schema);
}

static void native_quantiles_within_the_bound(void **state)
{
	(void)state;
	static const double levels[] = {0.5, 0.9, 0.99, 0.999};
	for (uint64_t seed = 10; seed < 20; seed++) {
		tb_hist h;
		random_hist(&h, seed, 2000);
		for (int s = TB_PROM_SCHEMA_MIN; s <= TB_PROM_SCHEMA_MAX; s++) {
			tb_prom_native n;
			assert_int_equal(tb_prom_native_from_hist(&h, s, &n), 0);
			for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
				double hdr = (double)tb_hist_value_at_percentile(&h, levels[l] * 100) / NS_PER_S;
				double got = prom_quantile(&n, levels[l]);
				if (hdr == 0)
					continue; /* in the zero bucket both */
				assert_true(fabs(got - hdr) / hdr <= tb_prom_native_bound(s) * (1 + 1e-9));
			}
			tb_prom_native_free(&n);
		}
		tb_hist_free(&h);
	}
}

static void classic_layout_is_the_documented_one(void **state)
{
	(void)state;
	char le[32];
	assert_int_equal(TB_PROM_CLASSIC_BOUNDS, 81);
	assert_int_equal(tb_prom_classic_bound_ns(0), 1000);
	assert_int_equal(tb_prom_classic_bound_ns(TB_PROM_CLASSIC_BOUNDS - 1), 100000000000LL);
	assert_int_equal(tb_prom_classic_le(0, le, sizeof(le)), 0);
	assert_string_equal(le, "1e-06");
	assert_int_equal(tb_prom_classic_le(8, le, sizeof(le)), 0);
	assert_string_equal(le, "6.3e-06");
	assert_int_equal(tb_prom_classic_le(20, le, sizeof(le)), 0);
	assert_string_equal(le, "0.0001");
	assert_int_equal(tb_prom_classic_le(80, le, sizeof(le)), 0);
	assert_string_equal(le, "100");
	assert_int_equal(tb_prom_classic_le(81, le, sizeof(le)), -EINVAL);
	assert_int_equal(tb_prom_classic_le(-1, le, sizeof(le)), -EINVAL);
	assert_int_equal(tb_prom_classic_le(0, le, 4), -EINVAL);
	for (int k = 1; k < TB_PROM_CLASSIC_BOUNDS; k++) {
		double r = (double)tb_prom_classic_bound_ns(k) / (double)tb_prom_classic_bound_ns(k - 1);
		assert_true(r > 1 && r - 1 <= tb_prom_classic_bound() + 1e-12);
	}
	/* a value at a bound counts under it; one past it, under the next */
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, TB_HIST_DEFAULT_HIGHEST, 3), 0);
	assert_int_equal(tb_hist_record(&h, 1000), 0);
	assert_int_equal(tb_hist_record(&h, 1001), 0);
	assert_int_equal(tb_hist_record(&h, 200000000000LL), 0); /* 200 s: +Inf only */
	tb_prom_classic c;
	tb_prom_classic_from_hist(&h, &c);
	assert_int_equal(c.cumulative[0], 1);
	assert_int_equal(c.cumulative[1], 2);
	assert_int_equal(c.cumulative[TB_PROM_CLASSIC_BOUNDS - 1], 2);
	assert_int_equal(c.cumulative[TB_PROM_CLASSIC_BOUNDS], 3);
	tb_hist_free(&h);
}

static uint64_t read_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	for (int shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static void protobuf_decodes_to_the_same_buckets(void **state)
{
	(void)state;
	tb_hist h;
	random_hist(&h, 42, 4000);
	const tb_hist *hists[] = {&h};
	tb_prom_labels labels[] = {{"bus1", "lat", "host1"}};
	tb_prom_family f = {.name = "tailbus_latency_seconds", .help = "h", .type = TB_PROM_HISTOGRAM,
			    .n = 1, .labels = labels, .hists = hists};
	tb_prom_buf b = {0};
	const int schema = 5;
	assert_int_equal(tb_prom_pb_family(&b, &f, schema), 0);
	assert_int_equal(tb_prom_pb_family(&b, &f, 9), -EINVAL);
	const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
	uint64_t len = read_varint(&p, end);
	assert_int_equal(len, (uint64_t)(end - p));
	Io__Prometheus__Client__MetricFamily *mf =
		io__prometheus__client__metric_family__unpack(NULL, len, p);
	assert_non_null(mf);
	assert_string_equal(mf->name, "tailbus_latency_seconds");
	assert_int_equal(mf->n_metric, 1);
	assert_int_equal(mf->metric[0]->n_label, 3);
	assert_string_equal(mf->metric[0]->label[2]->value, "host1");
	const Io__Prometheus__Client__Histogram *m = mf->metric[0]->histogram;
	assert_int_equal(m->schema, schema);
	assert_true(m->zero_threshold > 0);
	assert_int_equal(m->sample_count, (uint64_t)h.total);
	assert_int_equal(m->n_bucket, TB_PROM_CLASSIC_BOUNDS);
	tb_prom_native n;
	assert_int_equal(tb_prom_native_from_hist(&h, schema, &n), 0);
	assert_int_equal(m->zero_count, n.zero_count);
	/* spans and deltas back to (index, count), against the map */
	int32_t index = 0;
	int64_t count = 0;
	size_t d = 0;
	uint64_t total = m->zero_count;
	for (size_t s = 0; s < m->n_positive_span; s++) {
		index += m->positive_span[s]->offset;
		for (uint32_t k = 0; k < m->positive_span[s]->length; k++, index++) {
			assert_true(d < m->n_positive_delta);
			count += m->positive_delta[d++];
			assert_true(count > 0);
			assert_int_equal((uint64_t)count, n.counts[index - n.first]);
			total += (uint64_t)count;
		}
	}
	assert_int_equal(d, m->n_positive_delta);
	assert_int_equal(total, (uint64_t)h.total);
	io__prometheus__client__metric_family__free_unpacked(mf, NULL);
	tb_prom_native_free(&n);
	tb_prom_buf_free(&b);
	tb_hist_free(&h);
}

static void text_has_classic_buckets_sum_and_count(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, TB_HIST_DEFAULT_HIGHEST, 3), 0);
	assert_int_equal(tb_hist_record_n(&h, 1500000, 7), 0); /* 1.5 ms */
	const tb_hist *hists[] = {&h};
	tb_prom_labels labels[] = {{"b", "m", "host \"x\"\n"}};
	tb_prom_family f = {.name = "x_seconds", .help = "help", .type = TB_PROM_HISTOGRAM, .n = 1,
			    .labels = labels, .hists = hists};
	tb_prom_buf b = {0};
	assert_int_equal(tb_prom_text_family(&b, &f), 0);
	assert_int_equal(tb_prom_text_family(&b, &f), 0); /* appends */
	char *text = strndup(b.data, b.len);
	assert_non_null(strstr(text, "# TYPE x_seconds histogram\n"));
	assert_non_null(strstr(text, "x_seconds_bucket{bus=\"b\",metric=\"m\",host=\"host \\\"x\\\"\\n\",le=\"0.0016\"} 7\n"));
	assert_non_null(strstr(text, "x_seconds_bucket{bus=\"b\",metric=\"m\",host=\"host \\\"x\\\"\\n\",le=\"0.00125\"} 0\n"));
	assert_non_null(strstr(text, ",le=\"+Inf\"} 7\n"));
	assert_non_null(strstr(text, "x_seconds_count{bus=\"b\",metric=\"m\",host=\"host \\\"x\\\"\\n\"} 7\n"));
	free(text);
	tb_prom_buf_free(&b);
	tb_hist_free(&h);
}

static void accept_header_negotiation(void **state)
{
	(void)state;
	/* what Prometheus 2.42 sends with native histograms on, and off */
	assert_true(tb_prom_accepts_protobuf(
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;"
		"q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"));
	assert_false(tb_prom_accepts_protobuf(
		"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
		"q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
	assert_true(tb_prom_accepts_protobuf(
		"text/plain, APPLICATION/vnd.google.protobuf ; encoding = \"delimited\" ; "
		"proto=\"io.prometheus.client.MetricFamily\""));
	assert_false(tb_prom_accepts_protobuf(NULL));
	assert_false(tb_prom_accepts_protobuf(""));
	assert_false(tb_prom_accepts_protobuf("application/vnd.google.protobuf"));
	assert_false(tb_prom_accepts_protobuf(
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"));
	assert_false(tb_prom_accepts_protobuf(
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0"));
	assert_false(tb_prom_accepts_protobuf(";;;,,,===;q=;proto=;encoding="));
	assert_false(tb_prom_accepts_protobuf("application/vnd.google.protobuf;\"\";\";=\""));
	char long_header[100000];
	memset(long_header, ';', sizeof(long_header) - 1);
	long_header[sizeof(long_header) - 1] = '\0';
	assert_false(tb_prom_accepts_protobuf(long_header));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(native_index_brackets_its_value),
		cmocka_unit_test(native_map_is_additive),
		cmocka_unit_test(native_quantiles_within_the_bound),
		cmocka_unit_test(classic_layout_is_the_documented_one),
		cmocka_unit_test(protobuf_decodes_to_the_same_buckets),
		cmocka_unit_test(text_has_classic_buckets_sum_and_count),
		cmocka_unit_test(accept_header_negotiation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
