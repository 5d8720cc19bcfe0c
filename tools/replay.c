/* replay.c - `tailbus replay`: read interval logs, merge per tag, report.
 *
 *   tailbus replay FILE... [--tag T] [--start S] [--end E]
 *                  [--format text|json|csv|hgrm|hgrm-csv] [--output-log OUT]
 *
 * Every selected interval of a tag, across all files, is added into one
 * histogram per tag (merged counts, never averaged percentiles). By default
 * the merge histogram takes the layout of the tag's first interval and grows
 * as needed, as the Java HistogramLogProcessor does, so the figures (and the
 * .hgrm text) equal its output. --digits D merges into a fresh histogram of
 * D digits from 1 up instead, as a program calling Histogram.add on a
 * `new Histogram(D)` does (the figures in tests/fixtures/.../EXPECTED.md).
 * --start/--end select intervals whose start lies that many seconds after
 * their file's StartTime, inclusive, as the Java tool does.
 *
 * A bad line or a missing file is reported in one sentence and skipped;
 * everything good is still used, and the exit status says something was wrong.
 * --output-log rewrites the selected intervals (payloads untouched) as one
 * valid log, sorted by start time, tags kept.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tailbus/codec.h"
#include "tailbus/log.h"
#include "tailbus/report.h"
#include "tailbus/summary.h"

#define VERB "replay"
/* --digits D: a fresh auto-resizing histogram from 1 up, like `new Histogram(D)`. */
#define MERGE_LOG_LAYOUT 0
#define MERGE_LOWEST 1
#define MERGE_INITIAL_HIGHEST 2
/* Java's log writer compresses at zlib's best level. */
#define OUTPUT_ZLEVEL 9

enum format { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_HGRM, FMT_HGRM_CSV };

struct options {
	const char *tag; /* NULL: every tag */
	double start, end;
	enum format format;
	const char *output_log;
	int digits;
	double unit_ratio;
	int ticks;
};

struct tag_acc {
	char name[TB_LOG_TAG_MAX];
	tb_hist merged;
	size_t intervals;
};

/* A selected line, kept for --output-log by reference into its file text. */
struct kept {
	size_t tag;
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
	char **texts;
	size_t ntexts;
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
		"Merges the intervals of each tag across FILEs and prints min, p50..p99.99, max\n"
		"and mean with the sample count; '*' marks a percentile with fewer than %d\n"
		"samples beyond it. --start/--end: seconds after each file's StartTime.\n"
		"The merge histogram has the layout of each tag's first interval (as Java's\n"
		"HistogramLogProcessor); --digits D merges into a fresh D-digit one instead.\n"
		"--format hgrm prints HdrHistogram's percentile distribution (values divided\n"
		"by --unit-ratio, %d ticks per half distance unless --ticks).\n",
		TB_MIN_SAMPLES_BEYOND, TB_HGRM_DEFAULT_TICKS);
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

static int keep_line(struct state *st, size_t tag, const tb_log_entry *e, const char *payload,
		     size_t payload_len)
{
	if (st->nkept == st->kept_cap) {
		size_t cap = st->kept_cap ? 2 * st->kept_cap : 1024;
		struct kept *k = realloc(st->kept, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		st->kept = k;
		st->kept_cap = cap;
	}
	st->kept[st->nkept] = (struct kept){tag, e->start_abs_sec, e->length_sec, e->max_field,
					    payload, payload_len, st->nkept};
	st->nkept++;
	return 0;
}

/* The payload is the last field of the line that ends just before r->pos. */
static void last_field(const tb_log_reader *r, const char **p, size_t *n)
{
	size_t end = r->pos;
	while (end > 0 && (r->text[end - 1] == '\n' || r->text[end - 1] == '\r'))
		end--;
	size_t from = end;
	while (from > 0 && r->text[from - 1] != ',')
		from--;
	*p = r->text + from;
	*n = end - from;
}

static int take_entry(struct state *st, const tb_log_reader *r, const tb_log_entry *e)
{
	if (st->opt.tag && strcmp(st->opt.tag, e->tag))
		return 0;
	if (e->offset_sec < st->opt.start || e->offset_sec > st->opt.end)
		return 0;
	size_t index;
	struct tag_acc *t = find_tag(st, e->tag, &e->hist, &index);
	if (!t)
		return -ENOMEM;
	int rc = tb_hist_add_growing(&t->merged, &e->hist);
	if (rc < 0)
		return rc;
	t->intervals++;
	if (st->opt.output_log) {
		const char *payload;
		size_t n;
		last_field(r, &payload, &n);
		return keep_line(st, index, e, payload, n);
	}
	return 0;
}

static void read_one(struct state *st, const char *path)
{
	char *text;
	size_t len;
	int rc = tb_read_file(path, &text, &len);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot read %s: %s", path, strerror(-rc));
		st->status = TB_EXIT_INPUT;
		return;
	}
	char **texts = realloc(st->texts, (st->ntexts + 1) * sizeof(*texts));
	if (!texts) {
		free(text);
		st->status = TB_EXIT_INPUT;
		return;
	}
	st->texts = texts;
	st->texts[st->ntexts++] = text;
	tb_log_reader r;
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&r, text, len);
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		int taken = rc > 0 ? take_entry(st, &r, &e) : 0;
		if (taken == -EOVERFLOW) {
			tb_cli_error(VERB, "%s: line %zu: tag '%s' would count more than 2^63 samples; "
				     "line not merged", path, e.line, e.tag);
			st->status = TB_EXIT_INPUT;
			continue;
		}
		if (rc == -ENOMEM || taken < 0) {
			tb_cli_error(VERB, "%s: out of memory", path);
			st->status = TB_EXIT_INPUT;
			break;
		}
		if (rc < 0) {
			tb_cli_error(VERB, "%s: %s", path, r.err);
			st->status = TB_EXIT_INPUT;
		}
	}
	if (r.have_start && (!st->have_start_time || r.start_time_sec < st->first_start_time)) {
		st->first_start_time = r.start_time_sec;
		st->have_start_time = true;
	}
	tb_log_entry_free(&e);
}

/* ---- output ---- */

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void print_json(FILE *out, const struct state *st)
{
	fprintf(out, "{\"tags\":[");
	for (size_t i = 0; i < st->ntags; i++) {
		tb_summary s;
		tb_summarize(&st->tags[i].merged, &s);
		fprintf(out, "%s{\"tag\":", i ? "," : "");
		json_string(out, st->tags[i].name);
		fprintf(out, ",\"intervals\":%zu,\"total\":%" PRId64 ",\"min\":%" PRId64,
			st->tags[i].intervals, s.total, s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
			fprintf(out, ",\"%s\":%" PRId64, tb_summary_keys[p], s.pct[p]);
		fprintf(out, ",\"max\":%" PRId64 ",\"mean\":%.17g,\"insufficient\":[", s.max, s.mean);
		for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			if (s.insufficient[p])
				fprintf(out, "%s\"%s\"", n++ ? "," : "", tb_summary_keys[p]);
		}
		fprintf(out, "]}");
	}
	fprintf(out, "]}\n");
}

static void print_csv(FILE *out, const struct state *st)
{
	fprintf(out, "tag,intervals,total,min");
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
		fprintf(out, ",%s", tb_summary_keys[p]);
	fprintf(out, ",max,mean,insufficient\n");
	for (size_t i = 0; i < st->ntags; i++) {
		tb_summary s;
		tb_summarize(&st->tags[i].merged, &s);
		fprintf(out, "%s,%zu,%" PRId64 ",%" PRId64, st->tags[i].name, st->tags[i].intervals,
			s.total, s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
			fprintf(out, ",%" PRId64, s.pct[p]);
		fprintf(out, ",%" PRId64 ",%.3f,", s.max, s.mean);
		for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			if (s.insufficient[p])
				fprintf(out, "%s%s", n++ ? " " : "", tb_summary_keys[p]);
		}
		fputc('\n', out);
	}
}

static void print_text(FILE *out, const struct state *st)
{
	bool any_mark = false;
	for (size_t i = 0; i < st->ntags; i++) {
		tb_summary s;
		tb_summarize(&st->tags[i].merged, &s);
		fprintf(out, "%s%s%s: %zu intervals, %" PRId64 " samples\n", i ? "\n" : "",
			*st->tags[i].name ? "tag " : "(untagged)", st->tags[i].name,
			st->tags[i].intervals, s.total);
		fprintf(out, "  %-7s %15" PRId64 "\n", "min", s.min);
		for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++) {
			fprintf(out, "  %-7s %15" PRId64 "%s\n", tb_summary_labels[p], s.pct[p],
				s.insufficient[p] ? " *" : "");
			any_mark |= s.insufficient[p];
		}
		fprintf(out, "  %-7s %15" PRId64 "\n", "max", s.max);
		fprintf(out, "  %-7s %19.3f\n", "mean", s.mean);
	}
	if (any_mark)
		fprintf(out, "\n* fewer than %d samples beyond this percentile: too few to trust "
			"(p99.9 needs about %d).\n",
			TB_MIN_SAMPLES_BEYOND, TB_MIN_SAMPLES_BEYOND * 1000);
}

static void print_hgrm(FILE *out, const struct state *st, bool csv)
{
	for (size_t i = 0; i < st->ntags; i++) {
		if (st->ntags > 1)
			fprintf(out, "%s#[Tag: %s]\n", i ? "\n" : "",
				*st->tags[i].name ? st->tags[i].name : "(untagged)");
		tb_report_hgrm(out, &st->tags[i].merged, st->opt.ticks, st->opt.unit_ratio, csv);
	}
}

static int by_start(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	if (x->start_abs != y->start_abs)
		return x->start_abs < y->start_abs ? -1 : 1;
	return x->order < y->order ? -1 : (x->order > y->order);
}

static int write_output_log(struct state *st)
{
	FILE *f = fopen(st->opt.output_log, "w");
	if (!f) {
		tb_cli_error(VERB, "cannot write %s: %s", st->opt.output_log, strerror(errno));
		return -errno;
	}
	double base = st->have_start_time ? st->first_start_time : 0.0;
	char header[1024], num[3][64];
	int n = tb_log_format_header(header, sizeof(header), "Written by tailbus replay", base, base);
	fputs(header, f);
	(void)n;
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

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"tag", required_argument, 0, 't'},       {"start", required_argument, 0, 's'},
		{"end", required_argument, 0, 'e'},       {"format", required_argument, 0, 'f'},
		{"output-log", required_argument, 0, 'o'}, {"digits", required_argument, 0, 'd'},
		{"unit-ratio", required_argument, 0, 'u'}, {"ticks", required_argument, 0, 'k'},
		{"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
	*o = (struct options){NULL, -INFINITY, INFINITY, FMT_TEXT, NULL, MERGE_LOG_LAYOUT, 1.0,
			      TB_HGRM_DEFAULT_TICKS};
	int c, idx = 0;
	int64_t n;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longs, &idx)) != -1) {
		switch (c) {
		case 't': o->tag = optarg; break;
		case 's':
			if (!tb_cli_parse_double(optarg, &o->start))
				goto bad;
			break;
		case 'e':
			if (!tb_cli_parse_double(optarg, &o->end))
				goto bad;
			break;
		case 'f':
			if (!strcmp(optarg, "text")) o->format = FMT_TEXT;
			else if (!strcmp(optarg, "json")) o->format = FMT_JSON;
			else if (!strcmp(optarg, "csv")) o->format = FMT_CSV;
			else if (!strcmp(optarg, "hgrm")) o->format = FMT_HGRM;
			else if (!strcmp(optarg, "hgrm-csv")) o->format = FMT_HGRM_CSV;
			else goto bad;
			break;
		case 'o': o->output_log = optarg; break;
		case 'd':
			if (!tb_cli_parse_i64(optarg, &n) || n < TB_HIST_MIN_SIG_DIGITS ||
			    n > TB_HIST_MAX_SIG_DIGITS)
				goto bad;
			o->digits = (int)n;
			break;
		case 'u':
			if (!tb_cli_parse_double(optarg, &o->unit_ratio) || o->unit_ratio <= 0)
				goto bad;
			break;
		case 'k':
			if (!tb_cli_parse_i64(optarg, &n) || n < 1 || n > 1000)
				goto bad;
			o->ticks = (int)n;
			break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind >= argc) {
		tb_cli_error(VERB, "no log file given");
		usage(stderr);
		return -EINVAL;
	}
	if (o->tag && !tb_log_tag_valid(o->tag) && *o->tag) {
		tb_cli_error(VERB, "--tag '%s' is not a valid tag (no ',', space or newline)", o->tag);
		return -EINVAL;
	}
	return 0;
bad:
	tb_cli_error(VERB, "bad value '%s' for --%s", optarg, longs[idx].name);
	return -EINVAL;
}

static void free_state(struct state *st)
{
	for (size_t i = 0; i < st->ntags; i++)
		tb_hist_free(&st->tags[i].merged);
	for (size_t i = 0; i < st->ntexts; i++)
		free(st->texts[i]);
	free(st->tags);
	free(st->texts);
	free(st->kept);
}

int tb_cmd_replay(int argc, char **argv)
{
	struct state st;
	memset(&st, 0, sizeof(st));
	int rc = parse_options(argc, argv, &st.opt);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	for (int i = optind; i < argc; i++)
		read_one(&st, argv[i]);
	size_t unused;
	if (st.opt.tag && !find_tag(&st, st.opt.tag, NULL, &unused)) {
		tb_cli_error(VERB, "tag '%s' has no intervals in the selected range of the given files",
			     st.opt.tag);
		st.status = TB_EXIT_INPUT;
	}
	switch (st.opt.format) {
	case FMT_TEXT: print_text(stdout, &st); break;
	case FMT_JSON: print_json(stdout, &st); break;
	case FMT_CSV: print_csv(stdout, &st); break;
	case FMT_HGRM: print_hgrm(stdout, &st, false); break;
	case FMT_HGRM_CSV: print_hgrm(stdout, &st, true); break;
	}
	if (st.opt.output_log && write_output_log(&st) < 0)
		st.status = TB_EXIT_INPUT;
	free_state(&st);
	return st.status;
}
