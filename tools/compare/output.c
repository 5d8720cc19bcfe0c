/* output.c - `tailbus compare`'s output: a tag's figures as text (every
 * run's value, each side's median and spread, the verdict and the chance
 * that spreads separate by luck), as JSON (the schema in compare.h), and
 * as plots; where each side was measured.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "../plot.h"
#include "tailbus/json.h"
#include "tailbus/report.h"

const char *const cmp_side_names[SIDES] = {"A", "B"};

/* Where each side was measured (the first run's log header), and a warning
 * when the runs of a comparison come from different machines or builds. */
void cmp_print_env(FILE *out, const struct side *sides)
{
	bool differ = false;
	for (int s = 0; s < SIDES; s++) {
		const char *env = sides[s].runs[0].env;
		fprintf(out, "%s measured on: ", cmp_side_names[s]);
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

void cmp_print_text_tag(FILE *out, const char *tag, const size_t *nruns,
			   const struct figure *fig, int64_t *const totals[SIDES])
{
	char med[SIDES][32], lo[SIDES][32], hi[SIDES][32], range[SIDES][80], ratio[32];
	char esc[TB_CLI_ESCAPED_MAX(TB_LOG_TAG_MAX)];
	fprintf(out, "%s%s: A %zu run%s, B %zu run%s\n", *tag ? "tag " : "",
		tb_cli_text(esc, sizeof(esc), *tag ? tag : "(untagged)"), nruns[0],
		nruns[0] == 1 ? "" : "s", nruns[1], nruns[1] == 1 ? "" : "s");
	fprintf(out, "  samples per run:");
	for (int s = 0; s < SIDES; s++) {
		fprintf(out, " %s", cmp_side_names[s]);
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

void cmp_print_json_tag(FILE *out, const char *tag, const size_t *nruns,
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
int cmp_plot_tag(const struct options *o, const struct side *sides, size_t *tag_at[SIDES],
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
			snprintf(labels[at], sizeof(labels[at]), "%s%zu %s", cmp_side_names[s], i + 1,
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

void cmp_json_files(FILE *out, const struct side *side)
{
	fputc('[', out);
	for (size_t i = 0; i < side->nruns; i++) {
		fputs(i ? "," : "", out);
		tb_json_string(out, side->runs[i].path);
	}
	fputc(']', out);
}
