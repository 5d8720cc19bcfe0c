/* test_fixtures.c - logs written by other people's tools read back to the
 * reference's numbers (tests/fixtures/hdrhistogram/EXPECTED.md).
 *
 * The expected figures merge every interval of a tag into a fresh 3-digit
 * histogram from 1 up (Java's `new Histogram(3)` + add), so that is the merge
 * used here; tests/interop_java.sh checks the HistogramLogProcessor way.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/log.h"

struct merged {
	tb_hist h;
	int intervals;
	int bad_lines;
	size_t first_bad_line;
	char first_err[TB_LOG_ERR_MAX];
};

static const char *fixture(const char *name)
{
	static char path[4096];
	const char *dir = getenv("TB_FIXTURES");
	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures/hdrhistogram", name);
	return path;
}

/* Merge the intervals of `tag` ("" = untagged) whose offset from StartTime
 * lies in [from, to]. */
static void merge_tag(const char *name, const char *tag, double from, double to, struct merged *m)
{
	char *text;
	size_t len;
	memset(m, 0, sizeof(*m));
	assert_int_equal(tb_read_file(fixture(name), &text, &len), 0);
	assert_int_equal(tb_hist_init(&m->h, 1, 2, 3), 0);
	tb_log_reader r;
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&r, text, len);
	int rc;
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		if (rc < 0) {
			if (!m->bad_lines++) {
				m->first_bad_line = r.err_line;
				snprintf(m->first_err, sizeof(m->first_err), "%s", r.err);
			}
			continue;
		}
		if (strcmp(e.tag, tag) || e.offset_sec < from || e.offset_sec > to)
			continue;
		assert_int_equal(tb_hist_add_growing(&m->h, &e.hist), 0);
		m->intervals++;
	}
	tb_log_entry_free(&e);
	free(text);
}

struct expected {
	const char *file, *tag;
	int intervals;
	int64_t total, p50, p90, p99, p999, p9999, max;
};

static const struct expected table[] = {
	{"jHiccup-2.0.7S.logV2.hlog", "", 62, 48761, 327935, 409855, 1427111935, 1745879039,
	 1796210687, 1796210687},
	{"jHiccup-2.0.7S.logV3.hlog", "", 58, 45750, 327935, 409855, 1443889151, 1754267647,
	 1796210687, 1796210687},
	{"jHiccup-2.0.7S.logV3.hlog", "a7.133a", 1, 754, 327935, 360703, 409855, 442623, 442623,
	 442623},
	{"tagged-Log.logV2.hlog", "", 21, 16145, 344319, 409855, 1385168895, 1536163839,
	 1544552447, 1544552447},
	{"tagged-Log.logV2.hlog", "A", 21, 16145, 344319, 409855, 1385168895, 1536163839,
	 1544552447, 1544552447},
	{"ycsb.logV1.hlog", "", 602, 300056, 373, 443, 130559, 1214463, 1449983, 1546239},
};

static void check_row(const struct expected *x)
{
	struct merged m;
	merge_tag(x->file, x->tag, -1e300, 1e300, &m);
	assert_int_equal(m.bad_lines, 0);
	assert_int_equal(m.intervals, x->intervals);
	assert_int_equal(tb_hist_total(&m.h), x->total);
	assert_int_equal(tb_hist_value_at_percentile(&m.h, 50), x->p50);
	assert_int_equal(tb_hist_value_at_percentile(&m.h, 90), x->p90);
	assert_int_equal(tb_hist_value_at_percentile(&m.h, 99), x->p99);
	assert_int_equal(tb_hist_value_at_percentile(&m.h, 99.9), x->p999);
	assert_int_equal(tb_hist_value_at_percentile(&m.h, 99.99), x->p9999);
	assert_int_equal(tb_hist_max(&m.h), x->max);
	tb_hist_free(&m.h);
}

static void jhiccup_v2_untagged_matches_reference(void **s) { (void)s; check_row(&table[0]); }
static void jhiccup_v3_untagged_matches_reference(void **s) { (void)s; check_row(&table[1]); }
static void jhiccup_v3_tag_a7_matches_reference(void **s) { (void)s; check_row(&table[2]); }
static void tagged_log_untagged_matches_reference(void **s) { (void)s; check_row(&table[3]); }
static void tagged_log_tag_a_matches_reference(void **s) { (void)s; check_row(&table[4]); }
static void ycsb_v1_payloads_match_reference(void **s) { (void)s; check_row(&table[5]); }

static void time_range_5_to_20_s_selects_15_intervals(void **state)
{
	(void)state;
	struct merged m;
	merge_tag("jHiccup-2.0.7S.logV2.hlog", "", 5, 20, &m);
	assert_int_equal(m.intervals, 15);
	assert_int_equal(tb_hist_total(&m.h), 11664);
	assert_int_equal(tb_hist_value_at_percentile(&m.h, 99.9), 1536163839);
	assert_int_equal(tb_hist_max(&m.h), 1544552447);
	tb_hist_free(&m.h);
	merge_tag("jHiccup-2.0.7S.logV2.hlog", "", 40, 60, &m);
	assert_int_equal(m.intervals, 20);
	assert_int_equal(tb_hist_total(&m.h), 15830);
	assert_int_equal(tb_hist_value_at_percentile(&m.h, 99.9), 1779433471);
	assert_int_equal(tb_hist_max(&m.h), 1796210687);
	tb_hist_free(&m.h);
}

static void check_malformed(const char *name, const char *field)
{
	struct merged m;
	merge_tag(name, "a7.133a", -1e300, 1e300, &m);
	assert_int_equal(m.bad_lines, 1);
	assert_int_equal(m.first_bad_line, 1);
	assert_int_equal(m.intervals, 0);
	assert_non_null(strstr(m.first_err, "line 1:"));
	if (!strstr(m.first_err, field))
		fail_msg("error '%s' does not name '%s'", m.first_err, field);
	tb_hist_free(&m.h);
}

static void malformed_fixture_lines_are_rejected_with_their_line(void **state)
{
	(void)state;
	check_malformed("test_tagged_invalid_histogram.txt", "histogram payload");
	check_malformed("test_tagged_invalid_tag_key.txt", "unknown key 'Ta'");
	check_malformed("test_tagged_invalid_timestamp.txt", "start timestamp '7.1a33'");
	check_malformed("test_tagged_missing_histogram.txt", "expected 4 fields");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(jhiccup_v2_untagged_matches_reference),
		cmocka_unit_test(jhiccup_v3_untagged_matches_reference),
		cmocka_unit_test(jhiccup_v3_tag_a7_matches_reference),
		cmocka_unit_test(tagged_log_untagged_matches_reference),
		cmocka_unit_test(tagged_log_tag_a_matches_reference),
		cmocka_unit_test(ycsb_v1_payloads_match_reference),
		cmocka_unit_test(time_range_5_to_20_s_selects_15_intervals),
		cmocka_unit_test(malformed_fixture_lines_are_rejected_with_their_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
