/* test_log_follow.c - following an interval log as it grows (tailbus/log_follow.h).
 *
 * A log is written into a file a few bytes at a time, with a poll after each
 * write: the follower must have taken exactly the whole interval lines
 * written so far, never a torn one. Then the file is truncated and written
 * again, and replaced by rename: each time only the new file's intervals
 * remain. Each interval's histogram holds a known count, so a line taken
 * twice, lost or cut would show.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tailbus/hist.h"
#include "tailbus/log.h"
#include "tailbus/log_follow.h"

#define HOUR_NS 3600000000000LL
#define T0 1764525600.0
#define KEEP 4

struct fixture {
	char dir[64];
	char path[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_log_follow.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/x.hlog", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char tmp[128];
	unlink(f->path);
	snprintf(tmp, sizeof(tmp), "%s.new", f->path);
	unlink(tmp);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A log whose interval i (0-based) is tagged tags[i % ntags], starts at
 * T0 + i and holds first + i samples. Returns its malloc'd text. */
static char *log_text(const char *const *tags, int ntags, int lines, int first, size_t *len)
{
	char *text = NULL;
	FILE *mem = open_memstream(&text, len);
	assert_non_null(mem);
	tb_log_writer w;
	assert_int_equal(tb_log_writer_open(&w, mem, "test", T0, T0, 6), 0);
	for (int i = 0; i < lines; i++) {
		tb_hist h;
		assert_int_equal(tb_hist_init(&h, 1, HOUR_NS, 3), 0);
		assert_int_equal(tb_hist_record_n(&h, 1000 * (i + 1), first + i), 0);
		assert_int_equal(tb_log_writer_append(&w, tags[i % ntags], T0 + i, 1.0, &h), 0);
		tb_hist_free(&h);
	}
	tb_log_writer_close(&w);
	fclose(mem);
	return text;
}

static void append(const char *path, const char *p, size_t n, const char *mode)
{
	FILE *out = fopen(path, mode);
	assert_non_null(out);
	assert_int_equal(fwrite(p, 1, n, out), n);
	fclose(out);
}

/* Data lines (not '#', not the legend, not blank) among the whole lines of text[0..n). */
static size_t whole_data_lines(const char *text, size_t n)
{
	size_t lines = 0;
	for (const char *p = text; p < text + n;) {
		const char *nl = memchr(p, '\n', (size_t)(text + n - p));
		if (!nl)
			break;
		if (nl > p && *p != '#' && *p != '"')
			lines++;
		p = nl + 1;
	}
	return lines;
}

static size_t intervals(const tb_log_follow *lf)
{
	tb_log_follow_stats st;
	tb_log_follow_stats_get(lf, &st);
	assert_int_equal(st.bad_lines, 0);
	return st.intervals;
}

/* Tag `name`'s intervals, newest first, hold counts newest, newest - step, ... */
static void expect_tag(tb_log_follow *lf, const char *name, uint32_t count, int64_t newest,
		       int64_t step)
{
	size_t t = 0;
	while (t < tb_log_follow_tags(lf) && strcmp(tb_log_follow_tag(lf, t), name))
		t++;
	assert_true(t < tb_log_follow_tags(lf));
	assert_int_equal(tb_log_follow_count(lf, t), count);
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	double previous = 1e300;
	for (uint32_t age = 0; age < count; age++) {
		assert_int_equal(tb_log_follow_read(lf, t, age, &e), 0);
		assert_int_equal(tb_hist_total(&e.hist), newest - (int64_t)age * step);
		assert_string_equal(e.tag, name);
		assert_true(e.start_abs_sec < previous);
		previous = e.start_abs_sec;
	}
	assert_int_equal(tb_log_follow_read(lf, t, count, &e), -ERANGE);
	tb_log_entry_free(&e);
}

static void partial_appends_give_exactly_the_whole_lines(void **state)
{
	struct fixture *f = *state;
	static const char *const tags[] = {"a", "b"};
	size_t len;
	char *text = log_text(tags, 2, 10, 1, &len);
	append(f->path, "", 0, "w");
	tb_log_follow *lf;
	assert_int_equal(tb_log_follow_open(&lf, f->path, KEEP), 0);
	/* pieces of 1 to 97 bytes, so ends of line fall everywhere in a piece */
	size_t written = 0, piece = 1;
	while (written < len) {
		size_t n = len - written < piece ? len - written : piece;
		append(f->path, text + written, n, "a");
		written += n;
		piece = piece * 7 % 97 + 1;
		assert_int_equal(tb_log_follow_poll(lf), 0);
		assert_int_equal(intervals(lf), whole_data_lines(text, written));
	}
	assert_int_equal(intervals(lf), 10);
	assert_int_equal(tb_log_follow_tags(lf), 2);
	/* a: intervals 0,2,4,6,8 (counts 1,3,5,7,9), the newest KEEP kept */
	expect_tag(lf, "a", KEEP, 9, 2);
	expect_tag(lf, "b", KEEP, 10, 2);
	/* a poll with nothing new changes nothing */
	assert_int_equal(tb_log_follow_poll(lf), 0);
	assert_int_equal(intervals(lf), 10);
	tb_log_follow_close(lf);
	free(text);
}

static void truncation_and_rotation_start_over(void **state)
{
	struct fixture *f = *state;
	static const char *const first[] = {"a", "b"}, *const second[] = {"c"},
				 *const third[] = {"d", "e"};
	size_t len1, len2, len3;
	char *t1 = log_text(first, 2, 8, 1, &len1);
	char *t2 = log_text(second, 1, 2, 100, &len2);
	char *t3 = log_text(third, 2, 3, 200, &len3);
	assert_true(len2 < len1);
	append(f->path, t1, len1, "w");
	tb_log_follow *lf;
	assert_int_equal(tb_log_follow_open(&lf, f->path, KEEP), 0);
	assert_int_equal(tb_log_follow_poll(lf), 0);
	assert_int_equal(intervals(lf), 8);

	/* truncated, then written again (shorter): only the new intervals */
	append(f->path, t2, len2, "w");
	assert_int_equal(tb_log_follow_poll(lf), 0);
	assert_int_equal(intervals(lf), 2);
	assert_int_equal(tb_log_follow_tags(lf), 1);
	expect_tag(lf, "c", 2, 101, 1);

	/* rotated: a new file renamed over the path, its last line torn */
	char fresh[128];
	snprintf(fresh, sizeof(fresh), "%s.new", f->path);
	append(fresh, t3, len3 - 10, "w");
	assert_int_equal(rename(fresh, f->path), 0);
	assert_int_equal(tb_log_follow_poll(lf), 0);
	assert_int_equal(intervals(lf), 2);
	assert_int_equal(tb_log_follow_tags(lf), 2);
	expect_tag(lf, "d", 1, 200, 0);
	expect_tag(lf, "e", 1, 201, 0);
	/* the torn line's end arrives: taken whole */
	append(f->path, t3 + len3 - 10, 10, "a");
	assert_int_equal(tb_log_follow_poll(lf), 0);
	assert_int_equal(intervals(lf), 3);
	expect_tag(lf, "d", 2, 202, 2);
	tb_log_follow_close(lf);
	free(t1);
	free(t2);
	free(t3);
}

static void bad_lines_are_counted_once(void **state)
{
	struct fixture *f = *state;
	static const char *const tags[] = {"a"};
	size_t len;
	char *text = log_text(tags, 1, 2, 1, &len);
	append(f->path, text, len, "w");
	/* a malformed line (not kept), then a payload that does not decode */
	static const char malformed[] = "Tag=a,1.000,x,0.001,HISTFAAAAA==\n";
	static const char bad_payload[] = "Tag=a,3.000,1.000,0.001,HISTFAAAAA==\n";
	append(f->path, malformed, strlen(malformed), "a");
	append(f->path, bad_payload, strlen(bad_payload), "a");
	tb_log_follow *lf;
	tb_log_follow_stats st;
	assert_int_equal(tb_log_follow_open(&lf, f->path, KEEP), 0);
	assert_int_equal(tb_log_follow_poll(lf), 0);
	tb_log_follow_stats_get(lf, &st);
	assert_int_equal(st.intervals, 3);
	assert_int_equal(st.bad_lines, 1);
	assert_non_null(strstr(st.last_error, "interval length"));
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	for (int i = 0; i < 2; i++) /* the bad payload keeps its place: age 0 */
		assert_int_equal(tb_log_follow_read(lf, 0, 0, &e), -EINVAL);
	assert_int_equal(tb_log_follow_read(lf, 0, 1, &e), 0);
	assert_int_equal(tb_hist_total(&e.hist), 2);
	tb_log_follow_stats_get(lf, &st);
	assert_int_equal(st.bad_lines, 2);
	assert_non_null(strstr(st.last_error, "histogram payload"));
	tb_log_entry_free(&e);
	tb_log_follow_close(lf);
	free(text);
}

static void unreadable_paths_are_refused(void **state)
{
	struct fixture *f = *state;
	tb_log_follow *lf;
	assert_int_equal(tb_log_follow_open(&lf, f->path, KEEP), -ENOENT);
	assert_int_equal(tb_log_follow_open(&lf, f->dir, KEEP), -EISDIR);
	append(f->path, "", 0, "w");
	assert_int_equal(tb_log_follow_open(&lf, f->path, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(partial_appends_give_exactly_the_whole_lines, setup,
						teardown),
		cmocka_unit_test_setup_teardown(truncation_and_rotation_start_over, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_lines_are_counted_once, setup, teardown),
		cmocka_unit_test_setup_teardown(unreadable_paths_are_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
