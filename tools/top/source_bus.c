/* source_bus.c - a `tailbus top` snapshot from a bus: its live area and header.
 *
 * The segment is mapped read-only (TB_SEG_READONLY); nothing in it is
 * written and no lock is taken, so top cannot disturb the bus.
 *
 * Invariants:
 *  - A metric's window is read through tb_live_read_window: ages 0..n-1 one
 *    by one, each under the metric's sequence counter, as one walk in which
 *    start times fall strictly; a publish in between makes the window be
 *    read again. A window never counts an interval twice or skips one, and
 *    ends at one older than its time (window.c).
 *  - Every figure is exact: each interval in the live area carries its whole
 *    histogram (ABI 4), the same bytes as its log line, so a window equals
 *    `tailbus replay` of the same intervals of the log. When the live heap
 *    has let go intervals the window asks for (tb_live_let_go), the window
 *    is the intervals kept, and the row says so.
 *  - Whether the collector serves the bus is tb_bus_collector_state's rule,
 *    the one every tool applies; the header's and slots' figures are
 *    tb_bus_counts_read's, so the segment's layout is read in lib/ only.
 *  - While the mapped segment's collector does not serve it, top checks
 *    whether the bus's file was replaced (`tailbusd --fresh`) and follows the
 *    new one; while it does, a snapshot makes no system call, but when the
 *    collector or its number of drain threads changes: then top reads which
 *    CPUs the drain threads are pinned to, and keeps off them.
 *  - Metric names are read defensively (producers write the metric table):
 *    one that is not a valid name is shown as metric#<id>.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tailbus/bus.h"
#include "tailbus/live.h"
#include "tailbus/read_guard.h"
#include "top.h"

int64_t top_bus_interval_ns(const struct top_bus *b)
{
	int64_t ns = tb_bus_interval_ns(&b->seg);
	return ns > 0 ? ns : TOP_DEFAULT_INTERVAL_NS;
}

/* Where `tb_seg_open` looked, for the "no such bus" sentence. */
static void searched_dirs(const char *dir, char *out, size_t cap)
{
	const char *env = getenv("TAILBUS_DIR");
	char huge[PATH_MAX];
	size_t page;
	if (dir || (env && *env))
		snprintf(out, cap, "%s", dir ? dir : env);
	else if (tb_seg_hugetlbfs_mount(huge, sizeof(huge), &page) == 0)
		snprintf(out, cap, "%s or %s", huge, TB_SEG_FALLBACK_DIR);
	else
		snprintf(out, cap, "%s", TB_SEG_FALLBACK_DIR);
}

int top_bus_open(struct top_bus *b, const struct top_options *o)
{
	const char *why = "unknown error";
	memset(b, 0, sizeof(*b));
	int rc = tb_seg_open(&b->seg, o->dir, o->bus, NULL, TB_SEG_READONLY, &why);
	if (rc == -ENOENT) {
		char dirs[2 * PATH_MAX + 8];
		searched_dirs(o->dir, dirs, sizeof(dirs));
		tb_cli_error(TOP_VERB, "no bus '%s' in %s (is tailbusd running? --dir or TAILBUS_DIR "
			     "names another directory)", o->bus, dirs);
	} else if (rc < 0) {
		tb_cli_error(TOP_VERB, "bus '%s': %s (%s)", o->bus, why, strerror(-rc));
	} else {
		/* a file cut under us: zeros where it was, then mapped afresh */
		(void)tb_read_guard_install();
		(void)tb_read_guard_add(&b->seg);
	}
	return rc;
}

/* The walk's argument: the window, how many intervals it is, and how far
 * back from its newest end they may start (top_window_reach). */
struct window_walk {
	struct top_window a;
	uint32_t n;
	int64_t reach_ns;
};

static void window_begin(void *arg)
{
	top_window_free(&((struct window_walk *)arg)->a);
}

static int window_interval(void *arg, const tb_live_interval *iv, const tb_hist *h)
{
	struct window_walk *w = arg;
	struct top_window *a = &w->a;
	if (!top_window_interval(a, iv->start_ns, iv->length_ns, w->reach_ns))
		return 1; /* older than the window: it ends here */
	a->drops += iv->dropped;
	a->folded += iv->folded;
	if (iv->longest_gap_us > a->gap_us)
		a->gap_us = iv->longest_gap_us;
	return top_window_hist(a, h);
}

/* Intervals 0..n-1 of metric `id` that lie in its window, merged into w->a. */
static int read_window(const tb_seg *s, uint32_t id, tb_hist *scratch, struct window_walk *w)
{
	static const tb_live_window_fns fns = {window_begin, window_interval};
	return tb_live_read_window(s, id, w->n, scratch, &fns, w);
}

static int bus_rows(struct top_bus *b, uint32_t n, struct top_snap *sn)
{
	tb_hist scratch;
	memset(&scratch, 0, sizeof(scratch));
	int64_t interval_ns = top_bus_interval_ns(b);
	struct window_walk w = {.n = n, .reach_ns = top_window_reach(n, interval_ns)};
	struct top_window *a = &w.a;
	top_window_init(a);
	int rc = 0;
	for (uint32_t id = 0; rc == 0 && id < b->seg.layout.metric_capacity; id++) {
		const tb_metric_entry *e = tb_seg_metric(&b->seg, id);
		if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != TB_METRIC_READY)
			continue;
		struct top_row *r = top_add_row(sn);
		if (!r) {
			rc = -ENOMEM;
			break;
		}
		tb_seg_metric_shown_name(&b->seg, id, r->name, sizeof(r->name));
		int read = read_window(&b->seg, id, &scratch, &w);
		if (read == -ENOMEM)
			rc = read;
		else if (read == -EAGAIN || read == -ESTALE)
			r->error = "no stable copy: the collector seems stuck mid-write";
		else if (read == -EBADMSG)
			r->error = "an interval's histogram in the live area is corrupt";
		else if (read < 0)
			r->error = "unreadable live area";
		else {
			top_window_finish(a, r, sn->now_ns, interval_ns);
			r->let_go = tb_live_let_go(&b->seg, id, n, a->intervals,
						   a->newest_end_ns - a->newest_length_ns, interval_ns);
		}
		r->has_drops = true;
		r->drops = a->drops;
		r->folded = a->folded;
		r->gap_us = a->gap_us;
		top_window_free(a);
	}
	tb_hist_free(&scratch);
	return rc;
}

/* Whether the collector serves the bus: the rule every tool applies
 * (tb_bus_collector_state). */
static bool bus_collector_alive(const struct top_bus *b)
{
	return tb_bus_collector_state((const tb_seg_header *)b->seg.base,
				      top_clock_ns(CLOCK_MONOTONIC), NULL) ==
	       TB_COLLECTOR_SERVING;
}

/* Keep top off the CPUs the collector's drain threads are pinned to
 * (tailbus/cpus.h), looked at again only when the collector or its number
 * of drain threads changes (the count is published at its first close,
 * after the drain threads pinned themselves). */
static void bus_keep_off_drains(struct top_bus *b, const tb_bus_counts *c)
{
	if (c->collector != TB_COLLECTOR_SERVING ||
	    (c->collector_pid == b->cpus_pid && c->drain_threads == b->cpus_drains))
		return;
	b->cpus_pid = c->collector_pid;
	b->cpus_drains = c->drain_threads;
	if (!b->cpus_read && tb_cpus_allowed(&b->cpus_allowed) < 0)
		return;
	b->cpus_read = true;
	tb_cpus off;
	memset(&off, 0, sizeof(off));
	if (tb_bus_drain_cpus(&b->seg, top_clock_ns(CLOCK_MONOTONIC), &off, NULL) >= 0)
		tb_cpus_keep_off(&b->cpus_allowed, &off);
}

static void bus_header(struct top_bus *b, struct top_snap *sn)
{
	tb_bus_counts c;
	tb_bus_counts_read(&b->seg, top_clock_ns(CLOCK_MONOTONIC), &c);
	bus_keep_off_drains(b, &c);
	sn->path = b->seg.path;
	sn->page_size = b->seg.layout.page_size;
	sn->hugepage_backed = b->seg.hugepages;
	sn->collector_pid = c.collector_pid;
	sn->heartbeat_age_s = c.heartbeat_age_ns >= 0 ? (double)c.heartbeat_age_ns / TOP_NS_PER_SEC : -1;
	sn->collector_fresh = c.collector == TB_COLLECTOR_SERVING;
	sn->interval_s = (double)top_bus_interval_ns(b) / TOP_NS_PER_SEC;
	sn->interval_known = tb_bus_interval_ns(&b->seg) > 0; /* else a default, until a collector */
	sn->drain_threads = c.drain_threads;
	sn->drain_pass_us = c.drain_longest_pass_us;
	sn->drain_self_pause_us = c.drain_self_pause_us;
	sn->closes_behind = c.closes_behind;
	sn->series_waits = c.series_waits;
	sn->rings_live = c.rings_live;
	sn->ring_drops = c.ring_dropped;
	sn->ring_folded = c.ring_folded;
}

/* `tailbusd --fresh` replaces the segment file: follow the new one, like
 * tail -F. Looked at only while the mapped segment's collector seems gone, so
 * a healthy refresh makes no system call. A file cut under us (the read
 * guard covered a fault with zeros) is mapped afresh even when it is the
 * same file. */
static void bus_follow_replacement(struct top_bus *b, const struct top_options *o, bool cut)
{
	struct stat now, ours;
	if (!cut && (stat(b->seg.path, &now) < 0 || fstat(b->seg.fd, &ours) < 0 ||
		     (now.st_ino == ours.st_ino && now.st_dev == ours.st_dev)))
		return;
	tb_seg fresh;
	const char *why;
	if (tb_seg_open(&fresh, o->dir, o->bus, NULL, TB_SEG_READONLY, &why) < 0)
		return;
	tb_read_guard_remove(&b->seg);
	tb_seg_close(&b->seg);
	b->seg = fresh;
	(void)tb_read_guard_add(&b->seg);
}

int top_bus_snapshot(struct top_bus *b, const struct top_options *o, struct top_snap *sn)
{
	bool cut = tb_read_guard_cut(&b->seg);
	if (cut || !bus_collector_alive(b))
		bus_follow_replacement(b, o, cut);
	sn->source = o->bus;
	sn->window_cap = b->seg.layout.live_intervals;
	b->published_seen = tb_bus_intervals_published(&b->seg);
	bus_header(b, sn);
	uint32_t n = top_window_intervals(o->window_ns, (double)top_bus_interval_ns(b),
					  b->seg.layout.live_intervals);
	return bus_rows(b, n, sn);
}

/* True once the collector has published another interval. */
bool top_bus_new_interval(const struct top_bus *b)
{
	return tb_bus_intervals_published(&b->seg) != b->published_seen;
}

void top_bus_close(struct top_bus *b)
{
	tb_read_guard_remove(&b->seg);
	tb_seg_close(&b->seg);
}
