/* test_log.c - interval log writing and reading (format 1.3).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tailbus/codec.h"
#include "tailbus/log.h"

#define HOUR_NS 3600000000000LL
#define T0 1764525600.0 /* Sun Nov 30 18:00:00 UTC 2025 */

static const char golden_b64[] =
	"HISTFAAAACl4nJNpmSzMwMDAyQABzFCaEURcm7yEwf4DROA8/4I5jNM7mJgAjtkHzg==";

static void header_has_every_line_in_order(void **state)
{
	(void)state;
	char buf[1024];
	int n = tb_log_format_header(buf, sizeof(buf), "Logged with tailbus 0.1", T0, T0);
	assert_true(n > 0);
	assert_string_equal(buf,
			    "#[Logged with tailbus 0.1]\n"
			    "#[Histogram log format version 1.3]\n"
			    "#[StartTime: 1764525600.000 (seconds since epoch), Sun Nov 30 18:00:00 UTC 2025]\n"
			    "#[BaseTime: 1764525600.000 (seconds since epoch)]\n"
			    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
	/* every header line is shorter than HdrHistogram_c's 128-byte limit */
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		assert_true(strlen(line) < 128);
	assert_int_equal(tb_log_format_header(buf, sizeof(buf), "bad ] comment", T0, T0), -EINVAL);
	assert_int_equal(tb_log_format_header(buf, 40, NULL, T0, T0), -ENOSPC);
}

static void tags_with_separators_are_refused(void **state)
{
	(void)state;
	assert_true(tb_log_tag_valid("engine.fill-latency_2"));
	assert_false(tb_log_tag_valid(""));
	assert_false(tb_log_tag_valid(NULL));
	assert_false(tb_log_tag_valid("a,b"));
	assert_false(tb_log_tag_valid("a b"));
	assert_false(tb_log_tag_valid("a\nb"));
	assert_false(tb_log_tag_valid("a\rb"));
}

static void line_has_length_in_field_two_and_max_in_ms(void **state)
{
	(void)state;
	tb_hist h;
	tb_hist_init(&h, 1, 3600000000LL, 3);
	tb_hist_record_n(&h, 1000, 10000);
	tb_hist_record(&h, 100000000);
	size_t scap = tb_v2_inner_bound(&h) + tb_v2_frame_bound(&h);
	uint8_t *scratch = malloc(scap);
	char *line = malloc(tb_log_line_bound(&h));
	int n = tb_log_format_line(line, tb_log_line_bound(&h), "fills", 12.5, 1.0, &h, 6, scratch,
				   scap);
	assert_true(n > 0);
	char expect[256];
	snprintf(expect, sizeof(expect), "Tag=fills,12.500,1.000,100.008,%s\n", golden_b64);
	assert_string_equal(line, expect);
	n = tb_log_format_line(line, tb_log_line_bound(&h), NULL, 0.0, 2.0, &h, 6, scratch, scap);
	snprintf(expect, sizeof(expect), "0.000,2.000,100.008,%s\n", golden_b64);
	assert_string_equal(line, expect);
	assert_int_equal(tb_log_format_line(line, tb_log_line_bound(&h), "a,b", 0, 1, &h, 6, scratch,
					    scap), -EINVAL);
	free(scratch);
	free(line);
	tb_hist_free(&h);
}

/* Read every entry of text; returns the number of good entries and fills
 * tags/offsets for the first few. */
struct readout {
	int good, bad;
	size_t bad_lines[8];
	char errs[8][TB_LOG_ERR_MAX];
	char tags[8][TB_LOG_TAG_MAX];
	double offsets[8], abs_starts[8], lengths[8];
	int64_t totals[8];
};

static void read_all(const char *text, struct readout *o)
{
	memset(o, 0, sizeof(*o));
	tb_log_reader r;
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&r, text, strlen(text));
	int rc;
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		if (rc < 0) {
			if (o->bad < 8) {
				o->bad_lines[o->bad] = r.err_line;
				snprintf(o->errs[o->bad], TB_LOG_ERR_MAX, "%s", r.err);
			}
			o->bad++;
			continue;
		}
		if (o->good < 8) {
			snprintf(o->tags[o->good], TB_LOG_TAG_MAX, "%s", e.tag);
			o->offsets[o->good] = e.offset_sec;
			o->abs_starts[o->good] = e.start_abs_sec;
			o->lengths[o->good] = e.length_sec;
			o->totals[o->good] = tb_hist_total(&e.hist);
		}
		o->good++;
	}
	tb_log_entry_free(&e);
}

static void written_log_reads_back_with_tags_and_times(void **state)
{
	(void)state;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	tb_log_writer w;
	assert_int_equal(tb_log_writer_open(&w, f, "test", T0, T0, 9), 0);
	tb_hist h;
	tb_hist_init(&h, 1, HOUR_NS, 3);
	for (int i = 0; i < 3; i++) {
		tb_hist_reset(&h);
		tb_hist_record_n(&h, 1000 * (i + 1), 10 + i);
		assert_int_equal(tb_log_writer_append(&w, i == 1 ? "b" : "a", T0 + i, 1.0, &h), 0);
	}
	assert_int_equal(tb_log_writer_append(&w, NULL, T0 + 3, 0.5, &h), 0);
	tb_log_writer_close(&w);
	fclose(f);
	struct readout o;
	read_all(text, &o);
	assert_int_equal(o.good, 4);
	assert_int_equal(o.bad, 0);
	assert_string_equal(o.tags[0], "a");
	assert_string_equal(o.tags[1], "b");
	assert_string_equal(o.tags[3], "");
	assert_float_equal(o.offsets[2], 2.0, 1e-9);
	assert_float_equal(o.abs_starts[1], T0 + 1, 1e-6);
	assert_float_equal(o.lengths[3], 0.5, 1e-9);
	assert_int_equal(o.totals[2], 12);
	free(text);
	tb_hist_free(&h);
}

static void timestamps_without_base_time_follow_java(void **state)
{
	(void)state;
	char text[1024];
	struct readout o;
	/* relative: first timestamp more than a year before StartTime */
	snprintf(text, sizeof(text), "#[StartTime: 1441812279.474 (seconds since epoch)]\n0.127,1.0,1.0,%s\n",
		 golden_b64);
	read_all(text, &o);
	assert_int_equal(o.good, 1);
	assert_float_equal(o.abs_starts[0], 1441812279.601, 1e-6);
	assert_float_equal(o.offsets[0], 0.127, 1e-6);
	/* absolute: timestamps near StartTime */
	snprintf(text, sizeof(text), "#[StartTime: 1438613579.295 (seconds since epoch)]\n1438613579.950,1.0,1.0,%s\n",
		 golden_b64);
	read_all(text, &o);
	assert_float_equal(o.abs_starts[0], 1438613579.950, 1e-6);
	assert_float_equal(o.offsets[0], 0.655, 1e-6);
	/* no StartTime: the first timestamp is the start */
	snprintf(text, sizeof(text), "100.0,1.0,1.0,%s\n105.0,1.0,1.0,%s\n", golden_b64, golden_b64);
	read_all(text, &o);
	assert_float_equal(o.offsets[1], 5.0, 1e-9);
	/* explicit BaseTime wins */
	snprintf(text, sizeof(text), "#[StartTime: 1000.0 (seconds since epoch)]\n#[BaseTime: 990.0 (seconds since epoch)]\n20.0,1.0,1.0,%s\n",
		 golden_b64);
	read_all(text, &o);
	assert_float_equal(o.abs_starts[0], 1010.0, 1e-9);
	assert_float_equal(o.offsets[0], 10.0, 1e-9);
}

static void bad_lines_are_skipped_named_and_the_rest_is_read(void **state)
{
	(void)state;
	char text[4096];
	snprintf(text, sizeof(text),
		 "#[StartTime: 1000.0 (seconds since epoch)]\n"                /* 1 */
		 "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
		 "1000.0,1.0,1.0,%s\n"                                          /* 3 */
		 "1001.0,1.0,1.0,HISTFAAAbroken\n"                              /* 4 */
		 "1002.0,one,1.0,%s\r\n"                                        /* 5 */
		 "Tag=,1003.0,1.0,1.0,%s\n"                                     /* 6 */
		 "Tag=x,1004.0,1.0,1.0,%s,extra\n"                              /* 7 */
		 "\n"                                                           /* 8 */
		 "1005.0,-1.0,1.0,%s\n"                                         /* 9 */
		 "1006.0,nan,1.0,%s\n"                                          /* 10 */
		 "Tag=ok,1007.0,1.0,1.0,%s\r\n"                                 /* 11 */
		 "1008.0,1.0,1.0,%s",                                           /* 12, no newline */
		 golden_b64, golden_b64, golden_b64, golden_b64, golden_b64, golden_b64, golden_b64,
		 golden_b64);
	struct readout o;
	read_all(text, &o);
	assert_int_equal(o.good, 3);
	assert_int_equal(o.bad, 6);
	const size_t lines[] = {4, 5, 6, 7, 9, 10};
	const char *fields[] = {"histogram payload", "interval length 'one'", "tag", "fields",
				"negative", "interval length 'nan'"};
	for (int i = 0; i < 6; i++) {
		assert_int_equal(o.bad_lines[i], lines[i]);
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "line %zu: ", lines[i]);
		assert_memory_equal(o.errs[i], prefix, strlen(prefix));
		if (!strstr(o.errs[i], fields[i]))
			fail_msg("'%s' does not name '%s'", o.errs[i], fields[i]);
	}
	assert_string_equal(o.tags[1], "ok");
	assert_int_equal(o.totals[2], 10001);
}

static void read_file_reports_missing_files(void **state)
{
	(void)state;
	char *text;
	size_t len;
	assert_int_equal(tb_read_file("/nonexistent/tailbus.hlog", &text, &len), -ENOENT);
	assert_int_equal(tb_read_file("/", &text, &len), -EISDIR);
}

/* Number fields are read by a fast path for plain decimals and strtod for
 * the rest: both must give exactly strtod's double, on every kind of field
 * the log's writers produce (%.3f times, long integers, odd forms). */
static void number_fields_read_as_strtod_reads_them(void **state)
{
	(void)state;
	uint64_t seed = 99;
	char text[512];
	for (int i = 0; i < 3000; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		char start[64], length[64], max[64];
		switch (i % 6) {
		case 0: /* a start time as writers print it */
			snprintf(start, sizeof(start), "%.3f", (double)(seed >> 20) / 1000.0);
			break;
		case 1: /* fifteen digits: the fast path's limit */
			snprintf(start, sizeof(start), "%" PRIu64 ".%03u", (uint64_t)((seed >> 14) % 1000000000000ULL),
				 (unsigned)(seed % 1000));
			break;
		case 2: /* more digits than an exact double holds: strtod's */
			snprintf(start, sizeof(start), "%" PRIu64 ".%06u", seed >> 1, (unsigned)(seed % 1000000));
			break;
		case 3:
			snprintf(start, sizeof(start), "%.17g", (double)(seed >> 11) * 0x1p-40);
			break;
		case 4:
			snprintf(start, sizeof(start), "%u.", (unsigned)(seed % 100000));
			break;
		default:
			snprintf(start, sizeof(start), ".%u", (unsigned)(seed % 100000));
			break;
		}
		snprintf(length, sizeof(length), "%.3f", (double)(seed % 100000) / 1000.0 + 0.001);
		snprintf(max, sizeof(max), "%.3f", (double)(seed % 977));
		snprintf(text, sizeof(text), "%s,%s,%s,%s\n", start, length, max, golden_b64);
		tb_log_reader r;
		tb_log_entry e;
		memset(&e, 0, sizeof(e));
		tb_log_reader_init(&r, text, strlen(text));
		if (tb_log_reader_next(&r, &e) != 1)
			fail_msg("line '%s' not read: %s", text, r.err);
		if (e.start_field != strtod(start, NULL) || e.length_sec != strtod(length, NULL) ||
		    e.max_field != strtod(max, NULL))
			fail_msg("'%s' read as %.17g, %.17g, %.17g", text, e.start_field, e.length_sec,
				 e.max_field);
		tb_hist_free(&e.hist);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(header_has_every_line_in_order),
		cmocka_unit_test(tags_with_separators_are_refused),
		cmocka_unit_test(line_has_length_in_field_two_and_max_in_ms),
		cmocka_unit_test(written_log_reads_back_with_tags_and_times),
		cmocka_unit_test(timestamps_without_base_time_follow_java),
		cmocka_unit_test(bad_lines_are_skipped_named_and_the_rest_is_read),
		cmocka_unit_test(read_file_reports_missing_files),
		cmocka_unit_test(number_fields_read_as_strtod_reads_them),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
