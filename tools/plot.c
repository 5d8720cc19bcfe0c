/* plot.c - SVG charts for the tools (see plot.h for the model).
 *
 * Why SVG written by hand rather than gnuplot (Debian's well-kept plotter):
 *   - no extra package: the tools stay one binary on libtailbus, zlib and
 *     libc, and a plot never fails because a program is missing or is a
 *     different version with different defaults;
 *   - a person opens the file in any web browser, on any machine, and can
 *     zoom without losing detail (vector graphics); tooltips name each line;
 *   - the bytes are a function of the input alone (fixed number formatting,
 *     no date, no version string), so tests can check the files exactly and
 *     a plot in a report diffs cleanly.
 * The charts needed here (lines on linear, log and percentile axes, a legend,
 * a marker) take a few hundred lines; that is cheaper than a dependency.
 *
 * Drawing: every axis maps its values to a "position" t (identity, log10, or
 * log10(1/(1-p)) for percentiles); the axis range is chosen in t and then
 * mapped linearly onto the plot area. Points that an axis cannot show (zero or
 * negative on a log axis, NaN) break the line instead of bending it.
 */
#include "plot.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tailbus/grow.h"
#include "tailbus/summary.h"

/* Canvas and plot area, in SVG user units (pixels at 100%). The legend sits in
 * a column right of the plot so it never hides a line. */
#define SVG_WIDTH 1040
#define SVG_HEIGHT 560
#define LEGEND_WIDTH 320
#define PLOT_LEFT 90.0
#define PLOT_TOP 64.0
#define TITLE_Y 22.0
#define SUBTITLE_Y 40.0
#define PLOT_RIGHT (SVG_WIDTH - LEGEND_WIDTH - 20.0)
#define PLOT_BOTTOM (SVG_HEIGHT - 64.0)
#define LEGEND_X (PLOT_RIGHT + 20.0)
#define LEGEND_ROW 18.0
#define LEGEND_ROWS_MAX ((int)((PLOT_BOTTOM - PLOT_TOP) / LEGEND_ROW) - 1)
#define LABEL_CHARS_MAX 46 /* legend text that fits LEGEND_WIDTH at font-size 12 */
#define DOT_RADIUS 3.0
#define WEAK_RADIUS 4.0 /* a hollow circle round a figure with too few samples */
#define REGION_FILL "#f4a261"
#define REGION_OPACITY "0.18"
/* A linear axis gets about this many ticks (1, 2 or 5 times a power of ten apart). */
#define LINEAR_TICKS 6
/* A log axis of this many decades or fewer also labels 2x and 5x. */
#define LOG_MINOR_LABEL_DECADES 2.0
/* The percentile axis shows at least 0%..99.999% (HdrHistogram's plots) and at
 * most 0%..99.99999%; a point beyond (such as 100%) is drawn at the right edge. */
#define PERCENTILE_MIN_DECADES 5
#define PERCENTILE_MAX_DECADES 7

#define NS_PER_US 1e3
#define NS_PER_MS 1e6
#define NS_PER_SEC 1e9

static const char *const distinct[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
				       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
static const char *const blues[] = {"#08306b", "#2171b5", "#6baed6", "#08519c", "#4292c6"};
static const char *const reds[] = {"#67000d", "#cb181d", "#fb6a4a", "#a50f15", "#ef3b2c"};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *tb_plot_color(enum tb_plot_family family, size_t index)
{
	switch (family) {
	case TB_PLOT_BLUES: return blues[index % ARRAY_LEN(blues)];
	case TB_PLOT_REDS: return reds[index % ARRAY_LEN(reds)];
	case TB_PLOT_DISTINCT: break;
	}
	return distinct[index % ARRAY_LEN(distinct)];
}

/* ---- axes ---- */

struct axis {
	const tb_plot_axis *def;
	double lo, hi;   /* range in positions */
	double step;     /* linear: tick spacing */
	double from, to; /* pixels for lo and hi */
};

/* The position of v on the axis; false when the axis cannot show it. A
 * percentile of 100 (or beyond the axis) is +inf: drawn at the right edge. */
static bool position(enum tb_plot_scale scale, double v, double *t)
{
	if (isnan(v))
		return false;
	switch (scale) {
	case TB_PLOT_LINEAR: *t = v; return isfinite(v);
	case TB_PLOT_LOG:
		*t = log10(v);
		return v > 0 && isfinite(v);
	case TB_PLOT_PERCENTILE:
		if (v < 0)
			return false;
		*t = v >= 100.0 ? INFINITY : -log10(1.0 - v / 100.0);
		return true;
	}
	return false;
}

/* 1, 2 or 5 times a power of ten, the nearest to raw (by ratio). */
static double nice_step(double raw)
{
	static const double steps[] = {1.0, 2.0, 5.0, 10.0};
	double p = pow(10.0, floor(log10(raw))), best = p;
	for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
		if (fabs(log(steps[i] * p / raw)) < fabs(log(best / raw)))
			best = steps[i] * p;
	}
	return best;
}

static void axis_range(struct axis *a, double lo, double hi, bool any)
{
	switch (a->def->scale) {
	case TB_PLOT_LINEAR:
		if (!any) {
			lo = 0.0;
			hi = 1.0;
		} else if (hi <= lo) {
			double pad = lo != 0.0 ? fabs(lo) * 0.1 : 1.0;
			lo -= pad;
			hi += pad;
		}
		a->step = nice_step((hi - lo) / LINEAR_TICKS);
		a->lo = floor(lo / a->step) * a->step;
		a->hi = ceil(hi / a->step) * a->step;
		break;
	case TB_PLOT_LOG:
		a->lo = any ? floor(lo) : 0.0;
		a->hi = any ? ceil(hi) : 1.0;
		if (a->hi <= a->lo)
			a->hi = a->lo + 1.0;
		break;
	case TB_PLOT_PERCENTILE:
		a->lo = 0.0;
		a->hi = any ? ceil(hi) : PERCENTILE_MIN_DECADES;
		a->hi = fmin(fmax(a->hi, PERCENTILE_MIN_DECADES), PERCENTILE_MAX_DECADES);
		break;
	}
}

/* Pixel coordinate of position t (clamped into the plot area). */
static double pixel(const struct axis *a, double t)
{
	double f = (t - a->lo) / (a->hi - a->lo);
	f = f < 0.0 ? 0.0 : (f > 1.0 ? 1.0 : f);
	return a->from + f * (a->to - a->from);
}

/* Ranges from every plotted point and marker. */
static void fit_axes(const tb_plot *p, struct axis *x, struct axis *y)
{
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
	bool xany = false, yany = false;
	for (size_t s = 0; s < p->nseries; s++) {
		for (size_t i = 0; i < p->series[s].n; i++) {
			double tx, ty;
			const tb_plot_point *pt = &p->series[s].points[i];
			if (!position(x->def->scale, pt->x, &tx) || !position(y->def->scale, pt->y, &ty))
				continue;
			if (isfinite(tx)) {
				xlo = fmin(xlo, tx);
				xhi = fmax(xhi, tx);
				xany = true;
			}
			ylo = fmin(ylo, ty);
			yhi = fmax(yhi, ty);
			yany = true;
		}
	}
	for (size_t m = 0; m < p->nmarkers; m++) {
		double tx;
		if (position(x->def->scale, p->markers[m].x, &tx) && isfinite(tx)) {
			xlo = fmin(xlo, tx);
			xhi = fmax(xhi, tx);
			xany = true;
		}
	}
	axis_range(x, xlo, xhi, xany);
	axis_range(y, ylo, yhi, yany);
	x->from = PLOT_LEFT;
	x->to = PLOT_RIGHT;
	y->from = PLOT_BOTTOM;
	y->to = PLOT_TOP;
}

/* ---- text ---- */

/* XML-escaped text, at most `max` characters (UTF-8 aware), "..." when cut. */
static void xml_text(FILE *out, const char *s, size_t max)
{
	size_t chars = 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if ((*c & 0xc0) != 0x80 && chars++ == max) {
			fputs("...", out);
			return;
		}
		switch (*c) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if (*c >= 0x20 || *c == '\t')
				fputc(*c, out);
		}
	}
}

/* A latency in nanoseconds with a unit that keeps the number short. */
static void format_ns(char *buf, size_t cap, double ns)
{
	if (ns >= NS_PER_SEC)
		snprintf(buf, cap, "%g s", ns / NS_PER_SEC);
	else if (ns >= NS_PER_MS)
		snprintf(buf, cap, "%g ms", ns / NS_PER_MS);
	else if (ns >= NS_PER_US)
		snprintf(buf, cap, "%g us", ns / NS_PER_US);
	else
		snprintf(buf, cap, "%g ns", ns);
}

/* "0%", "90%", "99%", "99.9%", ... for position t (an integer). */
static void format_percentile(char *buf, size_t cap, int t)
{
	if (t <= 0) {
		snprintf(buf, cap, "0%%");
		return;
	}
	if (t == 1) {
		snprintf(buf, cap, "90%%");
		return;
	}
	size_t n = (size_t)snprintf(buf, cap, "99");
	if (t > 2 && n + 1 < cap)
		buf[n++] = '.';
	for (int i = 2; i < t && n + 1 < cap; i++)
		buf[n++] = '9';
	if (n + 1 < cap)
		buf[n++] = '%';
	buf[n] = '\0';
}

static void tick_label(char *buf, size_t cap, const tb_plot_axis *def, double t)
{
	double v = def->scale == TB_PLOT_LOG ? pow(10.0, t) : t;
	if (def->scale == TB_PLOT_PERCENTILE)
		format_percentile(buf, cap, (int)lround(t));
	else if (def->unit == TB_PLOT_NS)
		format_ns(buf, cap, v);
	else
		snprintf(buf, cap, "%g", v);
}

/* ---- drawing ---- */

static void draw_ticks(FILE *out, const struct axis *a, bool horizontal)
{
	double step = a->def->scale == TB_PLOT_LINEAR ? a->step : 1.0;
	long n = lround((a->hi - a->lo) / step);
	char label[48];
	for (long i = 0; i <= n; i++) {
		double t = a->lo + (double)i * step;
		double px = pixel(a, t);
		tick_label(label, sizeof(label), a->def, fabs(t) < step * 1e-9 ? 0.0 : t);
		if (horizontal)
			fprintf(out,
				"<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
				"<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
				px, PLOT_TOP, px, PLOT_BOTTOM, px, PLOT_BOTTOM + 18.0, label);
		else
			fprintf(out,
				"<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
				PLOT_LEFT, px, PLOT_RIGHT, px, PLOT_LEFT - 6.0, px + 4.0, label);
	}
	/* minor lines at 2..9 times each decade of a log axis, the 2s and 5s
	 * labelled when the axis spans so few decades that they help */
	if (a->def->scale != TB_PLOT_LOG)
		return;
	bool label_minor = a->hi - a->lo <= LOG_MINOR_LABEL_DECADES;
	for (double d = a->lo; d < a->hi; d += 1.0) {
		for (int m = 2; m <= 9; m++) {
			double px = pixel(a, d + log10(m));
			if (horizontal)
				fprintf(out, "<line class=\"minor\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
					px, PLOT_TOP, px, PLOT_BOTTOM);
			else
				fprintf(out, "<line class=\"minor\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
					PLOT_LEFT, px, PLOT_RIGHT, px);
			if (!label_minor || (m != 2 && m != 5))
				continue;
			tick_label(label, sizeof(label), a->def, d + log10(m));
			if (horizontal)
				fprintf(out, "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#666\">%s</text>\n",
					px, PLOT_BOTTOM + 18.0, label);
			else
				fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#666\">%s</text>\n",
					PLOT_LEFT - 6.0, px + 4.0, label);
		}
	}
}

static const char *dash_array(enum tb_plot_stroke s)
{
	switch (s) {
	case TB_PLOT_DASHED: return " stroke-dasharray=\"8 4\"";
	case TB_PLOT_DOTTED: return " stroke-dasharray=\"2 3\"";
	case TB_PLOT_SOLID: break;
	}
	return "";
}

/* One <path>: a subpath per run of points both axes can show. */
static void draw_series(FILE *out, const tb_plot_series *s, const char *color,
			const struct axis *x, const struct axis *y)
{
	fprintf(out, "<path class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s d=\"",
		color, dash_array(s->stroke));
	bool pen_down = false, any = false;
	for (size_t i = 0; i < s->n; i++) {
		double tx, ty;
		if (!position(x->def->scale, s->points[i].x, &tx) ||
		    !position(y->def->scale, s->points[i].y, &ty)) {
			pen_down = false;
			continue;
		}
		fprintf(out, "%s%c%.1f %.1f", any ? " " : "", pen_down ? 'L' : 'M', pixel(x, tx),
			pixel(y, ty));
		pen_down = any = true;
	}
	if (!any) /* an empty d is invalid SVG; a point off the plot is not */
		fprintf(out, "M%.1f %.1f", PLOT_LEFT, PLOT_BOTTOM);
	fputs("\"><title>", out);
	xml_text(out, s->label ? s->label : "", SIZE_MAX);
	fputs("</title></path>\n", out);
	if (s->dots) {
		fprintf(out, "<g class=\"dots\" fill=\"%s\">", color);
		for (size_t i = 0; i < s->n; i++) {
			double tx, ty;
			if ((!s->weak || !s->weak[i]) && position(x->def->scale, s->points[i].x, &tx) &&
			    position(y->def->scale, s->points[i].y, &ty))
				fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", pixel(x, tx),
					pixel(y, ty), DOT_RADIUS);
		}
		fputs("</g>\n", out);
	}
	if (!s->weak)
		return;
	fprintf(out, "<g class=\"weak\" fill=\"white\" stroke=\"%s\" stroke-width=\"1.5\">", color);
	for (size_t i = 0; i < s->n; i++) {
		double tx, ty;
		if (s->weak[i] && position(x->def->scale, s->points[i].x, &tx) &&
		    position(y->def->scale, s->points[i].y, &ty))
			fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", pixel(x, tx),
				pixel(y, ty), WEAK_RADIUS);
	}
	fputs("</g>\n", out);
}

/* Whether any point of the chart is drawn hollow (for the legend). */
static bool any_weak(const tb_plot *p, const struct axis *x, const struct axis *y)
{
	for (size_t s = 0; s < p->nseries; s++) {
		for (size_t i = 0; p->series[s].weak && i < p->series[s].n; i++) {
			double tx, ty;
			if (p->series[s].weak[i] && position(x->def->scale, p->series[s].points[i].x, &tx) &&
			    position(y->def->scale, p->series[s].points[i].y, &ty))
				return true;
		}
	}
	return false;
}

/* Shaded spans of the x axis, under the series; each one's label is its
 * tooltip and its legend row. */
static void draw_regions(FILE *out, const tb_plot *p, const struct axis *x)
{
	for (size_t r = 0; r < p->nregions; r++) {
		double t0, t1;
		if (!position(x->def->scale, p->regions[r].x0, &t0) ||
		    !position(x->def->scale, p->regions[r].x1, &t1))
			continue;
		double x0 = pixel(x, fmin(t0, t1)), x1 = pixel(x, fmax(t0, t1));
		fprintf(out,
			"<rect class=\"region\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"%s\" fill-opacity=\"%s\"><title>",
			x0, PLOT_TOP, x1 - x0, PLOT_BOTTOM - PLOT_TOP, REGION_FILL, REGION_OPACITY);
		xml_text(out, p->regions[r].label ? p->regions[r].label : "", SIZE_MAX);
		fputs("</title></rect>\n", out);
	}
}

static void draw_markers(FILE *out, const tb_plot *p, const struct axis *x)
{
	for (size_t m = 0; m < p->nmarkers; m++) {
		double tx;
		if (!position(x->def->scale, p->markers[m].x, &tx))
			continue;
		double px = pixel(x, tx);
		fprintf(out,
			"<line class=\"marker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#444\" stroke-dasharray=\"4 3\"/>\n"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#444\">",
			px, PLOT_TOP, px, PLOT_BOTTOM, px, PLOT_TOP - 6.0);
		xml_text(out, p->markers[m].label ? p->markers[m].label : "", LABEL_CHARS_MAX);
		fputs("</text>\n", out);
	}
}

/* The legend: a row per series, then one per region and one for hollow
 * points when there are any (these last rows are never cut). */
static void draw_legend(FILE *out, const tb_plot *p, const char *const *colors, bool weak)
{
	fputs("<g class=\"legend\">\n", out);
	int extra = (int)p->nregions + (weak ? 1 : 0), row = 0;
	for (size_t s = 0; s < p->nseries; s++, row++) {
		double y = PLOT_TOP + 8.0 + (double)row * LEGEND_ROW;
		if (row == LEGEND_ROWS_MAX - extra) {
			fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">... %zu more</text>\n", LEGEND_X, y + 4.0,
				p->nseries - s);
			row++;
			break;
		}
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"2\"%s/>\n<text x=\"%.1f\" y=\"%.1f\">",
			LEGEND_X, y, LEGEND_X + 24.0, y, colors[s], dash_array(p->series[s].stroke),
			LEGEND_X + 30.0, y + 4.0);
		xml_text(out, p->series[s].label ? p->series[s].label : "", LABEL_CHARS_MAX);
		fputs("</text>\n", out);
	}
	for (size_t r = 0; r < p->nregions; r++, row++) {
		double y = PLOT_TOP + 8.0 + (double)row * LEGEND_ROW;
		fprintf(out,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"%s\" "
			"fill-opacity=\"%s\" stroke=\"%s\"/>\n<text x=\"%.1f\" y=\"%.1f\">",
			LEGEND_X, y - 5.0, REGION_FILL, REGION_OPACITY, REGION_FILL, LEGEND_X + 30.0, y + 4.0);
		xml_text(out, p->regions[r].label ? p->regions[r].label : "", LABEL_CHARS_MAX);
		fputs("</text>\n", out);
	}
	if (weak)
		fprintf(out,
			"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"white\" stroke=\"#444\" "
			"stroke-width=\"1.5\"/>\n<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			LEGEND_X + 12.0, PLOT_TOP + 8.0 + (double)row * LEGEND_ROW, WEAK_RADIUS,
			LEGEND_X + 30.0, PLOT_TOP + 12.0 + (double)row * LEGEND_ROW, TB_PLOT_WEAK_LABEL);
	fputs("</g>\n", out);
}

static void draw_frame(FILE *out, const tb_plot *p)
{
	fprintf(out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<style>.grid{stroke:#ccc;stroke-width:1}.minor{stroke:#eee;stroke-width:1}</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text class=\"title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"15\">",
		SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH / 2.0, TITLE_Y);
	xml_text(out, p->title ? p->title : "", SIZE_MAX);
	if (p->subtitle) {
		fprintf(out, "</text>\n<text class=\"subtitle\" x=\"%.1f\" y=\"%.1f\" "
			     "text-anchor=\"middle\" fill=\"#444\">",
			SVG_WIDTH / 2.0, SUBTITLE_Y);
		xml_text(out, p->subtitle, SIZE_MAX);
	}
	fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
		(PLOT_LEFT + PLOT_RIGHT) / 2.0, (double)SVG_HEIGHT - 16.0);
	xml_text(out, p->x.label ? p->x.label : "", SIZE_MAX);
	fprintf(out, "</text>\n<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">",
		(PLOT_TOP + PLOT_BOTTOM) / 2.0);
	xml_text(out, p->y.label ? p->y.label : "", SIZE_MAX);
	fputs("</text>\n", out);
}

int tb_plot_svg(FILE *out, const tb_plot *p)
{
	struct axis x = {.def = &p->x}, y = {.def = &p->y};
	fit_axes(p, &x, &y);
	const char **colors = calloc(p->nseries ? p->nseries : 1, sizeof(*colors));
	if (!colors)
		return -ENOMEM;
	size_t next = 0;
	bool any = false;
	for (size_t s = 0; s < p->nseries; s++) {
		colors[s] = p->series[s].color ? p->series[s].color
					       : tb_plot_color(TB_PLOT_DISTINCT, next++);
		any |= p->series[s].n > 0;
	}
	draw_frame(out, p);
	draw_ticks(out, &x, true);
	draw_ticks(out, &y, false);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n",
		PLOT_LEFT, PLOT_TOP, PLOT_RIGHT - PLOT_LEFT, PLOT_BOTTOM - PLOT_TOP);
	if (!any)
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no data</text>\n",
			(PLOT_LEFT + PLOT_RIGHT) / 2.0, (PLOT_TOP + PLOT_BOTTOM) / 2.0);
	draw_regions(out, p, &x);
	for (size_t s = 0; s < p->nseries; s++)
		draw_series(out, &p->series[s], colors[s], &x, &y);
	draw_markers(out, p, &x);
	draw_legend(out, p, colors, any_weak(p, &x, &y));
	fputs("</svg>\n", out);
	free(colors);
	return ferror(out) ? -EIO : 0;
}

int tb_plot_write(const char *path, const tb_plot *p)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	int rc = tb_plot_svg(f, p);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

int tb_plot_path(char *buf, size_t cap, const char *dir, const char *stem, const char *tag)
{
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return -errno;
	int n = snprintf(buf, cap, "%s/%s%s", dir, stem, *tag ? "_" : "");
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	size_t at = (size_t)n;
	for (const unsigned char *c = (const unsigned char *)tag; *c; c++) {
		bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			     (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-';
		n = plain ? snprintf(buf + at, cap - at, "%c", *c)
			  : snprintf(buf + at, cap - at, "%%%02X", *c);
		if (n < 0 || (size_t)n >= cap - at)
			return -ENAMETOOLONG;
		at += (size_t)n;
	}
	n = snprintf(buf + at, cap - at, ".svg");
	return n < 0 || (size_t)n >= cap - at ? -ENAMETOOLONG : 0;
}

int tb_plot_spectrum_points(const tb_hist *h, int ticks, tb_plot_point **points, size_t *n)
{
	*points = NULL;
	*n = 0;
	if (tb_hist_total(h) == 0)
		return 0;
	size_t cap = 0;
	double end = tb_percentile_resolved(tb_hist_total(h));
	tb_hist_iter it;
	tb_hist_iter_percentiles(&it, h, ticks);
	while (tb_hist_iter_next(&it)) {
		double x = fmin(it.percentile, end);
		/* past the end every step repeats the maximum at the end */
		if (*n > 0 && (*points)[*n - 1].x >= end) {
			(*points)[*n - 1].y = fmax((*points)[*n - 1].y, (double)it.value);
			continue;
		}
		if (tb_grow_n((void **)points, &cap, *n + 1, 256, sizeof(**points)) < 0) {
			free(*points);
			*points = NULL;
			*n = 0;
			return -ENOMEM;
		}
		(*points)[(*n)++] = (tb_plot_point){x, (double)it.value};
	}
	return 0;
}

void tb_plot_count(char *buf, size_t cap, int64_t n)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%" PRId64, n), at = 0;
	size_t out = 0;
	if (len > 0 && digits[0] == '-' && out + 1 < cap)
		buf[out++] = digits[at++];
	for (; at < len && out + 1 < cap; at++) {
		buf[out++] = digits[at];
		int left = len - at - 1;
		if (left > 0 && left % 3 == 0 && out + 1 < cap)
			buf[out++] = ',';
	}
	if (cap)
		buf[out < cap ? out : cap - 1] = '\0';
}

void tb_plot_time_range(char *buf, size_t cap, double start, double end)
{
	time_t t0 = (time_t)floor(start), t1 = (time_t)ceil(end);
	struct tm a, b;
	gmtime_r(&t0, &a);
	gmtime_r(&t1, &b);
	char from[32], to[32];
	strftime(from, sizeof(from), "%Y-%m-%d %H:%M:%S", &a);
	bool same_day = a.tm_year == b.tm_year && a.tm_yday == b.tm_yday;
	strftime(to, sizeof(to), same_day ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &b);
	snprintf(buf, cap, "%s to %s UTC", from, to);
}

/* "LABEL (n=1,887)", LABEL cut so that the count always fits the legend. */
static void spectrum_label(char *buf, size_t cap, const char *label, int64_t total)
{
	char count[32], tail[48];
	tb_plot_count(count, sizeof(count), total);
	int tail_len = snprintf(tail, sizeof(tail), " (n=%s)", count);
	int room = LABEL_CHARS_MAX - tail_len;
	int len = (int)strlen(label);
	if (len > room)
		snprintf(buf, cap, "%.*s...%s", room > 3 ? room - 3 : 0, label, tail);
	else
		snprintf(buf, cap, "%s%s", label, tail);
}

int tb_plot_spectra(const char *path, const char *title, const char *subtitle,
		    const tb_plot_spectrum *spectra, size_t n, int ticks)
{
	enum { LABEL_MAX = 4 * LABEL_CHARS_MAX };
	tb_plot_series *series = calloc(n ? n : 1, sizeof(*series));
	tb_plot_point **points = calloc(n ? n : 1, sizeof(*points));
	char (*labels)[LABEL_MAX] = calloc(n ? n : 1, sizeof(*labels));
	int rc = series && points && labels ? 0 : -ENOMEM;
	int64_t fewest = -1;
	for (size_t i = 0; i < n && rc == 0; i++) {
		int64_t total = tb_hist_total(spectra[i].h);
		spectrum_label(labels[i], sizeof(labels[i]), spectra[i].label ? spectra[i].label : "",
			       total);
		series[i] = (tb_plot_series){labels[i], NULL, 0, spectra[i].color,
					     spectra[i].stroke, false, NULL};
		rc = tb_plot_spectrum_points(spectra[i].h, ticks, &points[i], &series[i].n);
		series[i].points = points[i];
		if (total > 0 && (fewest < 0 || total < fewest))
			fewest = total;
	}
	/* where the histogram with the fewest samples stops having enough
	 * beyond; every curve is shown whole, the region says where to doubt */
	char region_label[96], count[32];
	tb_plot_count(count, sizeof(count), fewest);
	snprintf(region_label, sizeof(region_label), "fewer than %d samples beyond (n=%s)",
		 TB_MIN_SAMPLES_BEYOND, count);
	tb_plot_region region = {fewest > 0 ? tb_percentile_sufficient_limit(fewest) : 0.0, 100.0,
				 region_label};
	tb_plot p = {
		.title = title,
		.subtitle = subtitle,
		.x = {"percentile", TB_PLOT_PERCENTILE, TB_PLOT_NUMBER},
		.y = {"latency", TB_PLOT_LOG, TB_PLOT_NS},
		.series = series,
		.nseries = n,
		.regions = &region,
		.nregions = fewest > 0 ? 1 : 0,
	};
	if (rc == 0)
		rc = tb_plot_write(path, &p);
	for (size_t i = 0; points && i < n; i++)
		free(points[i]);
	free(series);
	free(points);
	free(labels);
	return rc;
}

int tb_plot_latency_vs_rate(const char *path, const char *title, const char *subtitle,
			    const tb_plot_series *series, size_t nseries, double knee_rate,
			    const char *knee_label)
{
	tb_plot_marker knee = {knee_rate, knee_label};
	tb_plot p = {
		.title = title,
		.subtitle = subtitle,
		.x = {"offered rate (requests/s)", TB_PLOT_LINEAR, TB_PLOT_NUMBER},
		.y = {"latency", TB_PLOT_LOG, TB_PLOT_NS},
		.series = series,
		.nseries = nseries,
		.markers = &knee,
		.nmarkers = knee_rate > 0 ? 1 : 0,
	};
	return tb_plot_write(path, &p);
}
