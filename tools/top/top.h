/* top.h - `tailbus top` inside: what its files share (not a public header).
 *
 *   tailbus top [--bus NAME | --log FILE] [--dir SEGDIR] [--window DURATION]
 *               [--once] [--json] [--interval-ms N]
 *
 * The idea. Every interval the collector publishes, for each metric that saw
 * events, a summary and the compressed histogram of that interval into the
 * segment's live area (tailbus/live.h). A window of W is the newest
 * W / interval published intervals of a metric (rounded to whole intervals,
 * at least one); their histograms are added into one and every figure of the
 * window comes from that merged histogram (merged counts, never averaged
 * percentiles). The segment is mapped read-only and the live area is read
 * lock-free, without a system call, so top can never disturb the bus. With
 * --log FILE the same window is built from the newest lines of each tag of
 * an interval log that may still be growing (tailbus/log_follow.h).
 *
 * The files, in the order data flows (each calls only those before it):
 *   options.c      the command line, into struct top_options
 *   window.c       how many intervals make a window; their histograms merged
 *                  into a row
 *   source_bus.c   a snapshot from a bus's live area and header
 *   source_log.c   a snapshot from a followed log
 *   format_text.c  a snapshot as the table
 *   format_json.c  a snapshot as one JSON object
 *   loop.c         the refresh loop on the terminal (../term.h), and the verb
 *
 * Invariants:
 *  - A window is whole intervals, at least one and at most what the live area
 *    keeps per metric (TOP_LOG_KEEP per tag from a log): a --window shorter
 *    than one interval, or longer than that many, is refused (exit 2) once
 *    the interval is known, at each snapshot, never cut short silently.
 *  - Every figure of a row comes from the window's merged histogram.
 *  - A snapshot's rows are sorted by name before they are printed.
 */
#ifndef TAILBUS_TOOLS_TOP_H
#define TAILBUS_TOOLS_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "tailbus/cpus.h"
#include "tailbus/hist.h"
#include "tailbus/log.h"
#include "tailbus/log_follow.h"
#include "tailbus/segment.h"
#include "tailbus/summary.h"

#define TOP_VERB "top"
#define TOP_NS_PER_SEC 1000000000LL
/* Until a collector has written its interval into the header. */
#define TOP_DEFAULT_INTERVAL_NS TOP_NS_PER_SEC
/* --log keeps as many lines per tag as the live area keeps intervals. */
#define TOP_LOG_KEEP TB_SEG_DEFAULT_LIVE_INTERVALS

struct top_options {
	const char *bus, *log, *dir;
	const char *window_arg; /* as typed, for its error sentence */
	int64_t window_ns;
	bool once, json;
	int64_t refresh_ns; /* 0: once per collector interval */
};

/* One metric's (or tag's) window, ready to print. */
struct top_row {
	char name[TB_LOG_TAG_MAX];
	uint32_t intervals; /* merged into the window */
	int64_t count, max;
	int64_t pct[TB_SUMMARY_PERCENTILES];
	bool insufficient[TB_SUMMARY_PERCENTILES];
	bool has_drops;   /* false from a log: drops are in its sidecar */
	uint64_t drops;
	uint64_t folded;  /* of count: from fold lanes, at 2 digits (with has_drops) */
	uint32_t gap_us;  /* the collector's longest gap between passes (with has_drops) */
	bool let_go;      /* the live heap let go intervals the window asks for (with has_drops) */
	double span_s, rate, age_s, interval_s;
	const char *error; /* the window could not be read */
};

/* What one refresh shows. */
struct top_snap {
	bool from_log;
	const char *source; /* bus name or log path */
	/* from a bus */
	const char *path;
	uint64_t page_size;
	bool hugepage_backed;
	int32_t collector_pid;
	double heartbeat_age_s; /* < 0: never beat */
	bool collector_fresh;
	uint32_t rings_live;
	uint64_t ring_drops;
	uint64_t ring_folded; /* SPANs the live and detached rings' producers folded */
	/* the collector's drain threads over its last close (tb_seg_header) */
	uint32_t drain_threads, drain_pass_us, drain_self_pause_us, closes_behind, series_waits;
	/* from a log */
	size_t log_intervals, bad_lines;
	const char *log_error;
	/* both */
	int64_t window_ns;
	uint32_t window_cap; /* intervals kept per metric: a window holds no more */
	double interval_s;
	bool interval_known; /* the source says it (a bus's collector, a log's lines), not a guess */
	int64_t now_ns; /* CLOCK_REALTIME */
	struct top_row *rows;
	size_t nrows, cap;
};

static inline int64_t top_clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * TOP_NS_PER_SEC + ts.tv_nsec;
}

/* ---- options.c ---- */

/* 0 to run, 1 when --help or --version was answered, -EINVAL (said) for bad usage. */
int top_parse_options(int argc, char **argv, struct top_options *o);

/* ---- window.c ---- */

/* The intervals of one window being merged. */
struct top_window {
	tb_hist merged;
	bool have_hist;
	uint64_t drops, folded;
	uint32_t gap_us; /* the longest of the intervals' longest_gap_us */
	int64_t oldest_start_ns, newest_end_ns, newest_length_ns;
	uint32_t intervals;
};

uint32_t top_window_intervals(int64_t window_ns, double interval_ns, uint32_t cap);
int top_window_check(const struct top_options *o, const struct top_snap *sn);
void top_window_init(struct top_window *w);
void top_window_free(struct top_window *w);
int64_t top_window_reach(uint32_t n, int64_t interval_ns);
bool top_window_interval(struct top_window *w, int64_t start_ns, int64_t length_ns, int64_t reach_ns);
int top_window_hist(struct top_window *w, const tb_hist *h);
/* `interval_ns`: the source's interval length (not the newest's, which a
 * collector's stop may cut short). */
void top_window_finish(const struct top_window *w, struct top_row *r, int64_t now_ns, int64_t interval_ns);
struct top_row *top_add_row(struct top_snap *sn);
void top_sort_rows(struct top_snap *sn);

/* ---- source_bus.c ---- */

struct top_bus {
	tb_seg seg;
	uint64_t published_seen;
	/* the CPUs top was given, and the collector (pid, drain threads) whose
	 * drain CPUs it last kept off */
	tb_cpus cpus_allowed;
	bool cpus_read;
	int32_t cpus_pid;
	uint32_t cpus_drains;
};

int top_bus_open(struct top_bus *b, const struct top_options *o);
void top_bus_close(struct top_bus *b);
int top_bus_snapshot(struct top_bus *b, const struct top_options *o, struct top_snap *sn);
int64_t top_bus_interval_ns(const struct top_bus *b);
bool top_bus_new_interval(const struct top_bus *b);

/* ---- source_log.c ---- */

struct top_log {
	const char *path;
	tb_log_follow *follow;
	tb_log_entry entry; /* the interval being merged */
};

int top_log_open(struct top_log *l, const char *path);
void top_log_close(struct top_log *l);
int top_log_snapshot(struct top_log *l, const struct top_options *o, struct top_snap *sn);

/* ---- format_text.c, format_json.c ---- */

void top_print_text(FILE *out, const struct top_snap *sn);
void top_print_json(FILE *out, const struct top_snap *sn);

#endif
