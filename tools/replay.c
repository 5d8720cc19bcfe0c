/* replay.c - `tailbus replay`: read interval logs, merge per tag, report.
 *
 *   tailbus replay FILE|-... [--tag T] [--start S] [--end E]
 *                  [--format text|json|csv|hgrm|hgrm-csv] [--output-log OUT]
 *                  [--warmup auto|SECONDS] [--series] [--correct-co INTERVAL]
 *                  [--plot DIR] [--schema S]
 *
 * Every selected interval of a tag, across all files, is added into one
 * histogram per tag (merged counts, never averaged percentiles). By default
 * the merge histogram takes the layout of the tag's first interval and grows
 * as needed, as the Java HistogramLogProcessor does, so the figures (and the
 * .hgrm text) equal its output. --digits D merges into a fresh histogram of
 * D digits from 1 up instead, as a program calling Histogram.add on a
 * `new Histogram(D)` does (the figures in tests/fixtures/.../EXPECTED.md).
 * --start/--end select intervals whose start lies that many seconds after
 * their file's StartTime, inclusive, as the Java tool does; given as
 * wall-clock times (UTC, tb_unit_parse_wallclock), they select by absolute
 * start instead, the same instants in every file: several hosts' logs, each
 * with its own StartTime, merged over one span of time.
 *
 * Each selected interval also becomes a row of per-interval figures (count,
 * p50, p99, p99.9, max): the --series output, the p99-over-time plot and the
 * input of the warm-up rule (tailbus/warmup.h). The warm-up of a tag is counted from
 * its first selected interval across all files (rotated files of one run
 * continue each other). With --warmup the files are read twice: once for the
 * rows, to decide where each tag's warm-up ends, and once to merge what
 * follows it; the texts stay in memory between the two.
 *
 * --correct-co I re-records every bucket (its highest equivalent value v,
 * count c) of each interval as c samples of v back-filled with expected
 * interval I (tailbus/co.h, docs/formats.md; what
 * Java's copyCorrectedForCoordinatedOmission does). That is only right for
 * data from a closed-loop client, so it is refused on a tag its log marks
 * open-loop (every tag of a tailbusd log; tb_log_open_loop), except on tags
 * ending in ".closed" (what `tailbus load --closed` records from the actual
 * send).
 *
 * --format prom-native prints each tag's merged histogram as the native
 * Prometheus buckets `tailbus export` would serve for it at --schema S
 * (tailbus/prom.h): replay of every host's logs gives the fleet's buckets, to
 * check a Prometheus `sum(...)` against.
 *
 * A FILE may be "-" (standard input) and may be gzip data (log_input.c).
 *
 * A bad line or a missing file is reported in one sentence and skipped;
 * everything good is still used, and the exit status says something was wrong.
 * --output-log rewrites the selected intervals (payloads untouched) as one
 * valid log, sorted by start time, tags kept. Its header keeps what the
 * inputs said of their data: which tags are open-loop (the whole-log mark
 * when every tag is, else one per-tag mark per open-loop tag), which input
 * file each tag came from (provenance comment lines), and the '#[env ...]'
 * lines of the first input that has them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"
#include "tailbus/co.h"
#include "tailbus/codec.h"
#include "tailbus/env.h"
#include "tailbus/log.h"
#include "tailbus/prom.h"
#include "tailbus/report.h"
#include "tailbus/summary.h"
#include "tailbus/warmup.h"

#define VERB "replay"
/* --digits D: a fresh auto-resizing histogram from 1 up, like `new Histogram(D)`. */
#define MERGE_LOG_LAYOUT 0
#define MERGE_LOWEST 1
#define MERGE_INITIAL_HIGHEST 2
/* Java's log writer compresses at zlib's best level. */
#define OUTPUT_ZLEVEL 9
/* HdrHistogram_c reads header lines 127 bytes at a time (env.h). */
#define HEADER_LINE_MAX TB_ENV_HEADER_LINE_MAX
/* What `tailbus load --closed` appends to its from-the-actual-send metric. */
#define CLOSED_LOOP_SUFFIX ".closed"

enum format { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_HGRM, FMT_HGRM_CSV, FMT_PROM_NATIVE };
enum warmup_mode { WARMUP_NONE, WARMUP_FIXED, WARMUP_AUTO };

struct options {
	const char *tag; /* NULL: every tag */
	double start, end;
	bool start_wall, end_wall; /* start/end are seconds since the epoch */
	enum format format;
	const char *output_log;
	int digits;
	double unit_ratio;
	int ticks;
	enum warmup_mode warmup;
	double warmup_s;
	bool series;
	int64_t co_interval; /* 0: no correction */
	const char *plot_dir;
	int schema; /* --format prom-native */
	bool schema_given;
};

/* File names a plot's subtitle lists before "and N more". */
#define SUBTITLE_FILES 3

struct tag_acc {
	char name[TB_LOG_TAG_MAX];
	tb_hist merged;
	size_t intervals; /* merged */
	/* the files it was read from (for the plots): how many, the first few
	 * (indices into state.files), and 1 + the last one (files are read one
	 * after the other, so a change of file is a new one) */
	size_t nfiles, files[SUBTITLE_FILES], last_file1;
	tb_interval_figures **run; /* every selected interval, in time order */
	size_t nrun;
	tb_warmup_result warm;
};

/* One selected interval's figures and its tag. */
struct row {
	tb_interval_figures f;
	size_t tag;
};

/* Whether a file marks a tag open-loop, asked once per tag. */
struct tag_mark {
	char tag[TB_LOG_TAG_MAX];
	bool open_loop;
};

struct file {
	const char *path;
	char *text; /* NULL: unreadable */
	size_t len;
	struct tag_mark *marks;
	size_t nmarks;
	bool used;      /* an interval of it was selected */
	bool unmarked_corrected; /* --correct-co applied to a tag it does not mark */
	bool refused; /* --correct-co refused on an open-loop tag of this file */
	char refused_tag[TB_LOG_TAG_MAX]; /* the first tag refused */
};

/* PASS_ONE rows and merges everything; with --warmup, PASS_ROWS only takes
 * the rows and PASS_STEADY (same lines, same order) merges those not marked. */
enum pass { PASS_ONE, PASS_ROWS, PASS_STEADY };

/* A selected line, kept for --output-log by reference into its file text. */
struct kept {
	size_t tag;
	size_t file;
	double start_abs, length, max_field;
	const char *payload;
	size_t payload_len;
	size_t order;
};

struct state {
	struct options opt;
	struct tag_acc *tags;
	size_t ntags;
	struct kept *kept;
	size_t nkept, kept_cap;
	struct file *files;
	size_t nfiles;
	struct row *rows;
	size_t nrows, rows_cap, next_row;
	tb_hist corrected; /* scratch for --correct-co */
	bool have_corrected;
	bool refused;
	double first_start_time;
	bool have_start_time;
	int status;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus replay FILE... [--tag T] [--start S] [--end E]\n"
		"                      [--format text|json|csv|hgrm|hgrm-csv] [--output-log OUT]\n"
		"                      [--digits D] [--unit-ratio R] [--ticks N]\n"
		"                      [--warmup auto|DURATION] [--series] [--correct-co INTERVAL]\n"
		"                      [--plot DIR] [--format prom-native [--schema S]] [--version]\n"
		"Merges the intervals of each tag across FILEs and prints min, p50..p99.99, max\n"
		"and mean with the sample count; '*' marks a percentile with fewer than %d\n"
		"samples beyond it. --start/--end: time after each file's StartTime.\n"
		"--start, --end and --warmup take durations (30s, 2m; a bare number is seconds);\n"
		"--start and --end also take UTC times (2026-12-04T18:00:00Z, or @EPOCH_SECONDS),\n"
		"the same instants in every file (hosts' logs merged on absolute time).\n"
		"The merge histogram has the layout of each tag's first interval (as Java's\n"
		"HistogramLogProcessor); --digits D merges into a fresh D-digit one instead.\n"
		"--format hgrm prints HdrHistogram's percentile distribution, the .hgrm file\n"
		"Java's HistogramLogProcessor -o writes, byte for byte (its two header lines\n"
		"included); %d ticks per half distance unless --ticks. Values are divided by\n"
		"--unit-ratio, default %.0f as in HistogramLogProcessor (-outputValueUnitRatio),\n"
		"so nanosecond logs print in milliseconds and the file equals Java's; pass\n"
		"--unit-ratio 1 for the log's own unit. Other formats print in the log's unit.\n"
		"FILE '-' reads standard input; gzip'd logs are read as they are.\n"
		"--warmup W discards the intervals of each tag starting within SECONDS\n"
		"of its first; --warmup auto ends the warm-up at the first interval whose p50\n"
		"and p99, and their medians over the %d intervals from it, lie within +-%.0f%%\n"
		"(more for noisy figures, at most %.0f%%) of the medians of the rest of the run,\n"
		"in the run's first half (at least %d non-empty intervals needed).\n"
		"--series adds per-interval count, p50, p99, p99.9 and max (text, csv, json).\n"
		"--correct-co I back-fills coordinated omission with expected interval I\n"
		"(closed-loop data only: refused on logs marked open-loop, except tags\n"
		"ending in '.closed'). --plot DIR writes SVG charts: the percentile\n"
		"spectrum of every tag, and p99, p99.9 and max over time per tag.\n"
		"--format prom-native prints each tag's native Prometheus buckets at schema S\n"
		"(0..8, default %d) as `tailbus export` serves them, for a nanosecond log:\n"
		"'TAG INDEX LOWER UPPER COUNT' a bucket (bounds in seconds).\n",
		TB_MIN_SAMPLES_BEYOND, TB_HGRM_DEFAULT_TICKS, TB_HGRM_JAVA_UNIT_RATIO, TB_WARMUP_WINDOW,
		TB_WARMUP_TOLERANCE * 100.0, TB_WARMUP_TOLERANCE_MAX * 100.0, TB_WARMUP_MIN_INTERVALS,
		TB_PROM_SCHEMA_DEFAULT);
}

/* The tag's accumulator; created (shaped like `first`) when `first` is given. */
static struct tag_acc *find_tag(struct state *st, const char *name, const tb_hist *first,
				size_t *index)
{
	for (size_t i = 0; i < st->ntags; i++) {
		if (!strcmp(st->tags[i].name, name)) {
			*index = i;
			return &st->tags[i];
		}
	}
	if (!first)
		return NULL;
	struct tag_acc *grown = realloc(st->tags, (st->ntags + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	st->tags = grown;
	struct tag_acc *t = &st->tags[st->ntags];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	int rc = st->opt.digits == MERGE_LOG_LAYOUT
			 ? tb_hist_init_like(&t->merged, first)
			 : tb_hist_init(&t->merged, MERGE_LOWEST, MERGE_INITIAL_HIGHEST, st->opt.digits);
	if (rc < 0)
		return NULL;
	*index = st->ntags++;
	return t;
}

static int keep_line(struct state *st, size_t tag, size_t file, const tb_log_entry *e,
		     const char *payload, size_t payload_len)
{
	if (st->nkept == st->kept_cap) {
		size_t cap = st->kept_cap ? 2 * st->kept_cap : 1024;
		struct kept *k = realloc(st->kept, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		st->kept = k;
		st->kept_cap = cap;
	}
	st->kept[st->nkept] = (struct kept){tag, file, e->start_abs_sec, e->length_sec, e->max_field,
					    payload, payload_len, st->nkept};
	st->nkept++;
	return 0;
}

/* ---- coordinated-omission correction ---- */

static bool closed_loop_tag(const char *tag)
{
	size_t n = strlen(tag), k = strlen(CLOSED_LOOP_SUFFIX);
	return n >= k && !strcmp(tag + n - k, CLOSED_LOOP_SUFFIX);
}

/* Does f mark tag open-loop? The answer is kept per tag: the marks are
 * comment lines anywhere in the text, too far apart to look up per line. */
static bool file_open_loop(struct file *f, const char *tag)
{
	for (size_t i = 0; i < f->nmarks; i++) {
		if (!strcmp(f->marks[i].tag, tag))
			return f->marks[i].open_loop;
	}
	bool open_loop = tb_log_open_loop(f->text, f->len, tag);
	struct tag_mark *grown = realloc(f->marks, (f->nmarks + 1) * sizeof(*grown));
	if (grown) {
		f->marks = grown;
		snprintf(f->marks[f->nmarks].tag, sizeof(f->marks[f->nmarks].tag), "%s", tag);
		f->marks[f->nmarks++].open_loop = open_loop;
	}
	return open_loop;
}

/* st->corrected = src corrected (tb_co_copy_corrected), in a scratch
 * histogram kept between lines while their layouts agree. */
static int correct(struct state *st, const tb_hist *src)
{
	tb_hist *c = &st->corrected;
	int rc = 0;
	if (st->have_corrected && tb_hist_same_layout(c, src)) {
		tb_hist_reset(c);
	} else {
		if (st->have_corrected)
			tb_hist_free(c);
		st->have_corrected = false;
		if ((rc = tb_hist_init_like(c, src)) < 0)
			return rc;
		st->have_corrected = true;
	}
	return tb_co_copy_corrected(c, src, st->opt.co_interval);
}

/* ---- reading ---- */

static int add_row(struct state *st, size_t tag, const tb_hist *h, const tb_log_entry *e)
{
	if (st->nrows == st->rows_cap) {
		size_t cap = st->rows_cap ? 2 * st->rows_cap : 1024;
		struct row *rows = realloc(st->rows, cap * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		st->rows = rows;
		st->rows_cap = cap;
	}
	struct row *row = &st->rows[st->nrows++];
	row->tag = tag;
	tb_interval_figures_of(h, e->start_abs_sec, e->length_sec, &row->f);
	return 0;
}

/* Per-interval rows feed the warm-up rule, --series and the plots only. */
static bool rows_needed(const struct state *st)
{
	return st->opt.warmup != WARMUP_NONE || st->opt.series || st->opt.plot_dir;
}

static bool selected(const struct state *st, const tb_log_entry *e)
{
	double from = st->opt.start_wall ? e->start_abs_sec : e->offset_sec;
	double to = st->opt.end_wall ? e->start_abs_sec : e->offset_sec;
	return (!st->opt.tag || !strcmp(st->opt.tag, e->tag)) && from >= st->opt.start &&
	       to <= st->opt.end;
}

/* An interval merged into tag t: counted, and kept for --output-log. */
static int merged(struct state *st, const struct file *f, struct tag_acc *t, size_t index,
		  const tb_log_entry *e)
{
	t->intervals++;
	return st->opt.output_log ? keep_line(st, index, (size_t)(f - st->files), e, e->payload,
					      e->payload_len)
				  : 0;
}

/* Count file `file` among those tag t was read from. */
static void note_file(struct tag_acc *t, size_t file)
{
	if (t->last_file1 == file + 1)
		return;
	if (t->nfiles < SUBTITLE_FILES)
		t->files[t->nfiles] = file;
	t->nfiles++;
	t->last_file1 = file + 1;
}

/* A selected line with e->hist decoded: 0, or a negative errno; *merge_err
 * tells a merge failure (reported in the pass that merges) from the others
 * (reported in the first pass). */
static int take_entry(struct state *st, struct file *f, const tb_log_entry *e, enum pass pass,
		      bool *merge_err)
{
	if (st->opt.co_interval && !closed_loop_tag(e->tag)) {
		if (file_open_loop(f, e->tag)) {
			if (!f->refused)
				snprintf(f->refused_tag, sizeof(f->refused_tag), "%s", e->tag);
			f->refused = st->refused = true;
			return 0;
		}
		f->unmarked_corrected = true;
	}
	const tb_hist *h = &e->hist;
	int rc = st->opt.co_interval ? correct(st, &e->hist) : 0;
	if (rc < 0)
		return rc;
	if (st->opt.co_interval)
		h = &st->corrected;
	size_t index;
	struct tag_acc *t = find_tag(st, e->tag, h, &index);
	if (!t)
		return -ENOMEM;
	f->used = true;
	if (pass != PASS_STEADY)
		note_file(t, (size_t)(f - st->files));
	if (pass == PASS_STEADY) {
		if (st->next_row >= st->nrows || st->rows[st->next_row++].f.warmup)
			return 0;
	} else if (rows_needed(st) && (rc = add_row(st, index, h, e)) < 0) {
		return rc;
	}
	if (pass == PASS_ROWS)
		return 0;
	*merge_err = true;
	if ((rc = tb_hist_add_growing(&t->merged, h)) < 0)
		return rc;
	return merged(st, f, t, index, e);
}

/* The reader leaves payloads to us (defer_payload). A line outside the
 * selection is only vetted (its errors are reported all the same); a
 * selected one of a tag already met is added straight into the tag's merge
 * when nothing else needs its histogram, which spares a histogram's worth
 * of counters per line; any other is decoded and taken whole. 0, or a
 * negative errno: *bad_payload marks a malformed payload (*why says how),
 * *merge_err a merge failure. */
static int take_line(struct state *st, struct file *f, tb_log_entry *e, enum pass pass,
		     bool *bad_payload, bool *merge_err, const char **why)
{
	*bad_payload = *merge_err = false;
	int rc;
	if (!selected(st, e)) {
		/* the second pass reads the same lines: vetted already */
		rc = pass == PASS_STEADY ? 0 : tb_v2_check_base64(e->payload, e->payload_len, why);
		*bad_payload = rc < 0 && rc != -ENOMEM;
		return rc;
	}
	size_t index;
	bool direct = pass == PASS_ONE && !st->opt.co_interval && !rows_needed(st);
	struct tag_acc *t = direct ? find_tag(st, e->tag, NULL, &index) : NULL;
	if (t) {
		rc = tb_v2_decode_base64_add(e->payload, e->payload_len, &t->merged, why);
		if (rc != -ERANGE) {
			f->used |= rc == 0 || rc == -EOVERFLOW;
			if (rc == 0 || rc == -EOVERFLOW)
				note_file(t, (size_t)(f - st->files));
			*merge_err = rc == -EOVERFLOW;
			*bad_payload = rc < 0 && rc != -EOVERFLOW && rc != -ENOMEM;
			return rc == 0 ? merged(st, f, t, index, e) : rc;
		}
	}
	rc = tb_v2_decode_base64(e->payload, e->payload_len, &e->hist, why);
	if (rc < 0) {
		*bad_payload = rc != -ENOMEM;
		return rc;
	}
	return take_entry(st, f, e, pass, merge_err);
}

static void take_error(struct state *st, const struct file *f, const tb_log_entry *e, int rc)
{
	st->status = TB_EXIT_INPUT;
	if (rc == -EOVERFLOW)
		tb_cli_error(VERB, "%s: line %zu: tag '%s' would count more than 2^63 samples; "
			     "line not merged", f->path, e->line, e->tag);
	else if (rc == -E2BIG)
		tb_cli_error(VERB, "%s: line %zu: --correct-co %" PRId64 " would back-fill more than "
			     "%lld values for one bucket of tag '%s' (max %" PRId64 "); is the interval "
			     "in the log's unit?", f->path, e->line, st->opt.co_interval,
			     TB_CO_MAX_BACKFILL, e->tag, tb_hist_max(&e->hist));
	else
		tb_cli_error(VERB, "%s: line %zu: %s", f->path, e->line, strerror(-rc));
}

/* Read the selected lines of one file. Reader errors are reported in the
 * first pass only; the second pass sees the same lines. */
static void scan_file(struct state *st, struct file *f, enum pass pass)
{
	tb_log_reader r;
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&r, f->text, f->len);
	r.defer_payload = true;
	bool first_pass = pass != PASS_STEADY;
	int rc;
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		if (rc == -ENOMEM) {
			tb_cli_error(VERB, "%s: out of memory", f->path);
			st->status = TB_EXIT_INPUT;
			break;
		}
		if (rc < 0) {
			if (first_pass) {
				tb_cli_error(VERB, "%s: %s", f->path, r.err);
				st->status = TB_EXIT_INPUT;
			}
			continue;
		}
		bool bad_payload, merge_err;
		const char *why = "unknown";
		int taken = take_line(st, f, &e, pass, &bad_payload, &merge_err, &why);
		if (taken == -ENOMEM) {
			tb_cli_error(VERB, "%s: out of memory", f->path);
			st->status = TB_EXIT_INPUT;
			break;
		}
		if (bad_payload) {
			/* what the reader says of a line it decodes itself */
			if (first_pass) {
				tb_cli_error(VERB, "%s: line %zu: histogram payload: %s", f->path, r.line, why);
				st->status = TB_EXIT_INPUT;
			}
			continue;
		}
		if (taken < 0 && (first_pass || merge_err))
			take_error(st, f, &e, taken);
	}
	if (first_pass && r.have_start &&
	    (!st->have_start_time || r.start_time_sec < st->first_start_time)) {
		st->first_start_time = r.start_time_sec;
		st->have_start_time = true;
	}
	tb_log_entry_free(&e);
}

static void read_files(struct state *st, char **paths, size_t n)
{
	st->files = calloc(n ? n : 1, sizeof(*st->files));
	if (!st->files) {
		tb_cli_error(VERB, "out of memory");
		st->status = TB_EXIT_INPUT;
		return;
	}
	st->nfiles = n;
	bool stdin_read = false;
	for (size_t i = 0; i < n; i++) {
		struct file *f = &st->files[i];
		f->path = paths[i];
		if (!strcmp(f->path, TB_LOG_STDIN) && stdin_read) {
			tb_cli_error(VERB, "'-' (standard input) is given twice; it is read once");
			st->status = TB_EXIT_INPUT;
			continue;
		}
		stdin_read |= !strcmp(f->path, TB_LOG_STDIN);
		int rc = tb_log_load(f->path, TB_LOG_INFLATED_MAX, &f->text, &f->len);
		if (rc < 0) {
			tb_cli_error(VERB, "cannot read %s: %s", f->path, tb_log_load_strerror(rc));
			st->status = TB_EXIT_INPUT;
			f->text = NULL;
		}
	}
}

static void scan(struct state *st, enum pass pass)
{
	st->next_row = 0;
	for (size_t i = 0; i < st->nfiles; i++) {
		if (st->files[i].text)
			scan_file(st, &st->files[i], pass);
	}
}

/* ---- warm-up ---- */

static int by_time(const void *a, const void *b)
{
	const tb_interval_figures *x = *(tb_interval_figures *const *)a;
	const tb_interval_figures *y = *(tb_interval_figures *const *)b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : (x > y); /* rows are in reading order */
}

/* Each tag's rows in time order (after the rows are complete). */
static int group_rows(struct state *st)
{
	for (size_t i = 0; i < st->nrows; i++)
		st->tags[st->rows[i].tag].nrun++;
	for (size_t t = 0; t < st->ntags; t++) {
		st->tags[t].run = calloc(st->tags[t].nrun ? st->tags[t].nrun : 1,
					 sizeof(*st->tags[t].run));
		if (!st->tags[t].run)
			return -ENOMEM;
		st->tags[t].nrun = 0;
	}
	for (size_t i = 0; i < st->nrows; i++) {
		struct tag_acc *t = &st->tags[st->rows[i].tag];
		t->run[t->nrun++] = &st->rows[i].f;
	}
	for (size_t t = 0; t < st->ntags; t++)
		qsort(st->tags[t].run, st->tags[t].nrun, sizeof(*st->tags[t].run), by_time);
	return 0;
}

static int decide_warmup(struct state *st)
{
	for (size_t t = 0; t < st->ntags; t++) {
		struct tag_acc *a = &st->tags[t];
		double seconds = st->opt.warmup == WARMUP_AUTO ? -1.0 : st->opt.warmup_s;
		int rc = tb_warmup_mark(a->run, a->nrun, seconds, &a->warm);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The refusal, once per open-loop file that had a selected tag to correct. */
static void explain_refusal(const struct state *st)
{
	for (size_t i = 0; i < st->nfiles; i++) {
		const struct file *f = &st->files[i];
		if (!f->refused)
			continue;
		char what[TB_LOG_TAG_MAX + 8];
		snprintf(what, sizeof(what), *f->refused_tag ? "tag '%s'" : "the untagged lines%s",
			 f->refused_tag);
		tb_cli_error(VERB, "--correct-co refused for %s of %s: the log is marked open-loop "
			     "(latencies measured from the intended send time already count the wait "
			     "behind a stall; back-filling would count it twice). Only closed-loop "
			     "data may be corrected: tags ending in '%s' (select them with --tag) or "
			     "logs of closed-loop tools.", what, f->path, CLOSED_LOOP_SUFFIX);
	}
}

static void warn_unmarked(const struct state *st)
{
	for (size_t i = 0; i < st->nfiles; i++) {
		const struct file *f = &st->files[i];
		if (f->unmarked_corrected)
			tb_cli_error(VERB, "warning: %s has no open-loop mark; --correct-co assumes its "
				     "latencies come from a closed-loop client (timed from the actual "
				     "send), which this tool cannot check", f->path);
	}
}

/* ---- output ---- */

static const char *const warmup_status[] = {
	[TB_WARMUP_FOUND] = "found",
	[TB_WARMUP_TOO_FEW] = "not_enough_intervals",
	[TB_WARMUP_NO_STEADY] = "no_steady_state",
	[TB_WARMUP_FIXED] = "fixed",
};

static const char *tag_label(const char *name)
{
	return *name ? name : "(untagged)";
}

static size_t non_empty(const struct tag_acc *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nrun; i++)
		n += t->run[i]->count > 0;
	return n;
}

/* The sentence saying where a tag's warm-up ends (no newline). */
static void print_warmup(FILE *out, const struct tag_acc *t)
{
	fprintf(out, "%s%s: ", *t->name ? "tag " : "", tag_label(t->name));
	switch (t->warm.outcome) {
	case TB_WARMUP_FOUND:
	case TB_WARMUP_FIXED:
		fprintf(out, "warm-up ends at %.1f s (%zu interval%s discarded)", t->warm.seconds,
			t->warm.discarded, t->warm.discarded == 1 ? "" : "s");
		break;
	case TB_WARMUP_TOO_FEW:
		fprintf(out, "not enough intervals to find a steady state (%zu non-empty, the rule "
			"needs %d); nothing discarded", non_empty(t), TB_WARMUP_MIN_INTERVALS);
		break;
	case TB_WARMUP_NO_STEADY:
		fprintf(out, "no steady state found (p50 or p99 still drift from the medians of the "
			"rest of the run after half of it); nothing discarded");
		break;
	}
}

static void json_series(FILE *out, const struct tag_acc *t)
{
	fprintf(out, ",\"series\":[");
	for (size_t i = 0; i < t->nrun; i++) {
		const tb_interval_figures *f = t->run[i];
		fprintf(out, "%s{\"t\":%.3f,\"start_s\":%.3f,\"length_s\":%.3f,\"count\":%" PRId64
			",\"p50\":%" PRId64 ",\"p99\":%" PRId64 ",\"p99_9\":%" PRId64
			",\"max\":%" PRId64 ",\"warmup\":%s}",
			i ? "," : "", f->start - t->run[0]->start, f->start, f->length, f->count,
			f->p50, f->p99, f->p99_9, f->max, f->warmup ? "true" : "false");
	}
	fputc(']', out);
}

/* Keys after the original ones (README's stable interface): additions only. */
static void json_additions(FILE *out, const struct state *st, const struct tag_acc *t)
{
	if (st->opt.warmup == WARMUP_NONE)
		fprintf(out, ",\"warmup_s\":0,\"warmup_intervals\":0,\"warmup_status\":\"none\"");
	else if (isnan(t->warm.seconds))
		fprintf(out, ",\"warmup_s\":null,\"warmup_intervals\":0,\"warmup_status\":\"%s\"",
			warmup_status[t->warm.outcome]);
	else
		fprintf(out, ",\"warmup_s\":%.3f,\"warmup_intervals\":%zu,\"warmup_status\":\"%s\"",
			t->warm.seconds, t->warm.discarded, warmup_status[t->warm.outcome]);
	if (st->opt.co_interval)
		fprintf(out, ",\"co_interval\":%" PRId64, st->opt.co_interval);
	if (st->opt.series)
		json_series(out, t);
}

/* Calls fn(out, k, field) for each "#[env key=value]" line in the header of
 * the first readable file that has them (the machine the log was measured
 * on, as tailbusd records it). Returns how many. */
typedef void env_fn(FILE *out, int k, const tb_log_env_field *f);
static int each_env_line(const struct state *st, env_fn *fn, FILE *out)
{
	int n = 0;
	for (size_t i = 0; i < st->nfiles && !n; i++) {
		const struct file *f = &st->files[i];
		size_t pos = 0;
		tb_log_env_field field;
		while (f->text && tb_log_env_next(f->text, f->len, &pos, &field))
			fn(out, n++, &field);
	}
	return n;
}

static void env_ignore(FILE *out, int k, const tb_log_env_field *f)
{
	(void)out, (void)k, (void)f;
}

static void env_json_member(FILE *out, int k, const tb_log_env_field *f)
{
	fprintf(out, "%s\"%.*s\":\"", k ? "," : "", (int)f->key_len, f->key);
	for (size_t i = 0; i < f->value_len; i++) {
		unsigned char c = (unsigned char)f->value[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void env_text_item(FILE *out, int k, const tb_log_env_field *f)
{
	static const char *shown[] = {"hostname", "kernel", "cpu_model", "cpus", "clocksource", "commit"};
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		if (strlen(shown[i]) == f->key_len && !strncmp(f->key, shown[i], f->key_len))
			fprintf(out, "%s%.*s=%.*s", k ? " " : "", (int)f->key_len, f->key,
				(int)f->value_len, f->value);
	}
}

static void print_json(FILE *out, const struct state *st)
{
	fprintf(out, "{\"tags\":[");
	for (size_t i = 0; i < st->ntags; i++) {
		tb_summary s;
		tb_summarize(&st->tags[i].merged, &s);
		fprintf(out, "%s{\"tag\":", i ? "," : "");
		tb_cli_json_string(out, st->tags[i].name);
		fprintf(out, ",\"intervals\":%zu,\"count\":%" PRId64 ",\"min\":%" PRId64,
			st->tags[i].intervals, s.total, s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
			fprintf(out, ",\"%s\":%" PRId64, tb_summary_keys[p], s.pct[p]);
		fprintf(out, ",\"max\":%" PRId64 ",\"mean\":%.17g,\"insufficient\":[", s.max, s.mean);
		for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			if (s.insufficient[p])
				fprintf(out, "%s\"%s\"", n++ ? "," : "", tb_summary_keys[p]);
		}
		fputc(']', out);
		json_additions(out, st, &st->tags[i]);
		fputc('}', out);
	}
	/* where the log was measured (tailbusd logs carry it), or null */
	fprintf(out, "],\"env\":");
	if (each_env_line(st, env_ignore, out) == 0) {
		fprintf(out, "null");
	} else {
		fputc('{', out);
		each_env_line(st, env_json_member, out);
		fputc('}', out);
	}
	fprintf(out, "}\n");
}

static void print_csv(FILE *out, const struct state *st)
{
	bool warm = st->opt.warmup != WARMUP_NONE;
	fprintf(out, "tag,intervals,total,min");
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
		fprintf(out, ",%s", tb_summary_keys[p]);
	fprintf(out, ",max,mean,insufficient%s\n", warm ? ",warmup_s,warmup_intervals" : "");
	for (size_t i = 0; i < st->ntags; i++) {
		const struct tag_acc *t = &st->tags[i];
		tb_summary s;
		tb_summarize(&t->merged, &s);
		fprintf(out, "%s,%zu,%" PRId64 ",%" PRId64, t->name, t->intervals, s.total, s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
			fprintf(out, ",%" PRId64, s.pct[p]);
		fprintf(out, ",%" PRId64 ",%.3f,", s.max, s.mean);
		for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			if (s.insufficient[p])
				fprintf(out, "%s%s", n++ ? " " : "", tb_summary_keys[p]);
		}
		if (warm && isnan(t->warm.seconds))
			fprintf(out, ",,0");
		else if (warm)
			fprintf(out, ",%.3f,%zu", t->warm.seconds, t->warm.discarded);
		fputc('\n', out);
	}
}

/* --series --format csv: one row per interval instead of the summary. */
static void print_series_csv(FILE *out, const struct state *st)
{
	fprintf(out, "tag,t,start,length,count,p50,p99,p99_9,max,warmup\n");
	for (size_t i = 0; i < st->ntags; i++) {
		const struct tag_acc *t = &st->tags[i];
		for (size_t k = 0; k < t->nrun; k++) {
			const tb_interval_figures *f = t->run[k];
			fprintf(out, "%s,%.3f,%.3f,%.3f,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
				",%" PRId64 ",%d\n",
				t->name, f->start - t->run[0]->start, f->start, f->length, f->count,
				f->p50, f->p99, f->p99_9, f->max, f->warmup);
		}
	}
}

static void print_series_text(FILE *out, const struct tag_acc *t)
{
	fprintf(out, "  series (t: seconds after the first interval; w: warm-up, not merged)\n");
	fprintf(out, "  %10s %12s %14s %14s %14s %14s\n", "t", "count", "p50", "p99", "p99.9",
		"max");
	for (size_t k = 0; k < t->nrun; k++) {
		const tb_interval_figures *f = t->run[k];
		fprintf(out, "  %10.3f %12" PRId64 " %14" PRId64 " %14" PRId64 " %14" PRId64
			" %14" PRId64 "%s\n",
			f->start - t->run[0]->start, f->count, f->p50, f->p99, f->p99_9, f->max,
			f->warmup ? "  w" : "");
	}
}

static void print_text(FILE *out, const struct state *st)
{
	bool any_mark = false;
	if (st->opt.co_interval)
		fprintf(out, "corrected for coordinated omission with expected interval %" PRId64
			" (closed-loop back-fill)\n\n", st->opt.co_interval);
	for (size_t i = 0; i < st->ntags; i++) {
		const struct tag_acc *t = &st->tags[i];
		tb_summary s;
		tb_summarize(&t->merged, &s);
		if (i)
			fputc('\n', out);
		if (st->opt.warmup != WARMUP_NONE) {
			print_warmup(out, t);
			fputc('\n', out);
		}
		fprintf(out, "%s%s: %zu intervals, %" PRId64 " samples\n",
			*t->name ? "tag " : "(untagged)", t->name, t->intervals, s.total);
		fprintf(out, "  %-7s %15" PRId64 "\n", "min", s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			fprintf(out, "  %-7s %15" PRId64 "%s\n", tb_summary_labels[p], s.pct[p],
				s.insufficient[p] ? " *" : "");
			any_mark |= s.insufficient[p];
		}
		fprintf(out, "  %-7s %15" PRId64 "\n", "max", s.max);
		fprintf(out, "  %-7s %19.3f\n", "mean", s.mean);
		if (st->opt.series)
			print_series_text(out, t);
	}
	if (any_mark)
		fprintf(out, "\n* fewer than %d samples beyond this percentile: too few to trust "
			"(p99.9 needs about %d).\n",
			TB_MIN_SAMPLES_BEYOND, TB_MIN_SAMPLES_BEYOND * 1000);
	/* the machine the log was measured on, when its header says */
	fprintf(out, "\nmeasured on (log header): ");
	if (!each_env_line(st, env_text_item, out))
		fprintf(out, "not recorded");
	fputc('\n', out);
}

/* Formats without a place for it (csv, hgrm) get the warm-up on stderr. */
static void note_warmup(const struct state *st)
{
	for (size_t i = 0; i < st->ntags; i++) {
		fprintf(stderr, "tailbus %s: ", VERB);
		print_warmup(stderr, &st->tags[i]);
		fputc('\n', stderr);
	}
}

/* ---- plots ---- */

/* Subtitle room: the files' names, the time range and the counts. */
#define SUBTITLE_MAX 512

/* The span of tag t's intervals (with the warm-up's, or only those merged),
 * or of every tag's with t NULL; false when there is none. */
static bool span_of(const struct state *st, const struct tag_acc *t, bool warmup, double *from,
		    double *to)
{
	*from = INFINITY;
	*to = -INFINITY;
	for (size_t k = 0; k < st->ntags; k++) {
		const struct tag_acc *a = &st->tags[k];
		if (t && a != t)
			continue;
		for (size_t i = 0; i < a->nrun; i++) {
			if (a->run[i]->warmup && !warmup)
				continue;
			*from = fmin(*from, a->run[i]->start);
			*to = fmax(*to, a->run[i]->start + a->run[i]->length);
		}
	}
	return *from <= *to;
}

/* "FILES, TIME RANGE[, EXTRA]": what a plot was drawn from, tag t's files
 * or, with t NULL, every file an interval was taken from. */
static void plot_subtitle(const struct state *st, const struct tag_acc *t, bool warmup,
			  const char *extra, char *buf, size_t cap)
{
	size_t at = 0, named = 0, used = 0, first[SUBTITLE_FILES];
	buf[0] = '\0';
	if (t) {
		used = t->nfiles;
		memcpy(first, t->files, sizeof(first));
	} else {
		for (size_t i = 0; i < st->nfiles; i++) {
			if (st->files[i].used && used < SUBTITLE_FILES)
				first[used] = i;
			used += st->files[i].used;
		}
	}
	for (; named < used && at < cap; named++) {
		if (named == SUBTITLE_FILES) {
			at += (size_t)snprintf(buf + at, cap - at, " and %zu more", used - named);
			break;
		}
		const char *path = st->files[first[named]].path, *slash = strrchr(path, '/');
		at += (size_t)snprintf(buf + at, cap - at, "%s%s", named ? ", " : "",
				       slash ? slash + 1 : path);
	}
	double from, to;
	char range[96];
	if (at < cap && span_of(st, t, warmup, &from, &to)) {
		tb_plot_time_range(range, sizeof(range), from, to);
		at += (size_t)snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", range);
	}
	if (at < cap && extra)
		snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", extra);
}

static int plot_spectra(const struct state *st, FILE *note)
{
	tb_plot_spectrum *spectra = calloc(st->ntags, sizeof(*spectra));
	char (*labels)[TB_LOG_TAG_MAX + 8] = calloc(st->ntags, sizeof(*labels));
	char path[PATH_MAX];
	if (!spectra || !labels) {
		free(spectra);
		free(labels);
		return -ENOMEM;
	}
	for (size_t i = 0; i < st->ntags; i++) {
		snprintf(labels[i], sizeof(labels[i]), "%s%s", *st->tags[i].name ? "tag " : "",
			 tag_label(st->tags[i].name));
		spectra[i] = (tb_plot_spectrum){labels[i], &st->tags[i].merged, NULL, TB_PLOT_SOLID};
	}
	char subtitle[SUBTITLE_MAX];
	plot_subtitle(st, NULL, false, st->opt.warmup != WARMUP_NONE ? "warm-up left out" : NULL, subtitle,
		      sizeof(subtitle));
	int rc = tb_plot_path(path, sizeof(path), st->opt.plot_dir, "spectrum", "");
	if (rc == 0)
		rc = tb_plot_spectra(path, "Latency by percentile", subtitle, spectra, st->ntags,
				     st->opt.ticks);
	if (rc == 0)
		fprintf(note, "plot: %s\n", path);
	else if (rc != -ENOMEM)
		tb_cli_error(VERB, "cannot write %s/spectrum.svg: %s", st->opt.plot_dir, strerror(-rc));
	free(spectra);
	free(labels);
	return rc;
}

/* p99, p99.9 and max of each interval against its start; an empty interval
 * breaks the lines. A p99 or p99.9 of an interval with too few samples beyond
 * it is drawn hollow; the warm-up's end is marked. */
static int plot_over_time(const struct state *st, const struct tag_acc *t, FILE *note)
{
	enum { P99, P999, MAX, FIGURES };
	static const char *const names[FIGURES] = {"p99", "p99.9", "max"};
	static const double levels[FIGURES] = {99.0, 99.9, 100.0};
	static const enum tb_plot_stroke strokes[FIGURES] = {TB_PLOT_SOLID, TB_PLOT_DASHED,
							      TB_PLOT_DOTTED};
	size_t rows = t->nrun ? t->nrun : 1;
	tb_plot_point *pts = calloc(FIGURES * rows, sizeof(*pts));
	bool *weak = calloc(FIGURES * rows, sizeof(*weak));
	if (!pts || !weak) {
		free(pts);
		free(weak);
		return -ENOMEM;
	}
	tb_plot_series series[FIGURES];
	for (int k = 0; k < FIGURES; k++)
		series[k] = (tb_plot_series){names[k], pts + (size_t)k * t->nrun, t->nrun,
					     tb_plot_color(TB_PLOT_DISTINCT, (size_t)k), strokes[k], false,
					     k == MAX ? NULL : weak + (size_t)k * t->nrun};
	int64_t samples = 0;
	for (size_t i = 0; i < t->nrun; i++) {
		const tb_interval_figures *f = t->run[i];
		double x = f->start - t->run[0]->start;
		pts[i] = (tb_plot_point){x, f->count ? (double)f->p99 : NAN};
		pts[t->nrun + i] = (tb_plot_point){x, f->count ? (double)f->p99_9 : NAN};
		pts[2 * t->nrun + i] = (tb_plot_point){x, f->count ? (double)f->max : NAN};
		for (int k = P99; k < MAX; k++)
			weak[(size_t)k * t->nrun + i] = !tb_percentile_sufficient(f->count, levels[k]);
		samples += f->count;
	}
	char title[TB_LOG_TAG_MAX + 64], path[PATH_MAX], subtitle[SUBTITLE_MAX], extra[96], count[32];
	snprintf(title, sizeof(title), "p99, p99.9 and max per interval: %s%s",
		 *t->name ? "tag " : "", tag_label(t->name));
	tb_plot_count(count, sizeof(count), samples);
	snprintf(extra, sizeof(extra), "%zu interval%s, %s samples", t->nrun, t->nrun == 1 ? "" : "s",
		 count);
	plot_subtitle(st, t, true, extra, subtitle, sizeof(subtitle));
	tb_plot_marker warm = {t->warm.seconds, "warm-up ends"};
	tb_plot p = {
		.title = title,
		.subtitle = subtitle,
		.x = {"seconds after the first interval", TB_PLOT_LINEAR, TB_PLOT_NUMBER},
		.y = {"latency", TB_PLOT_LOG, TB_PLOT_NS},
		.series = series,
		.nseries = FIGURES,
		.markers = &warm,
		.nmarkers = t->warm.discarded > 0 ? 1 : 0,
	};
	int rc = tb_plot_path(path, sizeof(path), st->opt.plot_dir, "over-time", t->name);
	if (rc == 0 && (rc = tb_plot_write(path, &p)) == 0)
		fprintf(note, "plot: %s\n", path);
	else
		tb_cli_error(VERB, "cannot write the over-time plot of %s in %s: %s",
			     tag_label(t->name), st->opt.plot_dir, strerror(-rc));
	free(pts);
	free(weak);
	return rc;
}

static int write_plots(const struct state *st, FILE *note)
{
	if (st->ntags == 0)
		return 0;
	int rc = plot_spectra(st, note);
	for (size_t i = 0; i < st->ntags && rc == 0; i++)
		rc = plot_over_time(st, &st->tags[i], note);
	if (rc == -ENOMEM)
		tb_cli_error(VERB, "out of memory writing the plots");
	return rc;
}

static void print_hgrm(FILE *out, const struct state *st, bool csv)
{
	for (size_t i = 0; i < st->ntags; i++) {
		if (st->ntags > 1)
			fprintf(out, "%s#[Tag: %s]\n", i ? "\n" : "",
				*st->tags[i].name ? st->tags[i].name : "(untagged)");
		double base = st->have_start_time ? st->first_start_time : 0.0;
		/* wall-clock bounds are shown relative to the first StartTime, as Java's are */
		tb_report_hgrm_header(out, st->opt.start - (st->opt.start_wall ? base : 0),
				      st->opt.end - (st->opt.end_wall ? base : 0), base);
		tb_report_hgrm(out, &st->tags[i].merged, st->opt.ticks, st->opt.unit_ratio, csv);
	}
}

/* --format prom-native: a comment line per tag with its count, zero bucket
 * and sum, then one line per non-empty native bucket. */
static int print_prom_native(FILE *out, const struct state *st)
{
	fprintf(out, "# native buckets at schema %d: bucket i holds (2^((i-1)/%d), 2^(i/%d)] "
		"seconds; zero threshold %.17g\n", st->opt.schema, 1 << st->opt.schema,
		1 << st->opt.schema, TB_PROM_ZERO_THRESHOLD);
	for (size_t t = 0; t < st->ntags; t++) {
		tb_prom_native n;
		int rc = tb_prom_native_from_hist(&st->tags[t].merged, st->opt.schema, &n);
		if (rc < 0) {
			tb_cli_error(VERB, "tag '%s': %s", st->tags[t].name, strerror(-rc));
			return rc;
		}
		/* an untagged log's lines still have five fields */
		const char *tag = *st->tags[t].name ? st->tags[t].name : "(untagged)";
		fprintf(out, "# %s count %" PRIu64 " zero_count %" PRIu64 " sum %.9g\n", tag, n.count,
			n.zero_count, n.sum);
		for (uint32_t i = 0; i < n.n; i++) {
			int32_t index = n.first + (int32_t)i;
			if (n.counts[i])
				fprintf(out, "%s %" PRId32 " %.17g %.17g %" PRIu64 "\n", tag,
					index, tb_prom_native_upper(index - 1, n.schema),
					tb_prom_native_upper(index, n.schema), n.counts[i]);
		}
		tb_prom_native_free(&n);
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	if (x->start_abs != y->start_abs)
		return x->start_abs < y->start_abs ? -1 : 1;
	return x->order < y->order ? -1 : (x->order > y->order);
}

/* used[t * nfiles + i]: tag t has a kept line from file i. NULL: no memory. */
static bool *tag_sources(const struct state *st)
{
	bool *used = calloc(st->ntags * st->nfiles + 1, sizeof(*used));
	for (size_t i = 0; used && i < st->nkept; i++)
		used[st->kept[i].tag * st->nfiles + st->kept[i].file] = true;
	return used;
}

/* The open-loop marks: the whole-log mark when every written tag is open-loop
 * in an input it came from, else one per-tag mark per such tag. */
static void write_open_loop_marks(FILE *f, struct state *st, const bool *used)
{
	size_t written = 0, open = 0;
	bool *is_open = calloc(st->ntags + 1, sizeof(*is_open));
	if (!is_open) {
		fprintf(f, "%s\n", TB_OPEN_LOOP_MARK); /* refusing too much is the safe side */
		return;
	}
	for (size_t t = 0; t < st->ntags; t++) {
		bool any = false;
		for (size_t i = 0; i < st->nfiles; i++) {
			if (!used[t * st->nfiles + i])
				continue;
			any = true;
			is_open[t] |= file_open_loop(&st->files[i], st->tags[t].name);
		}
		written += any;
		open += is_open[t];
	}
	if (open && open == written) {
		fprintf(f, "%s\n", TB_OPEN_LOOP_MARK);
	} else {
		char line[TB_LOG_TAG_MAX + sizeof(TB_OPEN_LOOP_TAG_PREFIX) + 2];
		for (size_t t = 0; t < st->ntags; t++) {
			if (is_open[t] && tb_log_format_open_loop_tag(line, sizeof(line), st->tags[t].name) > 0)
				fputs(line, f);
		}
	}
	free(is_open);
}

static void write_sources(FILE *f, const struct state *st, const bool *used)
{
	char line[HEADER_LINE_MAX + 1];
	for (size_t t = 0; t < st->ntags; t++) {
		for (size_t i = 0; i < st->nfiles; i++) {
			if (used[t * st->nfiles + i] &&
			    tb_log_format_source(line, sizeof(line), st->tags[t].name, st->files[i].path) > 0)
				fputs(line, f);
		}
	}
}

/* The env lines of the first used input that has them; a warning when
 * another used input was measured elsewhere (its env lines differ). */
static void write_env(FILE *f, const struct state *st)
{
	const struct file *from = NULL;
	for (size_t i = 0; i < st->nfiles; i++) {
		const struct file *g = &st->files[i];
		size_t pos = 0;
		tb_log_env_field field;
		if (!g->used || !tb_log_env_next(g->text, g->len, &pos, &field))
			continue;
		if (!from) {
			from = g;
			do
				fprintf(f, "%.*s\n", (int)field.line_len, field.line);
			while (tb_log_env_next(g->text, g->len, &pos, &field));
			continue;
		}
		if (!tb_log_env_same(from->text, from->len, g->text, g->len))
			tb_cli_error(VERB, "warning: %s and %s were measured on different machines or "
				     "builds (their env lines differ); %s keeps those of %s", from->path,
				     g->path, st->opt.output_log, from->path);
	}
}

static int write_output_log(struct state *st)
{
	bool *used = tag_sources(st);
	FILE *f = used ? fopen(st->opt.output_log, "w") : NULL;
	if (!f) {
		int err = used ? errno : ENOMEM;
		tb_cli_error(VERB, "cannot write %s: %s", st->opt.output_log, strerror(err));
		free(used);
		return -err;
	}
	double base = st->have_start_time ? st->first_start_time : 0.0;
	char header[1024], num[3][64];
	int n = tb_log_format_header(header, sizeof(header), "Written by tailbus replay", base, base);
	/* what the inputs said of their data goes after the comment line */
	const char *rest = n > 0 ? strchr(header, '\n') : NULL;
	if (rest) {
		fprintf(f, "%.*s", (int)(rest + 1 - header), header);
		write_open_loop_marks(f, st, used);
		write_sources(f, st, used);
		write_env(f, st);
		fputs(rest + 1, f);
	}
	free(used);
	qsort(st->kept, st->nkept, sizeof(*st->kept), by_start);
	for (size_t i = 0; i < st->nkept; i++) {
		const struct kept *k = &st->kept[i];
		const char *tag = st->tags[k->tag].name;
		tb_fmt_java_fixed(num[0], sizeof(num[0]), k->start_abs - base, 0, 3);
		tb_fmt_java_fixed(num[1], sizeof(num[1]), k->length, 0, 3);
		tb_fmt_java_fixed(num[2], sizeof(num[2]), k->max_field, 0, 3);
		fprintf(f, "%s%s%s%s,%s,%s,%.*s\n", *tag ? "Tag=" : "", tag, *tag ? "," : "", num[0],
			num[1], num[2], (int)k->payload_len, k->payload);
	}
	if (fclose(f) != 0) {
		tb_cli_error(VERB, "cannot write %s: %s", st->opt.output_log, strerror(errno));
		return -EIO;
	}
	return 0;
}

/* ---- options ---- */

/* What each option takes (tailbus/units.h): --start, --end and --warmup are
 * durations, a bare number in seconds as before; the rest whole numbers. */
static const tb_unit_spec offset_spec = {TB_UNIT_DURATION, TB_UNIT_S, 0, INT64_MAX};
static const tb_unit_spec digits_spec = {TB_UNIT_COUNT, 1, TB_HIST_MIN_SIG_DIGITS,
					 TB_HIST_MAX_SIG_DIGITS};
static const tb_unit_spec ticks_spec = {TB_UNIT_COUNT, 1, 1, 1000};
static const tb_unit_spec co_spec = {TB_UNIT_COUNT, 1, 1, INT64_MAX};

/* A duration option into seconds. */
/* --start/--end: a wall-clock time (seconds since the epoch, *wall set), or
 * a duration after each file's StartTime. */
static bool parse_seconds(const char *name, const char *arg, double *seconds);
static bool parse_offset(const char *name, const char *arg, double *seconds);
static bool parse_bound(const char *name, const char *arg, double *seconds, bool *wall)
{
	int64_t ns;
	*wall = tb_unit_parse_wallclock(arg, &ns) == 0;
	if (*wall) {
		*seconds = (double)ns / TB_UNIT_S;
		return true;
	}
	return parse_offset(name, arg, seconds);
}

static bool parse_seconds(const char *name, const char *arg, double *seconds)
{
	int64_t ns;
	if (!tb_cli_unit(VERB, name, arg, &offset_spec, &ns))
		return false;
	*seconds = (double)ns / TB_UNIT_S;
	return true;
}

/* --start and --end: offsets from the log's base time, which may lie
 * before it (Java's -start takes negative values too). */
static bool parse_offset(const char *name, const char *arg, double *seconds)
{
	int64_t ns;
	if (arg[0] != '-' || tb_unit_parse(arg + 1, &offset_spec, &ns) < 0)
		return parse_seconds(name, arg, seconds); /* its error names the whole value */
	*seconds = -(double)ns / TB_UNIT_S;
	return true;
}

static bool parse_warmup(const char *name, const char *arg, struct options *o)
{
	if (!strcmp(arg, "auto")) {
		o->warmup = WARMUP_AUTO;
		return true;
	}
	o->warmup = WARMUP_FIXED;
	return parse_seconds(name, arg, &o->warmup_s);
}

static int check_options(const struct options *o)
{
	if (o->tag && !tb_log_tag_valid(o->tag) && *o->tag) {
		tb_cli_error(VERB, "--tag '%s' is not a valid tag (no ',', space or newline)", o->tag);
		return -EINVAL;
	}
	if (o->start > o->end) {
		tb_cli_error(VERB, "--start %g s is after --end %g s: no interval can be selected", o->start,
			     o->end);
		return -EINVAL;
	}
	if (o->series && (o->format == FMT_HGRM || o->format == FMT_HGRM_CSV)) {
		tb_cli_error(VERB, "--series prints in text, csv or json, not in the hgrm formats");
		return -EINVAL;
	}
	if (o->schema_given && o->format != FMT_PROM_NATIVE) {
		tb_cli_error(VERB, "--schema goes with --format prom-native");
		return -EINVAL;
	}
	if (o->format == FMT_PROM_NATIVE && (o->series || o->plot_dir)) {
		tb_cli_error(VERB, "--format prom-native prints buckets: no --series or --plot");
		return -EINVAL;
	}
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"tag", required_argument, 0, 't'},       {"start", required_argument, 0, 's'},
		{"end", required_argument, 0, 'e'},       {"format", required_argument, 0, 'f'},
		{"output-log", required_argument, 0, 'o'}, {"digits", required_argument, 0, 'd'},
		{"unit-ratio", required_argument, 0, 'u'}, {"ticks", required_argument, 0, 'k'},
		{"warmup", required_argument, 0, 'w'},    {"series", no_argument, 0, 'S'},
		{"correct-co", required_argument, 0, 'c'}, {"plot", required_argument, 0, 'p'},
		{"schema", required_argument, 0, 'm'},
		{"help", no_argument, 0, 'h'},            {"version", no_argument, 0, 'V'},
		{0, 0, 0, 0}};
	*o = (struct options){.start = -INFINITY, .end = INFINITY, .format = FMT_TEXT,
			      .schema = TB_PROM_SCHEMA_DEFAULT,
			      .digits = MERGE_LOG_LAYOUT, .unit_ratio = TB_HGRM_JAVA_UNIT_RATIO,
			      .ticks = TB_HGRM_DEFAULT_TICKS, .warmup = WARMUP_NONE};
	int c, idx = 0;
	int64_t n = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		const char *name = longs[idx].name;
		bool ok = true;
		switch (c) {
		case 't': o->tag = optarg; break;
		case 's': ok = parse_bound(name, optarg, &o->start, &o->start_wall); break;
		case 'e': ok = parse_bound(name, optarg, &o->end, &o->end_wall); break;
		case 'f':
			if (!strcmp(optarg, "text")) o->format = FMT_TEXT;
			else if (!strcmp(optarg, "json")) o->format = FMT_JSON;
			else if (!strcmp(optarg, "csv")) o->format = FMT_CSV;
			else if (!strcmp(optarg, "hgrm")) o->format = FMT_HGRM;
			else if (!strcmp(optarg, "hgrm-csv")) o->format = FMT_HGRM_CSV;
			else if (!strcmp(optarg, "prom-native")) o->format = FMT_PROM_NATIVE;
			else {
				tb_cli_bad_value(VERB, name, optarg,
						 "want text, json, csv, hgrm, hgrm-csv or prom-native");
				ok = false;
			}
			break;
		case 'o': o->output_log = optarg; break;
		case 'd':
			ok = tb_cli_unit(VERB, name, optarg, &digits_spec, &n);
			o->digits = (int)n;
			break;
		case 'u':
			if (!tb_cli_parse_double(optarg, &o->unit_ratio) || o->unit_ratio <= 0) {
				tb_cli_bad_value(VERB, name, optarg, "want a number above 0");
				ok = false;
			}
			break;
		case 'k':
			ok = tb_cli_unit(VERB, name, optarg, &ticks_spec, &n);
			o->ticks = (int)n;
			break;
		case 'w': ok = parse_warmup(name, optarg, o); break;
		case 'S': o->series = true; break;
		case 'c': ok = tb_cli_unit(VERB, name, optarg, &co_spec, &o->co_interval); break;
		case 'p': o->plot_dir = optarg; break;
		case 'm':
			if (!tb_cli_parse_i64(optarg, &n) || n < TB_PROM_SCHEMA_MIN || n > TB_PROM_SCHEMA_MAX) {
				tb_cli_bad_value(VERB, name, optarg, "a schema is %d..%d",
						 TB_PROM_SCHEMA_MIN, TB_PROM_SCHEMA_MAX);
				ok = false;
			}
			o->schema = (int)n;
			o->schema_given = true;
			break;
		case 'h': usage(stdout); return 1;
		case 'V': tb_cli_version(); return 1;
		default:
			tb_cli_bad_option(VERB, c, argv[optind - 1]);
			if (c == '?')
				usage(stderr);
			return -EINVAL;
		}
		if (!ok)
			return -EINVAL;
	}
	if (optind >= argc) {
		tb_cli_error(VERB, "no log file given");
		usage(stderr);
		return -EINVAL;
	}
	return check_options(o);
}

static void free_state(struct state *st)
{
	for (size_t i = 0; i < st->ntags; i++) {
		tb_hist_free(&st->tags[i].merged);
		free(st->tags[i].run);
	}
	for (size_t i = 0; i < st->nfiles; i++) {
		free(st->files[i].text);
		free(st->files[i].marks);
	}
	if (st->have_corrected)
		tb_hist_free(&st->corrected);
	free(st->tags);
	free(st->files);
	free(st->rows);
	free(st->kept);
}

/* Read, decide the warm-up, merge. 0, or -1 when nothing may be reported. */
static int gather(struct state *st, char **paths, size_t npaths)
{
	read_files(st, paths, npaths);
	scan(st, st->opt.warmup == WARMUP_NONE ? PASS_ONE : PASS_ROWS);
	if (st->refused) {
		explain_refusal(st);
		return -1;
	}
	if (group_rows(st) < 0 || (st->opt.warmup != WARMUP_NONE && decide_warmup(st) < 0)) {
		tb_cli_error(VERB, "out of memory");
		return -1;
	}
	if (st->opt.warmup != WARMUP_NONE)
		scan(st, PASS_STEADY);
	if (st->opt.co_interval)
		warn_unmarked(st);
	return 0;
}

static void report(struct state *st)
{
	switch (st->opt.format) {
	case FMT_TEXT: print_text(stdout, st); break;
	case FMT_JSON: print_json(stdout, st); break;
	case FMT_CSV:
		if (st->opt.series)
			print_series_csv(stdout, st);
		else
			print_csv(stdout, st);
		break;
	case FMT_HGRM: print_hgrm(stdout, st, false); break;
	case FMT_HGRM_CSV: print_hgrm(stdout, st, true); break;
	case FMT_PROM_NATIVE:
		if (print_prom_native(stdout, st) < 0)
			st->status = TB_EXIT_INPUT;
		break;
	}
	bool text = st->opt.format == FMT_TEXT;
	if (st->opt.warmup != WARMUP_NONE && !text && st->opt.format != FMT_JSON)
		note_warmup(st);
	if (st->opt.plot_dir) {
		if (text)
			fputc('\n', stdout);
		if (write_plots(st, text ? stdout : stderr) < 0)
			st->status = TB_EXIT_INPUT;
	}
}

int tb_cmd_replay(int argc, char **argv)
{
	struct state st;
	memset(&st, 0, sizeof(st));
	int rc = parse_options(argc, argv, &st.opt);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	if (gather(&st, argv + optind, (size_t)(argc - optind)) < 0) {
		free_state(&st);
		return TB_EXIT_INPUT;
	}
	size_t unused, intervals = 0;
	for (size_t i = 0; i < st.ntags; i++)
		intervals += st.tags[i].intervals;
	if (st.opt.tag && !find_tag(&st, st.opt.tag, NULL, &unused)) {
		tb_cli_error(VERB, "tag '%s' has no intervals in the selected range of the given files",
			     st.opt.tag);
		st.status = TB_EXIT_INPUT;
	} else if (intervals == 0 && st.status == TB_EXIT_OK) {
		/* an empty report would read as "no latency at all" (where lines
		 * were refused, each has been named already) */
		tb_cli_error(VERB, isinf(st.opt.start) && isinf(st.opt.end)
					   ? "the given files hold no interval lines"
					   : "no interval of the given files lies between --start and --end");
		st.status = TB_EXIT_INPUT;
	}
	report(&st);
	if (st.opt.output_log && write_output_log(&st) < 0)
		st.status = TB_EXIT_INPUT;
	free_state(&st);
	return st.status;
}
