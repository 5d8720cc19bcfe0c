/* loop.c - `tailbus top`: the refresh loop, and the verb itself.
 *
 * Each refresh takes a snapshot from the source (a bus or a log), checks
 * the window against it, sorts its rows by name and shows it: as JSON
 * (--json), redrawn in place on a terminal, or else appended to the output.
 *
 * Invariants:
 *  - On a terminal the table is redrawn once per collector interval, as soon
 *    as the collector has published it (or every --interval-ms; a log's
 *    interval for --log); the screen is cleared whole only once, at the
 *    start (term.h). The cursor is hidden while top runs and shown again on
 *    'q', Ctrl-C, SIGTERM, SIGHUP and Ctrl-Z.
 *  - Anywhere else (a pipe, a file) and with --json each snapshot follows
 *    the previous one; --once prints a single snapshot (one JSON object with
 *    --json) and exits, without touching the terminal or the signals.
 *  - A snapshot that fails ends top: exit 2 for a --window the source cannot
 *    make (judged until a snapshot knows the source's interval, not after),
 *    1 for a source that cannot be read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "term.h"
#include "top.h"

/* How often the refresh loop looks for a new interval, a key or a signal. */
#define TICK_MS 50

struct source {
	bool is_log;
	struct top_bus bus;
	struct top_log log;
};

/* `check`: hold --window against the source (until one snapshot knew its
 * interval: a source's interval that changes later, a collector restarted,
 * a log's lines that jitter, does not end top). */
static int snapshot(struct source *src, const struct top_options *o, struct top_snap *sn, bool check)
{
	memset(sn, 0, sizeof(*sn));
	sn->window_ns = o->window_ns;
	sn->now_ns = top_clock_ns(CLOCK_REALTIME);
	int rc = src->is_log ? top_log_snapshot(&src->log, o, sn) : top_bus_snapshot(&src->bus, o, sn);
	if (rc == 0 && check)
		rc = top_window_check(o, sn);
	if (rc == -ENOMEM)
		tb_cli_error(TOP_VERB, "out of memory");
	top_sort_rows(sn);
	return rc;
}

static void show(struct term *t, const struct top_options *o, const struct top_snap *sn, bool first)
{
	if (o->json) {
		top_print_json(stdout, sn);
	} else if (t->in_place) {
		char *text = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);
		if (!mem)
			return;
		top_print_text(mem, sn);
		fclose(mem);
		term_draw(t, text, len);
		free(text);
	} else {
		if (!first)
			fputc('\n', stdout);
		top_print_text(stdout, sn);
	}
	fflush(stdout);
}

static int64_t refresh_ns(const struct source *src, const struct top_options *o,
			  const struct top_snap *sn)
{
	if (o->refresh_ns)
		return o->refresh_ns;
	/* from the log or the segment: held to what a collector can have
	 * (1 ms to 1 h), so that no value there makes the wait undefined */
	double ns = src->is_log ? (sn->interval_s > 0 ? sn->interval_s * TOP_NS_PER_SEC
						      : (double)TOP_DEFAULT_INTERVAL_NS)
				: (double)top_bus_interval_ns(&src->bus);
	if (!(ns >= 1e6))
		ns = 1e6;
	if (ns > 3600.0 * TOP_NS_PER_SEC)
		ns = 3600.0 * TOP_NS_PER_SEC;
	return (int64_t)ns;
}

/* Wait for the next refresh: a newly published interval (at most one
 * interval later, so the collector's state stays current), or --interval-ms.
 * False when it is time to stop. */
static bool wait_refresh(struct term *t, const struct source *src, const struct top_options *o,
			 int64_t period_ns)
{
	int64_t due = top_clock_ns(CLOCK_MONOTONIC) + period_ns;
	for (;;) {
		enum term_event ev = term_wait(t, TICK_MS);
		if (ev == TERM_QUIT)
			return false;
		if (ev == TERM_REDRAW)
			return true;
		if (top_clock_ns(CLOCK_MONOTONIC) >= due)
			return true;
		if (!o->refresh_ns && !src->is_log && top_bus_new_interval(&src->bus))
			return true;
	}
}

static int run(struct source *src, const struct top_options *o)
{
	struct term t;
	memset(&t, 0, sizeof(t));
	if (!o->once)
		term_open(&t, !o->json);
	int status = TB_EXIT_OK;
	bool checked = false;
	for (bool first = true; !term_stop_requested(); first = false) {
		struct top_snap sn;
		int rc = snapshot(src, o, &sn, !checked);
		checked |= rc == 0 && sn.interval_known;
		if (rc == 0)
			show(&t, o, &sn, first);
		int64_t period = refresh_ns(src, o, &sn);
		free(sn.rows);
		if (rc < 0) {
			status = rc == -EDOM ? TB_EXIT_USAGE : TB_EXIT_INPUT;
			break;
		}
		if (o->once || !wait_refresh(&t, src, o, period))
			break;
	}
	term_close(&t);
	return status;
}

int tb_cmd_top(int argc, char **argv)
{
	struct top_options o;
	int rc = top_parse_options(argc, argv, &o);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	struct source src;
	memset(&src, 0, sizeof(src));
	src.is_log = o.log != NULL;
	rc = src.is_log ? top_log_open(&src.log, o.log) : top_bus_open(&src.bus, &o);
	if (rc < 0)
		return TB_EXIT_INPUT;
	int status = run(&src, &o);
	if (src.is_log)
		top_log_close(&src.log);
	else
		top_bus_close(&src.bus);
	return status;
}

