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
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "tailbus/codec.h"
#include "tailbus/log.h"
#include "tailbus/log_merge.h"

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

static void header_lines_go_after_the_comment(void **state)
{
	(void)state;
	char buf[1024];
	const char *lines = TB_OPEN_LOOP_MARK "\n#[env: hostname=h]\n";
	int n = tb_log_format_header_lines(buf, sizeof(buf), "Written by tailbus replay", lines,
					   T0, T0);
	assert_true(n > 0);
	assert_string_equal(buf,
			    "#[Written by tailbus replay]\n"
			    TB_OPEN_LOOP_MARK "\n"
			    "#[env: hostname=h]\n"
			    "#[Histogram log format version 1.3]\n"
			    "#[StartTime: 1764525600.000 (seconds since epoch), Sun Nov 30 18:00:00 UTC 2025]\n"
			    "#[BaseTime: 1764525600.000 (seconds since epoch)]\n"
			    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
	char plain[1024];
	assert_int_equal(tb_log_format_header_lines(buf, sizeof(buf), "c", "", T0, T0),
			 tb_log_format_header(plain, sizeof(plain), "c", T0, T0));
	assert_string_equal(buf, plain);
	assert_int_equal(tb_log_format_header_lines(buf, sizeof(buf), NULL, "not a comment\n", T0,
						    T0), -EINVAL);
	assert_int_equal(tb_log_format_header_lines(buf, sizeof(buf), NULL, "#[no newline]", T0, T0),
			 -EINVAL);
	assert_int_equal(tb_log_format_header_lines(buf, 100, NULL, lines, T0, T0), -ENOSPC);
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
	/* the same line from the payload as read, with the max field as written */
	size_t cap = tb_log_line_base64_bound(strlen(golden_b64));
	char *again = malloc(cap);
	n = tb_log_format_line_base64(again, cap, "fills", 12.5, 1.0, 100.008, golden_b64,
				      strlen(golden_b64));
	snprintf(expect, sizeof(expect), "Tag=fills,12.500,1.000,100.008,%s\n", golden_b64);
	assert_int_equal(n, (int)strlen(expect));
	assert_string_equal(again, expect);
	n = tb_log_format_line_base64(again, cap, "", 0.0, 2.0, 100.008, golden_b64, 10);
	assert_string_equal(again, "0.000,2.000,100.008,HISTFAAAAC\n");
	assert_int_equal(tb_log_format_line_base64(again, cap, "a b", 0, 1, 1, "x", 1), -EINVAL);
	assert_int_equal(tb_log_format_line_base64(again, cap, NULL, 0, 1, 1, "x\ny", 3), -EINVAL);
	assert_int_equal(tb_log_format_line_base64(again, 20, NULL, 0, 1, 1, golden_b64,
						   strlen(golden_b64)), -ENOSPC);
	free(again);
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


/* Java's reader takes "line \r" as "line": trailing spaces, tabs and the CR
 * of CRLF line ends are not part of a field, on data and header lines. */
static void trailing_blanks_and_crlf_are_not_part_of_a_line(void **state)
{
	(void)state;
	char text[1024];
	struct readout o;
	snprintf(text, sizeof(text),
		 "#[StartTime: 1441812279.474 (seconds since epoch)]  \r\n"
		 "#[BaseTime: 0.000 (seconds since epoch)] \t\r\n"
		 "Tag=a,1441812280.000,1.000,100.008,%s  \r\n"
		 "1441812281.000,1.000,100.008,%s\t\n"
		 "1441812282.000,1.000,100.008,%s \r",
		 golden_b64, golden_b64, golden_b64);
	read_all(text, &o);
	assert_int_equal(o.bad, 0);
	assert_int_equal(o.good, 3);
	assert_string_equal(o.tags[0], "a");
	assert_int_equal(o.totals[2], 10001);
	assert_float_equal(o.offsets[1], 1.526, 1e-6);
}

/* A DoubleHistogram payload as Java's HistogramLogWriter writes it (a
 * DoubleHistogram(3), tests/java/WriteDoubleLog.java) is refused by name. */
static void double_histogram_payloads_are_refused_by_name(void **state)
{
	(void)state;
	static const char line[] = "0.000,1.000,0.000,DHISTwAAAAMAAAAAAAAAAhyEkxQAAAAzeNqTaZkszMDAcJIBApih"
				   "NCOEkv9v7wBh/edn8mXyJxGqAqE6iZhUHYJQKEwkDQClVxZI\n";
	struct readout o;
	read_all(line, &o);
	assert_int_equal(o.good, 0);
	assert_int_equal(o.bad, 1);
	assert_string_equal(o.errs[0],
			    "line 1: histogram payload: DoubleHistogram payloads are not supported");
}

/* gzip data of text, `members` members one after the other. */
static size_t gzip_text(const char *text, int members, uint8_t *out, size_t cap)
{
	size_t o = 0, n = strlen(text), part = n / (size_t)members;
	for (int m = 0; m < members; m++) {
		size_t from = (size_t)m * part, len = m == members - 1 ? n - from : part;
		z_stream z;
		memset(&z, 0, sizeof(z));
		assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
		z.next_in = (Bytef *)(uintptr_t)(text + from);
		z.avail_in = (uInt)len;
		z.next_out = out + o;
		z.avail_out = (uInt)(cap - o);
		assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
		o = cap - z.avail_out;
		deflateEnd(&z);
	}
	return o;
}

static void gzip_text_is_inflated_whole_members_and_bounds_checked(void **state)
{
	(void)state;
	char text[4096];
	uint8_t gz[8192];
	int n = 0;
	for (int i = 0; i < 60; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "#[line %d of some log text]\n", i);
	for (int members = 1; members <= 3; members++) {
		size_t len = gzip_text(text, members, gz, sizeof(gz));
		assert_true(tb_log_is_gzip(gz, len));
		char *out;
		size_t out_len;
		assert_int_equal(tb_log_gunzip(gz, len, SIZE_MAX, &out, &out_len), 0);
		assert_int_equal(out_len, strlen(text));
		assert_string_equal(out, text);
		free(out);
		/* cut short anywhere: refused, never a partial text */
		assert_int_equal(tb_log_gunzip(gz, len - 5, SIZE_MAX, &out, &out_len), -EBADMSG);
		/* more text than allowed */
		assert_int_equal(tb_log_gunzip(gz, len, strlen(text) / 2, &out, &out_len), -EFBIG);
	}
	size_t len = gzip_text(text, 1, gz, sizeof(gz));
	gz[len / 2] ^= 0x55;
	char *out;
	size_t out_len;
	assert_int_equal(tb_log_gunzip(gz, len, SIZE_MAX, &out, &out_len), -EBADMSG);
	assert_false(tb_log_is_gzip(text, strlen(text)));
	assert_int_equal(tb_log_gunzip(text, strlen(text), SIZE_MAX, &out, &out_len), -EINVAL);
}

static void load_inflates_by_magic_whatever_the_name(void **state)
{
	(void)state;
	char path[] = "/tmp/tailbus-test-log-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char text[] = "#[a log]\n0.000,1.000,0.000,x\n";
	uint8_t gz[1024];
	size_t len = gzip_text(text, 1, gz, sizeof(gz));
	assert_int_equal(write(fd, gz, len), (ssize_t)len);
	close(fd);
	char *out;
	size_t out_len;
	assert_int_equal(tb_log_load(path, SIZE_MAX, &out, &out_len), 0);
	assert_string_equal(out, text);
	free(out);
	unlink(path);
	assert_int_equal(tb_log_load("/nonexistent/x.hlog.gz", SIZE_MAX, &out, &out_len), -ENOENT);
	assert_int_equal(tb_log_load("/", SIZE_MAX, &out, &out_len), -EISDIR);
	assert_string_equal(tb_log_load_strerror(-EBADMSG), "not valid gzip data (corrupt or cut short)");
}

/* Only a tag ending in the closed-loop suffix is closed-loop. */
static void closed_loop_tags_end_in_the_suffix(void **state)
{
	(void)state;
	assert_true(tb_log_tag_is_closed_loop(TB_CLOSED_LOOP_SUFFIX));
	assert_true(tb_log_tag_is_closed_loop("rpc.closed"));
	assert_true(tb_log_tag_is_closed_loop("rpc.r1000.closed"));
	assert_false(tb_log_tag_is_closed_loop(""));
	assert_false(tb_log_tag_is_closed_loop("closed"));
	assert_false(tb_log_tag_is_closed_loop("rpc.closed.warmup"));
	assert_false(tb_log_tag_is_closed_loop("rpc.Closed"));
	assert_false(tb_log_tag_is_closed_loop("rpc"));
}

/* The whole-log mark covers every tag; a per-tag mark only its tag. */
static void open_loop_marks_cover_the_log_or_one_tag(void **state)
{
	(void)state;
	char buf[TB_LOG_TAG_MAX + 64];
	assert_int_equal(tb_log_format_open_loop_tag(buf, sizeof(buf), "svc"),
			 (int)strlen("#[tailbus: open-loop tag=svc]\n"));
	assert_string_equal(buf, "#[tailbus: open-loop tag=svc]\n");
	assert_int_equal(tb_log_format_open_loop_tag(buf, sizeof(buf), ""),
			 (int)strlen(TB_OPEN_LOOP_UNTAGGED) + 1);
	assert_int_equal(tb_log_format_open_loop_tag(buf, sizeof(buf), "a b"), -EINVAL);
	assert_int_equal(tb_log_format_open_loop_tag(buf, 10, "svc"), -ENOSPC);

	static const char whole[] = "#[x]\n" TB_OPEN_LOOP_MARK "\n1,1,1,x\n";
	assert_true(tb_log_open_loop(whole, strlen(whole), ""));
	assert_true(tb_log_open_loop(whole, strlen(whole), "java"));
	static const char per_tag[] = "#[x]\n#[tailbus: open-loop tag=svc]\r\n"
				      "#[tailbus: open-loop untagged]\n1,1,1,x\n";
	assert_true(tb_log_open_loop(per_tag, strlen(per_tag), "svc"));
	assert_true(tb_log_open_loop(per_tag, strlen(per_tag), ""));
	assert_false(tb_log_open_loop(per_tag, strlen(per_tag), "sv"));
	assert_false(tb_log_open_loop(per_tag, strlen(per_tag), "svc2"));
	assert_false(tb_log_open_loop(per_tag, strlen(per_tag), "java"));
	/* only comment lines count */
	static const char data[] = "Tag=#[tailbus: open-loop,1,1,1,x\n";
	assert_false(tb_log_open_loop(data, strlen(data), ""));
	/* the marks read at once say the same as each question */
	static const char *const texts[] = {whole, per_tag, data,
		"#[tailbus: open-loop tag=]\n#[tailbus: open-loop tag=b]c]  \n#[tailbus: open-loop tag=d\n",
		"#[tailbus: open-loop untagged]x\n", "#[tailbus: open-loop tag=z]\n#[tailbus: open-loop tag=a]\n"};
	static const char *const tags[] = {"", "svc", "sv", "svc2", "java", "b]c", "b", "d", "a", "z", "zz"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		tb_log_open_loop_marks m;
		assert_int_equal(tb_log_open_loop_scan(texts[i], strlen(texts[i]), &m), 0);
		for (size_t k = 0; k < sizeof(tags) / sizeof(tags[0]); k++)
			assert_int_equal(tb_log_open_loop_marked(&m, tags[k]),
					 tb_log_open_loop(texts[i], strlen(texts[i]), tags[k]));
		tb_log_open_loop_marks_free(&m);
	}
	assert_true(tb_log_open_loop(texts[3], strlen(texts[3]), "b]c"));
	assert_false(tb_log_open_loop(texts[3], strlen(texts[3]), "d"));
	assert_true(tb_log_open_loop(texts[4], strlen(texts[4]), "java"));
	/* a reader that knows only the whole-log mark's prefix sees every form */
	assert_int_equal(strncmp(TB_OPEN_LOOP_MARK, TB_OPEN_LOOP_PREFIX, strlen(TB_OPEN_LOOP_PREFIX)), 0);
	assert_int_equal(strncmp(TB_OPEN_LOOP_UNTAGGED, TB_OPEN_LOOP_PREFIX, strlen(TB_OPEN_LOOP_PREFIX)), 0);
}

static void source_lines_fit_a_c_reader_and_stay_one_line(void **state)
{
	(void)state;
	char buf[128];
	assert_true(tb_log_format_source(buf, sizeof(buf), "A", "runs/a.hlog") > 0);
	assert_string_equal(buf, "#[tailbus: source: tag=A file=runs/a.hlog]\n");
	assert_true(tb_log_format_source(buf, sizeof(buf), "", "-") > 0);
	assert_string_equal(buf, "#[tailbus: source: untagged file=-]\n");
	assert_true(tb_log_format_source(buf, sizeof(buf), "A", "odd]\nname") > 0);
	assert_string_equal(buf, "#[tailbus: source: tag=A file=odd??name]\n");
	char longpath[400];
	memset(longpath, 'p', sizeof(longpath) - 6);
	strcpy(longpath + sizeof(longpath) - 6, "/last");
	int n = tb_log_format_source(buf, sizeof(buf), "A", longpath);
	assert_int_equal(n, (int)sizeof(buf) - 1);
	assert_int_equal((int)strlen(buf), n);
	assert_non_null(strstr(buf, "file=...ppp"));
	assert_non_null(strstr(buf, "/last]\n"));
	assert_int_equal(tb_log_format_source(buf, 20, "A", "x"), -ENOSPC);
}

static void env_lines_read_back_by_key(void **state)
{
	(void)state;
	static const char a[] = "#[comment]\n#[env hostname=h1]\n#[env kernel=6.1 x]  \r\n"
				"#[env odd]\n#[env cpus=4]\n1,1,1,x\n#[env late=1]\n";
	size_t pos = 0;
	tb_log_env_field f;
	assert_int_equal(tb_log_env_next(a, strlen(a), &pos, &f), 1);
	assert_int_equal((int)f.key_len, 8);
	assert_memory_equal(f.key, "hostname", 8);
	assert_int_equal((int)f.value_len, 2);
	assert_memory_equal(f.value, "h1", 2);
	assert_int_equal(tb_log_env_next(a, strlen(a), &pos, &f), 1);
	assert_int_equal((int)f.value_len, 5); /* "6.1 x": trailing blanks and CR left out */
	assert_int_equal(tb_log_env_next(a, strlen(a), &pos, &f), 1);
	assert_memory_equal(f.key, "cpus", 4);
	assert_int_equal(tb_log_env_next(a, strlen(a), &pos, &f), 0); /* header lines only */

	static const char *const keys[] = {"cpus", "hostname"};
	char out[64];
	assert_int_equal(tb_log_env_summary(a, strlen(a), keys, 2, out, sizeof(out)),
			 strlen("hostname=h1 cpus=4"));
	assert_string_equal(out, "hostname=h1 cpus=4");
	assert_int_equal(tb_log_env_summary(a, strlen(a), keys, 2, out, 14), strlen("hostname=h1"));
	assert_string_equal(out, "hostname=h1");
	assert_int_equal(tb_log_env_summary("1,1,1,x\n", 8, keys, 2, out, sizeof(out)), 0);
	assert_string_equal(out, "");

	static const char b[] = "#[env hostname=h1]\n#[env kernel=6.1 x]\n#[env cpus=4]\n";
	static const char c[] = "#[env hostname=h1]\n#[env kernel=6.1 x]\n";
	assert_true(tb_log_env_same(a, strlen(a), b, strlen(b)));
	assert_false(tb_log_env_same(a, strlen(a), c, strlen(c)));
	assert_false(tb_log_env_same(c, strlen(c), a, strlen(a)));
	assert_true(tb_log_env_same("", 0, "1,1,1,x\n", 8));
}

/* A payload of h, base64 (for tb_log_merge_add_payload). */
static size_t payload_of(const tb_hist *h, char *out, size_t cap)
{
	size_t scratch_cap = tb_v2_inner_bound(h) + tb_v2_frame_bound(h), len = 0;
	uint8_t *scratch = malloc(scratch_cap);
	assert_non_null(scratch);
	assert_int_equal(tb_v2_encode_base64(h, TB_V2_DEFAULT_LEVEL, out, cap, &len, scratch,
					     scratch_cap), 0);
	free(scratch);
	return len;
}

static void merge_sizes_tags_to_their_values_and_keeps_java_layout(void **state)
{
	(void)state;
	tb_hist a, b, full, java;
	assert_int_equal(tb_hist_init(&a, 1, TB_HIST_DEFAULT_HIGHEST, 3), 0);
	assert_int_equal(tb_hist_init(&b, 1, TB_HIST_DEFAULT_HIGHEST, 3), 0);
	assert_int_equal(tb_hist_init(&full, 1, TB_HIST_DEFAULT_HIGHEST, 3), 0);
	assert_int_equal(tb_hist_record_n(&a, 1000, 3), 0);
	assert_int_equal(tb_hist_record_n(&b, 123456, 2), 0);
	assert_int_equal(tb_hist_add(&full, &a), 0);
	assert_int_equal(tb_hist_add(&full, &b), 0);

	tb_log_merge m;
	tb_log_merge_init(&m, TB_LOG_MERGE_FIRST_LAYOUT);
	assert_int_equal(tb_log_merge_find(&m, "x"), -1);
	long t = tb_log_merge_tag_of(&m, "x", &a);
	assert_int_equal(t, 0);
	assert_int_equal(tb_log_merge_tag_of(&m, "x", &b), 0);
	assert_int_equal(tb_log_merge_add(&m, 0, &a, 100.0, 1.0), 0);
	char text[4096];
	size_t n = payload_of(&b, text, sizeof(text));
	const char *why = NULL;
	assert_int_equal(tb_log_merge_add_payload(&m, 0, text, n, 101.0, 1.0, &why), 0);
	const tb_log_merge_tag *x = &m.tags[0];
	assert_int_equal(x->intervals, 2);
	assert_true(x->from == 100.0 && x->to == 102.0);
	/* counts up to the largest value, not the declared hour */
	assert_true(x->hist.counts_len < full.counts_len / 2);
	assert_int_equal(x->layout_highest, TB_HIST_DEFAULT_HIGHEST);
	assert_int_equal(tb_hist_total(&x->hist), 5);
	assert_int_equal(tb_hist_max(&x->hist), tb_hist_max(&full));
	assert_int_equal(tb_hist_value_at_percentile(&x->hist, 50.0),
			 tb_hist_value_at_percentile(&full, 50.0));
	assert_int_equal(tb_log_merge_java_layout(&m, 0, &java), 0);
	assert_int_equal(java.bucket_count, full.bucket_count);
	assert_int_equal(java.counts_len, full.counts_len);
	assert_memory_equal(java.counts, full.counts, (size_t)full.counts_len * sizeof(int64_t));
	tb_hist_free(&java);

	/* another L: the payload is refused whole, to be decoded and added */
	tb_hist other;
	assert_int_equal(tb_hist_init(&other, 1000, TB_HIST_DEFAULT_HIGHEST, 3), 0);
	assert_int_equal(tb_hist_record(&other, 5000), 0);
	n = payload_of(&other, text, sizeof(text));
	assert_int_equal(tb_log_merge_add_payload(&m, 0, text, n, 102.0, 1.0, &why), -ERANGE);
	assert_int_equal(m.tags[0].intervals, 2);
	assert_int_equal(tb_log_merge_add(&m, 0, &other, 102.0, 1.0), 0);
	assert_int_equal(tb_hist_total(&m.tags[0].hist), 6);

	/* many tags: each found by name, in the order first met */
	char name[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		assert_int_equal(tb_log_merge_tag_of(&m, name, &a), i + 1);
	}
	for (int i = 999; i >= 0; i--) {
		snprintf(name, sizeof(name), "t%d", i);
		assert_int_equal(tb_log_merge_find(&m, name), i + 1);
	}
	assert_int_equal(tb_log_merge_find(&m, "t1000"), -1);
	assert_int_equal(tb_log_merge_find(&m, ""), -1);
	tb_log_merge_free(&m);

	/* --digits: a fresh histogram from 1 up, grown to what was merged */
	tb_log_merge_init(&m, 2);
	assert_int_equal(tb_log_merge_tag_of(&m, "", &other), 0);
	assert_int_equal(tb_log_merge_add(&m, 0, &other, 0.0, 1.0), 0);
	assert_int_equal(m.tags[0].hist.sig_digits, 2);
	assert_int_equal(m.tags[0].hist.lowest, 1);
	assert_int_equal(m.tags[0].layout_highest, m.tags[0].hist.highest);
	tb_log_merge_free(&m);
	tb_hist_free(&a);
	tb_hist_free(&b);
	tb_hist_free(&full);
	tb_hist_free(&other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(header_has_every_line_in_order),
		cmocka_unit_test(header_lines_go_after_the_comment),
		cmocka_unit_test(tags_with_separators_are_refused),
		cmocka_unit_test(line_has_length_in_field_two_and_max_in_ms),
		cmocka_unit_test(written_log_reads_back_with_tags_and_times),
		cmocka_unit_test(timestamps_without_base_time_follow_java),
		cmocka_unit_test(bad_lines_are_skipped_named_and_the_rest_is_read),
		cmocka_unit_test(read_file_reports_missing_files),
		cmocka_unit_test(number_fields_read_as_strtod_reads_them),
		cmocka_unit_test(trailing_blanks_and_crlf_are_not_part_of_a_line),
		cmocka_unit_test(double_histogram_payloads_are_refused_by_name),
		cmocka_unit_test(gzip_text_is_inflated_whole_members_and_bounds_checked),
		cmocka_unit_test(load_inflates_by_magic_whatever_the_name),
		cmocka_unit_test(closed_loop_tags_end_in_the_suffix),
		cmocka_unit_test(open_loop_marks_cover_the_log_or_one_tag),
		cmocka_unit_test(source_lines_fit_a_c_reader_and_stay_one_line),
		cmocka_unit_test(env_lines_read_back_by_key),
		cmocka_unit_test(merge_sizes_tags_to_their_values_and_keeps_java_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
