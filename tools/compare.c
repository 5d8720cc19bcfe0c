/* compare.c - `tailbus compare`: two configurations, several runs each.
 *
 *   tailbus compare A.hlog... -- B.hlog... [--format text|json] [--plot DIR] [--tag T]
 *
 * Each file is one run (all its intervals of a tag merged into one histogram,
 * with the layout of the first, as replay does: tailbus/log_merge.h). Runs of one configuration
 * differ from each other (placement, frequency, neighbours), so a difference
 * between A and B means something only when it is larger than that noise. For
 * each tag present in every run and each figure (p50, p90, p99, p99.9,
 * p99.99, max) compare prints both sides' per-run values, their median and
 * their spread (min..max over the runs), and the verdict:
 *
 *   - "spread cannot be judged" when a side has a single run: one run shows
 *     no run-to-run noise, so no difference is called;
 *   - "too few samples" when a run has fewer than TB_MIN_SAMPLES_BEYOND
 *     samples beyond the percentile (summary.h): the figure is noise;
 *   - "A faster" or "B faster", with the ratio of the medians, only when the
 *     spreads do not overlap (every run of one side below every run of the
 *     other);
 *   - otherwise "no difference shown".
 *
 * Non-overlapping spreads are a permutation argument (tailbus/compare.h):
 * if A and B were the same, every ordering of the nA + nB runs would be
 * equally likely, and the spreads would separate by chance with probability
 * 2 / C(nA + nB, nA) (33% with 2 and 2 runs, 10% with 3 and 3, 0.8% with 5
 * and 5). compare prints that chance, so two runs a side are not mistaken for
 * proof; run the configurations interleaved (A B A B ...) so drift hits both
 * alike.
 *
 * A run's file may be "-" (standard input) or gzip'd (tb_log_load). Text
 * from the logs (tags, env values) is escaped for the terminal (tb_cli_text).
 *
 * JSON (stable; values in the log's unit):
 *   {"a":[FILE...],"b":[FILE...],"tags":[{"tag":T,
 *     "a":{"totals":[N...]},"b":{"totals":[N...]},
 *     "chance_separated":X|null,
 *     "figures":[{"figure":"p50"|"p90"|"p99"|"p99_9"|"p99_99"|"max",
 *       "a":{"runs":[V...],"median":X,"min":V,"max":V},"b":{...},
 *       "ratio":B_median/A_median|null,"insufficient":BOOL,
 *       "verdict":"a_faster"|"b_faster"|"no_difference"|"spread_unknown"|"too_few_samples"}]}],
 *    "env":{"a":S,"b":S}}   where each side was measured (its first run's log header, "" unknown)
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"
#include "tailbus/compare.h"
#include "tailbus/json.h"
#include "tailbus/log.h"
#include "tailbus/log_merge.h"
#include "tailbus/report.h"
#include "tailbus/summary.h"

#define VERB "compare"
#define SIDES 2
/* p50..p99.99 from summary.h, then max. */
#define FIGURES (TB_SUMMARY_PERCENTILES + 1)
#define FIGURE_MAX TB_SUMMARY_PERCENTILES

static const char *const side_names[SIDES] = {"A", "B"};

enum format { FMT_TEXT, FMT_JSON };

struct options {
	enum format format;
	const char *plot_dir;
	const char *tag; /* NULL: every tag present in all runs */
	const char **files[SIDES];
	size_t nfiles[SIDES];
};

#define ENV_TEXT_MAX 512
/* The env lines of a log header (tailbusd's) that say where a run was measured. */
static const char *const env_keys[] = {"hostname", "kernel", "cpu_model", "cpus", "clocksource",
				       "governor", "commit"};

struct run {
	const char *path;
	char env[ENV_TEXT_MAX]; /* where it was measured, from the log header ("" if unknown) */
	tb_log_merge merge; /* its tags (tags[].from/to: the span, for plot titles) */
};

struct side {
	struct run *runs;
	size_t nruns;
};

struct figure {
	tb_spread side[SIDES];
	bool insufficient;
	tb_verdict verdict;
	double ratio; /* B median / A median; NAN when A's is 0 */
};

/* ---- reading ---- */

/* Merge every interval of the file, per tag. 0; -1 after saying what was
 * wrong with some lines; READ_FAILED when the file cannot be read at all. */
#define READ_FAILED (-2)
static int read_run(struct run *r, const char *tag)
{
	char *text;
	size_t len;
	tb_log_merge_init(&r->merge, TB_LOG_MERGE_FIRST_LAYOUT);
	int rc = tb_log_load(r->path, TB_LOG_INFLATED_MAX, &text, &len);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot read %s: %s; run left out", r->path, tb_log_load_strerror(rc));
		return READ_FAILED;
	}
	tb_log_env_summary(text, len, env_keys, sizeof(env_keys) / sizeof(env_keys[0]), r->env,
			   sizeof(r->env));
	tb_log_reader rd;
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	tb_log_reader_init(&rd, text, len);
	int status = 0;
	while ((rc = tb_log_reader_next(&rd, &e)) != 0) {
		if (rc == -ENOMEM)
			break;
		if (rc < 0) {
			tb_cli_error(VERB, "%s: %s", r->path, rd.err);
			status = -1;
			continue;
		}
		if (tag && strcmp(tag, e.tag))
			continue;
		long t = tb_log_merge_tag_of(&r->merge, e.tag, &e.hist);
		if (t < 0) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = tb_log_merge_add(&r->merge, (size_t)t, &e.hist, e.start_abs_sec,
					   e.length_sec)) < 0) {
			tb_cli_error(VERB, "%s: line %zu: cannot merge tag '%s': %s", r->path, e.line,
				     e.tag, strerror(-rc));
			status = -1;
		}
	}
	if (rc == -ENOMEM) {
		tb_cli_error(VERB, "%s: out of memory", r->path);
		status = -1;
	}
	tb_log_entry_free(&e);
	free(text);
	return status;
}

static void free_sides(struct side *sides)
{
	for (int s = 0; s < SIDES; s++) {
		for (size_t i = 0; i < sides[s].nruns; i++) {
			tb_log_merge_free(&sides[s].runs[i].merge);
		}
		free(sides[s].runs);
	}
}

/* Where each side was measured (the first run's log header), and a warning
 * when the runs of a comparison come from different machines or builds. */
static void print_env(FILE *out, const struct side *sides)
{
	bool differ = false;
	for (int s = 0; s < SIDES; s++) {
		const char *env = sides[s].runs[0].env;
		fprintf(out, "%s measured on: ", side_names[s]);
		if (*env)
			tb_cli_put_text(out, env, strlen(env));
		else
			fputs("not recorded in the log", out);
		fputc('\n', out);
		for (size_t i = 0; i < sides[s].nruns; i++)
			differ |= strcmp(sides[s].runs[i].env, sides[0].runs[0].env) != 0;
	}
	if (differ)
		fprintf(out, "warning: the runs were not all measured on the same machine and build\n");
}

/* ---- the comparison ---- */

/* The figures of one tag; values[s] has room for FIGURES * nruns[s]. */
static int compare_tag(const struct side *sides, size_t *tag_at[SIDES], struct figure *fig,
		       double *values[SIDES], int64_t *totals[SIDES])
{
	size_t nruns[SIDES] = {sides[0].nruns, sides[1].nruns};
	for (int k = 0; k < FIGURES; k++)
		fig[k].insufficient = false;
	for (int s = 0; s < SIDES; s++) {
		for (size_t i = 0; i < nruns[s]; i++) {
			tb_summary sum;
			tb_summarize(&sides[s].runs[i].merge.tags[tag_at[s][i]].hist, &sum);
			totals[s][i] = sum.total;
			for (int k = 0; k < FIGURES; k++) {
				bool is_max = k == FIGURE_MAX;
				values[s][(size_t)k * nruns[s] + i] = (double)(is_max ? sum.max : sum.pct[k]);
				fig[k].insufficient |= !is_max && sum.insufficient[k];
			}
		}
	}
	for (int k = 0; k < FIGURES; k++) {
		for (int s = 0; s < SIDES; s++) {
			if (tb_spread_of(values[s] + (size_t)k * nruns[s], nruns[s], &fig[k].side[s]) < 0)
				return -ENOMEM;
		}
		fig[k].verdict = tb_compare_judge(&fig[k].side[0], &fig[k].side[1], fig[k].insufficient);
		fig[k].ratio = fig[k].side[0].median > 0
				       ? fig[k].side[1].median / fig[k].side[0].median
				       : NAN;
	}
	return 0;
}

/* ---- output ---- */

static const char *figure_key(int k)
{
	return k == FIGURE_MAX ? "max" : tb_summary_keys[k];
}

static const char *figure_label(int k)
{
	return k == FIGURE_MAX ? "max" : tb_summary_labels[k];
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* A median may fall between two runs: one decimal only then. */
static void fmt_value(char *buf, size_t cap, double v)
{
	if (v == floor(v))
		snprintf(buf, cap, "%.0f", v);
	else
		snprintf(buf, cap, "%.1f", v);
}

/* B/A in the text table: two decimals near 1, where the eye compares; two
 * significant digits below 0.1, so a B a thousand times faster reads 0.001,
 * not 0.00; "-" when A's median is 0 (no ratio). */
#define RATIO_TWO_DECIMALS_FROM 0.1
static void fmt_ratio(char *buf, size_t cap, double r)
{
	if (isnan(r))
		snprintf(buf, cap, "-");
	else if (r == 0 || r >= RATIO_TWO_DECIMALS_FROM)
		snprintf(buf, cap, "%.2f", r);
	else
		snprintf(buf, cap, "%.2g", r);
}

static void json_number(FILE *out, double v)
{
	if (isnan(v))
		fputs("null", out);
	else
		fprintf(out, "%.17g", v);
}

static void text_verdict(FILE *out, const struct figure *f)
{
	switch (f->verdict) {
	case TB_VERDICT_A_FASTER: fputs("A faster", out); break;
	case TB_VERDICT_B_FASTER: fputs("B faster", out); break;
	case TB_VERDICT_NO_DIFFERENCE: fputs("no difference shown", out); break;
	case TB_VERDICT_SPREAD_UNKNOWN: fputs("spread cannot be judged (one run on a side)", out); break;
	case TB_VERDICT_TOO_FEW_SAMPLES: fputs("too few samples beyond it (*)", out); break;
	}
}

static void print_text_tag(FILE *out, const char *tag, const size_t *nruns,
			   const struct figure *fig, int64_t *const totals[SIDES])
{
	char med[SIDES][32], lo[SIDES][32], hi[SIDES][32], range[SIDES][80], ratio[32];
	char esc[TB_CLI_ESCAPED_MAX(TB_LOG_TAG_MAX)];
	fprintf(out, "%s%s: A %zu run%s, B %zu run%s\n", *tag ? "tag " : "",
		tb_cli_text(esc, sizeof(esc), *tag ? tag : "(untagged)"), nruns[0],
		nruns[0] == 1 ? "" : "s", nruns[1], nruns[1] == 1 ? "" : "s");
	fprintf(out, "  samples per run:");
	for (int s = 0; s < SIDES; s++) {
		fprintf(out, " %s", side_names[s]);
		for (size_t i = 0; i < nruns[s]; i++)
			fprintf(out, " %" PRId64, totals[s][i]);
		fputs(s == 0 ? ";" : "\n", out);
	}
	fprintf(out, "  %-7s %12s  %-25s %12s  %-25s %6s  %s\n", "", "A median", "A spread",
		"B median", "B spread", "B/A", "verdict");
	for (int k = 0; k < FIGURES; k++) {
		for (int s = 0; s < SIDES; s++) {
			fmt_value(med[s], sizeof(med[s]), fig[k].side[s].median);
			fmt_value(lo[s], sizeof(lo[s]), fig[k].side[s].min);
			fmt_value(hi[s], sizeof(hi[s]), fig[k].side[s].max);
			snprintf(range[s], sizeof(range[s]), "%s..%s", lo[s], hi[s]);
		}
		fmt_ratio(ratio, sizeof(ratio), fig[k].ratio);
		fprintf(out, "  %-7s %12s  %-25s %12s  %-25s %6s  ", figure_label(k), med[0], range[0],
			med[1], range[1], ratio);
		text_verdict(out, &fig[k]);
		fputc('\n', out);
	}
	fprintf(out, "  per run (A | B):\n");
	for (int k = 0; k < FIGURES; k++) {
		fprintf(out, "  %-7s", figure_label(k));
		for (int s = 0; s < SIDES; s++) {
			for (size_t i = 0; i < nruns[s]; i++) {
				fmt_value(med[0], sizeof(med[0]), fig[k].side[s].values[i]);
				fprintf(out, " %s", med[0]);
			}
			if (s == 0)
				fputs(" |", out);
		}
		fputs(fig[k].insufficient ? " *\n" : "\n", out);
	}
	if (nruns[0] >= 2 && nruns[1] >= 2)
		fprintf(out, "  with %zu and %zu runs, spreads separate by chance %.1f%% of the time "
			"when A and B are the same\n",
			nruns[0], nruns[1], 100.0 * tb_chance_separated(nruns[0], nruns[1]));
	else
		fprintf(out, "  one run on a side shows no run-to-run noise: repeat each configuration "
			"(A B A B ...) to call a difference\n");
}

static void json_spread(FILE *out, const tb_spread *sp, size_t n)
{
	fputs("{\"runs\":[", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "," : "", out);
		json_number(out, sp->values[i]);
	}
	fputs("],\"median\":", out);
	json_number(out, sp->median);
	fputs(",\"min\":", out);
	json_number(out, sp->min);
	fputs(",\"max\":", out);
	json_number(out, sp->max);
	fputc('}', out);
}

static void print_json_tag(FILE *out, const char *tag, const size_t *nruns,
			   const struct figure *fig, int64_t *const totals[SIDES])
{
	fputs("{\"tag\":", out);
	tb_json_string(out, tag);
	for (int s = 0; s < SIDES; s++) {
		fprintf(out, ",\"%s\":{\"counts\":[", s ? "b" : "a");
		for (size_t i = 0; i < nruns[s]; i++)
			fprintf(out, "%s%" PRId64, i ? "," : "", totals[s][i]);
		fputs("]}", out);
	}
	fputs(",\"chance_separated\":", out);
	json_number(out, nruns[0] >= 2 && nruns[1] >= 2 ? tb_chance_separated(nruns[0], nruns[1]) : NAN);
	fputs(",\"figures\":[", out);
	for (int k = 0; k < FIGURES; k++) {
		fprintf(out, "%s{\"figure\":\"%s\",\"a\":", k ? "," : "", figure_key(k));
		json_spread(out, &fig[k].side[0], nruns[0]);
		fputs(",\"b\":", out);
		json_spread(out, &fig[k].side[1], nruns[1]);
		fputs(",\"ratio\":", out);
		json_number(out, fig[k].ratio);
		fprintf(out, ",\"insufficient\":%s,\"verdict\":\"%s\"}",
			fig[k].insufficient ? "true" : "false", tb_verdict_keys[fig[k].verdict]);
	}
	fputs("]}", out);
}

/* All runs' spectra of one tag: A in blues, B in reds (dashed). */
static int plot_tag(const struct options *o, const struct side *sides, size_t *tag_at[SIDES],
		    const char *tag, FILE *note)
{
	size_t n = sides[0].nruns + sides[1].nruns, at = 0;
	tb_plot_spectrum *spectra = calloc(n, sizeof(*spectra));
	char (*labels)[64] = calloc(n, sizeof(*labels));
	char title[TB_LOG_TAG_MAX + 64], path[PATH_MAX], subtitle[160], range[96];
	int rc = spectra && labels ? 0 : -ENOMEM;
	double from = INFINITY, to = -INFINITY;
	for (int s = 0; s < SIDES && rc == 0; s++) {
		for (size_t i = 0; i < sides[s].nruns; i++, at++) {
			const struct run *r = &sides[s].runs[i];
			from = fmin(from, r->merge.tags[tag_at[s][i]].from);
			to = fmax(to, r->merge.tags[tag_at[s][i]].to);
			snprintf(labels[at], sizeof(labels[at]), "%s%zu %s", side_names[s], i + 1,
				 base_name(r->path));
			spectra[at] = (tb_plot_spectrum){labels[at], &r->merge.tags[tag_at[s][i]].hist,
							 tb_plot_color(s ? TB_PLOT_REDS : TB_PLOT_BLUES, i),
							 s ? TB_PLOT_DASHED : TB_PLOT_SOLID};
		}
	}
	snprintf(title, sizeof(title), "Latency by percentile, A (blue) vs B (red): %s%s",
		 *tag ? "tag " : "", *tag ? tag : "(untagged)");
	if (from <= to)
		tb_plot_time_range(range, sizeof(range), from, to);
	else
		snprintf(range, sizeof(range), "no intervals");
	snprintf(subtitle, sizeof(subtitle), "%zu runs of A, %zu of B, %s", sides[0].nruns,
		 sides[1].nruns, range);
	if (rc == 0)
		rc = tb_plot_path(path, sizeof(path), o->plot_dir, "compare-spectrum", tag);
	if (rc == 0)
		rc = tb_plot_spectra(path, title, subtitle, spectra, n, TB_HGRM_DEFAULT_TICKS);
	if (rc == 0)
		fprintf(note, "plot: %s\n", path);
	else
		tb_cli_error(VERB, "cannot write the spectrum plot of %s in %s: %s",
			     *tag ? tag : "(untagged)", o->plot_dir, strerror(-rc));
	free(spectra);
	free(labels);
	return rc;
}

/* ---- driving ---- */

/* Where each run keeps `tag`; false (after a note) when a run lacks it. */
static bool locate(const struct side *sides, const char *tag, size_t *tag_at[SIDES])
{
	for (int s = 0; s < SIDES; s++) {
		for (size_t i = 0; i < sides[s].nruns; i++) {
			const struct run *r = &sides[s].runs[i];
			long t = tb_log_merge_find(&r->merge, tag);
			if (t < 0) {
				tb_cli_error(VERB, "tag '%s' has no intervals in %s; not compared",
					     *tag ? tag : "(untagged)", r->path);
				return false;
			}
			tag_at[s][i] = (size_t)t;
		}
	}
	return true;
}

/* Tags in order of first appearance over all runs (*tags malloc'd). 0 or -ENOMEM. */
static int all_tags(const struct side *sides, const char ***tags, size_t *n)
{
	*tags = NULL;
	*n = 0;
	for (int s = 0; s < SIDES; s++) {
		for (size_t i = 0; i < sides[s].nruns; i++) {
			const struct run *r = &sides[s].runs[i];
			for (size_t t = 0; t < r->merge.ntags; t++) {
				size_t k = 0;
				while (k < *n && strcmp((*tags)[k], r->merge.tags[t].name))
					k++;
				if (k < *n)
					continue;
				const char **grown = realloc(*tags, (*n + 1) * sizeof(**tags));
				if (!grown)
					return -ENOMEM;
				*tags = grown;
				(*tags)[(*n)++] = r->merge.tags[t].name;
			}
		}
	}
	return 0;
}

struct work {
	size_t *tag_at[SIDES];
	double *values[SIDES];
	int64_t *totals[SIDES];
	struct figure fig[FIGURES];
};

static int work_alloc(struct work *w, const struct side *sides)
{
	memset(w, 0, sizeof(*w));
	for (int s = 0; s < SIDES; s++) {
		size_t n = sides[s].nruns;
		w->tag_at[s] = calloc(n, sizeof(*w->tag_at[s]));
		w->values[s] = calloc(FIGURES * n, sizeof(*w->values[s]));
		w->totals[s] = calloc(n, sizeof(*w->totals[s]));
		if (!w->tag_at[s] || !w->values[s] || !w->totals[s])
			return -ENOMEM;
	}
	return 0;
}

static void work_free(struct work *w)
{
	for (int s = 0; s < SIDES; s++) {
		free(w->tag_at[s]);
		free(w->values[s]);
		free(w->totals[s]);
	}
}

static void json_files(FILE *out, const struct side *side)
{
	fputc('[', out);
	for (size_t i = 0; i < side->nruns; i++) {
		fputs(i ? "," : "", out);
		tb_json_string(out, side->runs[i].path);
	}
	fputc(']', out);
}

/* Compare every tag; returns the exit status. */
static int report(const struct options *o, const struct side *sides)
{
	size_t ntags = 1, compared = 0;
	const char **tags = NULL, *const *names = &o->tag;
	struct work w;
	int rc = work_alloc(&w, sides);
	if (rc == 0 && !o->tag) {
		rc = all_tags(sides, &tags, &ntags);
		names = tags;
	}
	if (rc < 0) {
		tb_cli_error(VERB, "out of memory");
		work_free(&w);
		free(tags);
		return TB_EXIT_INPUT;
	}
	size_t nruns[SIDES] = {sides[0].nruns, sides[1].nruns};
	int status = TB_EXIT_OK;
	FILE *out = stdout, *note = o->format == FMT_TEXT ? stdout : stderr;
	if (o->format == FMT_JSON) {
		fputs("{\"a\":", out);
		json_files(out, &sides[0]);
		fputs(",\"b\":", out);
		json_files(out, &sides[1]);
		fputs(",\"tags\":[", out);
	} else {
		for (int s = 0; s < SIDES; s++) {
			fprintf(out, "%s:", side_names[s]);
			for (size_t i = 0; i < nruns[s]; i++)
				fprintf(out, " %s", sides[s].runs[i].path);
			fputc('\n', out);
		}
		print_env(out, sides);
	}
	for (size_t t = 0; t < ntags; t++) {
		if (!locate(sides, names[t], w.tag_at)) {
			status = o->tag ? TB_EXIT_INPUT : status;
			continue;
		}
		if (compare_tag(sides, w.tag_at, w.fig, w.values, w.totals) < 0) {
			tb_cli_error(VERB, "out of memory");
			status = TB_EXIT_INPUT;
			break;
		}
		if (o->format == FMT_JSON) {
			fputs(compared ? "," : "", out);
			print_json_tag(out, names[t], nruns, w.fig, w.totals);
		} else {
			fputc('\n', out);
			print_text_tag(out, names[t], nruns, w.fig, w.totals);
		}
		compared++;
		if (o->plot_dir && plot_tag(o, sides, w.tag_at, names[t], note) < 0)
			status = TB_EXIT_INPUT;
	}
	if (o->format == FMT_JSON) {
		/* where each side was measured: its first run's log header, "" if unknown */
		fputs("],\"env\":{\"a\":", out);
		tb_json_string(out, sides[0].runs[0].env);
		fputs(",\"b\":", out);
		tb_json_string(out, sides[1].runs[0].env);
		fputs("}}\n", out);
	}
	if (compared == 0) {
		tb_cli_error(VERB, "no tag has intervals in every run: nothing compared");
		status = TB_EXIT_INPUT;
	}
	work_free(&w);
	free(tags);
	return status;
}

/* ---- options ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus compare A.hlog... -- B.hlog... [--format text|json] [--plot DIR]\n"
		"                       [--tag T] [--version]\n"
		"Each file is one run of configuration A or B (repeat each, interleaved A B A B).\n"
		"For p50, p90, p99, p99.9, p99.99 and max: every run's value, each side's median\n"
		"and spread (min..max over its runs). A difference is called (\"A faster\",\n"
		"\"B faster\", with the ratio of the medians) only when the spreads do not\n"
		"overlap, never with one run on a side, never on a percentile with fewer than\n"
		"%d samples beyond it; otherwise \"no difference shown\". --plot DIR overlays\n"
		"the spectra of all runs (A blue, B red) in DIR/compare-spectrum[_TAG].svg.\n"
		"A file may be '-' (standard input, once) or gzip'd. B/A shows two decimals\n"
		"from 0.1 up, two significant digits below, '-' when A's median is 0.\n",
		TB_MIN_SAMPLES_BEYOND);
}

/* "--name VALUE" or "--name=VALUE": the value, advancing *i; NULL if not `name`. */
static const char *option_value(char **args, size_t n, size_t *i, const char *name, bool *missing)
{
	size_t k = strlen(name);
	if (strncmp(args[*i], name, k))
		return NULL;
	if (args[*i][k] == '=')
		return args[*i] + k + 1;
	if (args[*i][k] != '\0')
		return NULL;
	if (*i + 1 >= n) {
		*missing = true;
		return NULL;
	}
	return args[++*i];
}

/* Options may stand on either side of "--"; everything else is a file. */
static int parse_side(char **args, size_t n, struct options *o, int side)
{
	for (size_t i = 0; i < n; i++) {
		bool missing = false;
		const char *v;
		if (!strcmp(args[i], "--help") || !strcmp(args[i], "-h")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(args[i], "--version")) {
			tb_cli_version();
			return 1;
		} else if ((v = option_value(args, n, &i, "--format", &missing))) {
			if (!strcmp(v, "text"))
				o->format = FMT_TEXT;
			else if (!strcmp(v, "json"))
				o->format = FMT_JSON;
			else {
				tb_cli_bad_value(VERB, "format", v, "want text or json");
				return -EINVAL;
			}
		} else if ((v = option_value(args, n, &i, "--plot", &missing))) {
			o->plot_dir = v;
		} else if ((v = option_value(args, n, &i, "--tag", &missing))) {
			o->tag = v;
		} else if (missing || (args[i][0] == '-' && args[i][1] != '\0')) {
			if (missing)
				tb_cli_error(VERB, "option '%s' needs a value", args[i]);
			else
				tb_cli_error(VERB, "unknown option '%s'", args[i]);
			return -EINVAL;
		} else {
			o->files[side][o->nfiles[side]++] = args[i];
		}
	}
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	size_t n = argc > 1 ? (size_t)argc - 1 : 0, split = 0;
	char **args = argv + 1;
	while (split < n && strcmp(args[split], "--"))
		split++;
	for (int s = 0; s < SIDES; s++) {
		o->files[s] = calloc(n ? n : 1, sizeof(*o->files[s]));
		if (!o->files[s])
			return -ENOMEM;
	}
	int rc = parse_side(args, split, o, 0);
	if (rc == 0 && split < n)
		rc = parse_side(args + split + 1, n - split - 1, o, 1);
	if (rc)
		return rc;
	if (split == n || o->nfiles[0] == 0 || o->nfiles[1] == 0) {
		tb_cli_error(VERB, "give the runs of A, then '--', then the runs of B");
		usage(stderr);
		return -EINVAL;
	}
	if (o->tag && *o->tag && !tb_log_tag_valid(o->tag)) {
		tb_cli_error(VERB, "--tag '%s' is not a valid tag (no ',', space or newline)", o->tag);
		return -EINVAL;
	}
	return 0;
}

/* Read every run; a file that cannot be read is left out (and said). */
static int read_sides(const struct options *o, struct side *sides)
{
	int status = TB_EXIT_OK;
	bool stdin_read = false;
	for (int s = 0; s < SIDES; s++) {
		sides[s].runs = calloc(o->nfiles[s], sizeof(*sides[s].runs));
		if (!sides[s].runs)
			return -ENOMEM;
		for (size_t i = 0; i < o->nfiles[s]; i++) {
			struct run *r = &sides[s].runs[sides[s].nruns];
			r->path = o->files[s][i];
			bool is_stdin = !strcmp(r->path, TB_LOG_STDIN);
			if (is_stdin && stdin_read) {
				tb_cli_error(VERB, "'-' (standard input) is given twice; it is read once, "
					     "the second run left out");
				status = TB_EXIT_INPUT;
				continue;
			}
			stdin_read |= is_stdin;
			int rc = read_run(r, o->tag);
			if (rc < 0)
				status = TB_EXIT_INPUT;
			if (rc != READ_FAILED)
				sides[s].nruns++;
		}
	}
	return status;
}

int tb_cmd_compare(int argc, char **argv)
{
	struct options o;
	struct side sides[SIDES];
	memset(sides, 0, sizeof(sides));
	int rc = parse_options(argc, argv, &o), status;
	if (rc) {
		free(o.files[0]);
		free(o.files[1]);
		if (rc == -ENOMEM)
			tb_cli_error(VERB, "out of memory");
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	}
	status = read_sides(&o, sides);
	if (status < 0) {
		tb_cli_error(VERB, "out of memory");
		status = TB_EXIT_INPUT;
	} else if (sides[0].nruns == 0 || sides[1].nruns == 0) {
		tb_cli_error(VERB, "side %s has no readable run: nothing compared",
			     sides[0].nruns ? "B" : "A");
		status = TB_EXIT_INPUT;
	} else {
		int reported = report(&o, sides);
		status = reported != TB_EXIT_OK ? reported : status;
	}
	free_sides(sides);
	free(o.files[0]);
	free(o.files[1]);
	return status;
}
