/* main.c - `tailbus compare`: the options, each tag's figures (the runs'
 * summaries, judged by tailbus/compare.h), and the report that reads the
 * runs (read.c) and prints them (output.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "tailbus/json.h"
#include "tailbus/log.h"

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
		cmp_json_files(out, &sides[0]);
		fputs(",\"b\":", out);
		cmp_json_files(out, &sides[1]);
		fputs(",\"tags\":[", out);
	} else {
		for (int s = 0; s < SIDES; s++) {
			fprintf(out, "%s:", cmp_side_names[s]);
			for (size_t i = 0; i < nruns[s]; i++)
				fprintf(out, " %s", sides[s].runs[i].path);
			fputc('\n', out);
		}
		cmp_print_env(out, sides);
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
			cmp_print_json_tag(out, names[t], nruns, w.fig, w.totals);
		} else {
			fputc('\n', out);
			cmp_print_text_tag(out, names[t], nruns, w.fig, w.totals);
		}
		compared++;
		if (o->plot_dir && cmp_plot_tag(o, sides, w.tag_at, names[t], note) < 0)
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
	status = cmp_read_sides(&o, sides);
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
	cmp_free_sides(sides);
	free(o.files[0]);
	free(o.files[1]);
	return status;
}
