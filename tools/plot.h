/* plot.h - small, self-contained SVG charts for the tailbus tools.
 *
 * A chart is a title, two axes and a few series of (x, y) points, plus
 * optional vertical markers (the end of a warm-up, the knee of a sweep). Each
 * axis is linear, logarithmic (decades) or the HdrHistogram percentile axis,
 * on which x is a percentile in percent drawn at log10(1 / (1 - p/100)), so
 * 90%, 99%, 99.9% ... are equally spaced. Latency axes label their ticks in
 * automatic units (ns, us, ms, s); values are taken to be nanoseconds.
 *
 * A plot says what it may not show: a shaded region of the x axis (the
 * percentiles with too few samples beyond them) and hollow points (figures
 * with too few samples behind them) each get a legend row that says why.
 *
 * The caller owns every array; nothing is kept between calls. The output is a
 * function of the input only (no time stamps, fixed number formatting), so a
 * test can compare bytes. Every series is one <path class="series"> element
 * (a tooltip <title> names it), so a test can count them.
 *
 * Used by `tailbus replay --plot` (spectrum, p99/p99.9/max over time),
 * `tailbus compare --plot` (overlaid spectra) and `tailbus load --sweep`
 * (latency vs offered rate with the knee marked).
 */
#ifndef TAILBUS_TOOLS_PLOT_H
#define TAILBUS_TOOLS_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tailbus/hist.h"

enum tb_plot_scale {
	TB_PLOT_LINEAR,
	TB_PLOT_LOG,        /* decades; points <= 0 are left out */
	TB_PLOT_PERCENTILE, /* x in percent, drawn at log10(1/(1-p/100)) */
};

enum tb_plot_unit {
	TB_PLOT_NUMBER, /* ticks as plain numbers */
	TB_PLOT_NS,     /* ticks as latencies: 10 us, 1 ms, ... */
};

enum tb_plot_stroke { TB_PLOT_SOLID, TB_PLOT_DASHED, TB_PLOT_DOTTED };

/* Colour families: distinct colours, or shades of one hue (compare's A and B). */
enum tb_plot_family { TB_PLOT_DISTINCT, TB_PLOT_BLUES, TB_PLOT_REDS };

typedef struct tb_plot_point {
	double x, y;
} tb_plot_point;

typedef struct tb_plot_axis {
	const char *label;
	enum tb_plot_scale scale;
	enum tb_plot_unit unit;
} tb_plot_axis;

typedef struct tb_plot_series {
	const char *label;
	const tb_plot_point *points;
	size_t n;
	const char *color; /* "#rrggbb"; NULL takes the next distinct colour */
	enum tb_plot_stroke stroke;
	bool dots; /* also mark each point (sparse series such as a rate sweep) */
	/* NULL, or per point: the figure has fewer than TB_MIN_SAMPLES_BEYOND
	 * samples beyond it; drawn as a hollow circle (class "weak") */
	const bool *weak;
} tb_plot_series;

/* A vertical line across the plot at x, labelled at its top. */
typedef struct tb_plot_marker {
	double x;
	const char *label;
} tb_plot_marker;

/* A shaded span of the x axis from x0 to x1 (an x1 past the axis, such as a
 * percentile of 100, runs to its edge), with a legend row naming it. */
typedef struct tb_plot_region {
	double x0, x1;
	const char *label;
} tb_plot_region;

typedef struct tb_plot {
	const char *title;
	const char *subtitle; /* a second, smaller line: files, time range, counts */
	tb_plot_axis x, y;
	const tb_plot_series *series;
	size_t nseries;
	const tb_plot_marker *markers;
	size_t nmarkers;
	const tb_plot_region *regions;
	size_t nregions;
} tb_plot;

/* The legend row of a tb_plot_series' weak points. */
#define TB_PLOT_WEAK_LABEL "fewer than 100 samples beyond"

/* Write the chart as one SVG document. Returns 0 or -EIO. */
int tb_plot_svg(FILE *out, const tb_plot *p);
/* The same into a file (created or truncated). Returns 0 or a negative errno. */
int tb_plot_write(const char *path, const tb_plot *p);

/* Colour `index` of a family (cycles). */
const char *tb_plot_color(enum tb_plot_family family, size_t index);

/* "DIR/STEM.svg" for the untagged stream, "DIR/STEM_TAG.svg" otherwise, with
 * every byte of TAG outside [A-Za-z0-9._-] written as %XX, so two tags never
 * share a file. Creates DIR (one level) when missing. Returns 0,
 * -ENAMETOOLONG or mkdir's error. */
int tb_plot_path(char *buf, size_t cap, const char *dir, const char *stem, const char *tag);

/* The percentile spectrum of h, as HdrHistogram's percentile iterator walks it
 * (`ticks` steps per halving of the distance to 100%): x = percentile (0..100),
 * y = value. The curve ends where the data ends: no point lies beyond
 * tb_percentile_resolved(total), and the iterator's final 100% step (the
 * maximum) is drawn there, not at the axis' edge. *points is malloc'd (NULL
 * with *n = 0 for an empty histogram). Returns 0 or -ENOMEM. */
int tb_plot_spectrum_points(const tb_hist *h, int ticks, tb_plot_point **points, size_t *n);

/* One histogram of a tb_plot_spectra chart. */
typedef struct tb_plot_spectrum {
	const char *label;
	const tb_hist *h;
	const char *color; /* NULL takes the next distinct colour */
	enum tb_plot_stroke stroke;
} tb_plot_spectrum;

/* Latency by percentile (HdrHistogram's plot: log latency against the
 * percentile axis) of n histograms overlaid, `ticks` steps per halving of the
 * distance to 100%. Each legend row ends with its sample count; the
 * percentiles with fewer than TB_MIN_SAMPLES_BEYOND samples beyond them in
 * the smallest histogram are shaded (class "region"). Returns as
 * tb_plot_write, or -ENOMEM. */
int tb_plot_spectra(const char *path, const char *title, const char *subtitle,
		    const tb_plot_spectrum *spectra, size_t n, int ticks);

/* "2026-12-04 19:10:03 to 19:11:03 UTC" for a span in seconds since the epoch
 * (the second date in full when the day differs). */
void tb_plot_time_range(char *buf, size_t cap, double start, double end);
/* n with thousands separators: "1,887". */
void tb_plot_count(char *buf, size_t cap, int64_t n);

/* Latency against offered rate (linear x, log latency y), one series per
 * figure (p50, p99, ...), dots at each measured rate and a marker at the knee
 * labelled knee_label (knee_rate <= 0: none). For `tailbus load --sweep`.
 * Returns as tb_plot_write. */
int tb_plot_latency_vs_rate(const char *path, const char *title, const char *subtitle,
			    const tb_plot_series *series, size_t nseries, double knee_rate,
			    const char *knee_label);

#endif
