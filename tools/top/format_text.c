/* format_text.c - a `tailbus top` snapshot as the table a person reads.
 *
 * A header (the source, the window, the time; a bus's segment, collector,
 * rings and drain threads, or a log's counts of lines), one row per metric
 * or tag, then a legend that explains the marks and columns shown.
 *
 * Invariants:
 *  - Durations have 3 significant digits in the largest unit that keeps them
 *    at 1 or more; rates 3 digits with k, M, G; ages the unit a person would
 *    use (s, min, h, days).
 *  - Names are sanitised: a tag from a log is untrusted text and must not be
 *    able to send escape sequences to a terminal; only printable ASCII is
 *    written, and a name wider than the column is cut with "..".
 *  - Columns line up under their headers whatever the marks: a value cell is
 *    the value right-aligned, then its mark ('*' or a space) and a space.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tailbus/units.h"
#include "top.h"

/* A metric whose newest interval ended longer ago than this many intervals
 * is shown as idle: the collector publishes only intervals with events. */
#define IDLE_INTERVALS 2
#define NAME_WIDTH_MIN 6
#define NAME_WIDTH_MAX 32

/* 3 significant digits in the largest unit that keeps the value >= 1. */
static void fmt_ns(char *out, size_t cap, int64_t ns)
{
	static const struct {
		double scale;
		const char *name;
	} units[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
	const size_t last = sizeof(units) / sizeof(units[0]) - 1;
	if (ns < 1000) {
		snprintf(out, cap, "%" PRId64 " ns", ns);
		return;
	}
	for (size_t u = 0; u <= last; u++) {
		double v = (double)ns / units[u].scale;
		if (v >= 999.5 && u < last)
			continue; /* would print as 1000 */
		int decimals = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
		snprintf(out, cap, "%.*f %s", decimals, v, units[u].name);
		return;
	}
}

/* Events per second: 3 significant digits, k/M/G above a thousand. */
static void fmt_rate(char *out, size_t cap, double v)
{
	static const char *const suffix[] = {"", "k", "M", "G"};
	size_t s = 0;
	while (v >= 999.5 && s + 1 < sizeof(suffix) / sizeof(suffix[0])) {
		v /= 1000;
		s++;
	}
	int decimals = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
	snprintf(out, cap, "%.*f%s", decimals, v, suffix[s]);
}

static void fmt_bytes(char *out, size_t cap, uint64_t n)
{
	if (n >= (1u << 30) && n % (1u << 30) == 0)
		snprintf(out, cap, "%" PRIu64 " GiB", n >> 30);
	else if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(out, cap, "%" PRIu64 " MiB", n >> 20);
	else if (n >= (1u << 10) && n % (1u << 10) == 0)
		snprintf(out, cap, "%" PRIu64 " KiB", n >> 10);
	else
		snprintf(out, cap, "%" PRIu64 " bytes", n);
}

/* A name as a terminal may show it: printable ASCII only. */
static void shown_name(char *out, size_t width, const char *name)
{
	size_t n = strlen(name), i;
	if (!*name)
		name = "(untagged)", n = strlen(name);
	for (i = 0; i < width && i < n; i++)
		out[i] = name[i] > ' ' && name[i] < 127 ? name[i] : '?';
	if (n > width && width > 2)
		out[width - 2] = out[width - 1] = '.';
	out[i] = '\0';
}

static void print_bus_header(FILE *out, const struct top_snap *sn)
{
	char page[32];
	fmt_bytes(page, sizeof(page), sn->page_size);
	fprintf(out, "segment %s, %s %s\n", sn->path, page,
		sn->hugepage_backed ? "hugepages" : "pages (not hugepages)");
	if (!sn->collector_pid)
		fprintf(out, "collector: none attached - collector not running?");
	else if (!sn->collector_fresh)
		fprintf(out, "collector pid %d: heartbeat %.1f s old - collector not running?",
			(int)sn->collector_pid, sn->heartbeat_age_s);
	else
		fprintf(out, "collector pid %d, heartbeat fresh (%.1f s ago)", (int)sn->collector_pid,
			sn->heartbeat_age_s);
	fprintf(out, "   rings: %u live, %" PRIu64 " events dropped, %" PRIu64 " folded since attach\n",
		sn->rings_live, sn->ring_drops, sn->ring_folded);
	if (sn->drain_threads)
		fprintf(out, "drain: %u thread(s), last interval's longest pass %u us, longest self-caused "
			     "pause %u us, series waits %u; closes behind: %u\n",
			sn->drain_threads, sn->drain_pass_us, sn->drain_self_pause_us, sn->series_waits,
			sn->closes_behind);
}

static void print_header(FILE *out, const struct top_snap *sn)
{
	char when[16];
	time_t t = (time_t)(sn->now_ns / TOP_NS_PER_SEC);
	struct tm tm;
	strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&t, &tm));
	char window[32];
	tb_unit_format(window, sizeof(window), TB_UNIT_DURATION, sn->window_ns);
	fprintf(out, "tailbus top   %s %s   window %s", sn->from_log ? "log" : "bus", sn->source,
		window);
	if (sn->interval_s > 0)
		fprintf(out, " (%u intervals of %.3g s)",
			top_window_intervals(sn->window_ns, sn->interval_s * TOP_NS_PER_SEC, sn->window_cap),
			sn->interval_s);
	fprintf(out, "   %s\n", when);
	if (!sn->from_log)
		print_bus_header(out, sn);
	else
		fprintf(out, "%zu intervals read, %zu bad lines skipped%s%s%s\n", sn->log_intervals,
			sn->bad_lines, sn->log_error ? " (last: " : "",
			sn->log_error ? sn->log_error : "", sn->log_error ? ")" : "");
}

static int name_width(const struct top_snap *sn)
{
	size_t w = NAME_WIDTH_MIN;
	for (size_t i = 0; i < sn->nrows; i++) {
		size_t n = *sn->rows[i].name ? strlen(sn->rows[i].name) : strlen("(untagged)");
		if (n > w)
			w = n;
	}
	return (int)(w > NAME_WIDTH_MAX ? NAME_WIDTH_MAX : w);
}

/* A value cell: the value right-aligned, then its mark and a space, so that
 * the cells line up under the headers. */
static void print_cell(FILE *out, int64_t ns, bool insufficient)
{
	char v[32];
	fmt_ns(v, sizeof(v), ns);
	fprintf(out, " %7s%c ", v, insufficient ? '*' : ' ');
}

/* How old the newest data is, in the unit a person would use: seconds up to
 * two minutes, then minutes, hours, days (an old log read with --log is
 * months or years old). */
#define SEC_PER_MIN 60.0
#define SEC_PER_HOUR 3600.0
#define SEC_PER_DAY 86400.0
#define AGE_UNIT_SWITCH 2.0 /* 2 min, 2 h, 2 days: then the next unit */
static void fmt_age(char *buf, size_t cap, double s)
{
	if (s < AGE_UNIT_SWITCH * SEC_PER_MIN)
		snprintf(buf, cap, "%.0f s", s);
	else if (s < AGE_UNIT_SWITCH * SEC_PER_HOUR)
		snprintf(buf, cap, "%.0f min", s / SEC_PER_MIN);
	else if (s < AGE_UNIT_SWITCH * SEC_PER_DAY)
		snprintf(buf, cap, "%.0f h", s / SEC_PER_HOUR);
	else
		snprintf(buf, cap, "%.0f days", s / SEC_PER_DAY);
}

static void print_row(FILE *out, const struct top_row *r, int nw)
{
	char name[NAME_WIDTH_MAX + 1], rate[32];
	shown_name(name, (size_t)nw, r->name);
	fprintf(out, "%-*s", nw, name);
	if (r->error || r->count == 0) {
		fprintf(out, "   %s\n", r->error ? r->error
				      : r->intervals ? "no events in the window"
						     : "no interval published yet");
		return;
	}
	fmt_rate(rate, sizeof(rate), r->rate);
	fprintf(out, " %6s %10" PRId64, rate, r->count);
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
		print_cell(out, r->pct[p], r->insufficient[p]);
	print_cell(out, r->max, false);
	if (r->has_drops)
		fprintf(out, " %7" PRIu64, r->drops);
	else
		fprintf(out, " %7s", "-");
	if (r->interval_s > 0 && r->age_s > IDLE_INTERVALS * r->interval_s) {
		char age[32];
		fmt_age(age, sizeof(age), r->age_s);
		fprintf(out, "   (newest data %s old)", age);
	}
	if (r->let_go)
		fprintf(out, "   (window: the newest %u intervals; the live heap let the older go)",
			r->intervals);
	fputc('\n', out);
}

static void print_legend(FILE *out, const struct top_snap *sn)
{
	fprintf(out, "\n* fewer than %d samples expected beyond this percentile in the window: "
		     "too few to trust\n", TB_MIN_SAMPLES_BEYOND);
	if (sn->from_log)
		fprintf(out, "drops: not in an interval log (its .health.csv sidecar has them)\n");
	else
		fprintf(out, "drops: events lost to full rings, whole bus, during the window's "
			     "intervals\n");
	uint64_t folded = 0;
	for (size_t i = 0; i < sn->nrows; i++) {
		if (sn->rows[i].has_drops && !sn->rows[i].error)
			folded += sn->rows[i].folded;
	}
	if (folded > 0)
		fprintf(out, "folded: %" PRIu64 " of the counts came from fold lanes (a ring was full: "
			     "each counted at 2 significant digits, none lost)\n", folded);
	uint32_t gap_us = 0;
	for (size_t i = 0; i < sn->nrows; i++) {
		if (sn->rows[i].has_drops && !sn->rows[i].error && sn->rows[i].gap_us > gap_us)
			gap_us = sn->rows[i].gap_us;
	}
	if (gap_us > 0) {
		char gap[32];
		fmt_ns(gap, sizeof(gap), (int64_t)gap_us * 1000);
		fprintf(out, "collector: up to %s between two of its passes over the rings in the "
			     "window (a ring that fills in less time drops)\n", gap);
	}
}

void top_print_text(FILE *out, const struct top_snap *sn)
{
	int nw = name_width(sn);
	print_header(out, sn);
	fprintf(out, "\n%-*s %6s %10s", nw, "metric", "rate/s", "count");
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
		fprintf(out, " %7s  ", tb_summary_labels[p]);
	fprintf(out, " %7s   %7s\n", "max", "drops");
	for (size_t i = 0; i < sn->nrows; i++)
		print_row(out, &sn->rows[i], nw);
	if (sn->nrows == 0)
		fprintf(out, "(no metric registered yet)\n");
	print_legend(out, sn);
}

