/* source_log.c - a `tailbus top` snapshot from an interval log that may
 * still be growing (--log), followed with tailbus/log_follow.h.
 *
 * Invariants:
 *  - Complete lines only: a torn last line is read, whole, at a later
 *    refresh; a truncated or rotated file is read again from its start.
 *  - Each tag keeps its newest TOP_LOG_KEEP intervals, decoded only when a
 *    window is built. The window's length in intervals comes from the
 *    newest good line's interval length, or the next good line's when that
 *    is longer (a collector's last line is cut short at its stop).
 *  - A line whose histogram does not decode is counted bad (once) and keeps
 *    its place in the window: the window is still at most the newest n
 *    lines, and ends at one older than its time (window.c).
 *  - A log carries no drops (its .health.csv sidecar does): its rows have
 *    none.
 */
#include <errno.h>
#include <math.h>
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

static int log_tag_row(struct top_log *ls, size_t tag, int64_t window_ns, struct top_row *r,
		       int64_t now_ns)
{
	struct top_window a;
	top_window_init(&a);
	snprintf(r->name, sizeof(r->name), "%s", tb_log_follow_tag(ls->follow, tag));
	uint32_t count = tb_log_follow_count(ls->follow, tag);
	uint32_t n = count, good = 0; /* until a good line says how long an interval is */
	int64_t interval_ns = 0, reach_ns = INT64_MAX;
	int rc = 0;
	for (uint32_t age = 0; rc == 0 && age < n && age < count; age++) {
		rc = tb_log_follow_read(ls->follow, tag, age, &ls->entry);
		if (rc == -EINVAL) {
			rc = 0; /* a bad line still takes its place in the window */
			continue;
		}
		if (rc < 0)
			break;
		const tb_log_entry *e = &ls->entry;
		int64_t length_ns = (int64_t)llround(e->length_sec * TOP_NS_PER_SEC);
		if (good++ < 2 && length_ns > interval_ns) {
			/* the newest good line's length, or the next one's when
			 * that is longer: a collector's last line is cut short at
			 * its stop. Settled then, whatever lines come after. */
			interval_ns = length_ns;
			uint32_t want = top_window_intervals(window_ns, (double)length_ns, TOP_LOG_KEEP);
			n = want;
			reach_ns = top_window_reach(want, length_ns);
		}
		if (!top_window_interval(&a, (int64_t)llround(e->start_abs_sec * TOP_NS_PER_SEC), length_ns,
					 reach_ns))
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
	for (size_t t = 0; t < tb_log_follow_tags(ls->follow); t++) {
		struct top_row *r = top_add_row(sn);
		if (!r || (rc = log_tag_row(ls, t, o->window_ns, r, sn->now_ns)) < 0)
			return r ? rc : -ENOMEM;
		if (r->interval_s > sn->interval_s)
			sn->interval_s = r->interval_s;
	}
	tb_log_follow_stats st;
	tb_log_follow_stats_get(ls->follow, &st);
	sn->log_intervals = st.intervals;
	sn->bad_lines = st.bad_lines;
	sn->log_error = st.last_error;
	return 0;
}

