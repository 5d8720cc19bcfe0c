/* tailbus/report.h - percentile distribution text as the Java reference prints it.
 *
 * The ".hgrm" text (and its CSV variant) is what people diff and what plotting
 * tools read, so it must match HdrHistogram's outputPercentileDistribution
 * character for character (docs/formats.md, Percentile distribution). That includes
 * number formatting: Java's "%.Nf" rounds the shortest decimal representation
 * of a double half-up, where C's printf rounds the exact binary value, so the
 * two disagree on ties such as 0.0625 -> "0.063" (Java) and "0.062" (C).
 * tb_fmt_java_fixed() reproduces Java's rule.
 */
#ifndef TAILBUS_REPORT_H
#define TAILBUS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tailbus/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Java's default percentile reporting resolution. */
#define TB_HGRM_DEFAULT_TICKS 5

/* HistogramLogProcessor's default -outputValueUnitRatio: the values of a
 * nanosecond log print in milliseconds. */
#define TB_HGRM_JAVA_UNIT_RATIO 1e6

/* Format v with `frac` digits after the point, right-aligned in `width`
 * (0 = no padding), as java.util.Formatter's "%width.fracf" does.
 * Returns the length written (snprintf semantics). */
int tb_fmt_java_fixed(char *buf, size_t cap, double v, int width, int frac);

/* Write the percentile distribution of h: values divided by unit_ratio,
 * `ticks` percentile ticks per half distance, text (with footer) or CSV.
 * Returns 0 or -EIO. */
int tb_report_hgrm(FILE *out, const tb_hist *h, int ticks, double unit_ratio, bool csv);

/* The two lines HistogramLogProcessor writes at the top of its .hgrm file:
 *   #[Overall percentile distribution between S and E seconds (relative to StartTime)]
 *   #[StartTime: T (seconds since epoch), <date>]
 * S and E bound the selected range (range_end INFINITY prints "<Infinite>",
 * range_start -INFINITY prints as 0, Java's default); the date is T in the
 * local time zone as Java's Date.toString() prints it. Returns 0 or -EIO. */
int tb_report_hgrm_header(FILE *out, double range_start, double range_end, double start_time_sec);

#ifdef __cplusplus
}
#endif
#endif
