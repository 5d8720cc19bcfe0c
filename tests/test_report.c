/* test_report.c - .hgrm text and CSV byte for byte as the Java reference
 * prints them, and Java's number formatting.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tailbus/log.h"
#include "tailbus/report.h"
#include "tailbus/summary.h"

static const char *golden(const char *name)
{
	static char path[4096];
	const char *dir = getenv("TB_GOLDEN");
	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/golden", name);
	return path;
}

static void make_raw(tb_hist *h)
{
	assert_int_equal(tb_hist_init(h, 1, 3600000000LL, 3), 0);
	tb_hist_record_n(h, 1000, 10000);
	tb_hist_record(h, 100000000);
}

static void assert_report_equals(const tb_hist *h, double ratio, bool csv, const char *file)
{
	char *text = NULL, *want = NULL;
	size_t len = 0, want_len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(tb_report_hgrm(f, h, TB_HGRM_DEFAULT_TICKS, ratio, csv), 0);
	fclose(f);
	assert_int_equal(tb_read_file(golden(file), &want, &want_len), 0);
	if (len != want_len || memcmp(text, want, len) != 0) {
		fprintf(stderr, "--- ours\n%s--- %s\n%s", text, file, want);
		fail_msg("report differs from %s", file);
	}
	free(text);
	free(want);
}

static void raw_fixture_hgrm_matches_java_byte_for_byte(void **state)
{
	(void)state;
	tb_hist h;
	make_raw(&h);
	assert_report_equals(&h, 1.0, false, "raw.hgrm");
	tb_hist_free(&h);
}

static void raw_fixture_csv_matches_java_byte_for_byte(void **state)
{
	(void)state;
	tb_hist h;
	make_raw(&h);
	assert_report_equals(&h, 1.0, true, "raw.csv");
	tb_hist_free(&h);
}

static void unit_ratio_scales_values_like_java(void **state)
{
	(void)state;
	tb_hist h;
	make_raw(&h);
	assert_report_equals(&h, 1000.0, false, "raw_us.hgrm");
	FILE *f = fopen("/dev/null", "w");
	assert_int_equal(tb_report_hgrm(f, &h, 5, 0.0, false), -EINVAL);
	fclose(f);
	tb_hist_free(&h);
}

/* Expected strings printed by Java 17's String.format(Locale.US, ...). */
struct fmt_case {
	double v;
	int width, frac;
	const char *java;
};

static void java_fixed_formatting_rounds_shortest_digits_half_up(void **state)
{
	(void)state;
	const struct fmt_case cases[] = {
		{0.0625, 0, 3, "0.063"},      {0.0625, 0, 1, "0.1"},
		{0.0625, 12, 2, "        0.06"}, {0.0625, 0, 0, "0"},
		{1.0005, 0, 3, "1.001"},      {0.15, 0, 1, "0.2"},
		{2.5, 0, 0, "3"},             {0.9996, 0, 3, "1.000"},
		{-0.0004, 0, 3, "-0.000"},    {123456789.0125, 0, 3, "123456789.013"},
		{1e-7, 0, 12, "0.000000100000"}, {0.35, 0, 1, "0.4"},
		{9.9995, 0, 3, "10.000"},     {9.9995, 0, 12, "9.999500000000"},
		{1e21, 0, 1, "1000000000000000000000.0"}, {5e-324, 0, 3, "0.000"},
		{0.0, 2, 12, "0.000000000000"}, {10240.0, 14, 2, "      10240.00"},
	};
	char buf[128];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tb_fmt_java_fixed(buf, sizeof(buf), cases[i].v, cases[i].width, cases[i].frac);
		if (strcmp(buf, cases[i].java))
			fail_msg("%.17g w%d f%d: got '%s', Java prints '%s'", cases[i].v, cases[i].width,
				 cases[i].frac, buf, cases[i].java);
	}
}

static void sufficiency_needs_100_samples_beyond(void **state)
{
	(void)state;
	assert_true(tb_percentile_sufficient(100000, 99.9));
	assert_false(tb_percentile_sufficient(99999, 99.9));
	assert_true(tb_percentile_sufficient(1000000, 99.99));
	assert_false(tb_percentile_sufficient(999999, 99.99));
	assert_true(tb_percentile_sufficient(200, 50));
	assert_false(tb_percentile_sufficient(199, 50));
	tb_hist h;
	make_raw(&h);
	tb_summary s;
	tb_summarize(&h, &s);
	assert_false(s.insufficient[2]);  /* p99 of 10001: 100 beyond */
	assert_true(s.insufficient[3]);   /* p99.9 */
	assert_int_equal(s.pct[4], 1000); /* p99.99 */
	assert_int_equal(s.max, 100007935);
	tb_hist_free(&h);
	/* no histogram: no samples, nothing sufficient */
	tb_summarize(NULL, &s);
	assert_int_equal(s.total, 0);
	assert_int_equal(s.max, 0);
	for (int i = 0; i < TB_SUMMARY_PERCENTILES; i++) {
		assert_int_equal(s.pct[i], 0);
		assert_true(s.insufficient[i]);
	}
}

/* A plot's insufficient region starts where the limit says, and agrees with
 * tb_percentile_sufficient on either side of it; a curve of n samples ends at
 * 1 - 1/n (1,887 samples: 99.947%, not 100%). */
static void plot_limits_follow_the_sample_count(void **state)
{
	(void)state;
	static const int64_t totals[] = {100, 101, 1887, 100000, 123456789};
	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++) {
		double limit = tb_percentile_sufficient_limit(totals[i]);
		assert_true(tb_percentile_sufficient(totals[i], limit));
		assert_false(tb_percentile_sufficient(totals[i], limit + 1e-6));
	}
	assert_true(tb_percentile_sufficient_limit(99) == 0.0);
	assert_true(fabs(tb_percentile_sufficient_limit(100000) - 99.9) < 1e-9);
	assert_true(fabs(tb_percentile_resolved(1887) - 100.0 * 1886.0 / 1887.0) < 1e-9);
	assert_true(tb_percentile_resolved(1887) < 99.95);
	assert_true(tb_percentile_resolved(1) == 0.0);
	assert_true(tb_percentile_resolved(0) == 0.0);
}

/* The two header lines of Java's .hgrm file, as HistogramLogProcessor -o
 * wrote them for the jHiccup fixture (TZ=UTC): the range and the StartTime
 * with Date.toString()'s date. */
static void hgrm_header_lines_are_java_s(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(tb_report_hgrm_header(f, -INFINITY, INFINITY, 1441812279.474), 0);
	assert_int_equal(tb_report_hgrm_header(f, 5, 20, 1441812279.474), 0);
	assert_int_equal(tb_report_hgrm_header(f, 5.5, 1000, 1764525600.0), 0);
	fclose(f);
	assert_string_equal(text,
		"#[Overall percentile distribution between 0.000 and <Infinite> seconds (relative to StartTime)]\n"
		"#[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]\n"
		"#[Overall percentile distribution between 5.000 and 20.000 seconds (relative to StartTime)]\n"
		"#[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]\n"
		"#[Overall percentile distribution between 5.500 and 1000.000 seconds (relative to StartTime)]\n"
		"#[StartTime: 1764525600.000 (seconds since epoch), Sun Nov 30 18:00:00 UTC 2025]\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(raw_fixture_hgrm_matches_java_byte_for_byte),
		cmocka_unit_test(raw_fixture_csv_matches_java_byte_for_byte),
		cmocka_unit_test(unit_ratio_scales_values_like_java),
		cmocka_unit_test(java_fixed_formatting_rounds_shortest_digits_half_up),
		cmocka_unit_test(sufficiency_needs_100_samples_beyond),
		cmocka_unit_test(plot_limits_follow_the_sample_count),
		cmocka_unit_test(hgrm_header_lines_are_java_s),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
