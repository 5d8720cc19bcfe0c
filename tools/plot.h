/* plot.h - small, self-contained SVG charts for the tailbus tools.
 *
 * A chart is a title, two axes and a few series of (x, y) points, plus
 * optional vertical markers (the end of a warm-up, the knee of a sweep). Each
 * axis is linear, logarithmic (decades) or the HdrHistogram percentile axis,
 * on which x is a percentile in percent drawn at log10(1 / (1 - p/100)), so
 * 90%, 99%, 99.9% ... are equally spaced. Latency axes label their ticks in
 * automatic units (ns, us, ms, s); values are taken to be nanoseconds.
 *
 * The caller owns every array; nothing is kept between calls. The output is a
 * function of the input only (no time stamps, fixed number formatting), so a
 * test can compare bytes. Every series is one <path class="series"> element
 * (a tooltip <title> names it), so a test can count them.
 *
 * Used by `tailbus replay --plot` (spectrum, p99/p99.9/max over time),
 * `tailbus compare --plot` (overlaid spectra) and, later, `tailbus load
 * --sweep` (latency vs offered rate with the knee marked).
 */
#ifndef TAILBUS_TOOLS_PLOT_H
#define TAILBUS_TOOLS_PLOT_H

#include <stdbool.h>
#include <stddef.h>
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
} tb_plot_series;

/* A vertical line across the plot at x, labelled at its top. */
typedef struct tb_plot_marker {
	double x;
	const char *label;
} tb_plot_marker;

typedef struct tb_plot {
	const char *title;
	tb_plot_axis x, y;
	const tb_plot_series *series;
	size_t nseries;
	const tb_plot_marker *markers;
	size_t nmarkers;
} tb_plot;

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
 * y = value. *points is malloc'd (NULL with *n = 0 for an empty histogram).
 * Returns 0 or -ENOMEM. */
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
 * distance to 100%. Returns as tb_plot_write, or -ENOMEM. */
int tb_plot_spectra(const char *path, const char *title, const tb_plot_spectrum *spectra,
		    size_t n, int ticks);

/* Latency against offered rate (linear x, log latency y), one series per
 * figure (p50, p99, ...), dots at each measured rate and a marker at the knee
 * (knee_rate <= 0: none). For `tailbus load --sweep`. Returns as tb_plot_write. */
int tb_plot_latency_vs_rate(const char *path, const char *title, const tb_plot_series *series,
			    size_t nseries, double knee_rate);

#endif
