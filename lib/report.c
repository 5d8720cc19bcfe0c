/* report.c - the ".hgrm" percentile distribution, text and CSV.
 *
 * Rows come from the percentile iterator (hist_iter.c); each prints the
 * bucket's highest equivalent value scaled by the unit ratio, the percentile
 * level reached (as a fraction), the cumulative count and 1/(1-p). The row at
 * 100% has no inverse column (text) or "Infinity" (CSV). The text form ends
 * with the mean, standard deviation, max, total and layout footer. Formats
 * are Java's, see docs/formats.md, Percentile distribution (.hgrm).
 *
 * HistogramLogProcessor's .hgrm file starts with two more lines, the range
 * the distribution covers and the log's StartTime (tb_report_hgrm_header).
 */
#include "tailbus/report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <time.h>

#define NUM_BUF 512
/* java.util.Date.toString(): "EEE MMM dd HH:mm:ss zzz yyyy", in English. */
#define JAVA_DATE_FORMAT "%a %b %d %H:%M:%S %Z %Y"
#define DATE_BUF 64
#define MS_PER_SEC 1000.0

static void row(FILE *out, const tb_hist_iter *it, double unit_ratio, int sig, bool csv)
{
	char value[NUM_BUF], pct[NUM_BUF], inv[NUM_BUF];
	double level = it->percentile / 100.0;
	bool last = it->percentile == 100.0;
	tb_fmt_java_fixed(value, sizeof(value), (double)it->value / unit_ratio, csv ? 0 : 12, sig);
	tb_fmt_java_fixed(pct, sizeof(pct), level, csv ? 0 : 2, 12);
	if (csv) {
		if (last) {
			fprintf(out, "%s,%s,%" PRId64 ",Infinity\n", value, pct, it->cumulative);
		} else {
			tb_fmt_java_fixed(inv, sizeof(inv), 1.0 / (1.0 - level), 0, 2);
			fprintf(out, "%s,%s,%" PRId64 ",%s\n", value, pct, it->cumulative, inv);
		}
		return;
	}
	if (last) {
		fprintf(out, "%s %s %10" PRId64 "\n", value, pct, it->cumulative);
	} else {
		tb_fmt_java_fixed(inv, sizeof(inv), 1.0 / (1.0 - level), 14, 2);
		fprintf(out, "%s %s %10" PRId64 " %s\n", value, pct, it->cumulative, inv);
	}
}

static void footer(FILE *out, const tb_hist *h, double unit_ratio)
{
	char mean[NUM_BUF], sd[NUM_BUF], max[NUM_BUF];
	int s = h->sig_digits;
	tb_fmt_java_fixed(mean, sizeof(mean), tb_hist_mean(h) / unit_ratio, 12, s);
	tb_fmt_java_fixed(sd, sizeof(sd), tb_hist_stddev(h) / unit_ratio, 12, s);
	tb_fmt_java_fixed(max, sizeof(max), (double)tb_hist_max(h) / unit_ratio, 12, s);
	fprintf(out, "#[Mean    = %s, StdDeviation   = %s]\n", mean, sd);
	fprintf(out, "#[Max     = %s, Total count    = %12" PRId64 "]\n", max, tb_hist_total(h));
	fprintf(out, "#[Buckets = %12d, SubBuckets     = %12d]\n", h->bucket_count, h->sub_bucket_count);
}

int tb_report_hgrm(FILE *out, const tb_hist *h, int ticks, double unit_ratio, bool csv)
{
	if (unit_ratio <= 0.0)
		return -EINVAL;
	if (csv)
		fprintf(out, "\"Value\",\"Percentile\",\"TotalCount\",\"1/(1-Percentile)\"\n");
	else
		fprintf(out, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
			"1/(1-Percentile)");
	tb_hist_iter it;
	tb_hist_iter_percentiles(&it, h, ticks);
	while (tb_hist_iter_next(&it))
		row(out, &it, unit_ratio, h->sig_digits, csv);
	if (!csv)
		footer(out, h, unit_ratio);
	return ferror(out) ? -EIO : 0;
}

/* Java's Date.toString() of the millisecond (long)(sec * 1000). */
static void java_date(char *buf, size_t cap, double sec)
{
	double ms = trunc(sec * MS_PER_SEC);
	time_t t = (time_t)floor(ms / MS_PER_SEC);
	struct tm tm;
	if (!localtime_r(&t, &tm) || strftime(buf, cap, JAVA_DATE_FORMAT, &tm) == 0)
		snprintf(buf, cap, "?");
}

int tb_report_hgrm_header(FILE *out, double range_start, double range_end, double start_time_sec)
{
	char from[NUM_BUF], to[NUM_BUF], start[NUM_BUF], date[DATE_BUF];
	tb_fmt_java_fixed(from, sizeof(from), isinf(range_start) ? 0.0 : range_start, 0, 3);
	if (isinf(range_end) && range_end > 0)
		snprintf(to, sizeof(to), "<Infinite>");
	else
		tb_fmt_java_fixed(to, sizeof(to), range_end, 0, 3);
	tb_fmt_java_fixed(start, sizeof(start), start_time_sec, 0, 3);
	java_date(date, sizeof(date), start_time_sec);
	fprintf(out, "#[Overall percentile distribution between %s and %s seconds (relative to "
		"StartTime)]\n", from, to);
	fprintf(out, "#[StartTime: %s (seconds since epoch), %s]\n", start, date);
	return ferror(out) ? -EIO : 0;
}
