/* test_writer.c - the collector's log writer: both backends, rotation,
 * retention, name collisions and errors, each in its own mkdtemp directory.
 *
 * io_uring is expected to work where these tests run: a test that needs it
 * fails when the writer fell back to the pwrite thread, unless
 * TB_ALLOW_NO_IO_URING=1 says that is expected (then it skips).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tailbus/log.h"
#include "writer.h"

#define NS 1000000000LL
#define T0 1764525600LL /* Sun Nov 30 18:00:00 UTC 2025 */
#define T0_STAMP "20251130T180000Z"
#define COMMENT "Logged with tailbus test"
#define BUS "bus"
#define KB 1024
/* directories short enough that any file name fits in PATH_MAX after them */
#define DIR_CAP (PATH_MAX / 2)
#define HEADER_CAP 1024 /* five header lines under 128 bytes each */

struct fixture {
	bool force_fallback; /* the backend a parameterized test runs under */
	char dir[DIR_CAP];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(f->dir, sizeof(f->dir), "%s/tb_writer_XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	nftw(f->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* ---- helpers ---- */

/* A test of both backends: fn(f) runs under each, named for it. */
#define UNDER_BOTH_BACKENDS(fn)                            \
	static void fn##_under_io_uring(void **state)      \
	{                                                  \
		struct fixture *f = *state;                \
		f->force_fallback = false;                 \
		fn(f);                                     \
	}                                                  \
	static void fn##_under_pwrite_thread(void **state) \
	{                                                  \
		struct fixture *f = *state;                \
		f->force_fallback = true;                  \
		fn(f);                                     \
	}

static tb_writer_config config(const char *dir, bool force_fallback)
{
	tb_writer_config c;
	tb_writer_config_default(&c);
	c.dir = dir;
	c.bus = BUS;
	c.comment = COMMENT;
	c.force_fallback = force_fallback;
	return c;
}

static void require_io_uring(tb_writer *w);

/* Open, and when io_uring was asked for, insist on it. */
static tb_writer *open_ok(const tb_writer_config *c, int64_t start_ns)
{
	tb_writer *w = NULL;
	const char *why = NULL;
	int rc = tb_writer_open(&w, c, start_ns, &why);
	if (rc < 0)
		fail_msg("tb_writer_open: %s (%s)", why ? why : "(no reason)", strerror(-rc));
	assert_non_null(w);
	if (!c->force_fallback)
		require_io_uring(w);
	return w;
}

/* The io_uring tests mean io_uring: falling back is a failure here. */
static void require_io_uring(tb_writer *w)
{
	const char *backend = tb_writer_backend(w);
	if (strcmp(backend, "io_uring") == 0)
		return;
	const char *allow = getenv("TB_ALLOW_NO_IO_URING");
	tb_writer_close(w);
	if (allow && strcmp(allow, "1") == 0)
		skip();
	fail_msg("io_uring is not available: the writer chose \"%s\" "
		 "(set TB_ALLOW_NO_IO_URING=1 where that is expected)",
		 backend);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		fail_msg("cannot read %s: %s", path, strerror(errno));
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static size_t count_names_ending(const char *dir, const char *suffix)
{
	size_t n = 0, sl = strlen(suffix);
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		size_t l = strlen(e->d_name);
		n += l >= sl && strcmp(e->d_name + l - sl, suffix) == 0;
	}
	closedir(d);
	return n;
}

/* What tb_log_format_header writes for a file that starts at start_ns. */
static size_t expected_header(char *buf, size_t cap, int64_t start_ns)
{
	double s = (double)start_ns / 1e9;
	int n = tb_log_format_header(buf, cap, COMMENT, s, s);
	assert_true(n > 0);
	return (size_t)n;
}

static void assert_file_is(const char *dir, const char *name, const char *want, size_t want_len)
{
	char path[PATH_MAX];
	size_t len;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	char *got = slurp(path, &len);
	if (len != want_len || memcmp(got, want, len) != 0)
		fail_msg("%s: %zu bytes, not the %zu expected:\n--- got\n%.*s\n--- want\n%.*s", name,
			 len, want_len, (int)(len > 2000 ? 2000 : len), got,
			 (int)(want_len > 2000 ? 2000 : want_len), want);
	free(got);
}

/* A log whose content is its header then `lines`, and the sidecar beside it
 * with its title, columns and `side`. */
static void assert_pair(const char *dir, const char *stem, int64_t start_ns, const char *lines,
			const char *side)
{
	char name[PATH_MAX], want[64 * KB];
	size_t n = expected_header(want, sizeof(want), start_ns);
	n += (size_t)snprintf(want + n, sizeof(want) - n, "%s", lines);
	snprintf(name, sizeof(name), "%s.hlog", stem);
	assert_file_is(dir, name, want, n);
	n = (size_t)snprintf(want, sizeof(want),
			     "# tailbus health sidecar for %s.hlog\n" TB_SIDECAR_COLUMNS "%s", stem,
			     side);
	snprintf(name, sizeof(name), "%s" TB_SIDECAR_SUFFIX, stem);
	assert_file_is(dir, name, want, n);
}

static void subdir(char *out, const char *dir, const char *name)
{
	snprintf(out, DIR_CAP, "%.*s/%s", DIR_CAP / 2, dir, name);
}

/* ---- both backends write the same bytes ---- */

#define SEQ_INTERVALS 20
#define SEQ_FSYNC_EVERY 3
#define SEQ_BIG_LINE (100 * KB) /* larger than a buffer starts: it must grow */

/* One fixed sequence of intervals; returns the bytes it appended to the log. */
static size_t write_sequence(tb_writer *w, char *log_out, size_t cap)
{
	static char big[SEQ_BIG_LINE + 1];
	char line[256];
	size_t o = 0;
	memset(big, 'x', SEQ_BIG_LINE - 1);
	big[SEQ_BIG_LINE - 1] = '\n';
	for (int i = 0; i < SEQ_INTERVALS; i++) {
		assert_true(tb_writer_begin_interval(w, (T0 + i) * NS) == (double)T0);
		int n = snprintf(line, sizeof(line), "Tag=m%d,%d.000,1.000,0.%03d,HISTFAAAAC%d\n", i, i,
				 i, i * 7);
		assert_int_equal(tb_writer_append_log(w, line, (size_t)n), 0);
		memcpy(log_out + o, line, (size_t)n);
		o += (size_t)n;
		if (i % 7 == 3) {
			assert_int_equal(tb_writer_append_log(w, big, SEQ_BIG_LINE), 0);
			memcpy(log_out + o, big, SEQ_BIG_LINE);
			o += SEQ_BIG_LINE;
		}
		n = snprintf(line, sizeof(line), "%lld,ring,m%d,%d,0,0,0,0,0,0,%d\n", T0 + i, i, 100 * i,
			     i);
		assert_int_equal(tb_writer_append_sidecar(w, line, (size_t)n), 0);
		assert_int_equal(tb_writer_end_interval(w), 0);
		assert_int_equal(tb_writer_poll(w), 0);
	}
	assert_true(o <= cap);
	return o;
}

static void io_uring_and_pwrite_thread_write_byte_identical_files(void **state)
{
	struct fixture *f = *state;
	char du[DIR_CAP], df[DIR_CAP], path[PATH_MAX];
	static char lines[SEQ_INTERVALS * 256 + 3 * SEQ_BIG_LINE];
	tb_writer_stats su, sf;
	subdir(du, f->dir, "uring");
	subdir(df, f->dir, "pwrite");
	tb_writer_config cu = config(du, false), cf = config(df, true);
	cu.queue_depth = cf.queue_depth = 3;
	cu.fsync_every = cf.fsync_every = SEQ_FSYNC_EVERY;

	tb_writer *wu = open_ok(&cu, T0 * NS);
	tb_writer *wf = open_ok(&cf, T0 * NS);
	assert_string_equal(tb_writer_backend(wf), "pwrite thread (forced)");
	size_t nu = write_sequence(wu, lines, sizeof(lines));
	size_t nf = write_sequence(wf, lines, sizeof(lines));
	assert_int_equal(nu, nf);
	assert_int_equal(tb_writer_flush(wu), 0);
	assert_int_equal(tb_writer_flush(wf), 0);
	tb_writer_get_stats(wu, &su);
	tb_writer_get_stats(wf, &sf);
	/* a periodic fsync of both files every SEQ_FSYNC_EVERY intervals, then the flush's */
	assert_int_equal(su.fsyncs, 2 * (SEQ_INTERVALS / SEQ_FSYNC_EVERY) + 2);
	assert_int_equal(sf.fsyncs, su.fsyncs);
	assert_int_equal(su.bytes, sf.bytes);
	assert_true(su.buffer_grows > 0);
	snprintf(path, sizeof(path), "%s/" BUS "." T0_STAMP ".hlog", du);
	assert_string_equal(tb_writer_log_path(wu), path);
	assert_int_equal(tb_writer_close(wu), 0);
	assert_int_equal(tb_writer_close(wf), 0);

	/* each is its header, exactly as tb_log_format_header makes it, then the lines */
	char *want = malloc(HEADER_CAP + nu);
	assert_non_null(want);
	size_t h = expected_header(want, HEADER_CAP, T0 * NS);
	memcpy(want + h, lines, nu);
	assert_file_is(du, BUS "." T0_STAMP ".hlog", want, h + nu);
	free(want);

	size_t lu, lf;
	const char *names[] = {BUS "." T0_STAMP ".hlog", BUS "." T0_STAMP TB_SIDECAR_SUFFIX};
	for (size_t i = 0; i < 2; i++) {
		char pu[PATH_MAX], pf[PATH_MAX];
		snprintf(pu, sizeof(pu), "%s/%s", du, names[i]);
		snprintf(pf, sizeof(pf), "%s/%s", df, names[i]);
		char *a = slurp(pu, &lu), *b = slurp(pf, &lf);
		assert_int_equal(lu, lf);
		assert_memory_equal(a, b, lu);
		if (i == 1)
			assert_true(strncmp(a,
					    "# tailbus health sidecar for " BUS "." T0_STAMP
					    ".hlog\n" TB_SIDECAR_COLUMNS,
					    strlen("# tailbus health sidecar for " BUS "." T0_STAMP
						   ".hlog\n" TB_SIDECAR_COLUMNS)) == 0);
		free(a);
		free(b);
	}
}

/* ---- many appends, few buffers ---- */

#define MANY_APPENDS 1000
#define MANY_MAX (200 * KB)

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64: reproducible sizes, seeded per test */
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The byte at stream position p: a hash, so a chunk out of place or missing shows. */
static uint8_t pattern(uint64_t p, uint64_t salt)
{
	return (uint8_t)(((p + salt) * 0x9E3779B97F4A7C15ull) >> 56);
}

static void fill(uint8_t *buf, size_t len, uint64_t pos, uint64_t salt)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(pos + i, salt);
}

static void check_stream(const char *path, size_t skip, uint64_t total, uint64_t salt)
{
	size_t len;
	uint8_t *got = (uint8_t *)slurp(path, &len);
	if (len != skip + total)
		fail_msg("%s: %zu bytes, expected %zu + %llu", path, len, skip,
			 (unsigned long long)total);
	for (uint64_t p = 0; p < total; p++)
		if (got[skip + p] != pattern(p, salt))
			fail_msg("%s: byte %llu of the appended stream is wrong", path,
				 (unsigned long long)p);
	free(got);
}

static void many_appends(struct fixture *f, bool force_fallback)
{
	tb_writer_config c = config(f->dir, force_fallback);
	c.queue_depth = 2; /* so appends must wait for writes to finish */
	c.fsync_every = 4;
	tb_writer *w = open_ok(&c, T0 * NS);
	uint8_t *buf = malloc(MANY_MAX);
	assert_non_null(buf);
	uint64_t seed = 0x5eed1234abcdULL, log_pos = 0, side_pos = 0;
	int intervals = 0;
	for (int i = 0; i < MANY_APPENDS; i++) {
		if (i % 10 == 0)
			assert_true(tb_writer_begin_interval(w, (T0 + intervals) * NS) == (double)T0);
		size_t len = 1 + (size_t)(rng_next(&seed) % MANY_MAX);
		fill(buf, len, log_pos, 0);
		assert_int_equal(tb_writer_append_log(w, buf, len), 0);
		log_pos += len;
		if (i % 7 == 0) {
			size_t sl = 1 + (size_t)(rng_next(&seed) % (4 * KB));
			fill(buf, sl, side_pos, 1);
			assert_int_equal(tb_writer_append_sidecar(w, buf, sl), 0);
			side_pos += sl;
		}
		if (i % 10 == 9) {
			assert_int_equal(tb_writer_end_interval(w), 0);
			intervals++;
		}
		if (i % 13 == 0)
			assert_int_equal(tb_writer_poll(w), 0);
	}
	free(buf);
	tb_writer_stats s;
	assert_int_equal(tb_writer_flush(w), 0);
	tb_writer_get_stats(w, &s);
	if (!force_fallback) /* nothing is reaped between appends but poll: they must wait */
		assert_true(s.buffer_waits > 0);
	assert_true(s.buffer_grows > 0);
	assert_int_equal(s.appends, MANY_APPENDS + (MANY_APPENDS + 6) / 7 + 2);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", tb_writer_log_path(w));
	assert_int_equal(tb_writer_close(w), 0);

	char hdr[HEADER_CAP];
	check_stream(path, expected_header(hdr, sizeof(hdr), T0 * NS), log_pos, 0);
	size_t title = strlen("# tailbus health sidecar for " BUS "." T0_STAMP ".hlog\n" TB_SIDECAR_COLUMNS);
	snprintf(path, sizeof(path), "%s/" BUS "." T0_STAMP TB_SIDECAR_SUFFIX, f->dir);
	check_stream(path, title, side_pos, 1);
}

static void many_appends_arrive_complete_and_in_order_under_io_uring(void **state)
{
	many_appends(*state, false);
}

static void many_appends_arrive_complete_and_in_order_under_pwrite_thread(void **state)
{
	many_appends(*state, true);
}

/* ---- rotation ---- */

static void rotation_by_time_starts_a_file_every_rotate_ns_with_a_full_header(struct fixture *f)
{
	tb_writer_config c = config(f->dir, f->force_fallback);
	c.rotate_ns = 2 * NS;
	tb_writer *w = open_ok(&c, T0 * NS);
	const double want_base[] = {T0, T0, T0 + 2, T0 + 2, T0 + 4};
	char line[64];
	for (int i = 0; i < 5; i++) {
		assert_true(tb_writer_begin_interval(w, (T0 + i) * NS) == want_base[i]);
		int n = snprintf(line, sizeof(line), "line %d\n", i);
		assert_int_equal(tb_writer_append_log(w, line, (size_t)n), 0);
		n = snprintf(line, sizeof(line), "side %d\n", i);
		assert_int_equal(tb_writer_append_sidecar(w, line, (size_t)n), 0);
		assert_int_equal(tb_writer_end_interval(w), 0);
	}
	tb_writer_stats s;
	tb_writer_get_stats(w, &s);
	assert_int_equal(s.rotations, 2);
	assert_int_equal(tb_writer_close(w), 0);
	assert_pair(f->dir, BUS ".20251130T180000Z", T0 * NS, "line 0\nline 1\n", "side 0\nside 1\n");
	assert_pair(f->dir, BUS ".20251130T180002Z", (T0 + 2) * NS, "line 2\nline 3\n",
		    "side 2\nside 3\n");
	assert_pair(f->dir, BUS ".20251130T180004Z", (T0 + 4) * NS, "line 4\n", "side 4\n");
	assert_int_equal(count_names_ending(f->dir, ".hlog"), 3);
	assert_int_equal(count_names_ending(f->dir, TB_SIDECAR_SUFFIX), 3);
}
UNDER_BOTH_BACKENDS(rotation_by_time_starts_a_file_every_rotate_ns_with_a_full_header)

#define SIZE_LINE "0123456789012345678901234567890123456789012345678901234567890\n"

static void rotation_by_size_starts_a_file_once_the_log_reaches_rotate_bytes(struct fixture *f)
{
	char hdr[HEADER_CAP];
	size_t h = expected_header(hdr, sizeof(hdr), T0 * NS);
	size_t line = strlen(SIZE_LINE);
	tb_writer_config c = config(f->dir, f->force_fallback);
	c.rotate_bytes = h + line + line / 2; /* reached by the second line, not the first */
	tb_writer *w = open_ok(&c, T0 * NS);
	const double want_base[] = {T0, T0, T0 + 2, T0 + 2, T0 + 4, T0 + 4};
	for (int i = 0; i < 6; i++) {
		assert_true(tb_writer_begin_interval(w, (T0 + i) * NS) == want_base[i]);
		assert_int_equal(tb_writer_append_log(w, SIZE_LINE, line), 0);
		assert_int_equal(tb_writer_end_interval(w), 0);
	}
	assert_int_equal(tb_writer_close(w), 0);
	for (int i = 0; i < 6; i += 2) {
		char stem[64];
		snprintf(stem, sizeof(stem), BUS ".20251130T18000%dZ", i);
		assert_pair(f->dir, stem, (T0 + i) * NS, SIZE_LINE SIZE_LINE, "");
	}
	assert_int_equal(count_names_ending(f->dir, ".hlog"), 3);
}
UNDER_BOTH_BACKENDS(rotation_by_size_starts_a_file_once_the_log_reaches_rotate_bytes)

static void a_log_holding_only_its_header_is_not_rotated_for_size(struct fixture *f)
{
	tb_writer_config c = config(f->dir, f->force_fallback);
	c.rotate_bytes = 1; /* the header alone is larger */
	tb_writer *w = open_ok(&c, T0 * NS);
	assert_true(tb_writer_begin_interval(w, T0 * NS) == (double)T0);
	assert_true(tb_writer_begin_interval(w, (T0 + 1) * NS) == (double)T0);
	assert_int_equal(tb_writer_append_log(w, "x\n", 2), 0);
	assert_true(tb_writer_begin_interval(w, (T0 + 2) * NS) == (double)(T0 + 2));
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(count_names_ending(f->dir, ".hlog"), 2);
}
UNDER_BOTH_BACKENDS(a_log_holding_only_its_header_is_not_rotated_for_size)

/* ---- retention ---- */

static void retention_keeps_only_the_newest_keep_files_logs_of_the_bus(struct fixture *f)
{
	/* not this bus's logs: never removed */
	const char *others[] = {"other.20251130T170000Z.hlog", BUS ".notes.hlog",
				BUS ".20251130T170000Z.hlog.bak", "busx.20251130T170000Z.hlog",
				BUS ".20251130T170000Z-01.hlog"};
	for (size_t i = 0; i < sizeof(others) / sizeof(*others); i++)
		write_file(f->dir, others[i], "keep\n");
	tb_writer_config c = config(f->dir, f->force_fallback);
	c.rotate_ns = 1 * NS;
	c.keep_files = 2;
	tb_writer *w = open_ok(&c, T0 * NS);
	for (int i = 0; i < 5; i++) {
		tb_writer_begin_interval(w, (T0 + i) * NS);
		assert_int_equal(tb_writer_append_log(w, "l\n", 2), 0);
		assert_int_equal(tb_writer_end_interval(w), 0);
	}
	tb_writer_stats s;
	tb_writer_get_stats(w, &s);
	assert_int_equal(tb_writer_close(w), 0);
	assert_int_equal(s.files_removed, 3);
	for (int i = 0; i < 5; i++) {
		char name[64];
		snprintf(name, sizeof(name), BUS ".20251130T18000%dZ.hlog", i);
		assert_int_equal(exists(f->dir, name), i >= 3);
		snprintf(name, sizeof(name), BUS ".20251130T18000%dZ" TB_SIDECAR_SUFFIX, i);
		assert_int_equal(exists(f->dir, name), i >= 3);
	}
	for (size_t i = 0; i < sizeof(others) / sizeof(*others); i++)
		assert_true(exists(f->dir, others[i]));
}
UNDER_BOTH_BACKENDS(retention_keeps_only_the_newest_keep_files_logs_of_the_bus)

static void retention_orders_suffixes_by_number_not_by_name(struct fixture *f)
{
	/* by strcmp, "-10" < "-2" < "" (no suffix); by time, "" < "-2" < "-10" */
	const char *stems[] = {BUS ".20251130T170000Z", BUS ".20251130T170000Z-2",
			       BUS ".20251130T170000Z-10"};
	for (size_t i = 0; i < 3; i++) {
		char name[128];
		snprintf(name, sizeof(name), "%s.hlog", stems[i]);
		write_file(f->dir, name, "old\n");
		snprintf(name, sizeof(name), "%s" TB_SIDECAR_SUFFIX, stems[i]);
		write_file(f->dir, name, "old\n");
	}
	tb_writer_config c = config(f->dir, f->force_fallback);
	c.keep_files = 3;
	tb_writer *w = open_ok(&c, T0 * NS);
	assert_int_equal(tb_writer_close(w), 0);
	assert_false(exists(f->dir, BUS ".20251130T170000Z.hlog"));
	assert_false(exists(f->dir, BUS ".20251130T170000Z" TB_SIDECAR_SUFFIX));
	assert_true(exists(f->dir, BUS ".20251130T170000Z-2.hlog"));
	assert_true(exists(f->dir, BUS ".20251130T170000Z-10.hlog"));
	assert_true(exists(f->dir, BUS ".20251130T170000Z-10" TB_SIDECAR_SUFFIX));
	assert_true(exists(f->dir, BUS "." T0_STAMP ".hlog"));
}
UNDER_BOTH_BACKENDS(retention_orders_suffixes_by_number_not_by_name)

/* ---- names ---- */

static void the_same_start_second_twice_gets_a_dash_1_suffix(struct fixture *f)
{
	tb_writer_config c = config(f->dir, f->force_fallback);
	char want[PATH_MAX];
	tb_writer *w = open_ok(&c, T0 * NS);
	assert_int_equal(tb_writer_append_log(w, "first\n", 6), 0);
	assert_int_equal(tb_writer_close(w), 0);

	w = open_ok(&c, T0 * NS + 400000000LL); /* same second, 0.4 s later */
	snprintf(want, sizeof(want), "%s/" BUS "." T0_STAMP "-1.hlog", f->dir);
	assert_string_equal(tb_writer_log_path(w), want);
	assert_true(tb_writer_begin_interval(w, T0 * NS + 400000000LL) == (double)T0 + 0.4);
	assert_int_equal(tb_writer_append_log(w, "second\n", 7), 0);
	assert_int_equal(tb_writer_close(w), 0);

	w = open_ok(&c, T0 * NS);
	snprintf(want, sizeof(want), "%s/" BUS "." T0_STAMP "-2.hlog", f->dir);
	assert_string_equal(tb_writer_log_path(w), want);
	assert_int_equal(tb_writer_close(w), 0);

	assert_pair(f->dir, BUS "." T0_STAMP, T0 * NS, "first\n", "");
	assert_pair(f->dir, BUS "." T0_STAMP "-1", T0 * NS + 400000000LL, "second\n", "");
	assert_pair(f->dir, BUS "." T0_STAMP "-2", T0 * NS, "", "");
}
UNDER_BOTH_BACKENDS(the_same_start_second_twice_gets_a_dash_1_suffix)

static void a_stale_sidecar_alone_also_takes_the_name(struct fixture *f)
{
	write_file(f->dir, BUS "." T0_STAMP TB_SIDECAR_SUFFIX, "stale\n");
	tb_writer_config c = config(f->dir, f->force_fallback);
	tb_writer *w = open_ok(&c, T0 * NS);
	assert_int_equal(tb_writer_close(w), 0);
	assert_false(exists(f->dir, BUS "." T0_STAMP ".hlog"));
	assert_file_is(f->dir, BUS "." T0_STAMP TB_SIDECAR_SUFFIX, "stale\n", 6);
	assert_pair(f->dir, BUS "." T0_STAMP "-1", T0 * NS, "", "");
}
UNDER_BOTH_BACKENDS(a_stale_sidecar_alone_also_takes_the_name)

static void open_creates_missing_dirs_and_names_the_file_by_utc_start(struct fixture *f)
{
	char dir[DIR_CAP + 16], want[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/a/b", f->dir);
	tb_writer_config c = config(dir, f->force_fallback);
	tb_writer *w = open_ok(&c, T0 * NS + 999999999LL); /* still second T0 */
	snprintf(want, sizeof(want), "%s/" BUS "." T0_STAMP ".hlog", dir);
	assert_string_equal(tb_writer_log_path(w), want);
	assert_int_equal(tb_writer_close(w), 0);
	assert_pair(dir, BUS "." T0_STAMP, T0 * NS + 999999999LL, "", "");
	struct stat st;
	assert_int_equal(stat(want, &st), 0);
	mode_t mask = umask(0);
	umask(mask);
	assert_int_equal(st.st_mode & 0777, 0640 & ~mask);
}
UNDER_BOTH_BACKENDS(open_creates_missing_dirs_and_names_the_file_by_utc_start)

/* ---- errors ---- */

static void open_under_a_regular_file_fails_with_errno_and_a_sentence(struct fixture *f)
{
	char dir[DIR_CAP + 16];
	write_file(f->dir, "plain", "not a directory\n");
	snprintf(dir, sizeof(dir), "%s/plain/logs", f->dir);
	tb_writer_config c = config(dir, f->force_fallback);
	tb_writer *w = (tb_writer *)&w; /* must be reset */
	const char *why = NULL;
	assert_int_equal(tb_writer_open(&w, &c, T0 * NS, &why), -ENOTDIR);
	assert_null(w);
	assert_non_null(why);
	assert_true(strlen(why) > 10);

	snprintf(dir, sizeof(dir), "%s/plain", f->dir);
	c.dir = dir; /* the directory itself is a regular file */
	why = NULL;
	assert_int_equal(tb_writer_open(&w, &c, T0 * NS, &why), -ENOTDIR);
	assert_non_null(why);
}
UNDER_BOTH_BACKENDS(open_under_a_regular_file_fails_with_errno_and_a_sentence)

static void open_refuses_a_bad_configuration_with_einval_and_a_sentence(struct fixture *f)
{
	tb_writer *w = NULL;
	const char *why;
	tb_writer_config c = config(f->dir, f->force_fallback);
	c.comment = "bad ] comment";
	why = NULL;
	assert_int_equal(tb_writer_open(&w, &c, T0 * NS, &why), -EINVAL);
	assert_non_null(why);
	c = config(f->dir, f->force_fallback);
	c.queue_depth = 0;
	why = NULL;
	assert_int_equal(tb_writer_open(&w, &c, T0 * NS, &why), -EINVAL);
	assert_non_null(why);
	c = config(f->dir, f->force_fallback);
	c.bus = "a/b";
	why = NULL;
	assert_int_equal(tb_writer_open(&w, &c, T0 * NS, &why), -EINVAL);
	assert_non_null(why);
	assert_null(w);
	assert_int_equal(count_names_ending(f->dir, ".hlog"), 0);
}
UNDER_BOTH_BACKENDS(open_refuses_a_bad_configuration_with_einval_and_a_sentence)

/* Children report what went wrong through their exit status. */
enum child_fail { CHILD_OK, CHILD_OPEN, CHILD_BACKEND, CHILD_WRITE, CHILD_ERRNO, CHILD_STATS,
		  CHILD_WHY, CHILD_SIZE, CHILD_NO_SECCOMP = 77 };

static void assert_child(pid_t pid)
{
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == CHILD_NO_SECCOMP)
		skip();
	if (WEXITSTATUS(status) != CHILD_OK)
		fail_msg("the child failed at step %d", WEXITSTATUS(status));
}

/* A write that crosses RLIMIT_FSIZE comes back short, its remainder with
 * EFBIG: the writer continues the short write, gets the error, cuts the
 * file back to its last whole write (no partial line), drops the append
 * whole and counts its interval lost. The next append that fits is written
 * after a comment line that says which interval was lost and why, and the
 * sidecar gets a `lost` row. */
#define FSIZE_LIMIT 4096
#define SMALL_LINE "after\n"

/* In a forked child: files of at most FSIZE_LIMIT bytes (EFBIG past it,
 * not SIGXFSZ), and a writer open at T0 in its first interval. *lim (if
 * given) gets the limit set, its hard limit as it was. */
static tb_writer *limited_writer(tb_writer_config *c, struct rlimit *lim)
{
	struct rlimit mine;
	if (!lim)
		lim = &mine;
	getrlimit(RLIMIT_FSIZE, lim);
	lim->rlim_cur = FSIZE_LIMIT;
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, lim);
	tb_writer *w;
	const char *why;
	if (tb_writer_open(&w, c, T0 * NS, &why) < 0)
		_exit(CHILD_OPEN);
	tb_writer_begin_interval(w, T0 * NS);
	return w;
}

static void a_write_past_the_file_size_limit_is_cut_back_and_its_interval_noted(struct fixture *f)
{
	char big[2 * FSIZE_LIMIT];
	memset(big, 'z', sizeof(big));
	tb_writer_config c = config(f->dir, f->force_fallback);
	if (!f->force_fallback) { /* fail in the parent, where cmocka sees it */
		tb_writer *probe = open_ok(&c, (T0 - 60) * NS);
		assert_int_equal(tb_writer_close(probe), 0);
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *why;
		tb_writer *w = limited_writer(&c, NULL);
		if (tb_writer_append_log(w, big, sizeof(big)) < 0)
			_exit(CHILD_WRITE);
		if (tb_writer_flush(w) != -EFBIG)
			_exit(CHILD_ERRNO);
		tb_writer_stats s;
		tb_writer_get_stats(w, &s);
		if (s.short_writes < 1 || s.lost_appends != 1 || s.lost_intervals != 1)
			_exit(CHILD_STATS);
		if (tb_writer_error(w, &why) != -EFBIG || !why)
			_exit(CHILD_WHY);
		tb_writer_loss loss;
		uint64_t untold;
		if (tb_writer_take_loss(w, &loss, &untold) != 1 || loss.interval_ns != T0 * NS ||
		    loss.err != -EFBIG || loss.which != 0 || untold != 0 ||
		    tb_writer_take_loss(w, &loss, &untold) != 0)
			_exit(CHILD_WHY);
		tb_writer_begin_interval(w, (T0 + 1) * NS);
		if (tb_writer_append_log(w, SMALL_LINE, strlen(SMALL_LINE)) < 0)
			_exit(CHILD_WRITE);
		if (tb_writer_close(w) != -EFBIG) /* the first error, still */
			_exit(CHILD_ERRNO);
		_exit(CHILD_OK);
	}
	assert_child(pid);
	char want[FSIZE_LIMIT];
	size_t h = expected_header(want, sizeof(want), T0 * NS);
	int n = snprintf(want + h, sizeof(want) - h,
			 "# tailbus: 1 interval lost from the log, %lld.000 to %lld.000: %s\n" SMALL_LINE,
			 (long long)T0, (long long)T0, strerror(EFBIG));
	assert_file_is(f->dir, BUS "." T0_STAMP ".hlog", want, h + (size_t)n);
	char side[PATH_MAX];
	snprintf(side, sizeof(side), "%s/" BUS "." T0_STAMP ".health.csv", f->dir);
	FILE *sf = fopen(side, "r");
	assert_non_null(sf);
	char line[512], row[512];
	snprintf(row, sizeof(row), "%lld.000,lost,log:%lld.000:%s,1,,,,,,,,,,,,,,\n", (long long)T0,
		 (long long)T0, strerror(EFBIG));
	bool found = false;
	while (fgets(line, sizeof(line), sf))
		found |= strcmp(line, row) == 0;
	fclose(sf);
	if (!found)
		fail_msg("no row '%s' in %s", row, side);
}
UNDER_BOTH_BACKENDS(a_write_past_the_file_size_limit_is_cut_back_and_its_interval_noted)

/* A sidecar that cannot be written holds the log's loss notes until it can.
 * Interval T0+1 is lost from the log, T0+2 is logged (its note goes into
 * the log first), T0+3 is lost again: the sidecar, writable again at T0+4,
 * must say two runs, T0+1 and T0+3, not one run T0+1 to T0+3 of 2
 * intervals that spans the logged T0+2. */
static void lost_runs(struct fixture *f, bool middle_logged)
{
	char big[2 * FSIZE_LIMIT];
	memset(big, 'z', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	tb_writer_config c = config(f->dir, f->force_fallback);
	if (!f->force_fallback) {
		tb_writer *probe = open_ok(&c, (T0 - 60) * NS);
		assert_int_equal(tb_writer_close(probe), 0);
	}
	char side[PATH_MAX];
	snprintf(side, sizeof(side), "%s/" BUS "." T0_STAMP ".health.csv", f->dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit lim;
		tb_writer *w = limited_writer(&c, &lim);
		tb_writer_flush(w);
		struct stat st;
		if (stat(side, &st) < 0 || st.st_size >= FSIZE_LIMIT - 1)
			_exit(CHILD_SIZE);
		/* the sidecar one byte short of the limit: no row fits any more */
		size_t pad = (size_t)(FSIZE_LIMIT - 1 - st.st_size);
		char filler[FSIZE_LIMIT];
		memset(filler, '#', pad);
		filler[pad - 1] = '\n';
		if (tb_writer_append_sidecar(w, filler, pad) < 0)
			_exit(CHILD_WRITE);
		tb_writer_end_interval(w);
		tb_writer_flush(w);
		tb_writer_begin_interval(w, (T0 + 1) * NS); /* lost from the log */
		tb_writer_append_log(w, big, sizeof(big));
		tb_writer_flush(w);
		tb_writer_begin_interval(w, (T0 + 2) * NS); /* logged, or lost after the log's note */
		if (middle_logged)
			tb_writer_append_log(w, SMALL_LINE, strlen(SMALL_LINE));
		else
			tb_writer_append_log(w, big, sizeof(big));
		tb_writer_flush(w);
		tb_writer_begin_interval(w, (T0 + 3) * NS); /* lost from the log */
		tb_writer_append_log(w, big, sizeof(big));
		tb_writer_flush(w);
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_FSIZE, &lim);
		tb_writer_begin_interval(w, (T0 + 4) * NS); /* the sidecar writable again */
		tb_writer_append_sidecar(w, "x\n", 2);
		tb_writer_close(w);
		_exit(CHILD_OK);
	}
	assert_child(pid);
	char log[PATH_MAX];
	snprintf(log, sizeof(log), "%s/" BUS "." T0_STAMP ".hlog", f->dir);
	FILE *lf = fopen(log, "r");
	assert_non_null(lf);
	char line[FSIZE_LIMIT];
	bool logged = false;
	while (fgets(line, sizeof(line), lf))
		logged |= strcmp(line, SMALL_LINE) == 0;
	fclose(lf);
	assert_true(logged == middle_logged); /* T0+2 is in the log, or not */
	FILE *sf = fopen(side, "r");
	assert_non_null(sf);
	long long lost = 0, rows = 0;
	while (fgets(line, sizeof(line), sf)) {
		double first, last;
		char *p = strstr(line, ",lost,log:");
		if (!p)
			continue;
		first = strtod(line, NULL);
		last = strtod(p + strlen(",lost,log:"), NULL);
		if (middle_logged && first <= (double)(T0 + 2) && last >= (double)(T0 + 2))
			fail_msg("a sidecar row spans the logged interval %lld: %s", (long long)T0 + 2, line);
		rows++;
		const char *count = strchr(strchr(p + 1, ',') + 1, ',');
		lost += count ? strtoll(count + 1, NULL, 10) : 0;
	}
	fclose(sf);
	if (middle_logged) {
		assert_int_equal(lost, 2); /* T0+1 and T0+3, each in a row of its own */
	} else {
		assert_int_equal(lost, 3); /* T0+1 to T0+3: one run, the log's notes between */
		assert_int_equal(rows, 1);
	}
}
static void sidecar_runs_of_lost_intervals_do_not_span_a_logged_one(struct fixture *f)
{
	lost_runs(f, true);
}
UNDER_BOTH_BACKENDS(sidecar_runs_of_lost_intervals_do_not_span_a_logged_one)

/* The same, T0+2 lost too: the log's notes written between the losses do
 * not split the run. */
static void a_run_of_lost_intervals_is_one_row_across_the_logs_notes(struct fixture *f)
{
	lost_runs(f, false);
}
UNDER_BOTH_BACKENDS(a_run_of_lost_intervals_is_one_row_across_the_logs_notes)

/* Every name for second T0+1 is taken, so the rotation there fails: the
 * writer says so and goes on writing the file it has; the next rotation
 * (a free second) succeeds. */
#define SUFFIXES_TRIED 1000

static void a_rotation_that_cannot_create_its_files_keeps_writing_the_current_ones(
	struct fixture *f)
{
	char name[128];
	for (int n = 0; n < SUFFIXES_TRIED; n++) {
		if (n)
			snprintf(name, sizeof(name), BUS ".20251130T180001Z-%d.hlog", n);
		else
			snprintf(name, sizeof(name), BUS ".20251130T180001Z.hlog");
		write_file(f->dir, name, "");
	}
	tb_writer_config c = config(f->dir, f->force_fallback);
	c.rotate_ns = 1 * NS;
	tb_writer *w = open_ok(&c, T0 * NS);
	assert_true(tb_writer_begin_interval(w, T0 * NS) == (double)T0);
	assert_int_equal(tb_writer_append_log(w, "a\n", 2), 0);
	assert_int_equal(tb_writer_end_interval(w), 0);
	assert_int_equal(tb_writer_poll(w), 0);

	assert_true(tb_writer_begin_interval(w, (T0 + 1) * NS) == (double)T0);
	assert_int_equal(tb_writer_append_log(w, "b\n", 2), 0);
	assert_int_equal(tb_writer_end_interval(w), 0);
	const char *why = NULL;
	assert_int_equal(tb_writer_error(w, &why), -EEXIST);
	assert_non_null(why);
	assert_int_equal(tb_writer_poll(w), -EEXIST);

	assert_true(tb_writer_begin_interval(w, (T0 + 2) * NS) == (double)(T0 + 2));
	assert_int_equal(tb_writer_append_log(w, "c\n", 2), 0);
	assert_int_equal(tb_writer_close(w), -EEXIST); /* the first error, still */
	assert_pair(f->dir, BUS "." T0_STAMP, T0 * NS, "a\nb\n", "");
	assert_pair(f->dir, BUS ".20251130T180002Z", (T0 + 2) * NS, "c\n", "");
}
UNDER_BOTH_BACKENDS(a_rotation_that_cannot_create_its_files_keeps_writing_the_current_ones)

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

static void io_uring_refused_by_seccomp_falls_back_to_the_pwrite_thread_and_says_why(void **state)
{
	struct fixture *f = *state;
#ifndef TEST_AUDIT_ARCH
	skip();
#else
	tb_writer_config c = config(f->dir, false);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* what a container's seccomp profile does: io_uring_setup gets EPERM */
		struct sock_filter filter[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {sizeof(filter) / sizeof(*filter), filter};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			_exit(CHILD_NO_SECCOMP);
		tb_writer *w;
		const char *why;
		if (tb_writer_open(&w, &c, T0 * NS, &why) < 0)
			_exit(CHILD_OPEN);
		if (strcmp(tb_writer_backend(w), "pwrite thread (io_uring: Operation not permitted)"))
			_exit(CHILD_BACKEND);
		if (tb_writer_append_log(w, "fallback\n", 9) < 0 || tb_writer_close(w) < 0)
			_exit(CHILD_WRITE);
		_exit(CHILD_OK);
	}
	assert_child(pid);
	assert_pair(f->dir, BUS "." T0_STAMP, T0 * NS, "fallback\n", "");
#endif
}

/* tb_writer_settle: once it returns, what was appended is in the files
 * (no close, no flush). */
static void settle_returns_with_every_append_in_the_files(struct fixture *f)
{
	tb_writer_config c = config(f->dir, f->force_fallback);
	tb_writer *w = open_ok(&c, T0 * NS);
	char header[HEADER_CAP], path[PATH_MAX];
	size_t hl = expected_header(header, sizeof(header), T0 * NS), len;
	for (int k = 0; k < 20; k++) {
		assert_int_equal(tb_writer_append_log(w, "line of an interval\n", 20), 0);
		assert_int_equal(tb_writer_settle(w), 0);
		snprintf(path, sizeof(path), "%s/" BUS "." T0_STAMP ".hlog", f->dir);
		free(slurp(path, &len));
		assert_int_equal(len, hl + 20 * (size_t)(k + 1));
	}
	assert_int_equal(tb_writer_close(w), 0);
}
UNDER_BOTH_BACKENDS(settle_returns_with_every_append_in_the_files)

/* tb_writer_newest_log: by the start in the name, then the suffix's
 * number; another bus's logs and sidecars are not logs of this one. */
static void newest_log_is_the_latest_start_and_suffix_of_the_bus(void **state)
{
	struct fixture *f = *state;
	char got[PATH_MAX], want[PATH_MAX];
	assert_int_equal(tb_writer_newest_log(f->dir, BUS, got, sizeof(got)), -ENOENT);
	write_file(f->dir, BUS ".20251130T180000Z.hlog", "");
	write_file(f->dir, BUS ".20251130T180000Z-2.hlog", "");
	write_file(f->dir, BUS ".20251130T180000Z-10.hlog", "");
	write_file(f->dir, BUS ".20251130T175959Z-99.hlog", "");
	write_file(f->dir, BUS ".20251130T180001Z.health.csv", "");
	write_file(f->dir, "busy.20251130T180002Z.hlog", "");
	assert_int_equal(tb_writer_newest_log(f->dir, BUS, got, sizeof(got)), 0);
	snprintf(want, sizeof(want), "%s/" BUS ".20251130T180000Z-10.hlog", f->dir);
	assert_string_equal(got, want);
}

#define TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define BOTH(fn) TEST(fn##_under_io_uring), TEST(fn##_under_pwrite_thread)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(io_uring_and_pwrite_thread_write_byte_identical_files),
		TEST(many_appends_arrive_complete_and_in_order_under_io_uring),
		TEST(many_appends_arrive_complete_and_in_order_under_pwrite_thread),
		BOTH(rotation_by_time_starts_a_file_every_rotate_ns_with_a_full_header),
		BOTH(rotation_by_size_starts_a_file_once_the_log_reaches_rotate_bytes),
		BOTH(a_log_holding_only_its_header_is_not_rotated_for_size),
		BOTH(retention_keeps_only_the_newest_keep_files_logs_of_the_bus),
		BOTH(retention_orders_suffixes_by_number_not_by_name),
		BOTH(the_same_start_second_twice_gets_a_dash_1_suffix),
		BOTH(a_stale_sidecar_alone_also_takes_the_name),
		BOTH(open_creates_missing_dirs_and_names_the_file_by_utc_start),
		BOTH(open_under_a_regular_file_fails_with_errno_and_a_sentence),
		BOTH(open_refuses_a_bad_configuration_with_einval_and_a_sentence),
		BOTH(a_write_past_the_file_size_limit_is_cut_back_and_its_interval_noted),
		BOTH(sidecar_runs_of_lost_intervals_do_not_span_a_logged_one),
		BOTH(a_run_of_lost_intervals_is_one_row_across_the_logs_notes),
		BOTH(a_rotation_that_cannot_create_its_files_keeps_writing_the_current_ones),
		TEST(io_uring_refused_by_seccomp_falls_back_to_the_pwrite_thread_and_says_why),
		BOTH(settle_returns_with_every_append_in_the_files),
		TEST(newest_log_is_the_latest_start_and_suffix_of_the_bus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
