/* plots.c - `tailbus replay --plot DIR`: SVG charts of what was replayed.
 *
 * DIR/spectrum.svg draws every tag's merged latency by percentile;
 * DIR/over-time[_TAG].svg draws a tag's p99, p99.9 and max per interval
 * against its start, with the end of the warm-up marked. A subtitle says
 * what a chart was drawn from: the files (the first few, then "and N
 * more"), the time range and the counts. The drawing is plot.h's.
 *
 * Invariants: reads the state, never changes it; a path it writes is
 * announced on `note` ("plot: PATH").
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "../plot.h"
#include "replay.h"
#include "tailbus/log_merge.h"
#include "tailbus/summary.h"

/* Subtitle room: the files' names, the time range and the counts. */
#define SUBTITLE_MAX 512

/* The span of tag t's intervals (with the warm-up's, or only those merged),
 * or of every tag's with t NULL; false when there is none. */
static bool span_of(const struct state *st, const struct tag_info *t, bool warmup, double *from,
		    double *to)
{
	*from = INFINITY;
	*to = -INFINITY;
	for (size_t k = 0; k < st->merge.ntags; k++) {
		const struct tag_info *a = &st->info[k];
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
static void plot_subtitle(const struct state *st, const struct tag_info *t, bool warmup,
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
	size_t ntags = st->merge.ntags;
	tb_plot_spectrum *spectra = calloc(ntags, sizeof(*spectra));
	char (*labels)[TB_LOG_TAG_MAX + 8] = calloc(ntags, sizeof(*labels));
	char path[PATH_MAX];
	if (!spectra || !labels) {
		free(spectra);
		free(labels);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ntags; i++) {
		const tb_log_merge_tag *m = &st->merge.tags[i];
		snprintf(labels[i], sizeof(labels[i]), "%s%s", *m->name ? "tag " : "", tag_label(m->name));
		spectra[i] = (tb_plot_spectrum){labels[i], &m->hist, NULL, TB_PLOT_SOLID};
	}
	char subtitle[SUBTITLE_MAX];
	plot_subtitle(st, NULL, false, st->opt.warmup != WARMUP_NONE ? "warm-up left out" : NULL, subtitle,
		      sizeof(subtitle));
	int rc = tb_plot_path(path, sizeof(path), st->opt.plot_dir, "spectrum", "");
	if (rc == 0)
		rc = tb_plot_spectra(path, "Latency by percentile", subtitle, spectra, ntags,
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
static int plot_over_time(const struct state *st, size_t tag, FILE *note)
{
	const char *name = st->merge.tags[tag].name;
	const struct tag_info *t = &st->info[tag];
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
		 *name ? "tag " : "", tag_label(name));
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
	int rc = tb_plot_path(path, sizeof(path), st->opt.plot_dir, "over-time", name);
	if (rc == 0 && (rc = tb_plot_write(path, &p)) == 0)
		fprintf(note, "plot: %s\n", path);
	else
		tb_cli_error(VERB, "cannot write the over-time plot of %s in %s: %s",
			     tag_label(name), st->opt.plot_dir, strerror(-rc));
	free(pts);
	free(weak);
	return rc;
}

int replay_write_plots(const struct state *st, FILE *note)
{
	if (st->merge.ntags == 0)
		return 0;
	int rc = plot_spectra(st, note);
	for (size_t i = 0; i < st->merge.ntags && rc == 0; i++)
		rc = plot_over_time(st, i, note);
	if (rc == -ENOMEM)
		tb_cli_error(VERB, "out of memory writing the plots");
	return rc;
}
