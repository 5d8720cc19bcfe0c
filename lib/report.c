/* report.c - the ".hgrm" percentile distribution, text and CSV.
 *
 * Rows come from the percentile iterator (hist_iter.c); each prints the
 * bucket's highest equivalent value scaled by the unit ratio, the percentile
 * level reached (as a fraction), the cumulative count and 1/(1-p). The row at
 * 100% has no inverse column (text) or "Infinity" (CSV). The text form ends
 * with the mean, standard deviation, max, total and layout footer. Formats
 * are Java's, see docs/formats.md, Percentile distribution (.hgrm).
 */
#include "tailbus/report.h"

#include <errno.h>
#include <inttypes.h>

#define NUM_BUF 512

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
