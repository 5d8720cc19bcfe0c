/* source_log.c - a `tailbus top` snapshot from an interval log that may
 * still be growing (--log), followed with tailbus/log_follow.h.
 *
 * Invariants:
 *  - Complete lines only: a torn last line is read, whole, at a later
 *    refresh; a truncated or rotated file is read again from its start.
 *  - Each tag keeps its newest TOP_LOG_KEEP intervals, decoded only when a
 *    window is built. The window's length in intervals comes from the
 *    tag's interval length: the median of its newest good lines' (a
 *    collector's last line is cut short at its stop, a stall stretches
 *    one), settled before the window is walked. The log's interval, which
 *    --window is checked against, is the longest of the tags with recent
 *    data.
 *  - A line whose histogram does not decode is counted bad (once) and keeps
 *    its place in the window: the window is still at most the newest n
 *    lines, and ends at one older than its time (window.c).
 *  - A log carries no drops (its .health.csv sidecar does): its rows have
 *    none.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "top.h"

int top_log_open(struct top_log *ls, const char *path)
{
	memset(ls, 0, sizeof(*ls));
	ls->path = path;
	int rc = tb_log_follow_open(&ls->follow, path, TOP_LOG_KEEP);
	if (rc < 0)
		tb_cli_error(TOP_VERB, "cannot read %s: %s", path, strerror(-rc));
	return rc;
}

void top_log_close(struct top_log *ls)
{
	tb_log_follow_close(ls->follow);
	tb_log_entry_free(&ls->entry);
}

/* How many of a tag's newest good lines settle its interval length. */
#define LENGTH_LINES 5
/* A tag whose data is this many of its intervals older than the newest
 * tag's no longer sets the log's interval. */
#define RECENT_INTERVALS 3
/* A line's times in ns are held within this (about 146 years). */
#define LINE_NS_MAX 4.6e18

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Seconds from a log line as ns, held within what the window arithmetic
 * takes (a line may say any number). */
static int64_t line_ns(double s)
{
	double ns = s * TOP_NS_PER_SEC;
	if (!(ns > -LINE_NS_MAX))
		return -(int64_t)LINE_NS_MAX;
	return ns < LINE_NS_MAX ? (int64_t)llround(ns) : (int64_t)LINE_NS_MAX;
}

/* The tag's interval length, into *out: the median of its newest good
 * lines' (the upper one of two), so that a collector's last line, cut short
 * at its stop, and a line a stall stretched do not move it; 0 when it has
 * none. Returns 0 or a negative errno. */
static int tag_interval_ns(struct top_log *ls, size_t tag, uint32_t count, int64_t *out)
{
	int64_t len[LENGTH_LINES];
	int k = 0;
	for (uint32_t age = 0; age < count && k < LENGTH_LINES; age++) {
		int rc = tb_log_follow_read(ls->follow, tag, age, &ls->entry);
		if (rc == -EINVAL)
			continue;
		if (rc < 0)
			return rc;
		len[k++] = line_ns(ls->entry.length_sec);
	}
	qsort(len, (size_t)k, sizeof(len[0]), by_value);
	*out = k ? len[k / 2] : 0;
	return 0;
}

static int log_tag_row(struct top_log *ls, size_t tag, int64_t window_ns, struct top_row *r,
		       int64_t now_ns)
{
	struct top_window a;
	top_window_init(&a);
	snprintf(r->name, sizeof(r->name), "%s", tb_log_follow_tag(ls->follow, tag));
	uint32_t count = tb_log_follow_count(ls->follow, tag);
	int64_t interval_ns = 0;
	int rc = tag_interval_ns(ls, tag, count, &interval_ns);
	if (rc < 0)
		return rc;
	uint32_t n = top_window_intervals(window_ns, (double)interval_ns, TOP_LOG_KEEP);
	int64_t reach_ns = top_window_reach(n, interval_ns);
	for (uint32_t age = 0; rc == 0 && age < n && age < count; age++) {
		rc = tb_log_follow_read(ls->follow, tag, age, &ls->entry);
		if (rc == -EINVAL) {
			rc = 0; /* a bad line still takes its place in the window */
			continue;
		}
		if (rc < 0)
			break;
		const tb_log_entry *e = &ls->entry;
		if (!top_window_interval(&a, line_ns(e->start_abs_sec), line_ns(e->length_sec), reach_ns))
			break; /* older than the window */
		rc = top_window_hist(&a, &e->hist);
	}
	if (rc == 0)
		top_window_finish(&a, r, now_ns, interval_ns);
	top_window_free(&a);
	return rc;
}

int top_log_snapshot(struct top_log *ls, const struct top_options *o, struct top_snap *sn)
{
	sn->from_log = true;
	sn->source = ls->path;
	sn->window_cap = TOP_LOG_KEEP;
	int rc = tb_log_follow_poll(ls->follow);
	if (rc < 0) {
		tb_cli_error(TOP_VERB, "cannot read %s: %s", ls->path, strerror(-rc));
		return rc;
	}
	double newest_age = INFINITY;
	for (size_t t = 0; t < tb_log_follow_tags(ls->follow); t++) {
		struct top_row *r = top_add_row(sn);
		if (!r || (rc = log_tag_row(ls, t, o->window_ns, r, sn->now_ns)) < 0)
			return r ? rc : -ENOMEM;
		if (r->intervals && r->age_s < newest_age)
			newest_age = r->age_s;
	}
	/* the log's interval: the longest of the tags with recent data
	 * (within RECENT_INTERVALS of their own of the newest): one that
	 * stopped long ago, with another interval, does not set it */
	for (size_t k = 0; k < sn->nrows; k++) {
		const struct top_row *r = &sn->rows[k];
		if (r->intervals && r->age_s - newest_age <= RECENT_INTERVALS * r->interval_s &&
		    r->interval_s > sn->interval_s)
			sn->interval_s = r->interval_s;
	}
	sn->interval_known = sn->interval_s > 0;
	tb_log_follow_stats st;
	tb_log_follow_stats_get(ls->follow, &st);
	sn->log_intervals = st.intervals;
	sn->bad_lines = st.bad_lines;
	sn->log_error = st.last_error;
	return 0;
}

