/* top.c - `tailbus top`: live percentiles per metric, from a bus or a growing log.
 *
 *   tailbus top [--bus NAME | --log FILE] [--dir SEGDIR] [--window DURATION]
 *               [--once] [--json] [--interval-ms N]
 *
 * The idea. Every interval the collector publishes, for each metric that saw
 * events, a summary and the compressed histogram of that interval into the
 * segment's live area (tailbus/live.h). A window of W is the newest
 * W / interval published intervals of a metric (rounded to whole intervals,
 * at least one); their histograms are added
 * into one and every figure of the window comes from that merged histogram
 * (merged counts, never averaged percentiles). The segment is mapped read-only
 * and the live area is read lock-free, without a system call, so top can never
 * disturb the bus. With --log FILE the same window is built from the newest
 * lines of each tag of an interval log that may still be growing (tail -f).
 *
 * Invariants:
 *  - A window is whole intervals, at least one and at most what the live area
 *    keeps per metric (LOG_KEEP lines per tag from a log): a --window shorter
 *    than one interval, or longer than that many, is refused (exit 2) once
 *    the interval is known, at each snapshot, never cut short silently.
 *  - A window never counts an interval twice or skips one: ages 0..n-1 are
 *    read one by one, each under the metric's sequence counter, and their
 *    start times must fall strictly; a publish in between shifts the ages and
 *    makes the metric's window be read again.
 *  - Every figure is exact: each interval in the live area carries its whole
 *    histogram (ABI 4), the same bytes as its log line, so a window equals
 *    `tailbus replay` of the same intervals of the log. When the live heap
 *    has let go intervals the window asks for (the metric's let_go_start_ns
 *    falls in it), the window is the intervals kept, and top says so.
 *  - A percentile is marked '*' when fewer than TB_MIN_SAMPLES_BEYOND samples
 *    are expected beyond it in the window (tailbus/summary.h).
 *  - --log follows the file with tailbus/log_follow.h: complete lines only
 *    (a torn last line is read, whole, at a later refresh), a truncated or
 *    rotated file read again from its start, each tag's newest LOG_KEEP
 *    intervals kept and decoded when a window is built.
 *  - While the mapped segment's collector looks gone, top checks whether the
 *    bus's file was replaced (`tailbusd --fresh`) and follows the new one.
 *  - Names shown on a terminal are sanitised: a tag from a log is untrusted
 *    text and must not be able to send escape sequences.
 *
 * Output. On a terminal the table is redrawn in place once per collector
 * interval, as soon as the collector has published it: cursor home, each line
 * followed by clear-to-end-of-line, then clear below the last line; the
 * screen is cleared whole only once, at the start, so nothing flickers. The cursor is hidden while top runs and
 * shown again on 'q', Ctrl-C, SIGTERM, SIGHUP and Ctrl-Z. Anywhere else (a
 * pipe, a file) and with --json each snapshot follows the previous one;
 * --once prints a single snapshot (one JSON object with --json) and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tailbus/bus.h"
#include "tailbus/live.h"
#include "tailbus/log.h"
#include "tailbus/log_follow.h"
#include "tailbus/summary.h"

#define VERB "top"
#define NS_PER_SEC 1000000000LL
#define NS_PER_MS 1000000LL
/* Until a collector has written its interval into the header. */
#define DEFAULT_INTERVAL_NS NS_PER_SEC
/* How often the refresh loop looks for a new interval, a key or a signal. */
#define TICK_MS 50
/* --log keeps as many lines per tag as the live area keeps intervals. */
#define LOG_KEEP TB_SEG_DEFAULT_LIVE_INTERVALS
/* A metric whose newest interval ended longer ago than this many intervals
 * is shown as idle: the collector publishes only intervals with events. */
#define IDLE_INTERVALS 2
#define NAME_WIDTH_MIN 6
#define NAME_WIDTH_MAX 32
#define REFRESH_MS_MIN 10
#define REFRESH_MS_MAX 3600000
/* Terminal size when the terminal cannot tell. */
#define DEFAULT_ROWS 24
#define DEFAULT_COLS 80

/* ANSI (ECMA-48) sequences; the only ones top writes. */
#define ANSI_HOME "\033[H"
#define ANSI_CLEAR_SCREEN "\033[2J"
#define ANSI_CLEAR_EOL "\033[K"
#define ANSI_CLEAR_BELOW "\033[J"
#define ANSI_HIDE_CURSOR "\033[?25l"
#define ANSI_SHOW_CURSOR "\033[?25h"

/* --window: any duration up to a day (the live area then decides, see
 * window_check); --interval-ms: 10 ms to an hour, a bare number in ms. */
#define WINDOW_DEFAULT_NS (10 * NS_PER_SEC)
static const tb_unit_spec window_spec = {TB_UNIT_DURATION, TB_UNIT_S, 1, 24 * TB_UNIT_HOUR};
static const tb_unit_spec refresh_spec = {TB_UNIT_DURATION, TB_UNIT_MS, REFRESH_MS_MIN * NS_PER_MS,
					  REFRESH_MS_MAX * NS_PER_MS};

struct options {
	const char *bus, *log, *dir;
	const char *window_arg; /* as typed, for its error sentence */
	int64_t window_ns;
	bool once, json;
	int64_t refresh_ns; /* 0: once per collector interval */
};

/* One metric's (or tag's) window, ready to print. */
struct row {
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

struct snap {
	bool from_log;
	const char *source; /* bus name or log path */
	/* from a bus */
	const char *path;
	uint64_t page_size;
	bool hugepages;
	int32_t collector_pid;
	double heartbeat_age_s; /* < 0: never beat */
	bool collector_fresh;
	uint32_t rings_live;
	uint64_t ring_drops;
	uint64_t ring_folded; /* SPANs the live and detached rings' producers folded */
	/* the collector's drain threads over its last close (tb_seg_header) */
	uint32_t drain_threads, drain_pass_us, drain_self_gap_us, closes_behind;
	/* from a log */
	size_t log_intervals, bad_lines;
	const char *log_error;
	/* both */
	int64_t window_ns;
	uint32_t window_cap; /* intervals kept per metric: a window holds no more */
	double interval_s;
	int64_t now_ns; /* CLOCK_REALTIME */
	struct row *rows;
	size_t nrows, cap;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* How many intervals of `interval_ns` make `window_ns` (the nearest whole
 * number), within 1..cap; whole seconds when the interval is not known. */
static uint32_t window_intervals(int64_t window_ns, double interval_ns, uint32_t cap)
{
	double n = round((double)window_ns / (interval_ns > 0 ? interval_ns : (double)NS_PER_SEC));
	if (n < 1)
		n = 1;
	return n > cap ? cap : (uint32_t)n;
}

/* Can whole intervals of the snapshot's length, at most its cap, make the
 * window? -EDOM (said, naming --window) when they cannot. */
static int window_check(const struct options *o, const struct snap *sn)
{
	if (sn->interval_s <= 0)
		return 0; /* not known yet (a log with no line): nothing to check */
	int64_t interval_ns = (int64_t)llround(sn->interval_s * NS_PER_SEC);
	char iv[32], most[32];
	tb_unit_format(iv, sizeof(iv), TB_UNIT_DURATION, interval_ns);
	tb_unit_format(most, sizeof(most), TB_UNIT_DURATION, interval_ns * (int64_t)sn->window_cap);
	if (o->window_ns < interval_ns) {
		tb_cli_bad_value(VERB, "window", o->window_arg,
				 "shorter than one interval of %s %s (%s): a window is whole intervals",
				 sn->from_log ? "log" : "bus", sn->source, iv);
		return -EDOM;
	}
	if (round((double)o->window_ns / (double)interval_ns) > sn->window_cap) {
		tb_cli_bad_value(VERB, "window", o->window_arg,
				 "longer than %s %s%s: %u intervals of %s, %s at most",
				 sn->from_log ? "top keeps of log" : "the live area of bus", sn->source,
				 sn->from_log ? "" : " keeps", sn->window_cap, iv, most);
		return -EDOM;
	}
	return 0;
}

/* ---- a window: the intervals' histograms, merged ---- */

struct window_acc {
	tb_hist merged;
	bool have_hist;
	int64_t count, max;
	uint64_t drops, folded;
	uint32_t gap_us; /* the longest of the intervals' longest_gap_us */
	int64_t oldest_start_ns, newest_end_ns, newest_length_ns;
	uint32_t intervals;
};

static void acc_init(struct window_acc *a)
{
	memset(a, 0, sizeof(*a));
	a->oldest_start_ns = INT64_MAX;
	a->newest_end_ns = INT64_MIN;
}

static void acc_free(struct window_acc *a)
{
	if (a->have_hist)
		tb_hist_free(&a->merged);
	acc_init(a);
}

/* Called newest first. */
static void acc_interval(struct window_acc *a, int64_t start_ns, int64_t length_ns)
{
	if (start_ns < a->oldest_start_ns)
		a->oldest_start_ns = start_ns;
	if (start_ns + length_ns > a->newest_end_ns) {
		a->newest_end_ns = start_ns + length_ns;
		a->newest_length_ns = length_ns;
	}
	a->intervals++;
}

static int acc_hist(struct window_acc *a, const tb_hist *h)
{
	if (!a->have_hist) {
		if (tb_hist_init_like(&a->merged, h) < 0)
			return -ENOMEM;
		a->have_hist = true;
	}
	int rc = tb_hist_add_growing(&a->merged, h);
	if (rc < 0)
		return rc;
	a->count += tb_hist_total(h);
	if (tb_hist_max(h) > a->max)
		a->max = tb_hist_max(h);
	return 0;
}

static void acc_finish(const struct window_acc *a, struct row *r, int64_t now_ns)
{
	r->intervals = a->intervals;
	r->count = a->count;
	r->max = a->max;
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++) {
		r->pct[p] = a->have_hist ? tb_hist_value_at_percentile(&a->merged, tb_summary_levels[p]) : 0;
		r->insufficient[p] = !tb_percentile_sufficient(a->count, tb_summary_levels[p]);
	}
	if (a->intervals == 0)
		return;
	r->span_s = (double)(a->newest_end_ns - a->oldest_start_ns) / NS_PER_SEC;
	r->rate = r->span_s > 0 ? (double)a->count / r->span_s : 0;
	r->age_s = (double)(now_ns - a->newest_end_ns) / NS_PER_SEC;
	r->interval_s = (double)a->newest_length_ns / NS_PER_SEC;
}

static struct row *add_row(struct snap *sn)
{
	if (sn->nrows == sn->cap) {
		size_t cap = sn->cap ? 2 * sn->cap : 16;
		struct row *rows = realloc(sn->rows, cap * sizeof(*rows));
		if (!rows)
			return NULL;
		sn->rows = rows;
		sn->cap = cap;
	}
	struct row *r = &sn->rows[sn->nrows++];
	memset(r, 0, sizeof(*r));
	return r;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->name, ((const struct row *)b)->name);
}

/* ---- from a bus: the live area ---- */

struct bus_source {
	tb_seg seg;
	uint64_t published_seen;
};

static const tb_seg_header *shared_header(const struct bus_source *b)
{
	return (const tb_seg_header *)b->seg.base;
}

static int64_t bus_interval_ns(const struct bus_source *b)
{
	int64_t ns = __atomic_load_n(&shared_header(b)->collector_interval_ns, __ATOMIC_RELAXED);
	return ns > 0 ? ns : DEFAULT_INTERVAL_NS;
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

static int bus_open(struct bus_source *b, const struct options *o)
{
	const char *why = "unknown error";
	memset(b, 0, sizeof(*b));
	int rc = tb_seg_open(&b->seg, o->dir, o->bus, NULL, TB_SEG_READONLY, &why);
	if (rc == -ENOENT) {
		char dirs[2 * PATH_MAX + 8];
		searched_dirs(o->dir, dirs, sizeof(dirs));
		tb_cli_error(VERB, "no bus '%s' in %s (is tailbusd running? --dir or TAILBUS_DIR "
			     "names another directory)", o->bus, dirs);
	} else if (rc < 0) {
		tb_cli_error(VERB, "bus '%s': %s (%s)", o->bus, why, strerror(-rc));
	}
	return rc;
}

static void window_begin(void *arg)
{
	acc_free(arg);
}

static int window_interval(void *arg, const tb_live_interval *iv, const tb_hist *h)
{
	struct window_acc *a = arg;
	acc_interval(a, iv->start_ns, iv->length_ns);
	a->drops += iv->dropped;
	a->folded += iv->folded;
	if (iv->longest_gap_us > a->gap_us)
		a->gap_us = iv->longest_gap_us;
	return acc_hist(a, h);
}

/* Intervals 0..n-1 of metric `id`, merged into `a`. */
static int read_window(const tb_seg *s, uint32_t id, uint32_t n, tb_hist *scratch,
		       struct window_acc *a)
{
	static const tb_live_window_fns fns = {window_begin, window_interval};
	return tb_live_read_window(s, id, n, scratch, &fns, a);
}

/* The metric's name, read defensively: producers write the metric table. */
static void metric_name(const tb_metric_entry *e, uint32_t id, char *out, size_t cap)
{
	char name[TB_METRIC_NAME_MAX];
	memcpy(name, e->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (tb_seg_metric_name_valid(name))
		snprintf(out, cap, "%s", name);
	else
		snprintf(out, cap, "metric-%u", id);
}

/* Did the live heap let go intervals a window of n asks for? Those are the
 * ones from n - 1 intervals before the newest read; the heap lets a
 * metric's oldest go first, so the newest it let go tells. */
static bool window_let_go(const tb_seg *s, uint32_t id, uint32_t n, const struct window_acc *a)
{
	tb_live_snapshot snap;
	if (a->intervals == 0 || a->intervals >= n || tb_live_read_newest(s, id, &snap) < 0 ||
	    !snap.let_go_start_ns)
		return false;
	int64_t newest_start = a->newest_end_ns - a->newest_length_ns;
	return snap.let_go_start_ns >= newest_start - (int64_t)(n - 1) * a->newest_length_ns;
}

static int bus_rows(struct bus_source *b, uint32_t n, struct snap *sn)
{
	tb_hist scratch;
	memset(&scratch, 0, sizeof(scratch));
	struct window_acc a;
	acc_init(&a);
	int rc = 0;
	for (uint32_t id = 0; rc == 0 && id < b->seg.layout.metric_capacity; id++) {
		const tb_metric_entry *e = tb_seg_metric(&b->seg, id);
		if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != TB_METRIC_READY)
			continue;
		struct row *r = add_row(sn);
		if (!r) {
			rc = -ENOMEM;
			break;
		}
		metric_name(e, id, r->name, sizeof(r->name));
		int read = read_window(&b->seg, id, n, &scratch, &a);
		if (read == -ENOMEM)
			rc = read;
		else if (read == -EAGAIN || read == -ESTALE)
			r->error = "no stable copy: the collector seems stuck mid-write";
		else if (read == -EBADMSG)
			r->error = "an interval's histogram in the live area is corrupt";
		else if (read < 0)
			r->error = "unreadable live area";
		else {
			acc_finish(&a, r, sn->now_ns);
			r->let_go = window_let_go(&b->seg, id, n, &a);
		}
		r->has_drops = true;
		r->drops = a.drops;
		r->folded = a.folded;
		r->gap_us = a.gap_us;
		acc_free(&a);
	}
	tb_hist_free(&scratch);
	return rc;
}

/* The collector's pid (0: none attached) and the age of its heartbeat
 * (negative: it never beat). */
static int32_t bus_collector(const struct bus_source *b, int64_t *age_ns)
{
	const tb_seg_header *h = shared_header(b);
	int64_t beat = __atomic_load_n(&h->collector_heartbeat_ns, __ATOMIC_ACQUIRE);
	*age_ns = beat ? clock_ns(CLOCK_MONOTONIC) - beat : -1;
	return __atomic_load_n(&h->collector_pid, __ATOMIC_ACQUIRE);
}

/* Whether the collector serves the bus: the rule every tool applies
 * (tb_bus_collector_state). */
static bool bus_collector_alive(const struct bus_source *b)
{
	return tb_bus_collector_state(shared_header(b), clock_ns(CLOCK_MONOTONIC), NULL) ==
	       TB_COLLECTOR_SERVING;
}

static void bus_header(struct bus_source *b, struct snap *sn)
{
	int64_t age;
	sn->path = b->seg.path;
	sn->page_size = b->seg.layout.page_size;
	sn->hugepages = b->seg.hugepages;
	sn->collector_pid = bus_collector(b, &age);
	sn->heartbeat_age_s = age >= 0 ? (double)age / NS_PER_SEC : -1;
	sn->collector_fresh = bus_collector_alive(b);
	sn->interval_s = (double)bus_interval_ns(b) / NS_PER_SEC;
	const tb_seg_header *h = shared_header(b);
	sn->drain_threads = __atomic_load_n(&h->drain_threads, __ATOMIC_RELAXED);
	sn->drain_pass_us = __atomic_load_n(&h->drain_longest_pass_us, __ATOMIC_RELAXED);
	sn->drain_self_gap_us = __atomic_load_n(&h->drain_self_gap_us, __ATOMIC_RELAXED);
	sn->closes_behind = __atomic_load_n(&h->closes_behind, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < b->seg.layout.slot_count; i++) {
		const tb_slot *slot = tb_seg_slot(&b->seg, i);
		uint32_t state = __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE);
		if (state == TB_SLOT_LIVE)
			sn->rings_live++;
		if (state == TB_SLOT_LIVE || state == TB_SLOT_DETACHED) {
			sn->ring_drops += __atomic_load_n(&slot->dropped, __ATOMIC_RELAXED);
			sn->ring_folded += __atomic_load_n(&slot->folded, __ATOMIC_RELAXED);
		}
	}
}

/* `tailbusd --fresh` replaces the segment file: follow the new one, like
 * tail -F. Looked at only while the mapped segment's collector seems gone, so
 * a healthy refresh makes no system call. */
static void bus_follow_replacement(struct bus_source *b, const struct options *o)
{
	struct stat now, ours;
	if (stat(b->seg.path, &now) < 0 || fstat(b->seg.fd, &ours) < 0 ||
	    (now.st_ino == ours.st_ino && now.st_dev == ours.st_dev))
		return;
	tb_seg fresh;
	const char *why;
	if (tb_seg_open(&fresh, o->dir, o->bus, NULL, TB_SEG_READONLY, &why) < 0)
		return;
	tb_seg_close(&b->seg);
	b->seg = fresh;
}

static int bus_snapshot(struct bus_source *b, const struct options *o, struct snap *sn)
{
	if (!bus_collector_alive(b))
		bus_follow_replacement(b, o);
	sn->source = o->bus;
	sn->window_cap = b->seg.layout.live_intervals;
	b->published_seen = __atomic_load_n(&shared_header(b)->intervals_published, __ATOMIC_ACQUIRE);
	bus_header(b, sn);
	uint32_t n = window_intervals(o->window_ns, (double)bus_interval_ns(b),
				      b->seg.layout.live_intervals);
	return bus_rows(b, n, sn);
}

/* True once the collector has published another interval. */
static bool bus_new_interval(const struct bus_source *b)
{
	return __atomic_load_n(&shared_header(b)->intervals_published, __ATOMIC_ACQUIRE) !=
	       b->published_seen;
}

/* ---- from a log file, followed as it grows ---- */

struct log_source {
	const char *path;
	tb_log_follow *follow;
	tb_log_entry entry; /* the interval being merged */
};

static int log_open(struct log_source *ls, const char *path)
{
	memset(ls, 0, sizeof(*ls));
	ls->path = path;
	int rc = tb_log_follow_open(&ls->follow, path, LOG_KEEP);
	if (rc < 0)
		tb_cli_error(VERB, "cannot read %s: %s", path, strerror(-rc));
	return rc;
}

static void log_close(struct log_source *ls)
{
	tb_log_follow_close(ls->follow);
	tb_log_entry_free(&ls->entry);
}

static int log_tag_row(struct log_source *ls, size_t tag, int64_t window_ns, struct row *r,
		       int64_t now_ns)
{
	struct window_acc a;
	acc_init(&a);
	snprintf(r->name, sizeof(r->name), "%s", tb_log_follow_tag(ls->follow, tag));
	uint32_t count = tb_log_follow_count(ls->follow, tag);
	uint32_t n = count; /* until the newest good line says how long an interval is */
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
		if (a.intervals == 0)
			n = age + window_intervals(window_ns, e->length_sec * NS_PER_SEC, LOG_KEEP);
		acc_interval(&a, (int64_t)llround(e->start_abs_sec * NS_PER_SEC),
			     (int64_t)llround(e->length_sec * NS_PER_SEC));
		rc = acc_hist(&a, &e->hist);
	}
	if (rc == 0)
		acc_finish(&a, r, now_ns);
	acc_free(&a);
	return rc;
}

static int log_snapshot(struct log_source *ls, const struct options *o, struct snap *sn)
{
	sn->from_log = true;
	sn->source = ls->path;
	sn->window_cap = LOG_KEEP;
	int rc = tb_log_follow_poll(ls->follow);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot read %s: %s", ls->path, strerror(-rc));
		return rc;
	}
	for (size_t t = 0; t < tb_log_follow_tags(ls->follow); t++) {
		struct row *r = add_row(sn);
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

/* ---- formatting ---- */

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

static void print_bus_header(FILE *out, const struct snap *sn)
{
	char page[32];
	fmt_bytes(page, sizeof(page), sn->page_size);
	fprintf(out, "segment %s, %s %s\n", sn->path, page,
		sn->hugepages ? "hugepages" : "pages (not hugepages)");
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
			     "gap %u us; closes behind: %u\n",
			sn->drain_threads, sn->drain_pass_us, sn->drain_self_gap_us, sn->closes_behind);
}

static void print_header(FILE *out, const struct snap *sn)
{
	char when[16];
	time_t t = (time_t)(sn->now_ns / NS_PER_SEC);
	struct tm tm;
	strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&t, &tm));
	char window[32];
	tb_unit_format(window, sizeof(window), TB_UNIT_DURATION, sn->window_ns);
	fprintf(out, "tailbus top   %s %s   window %s", sn->from_log ? "log" : "bus", sn->source,
		window);
	if (sn->interval_s > 0)
		fprintf(out, " (%u intervals of %.3g s)",
			window_intervals(sn->window_ns, sn->interval_s * NS_PER_SEC, sn->window_cap),
			sn->interval_s);
	fprintf(out, "   %s\n", when);
	if (!sn->from_log)
		print_bus_header(out, sn);
	else
		fprintf(out, "%zu intervals read, %zu bad lines skipped%s%s%s\n", sn->log_intervals,
			sn->bad_lines, sn->log_error ? " (last: " : "",
			sn->log_error ? sn->log_error : "", sn->log_error ? ")" : "");
}

static int name_width(const struct snap *sn)
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

static void print_row(FILE *out, const struct row *r, int nw)
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

static void print_legend(FILE *out, const struct snap *sn)
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

static void print_text(FILE *out, const struct snap *sn)
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

/* JSON vocabulary (docs/json.md): a row is a bus's "metric" or a log's "tag". */
static void json_row(FILE *out, const struct row *r, bool from_log)
{
	fprintf(out, "{\"%s\":", from_log ? "tag" : "metric");
	tb_cli_json_string(out, r->name);
	fprintf(out, ",\"intervals\":%u,\"span_s\":%.3f,\"rate\":%.3f,\"count\":%" PRId64,
		r->intervals, r->span_s, r->rate, r->count);
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++) {
		if (r->count)
			fprintf(out, ",\"%s\":%" PRId64, tb_summary_keys[p], r->pct[p]);
		else
			fprintf(out, ",\"%s\":null", tb_summary_keys[p]);
	}
	if (r->count)
		fprintf(out, ",\"max\":%" PRId64, r->max);
	else
		fprintf(out, ",\"max\":null");
	if (r->has_drops && !r->error)
		fprintf(out, ",\"drops\":%" PRIu64 ",\"folded\":%" PRIu64 ",\"collector_gap_us\":%" PRIu32
			     ",\"heap_let_go\":%s",
			r->drops, r->folded, r->gap_us, r->let_go ? "true" : "false");
	else
		fprintf(out, ",\"drops\":null,\"folded\":null,\"collector_gap_us\":null,\"heap_let_go\":null");
	fprintf(out, ",\"insufficient\":[");
	for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
		if (r->insufficient[p])
			fprintf(out, "%s\"%s\"", n++ ? "," : "", tb_summary_keys[p]);
	}
	fputc(']', out);
	if (r->intervals)
		fprintf(out, ",\"age_s\":%.3f", r->age_s);
	if (r->error) {
		fprintf(out, ",\"error\":");
		tb_cli_json_string(out, r->error);
	}
	fputc('}', out);
}

static void print_json(FILE *out, const struct snap *sn)
{
	fprintf(out, "{\"bus\":");
	if (sn->from_log) {
		fprintf(out, "null,\"log\":");
		tb_cli_json_string(out, sn->source);
		fprintf(out, ",\"intervals_read\":%zu,\"bad_lines\":%zu", sn->log_intervals, sn->bad_lines);
	} else {
		tb_cli_json_string(out, sn->source);
		fprintf(out, ",\"segment\":");
		tb_cli_json_string(out, sn->path);
		fprintf(out, ",\"page_size\":%" PRIu64 ",\"hugepages\":%s,\"collector_pid\":%d,"
			     "\"collector_running\":%s,\"rings_live\":%u,\"ring_drops\":%" PRIu64
			     ",\"ring_folded\":%" PRIu64 ",\"drain_threads\":%u,\"drain_longest_pass_us\":%u,"
			     "\"drain_self_gap_us\":%u,\"closes_behind\":%u",
			sn->page_size, sn->hugepages ? "true" : "false", (int)sn->collector_pid,
			sn->collector_fresh ? "true" : "false", sn->rings_live, sn->ring_drops,
			sn->ring_folded, sn->drain_threads, sn->drain_pass_us, sn->drain_self_gap_us,
			sn->closes_behind);
	}
	fprintf(out, ",\"window_s\":%.9g,\"interval_s\":%.3f,\"time\":%.3f,\"%s\":[",
		(double)sn->window_ns / NS_PER_SEC, sn->interval_s, (double)sn->now_ns / NS_PER_SEC,
		sn->from_log ? "tags" : "metrics");
	for (size_t i = 0; i < sn->nrows; i++) {
		if (i)
			fputc(',', out);
		json_row(out, &sn->rows[i], sn->from_log);
	}
	fprintf(out, "]}\n");
}

/* ---- the terminal ---- */

static volatile sig_atomic_t stop_requested, resized, suspend_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_resize(int sig)
{
	(void)sig;
	resized = 1;
}

static void on_suspend(int sig)
{
	(void)sig;
	suspend_requested = 1;
}

struct term {
	bool in_place; /* stdout is a terminal: redraw the table where it is */
	bool keys;     /* stdin is a terminal put in non-canonical mode: 'q' quits */
	bool active;   /* cursor hidden / modes set, to undo on the way out */
	struct termios saved;
	int rows, cols;
};

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void term_size(struct term *t)
{
	struct winsize ws;
	bool ok = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col;
	t->rows = ok ? ws.ws_row : DEFAULT_ROWS;
	t->cols = ok ? ws.ws_col : DEFAULT_COLS;
}

/* Hide the cursor, clear once, read keys without echo (signals stay on). */
static void term_enter(struct term *t)
{
	if (!t->in_place)
		return;
	if (t->keys) {
		struct termios raw = t->saved;
		raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	term_size(t);
	const char *enter = ANSI_HIDE_CURSOR ANSI_HOME ANSI_CLEAR_SCREEN;
	write_all(STDOUT_FILENO, enter, strlen(enter));
	t->active = true;
}

static void term_leave(struct term *t)
{
	if (!t->active)
		return;
	if (t->keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	write_all(STDOUT_FILENO, ANSI_SHOW_CURSOR, strlen(ANSI_SHOW_CURSOR));
	t->active = false;
}

static void term_setup(struct term *t, const struct options *o)
{
	memset(t, 0, sizeof(*t));
	if (o->once)
		return;
	struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART: poll wakes up */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	t->in_place = !o->json && isatty(STDOUT_FILENO);
	if (!t->in_place)
		return;
	sa.sa_handler = on_resize;
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_suspend;
	sigaction(SIGTSTP, &sa, NULL);
	t->keys = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0;
	term_enter(t);
}

/* Ctrl-Z: give the terminal back as it was, stop, and take it again on fg. */
static void term_suspend(struct term *t)
{
	term_leave(t);
	kill(getpid(), SIGSTOP);
	term_enter(t);
}

static void append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (c < *len + n)
			c *= 2;
		char *grown = realloc(*buf, c);
		if (!grown)
			return;
		*buf = grown;
		*cap = c;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
}

/* Overwrite the previous frame with `text`: home, each line cut to the width
 * and ended by clear-to-end-of-line, then clear below; one write. Lines past
 * the screen's height are left out (scrolling would move the home row). */
static void draw_in_place(struct term *t, const char *text, size_t len)
{
	char *out = NULL, more[80];
	size_t n = 0, cap = 0, lines = 0;
	size_t room = t->rows > 1 ? (size_t)t->rows - 1 : 1;
	/* the last column is left empty: clear-to-end-of-line there would erase
	 * the character written into it (the cursor stays on it, wrap pending) */
	size_t width = t->cols > 1 ? (size_t)t->cols - 1 : 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	size_t keep = lines > room ? room - 1 : lines;
	append(&out, &n, &cap, ANSI_HOME, strlen(ANSI_HOME));
	const char *p = text;
	for (size_t i = 0; i < keep; i++) {
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		size_t line = (size_t)(nl - p);
		append(&out, &n, &cap, p, line < width ? line : width);
		append(&out, &n, &cap, ANSI_CLEAR_EOL "\n", strlen(ANSI_CLEAR_EOL "\n"));
		p = nl + 1;
	}
	if (keep < lines) {
		int m = snprintf(more, sizeof(more), "(%zu more lines: enlarge the terminal)",
				 lines - keep);
		append(&out, &n, &cap, more, (size_t)m < width ? (size_t)m : width);
		append(&out, &n, &cap, ANSI_CLEAR_EOL "\n", strlen(ANSI_CLEAR_EOL "\n"));
	}
	append(&out, &n, &cap, ANSI_CLEAR_BELOW, strlen(ANSI_CLEAR_BELOW));
	if (out)
		write_all(STDOUT_FILENO, out, n);
	free(out);
}

/* Sleep one tick or until a key or a signal. False when the user quit. */
static bool wait_tick(struct term *t)
{
	struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
	int n = poll(&in, t->keys ? 1 : 0, TICK_MS);
	if (n > 0 && (in.revents & POLLIN)) {
		char c;
		ssize_t r = read(STDIN_FILENO, &c, 1);
		if (r == 1 && (c == 'q' || c == 'Q'))
			return false;
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			t->keys = false; /* end of input or a dead terminal: poll would spin */
	} else if (n > 0) {
		t->keys = false; /* the terminal went away: stop watching it */
	}
	return !stop_requested;
}

/* ---- the refresh loop ---- */

struct source {
	bool is_log;
	struct bus_source bus;
	struct log_source log;
};

static int snapshot(struct source *src, const struct options *o, struct snap *sn)
{
	memset(sn, 0, sizeof(*sn));
	sn->window_ns = o->window_ns;
	sn->now_ns = clock_ns(CLOCK_REALTIME);
	int rc = src->is_log ? log_snapshot(&src->log, o, sn) : bus_snapshot(&src->bus, o, sn);
	if (rc == 0)
		rc = window_check(o, sn);
	if (rc == -ENOMEM)
		tb_cli_error(VERB, "out of memory");
	if (sn->nrows) /* qsort's base must not be NULL, even for no rows */
		qsort(sn->rows, sn->nrows, sizeof(*sn->rows), by_name);
	return rc;
}

static void show(struct term *t, const struct options *o, const struct snap *sn, bool first)
{
	if (o->json) {
		print_json(stdout, sn);
	} else if (t->in_place) {
		char *text = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);
		if (!mem)
			return;
		print_text(mem, sn);
		fclose(mem);
		draw_in_place(t, text, len);
		free(text);
	} else {
		if (!first)
			fputc('\n', stdout);
		print_text(stdout, sn);
	}
	fflush(stdout);
}

static int64_t refresh_ns(const struct source *src, const struct options *o, const struct snap *sn)
{
	if (o->refresh_ns)
		return o->refresh_ns;
	if (src->is_log)
		return sn->interval_s > 0 ? (int64_t)(sn->interval_s * NS_PER_SEC) : DEFAULT_INTERVAL_NS;
	return bus_interval_ns(&src->bus);
}

/* Wait for the next refresh: a newly published interval (at most one
 * interval later, so the collector's state stays current), or --interval-ms.
 * False when it is time to stop. */
static bool wait_refresh(struct term *t, const struct source *src, const struct options *o,
			 int64_t period_ns)
{
	int64_t due = clock_ns(CLOCK_MONOTONIC) + period_ns;
	for (;;) {
		if (!wait_tick(t))
			return false;
		if (suspend_requested) {
			suspend_requested = 0;
			term_suspend(t);
			return true;
		}
		if (resized) {
			resized = 0;
			term_size(t);
			return true;
		}
		if (clock_ns(CLOCK_MONOTONIC) >= due)
			return true;
		if (!o->refresh_ns && !src->is_log && bus_new_interval(&src->bus))
			return true;
	}
}

static int run(struct source *src, const struct options *o)
{
	struct term t;
	term_setup(&t, o);
	int status = TB_EXIT_OK;
	for (bool first = true; !stop_requested; first = false) {
		struct snap sn;
		int rc = snapshot(src, o, &sn);
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
	term_leave(&t);
	return status;
}

/* ---- options ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus top [--bus NAME | --log FILE] [--dir SEGDIR] [--window W]\n"
		"                   [--once] [--json] [--interval-ms N] [--version]\n"
		"Live percentiles per metric: rate, count, p50, p90, p99, p99.9, p99.99, max and\n"
		"ring drops over a window of the newest W (default 10s; 500ms, 30s, 1m; a bare\n"
		"number is seconds) of published intervals, their histograms merged. W is\n"
		"rounded to whole intervals, from one to as many as the live area keeps (%u by\n"
		"default); a W outside that is refused. '*' marks a percentile with fewer than\n"
		"%d samples expected beyond it. The bus is NAME (default $TAILBUS_BUS, else\n"
		"'default'), found in --dir, else $TAILBUS_DIR, else hugetlbfs or /dev/shm;\n"
		"--log FILE follows an interval log instead. On a terminal the table is redrawn\n"
		"once per collector interval (or every --interval-ms); 'q' or Ctrl-C quits.\n"
		"--once prints one snapshot; --json prints one JSON object per snapshot.\n",
		TB_SEG_DEFAULT_LIVE_INTERVALS, TB_MIN_SAMPLES_BEYOND);
}

static int check_options(struct options *o, int argc, char **argv)
{
	if (optind < argc) {
		tb_cli_error(VERB, "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (o->log && o->bus) {
		tb_cli_error(VERB, "give --bus or --log, not both");
		return -EINVAL;
	}
	if (o->log && o->dir) {
		tb_cli_error(VERB, "--dir locates a bus; it does not apply to --log");
		return -EINVAL;
	}
	if (!o->log && !o->bus) {
		const char *env = getenv("TAILBUS_BUS");
		o->bus = env && *env ? env : "default";
	}
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"bus", required_argument, 0, 'b'},    {"log", required_argument, 0, 'l'},
		{"dir", required_argument, 0, 'd'},    {"window", required_argument, 0, 'w'},
		{"once", no_argument, 0, 'o'},         {"json", no_argument, 0, 'j'},
		{"interval-ms", required_argument, 0, 'i'}, {"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},      {0, 0, 0, 0}};
	*o = (struct options){.window_ns = WINDOW_DEFAULT_NS, .window_arg = "10s"};
	int c, idx = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		switch (c) {
		case 'b': o->bus = optarg; break;
		case 'l': o->log = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'w':
			if (!tb_cli_unit(VERB, "window", optarg, &window_spec, &o->window_ns))
				return -EINVAL;
			o->window_arg = optarg;
			break;
		case 'o': o->once = true; break;
		case 'j': o->json = true; break;
		case 'i':
			if (!tb_cli_unit(VERB, "interval-ms", optarg, &refresh_spec, &o->refresh_ns))
				return -EINVAL;
			break;
		case 'h': usage(stdout); return 1;
		case 'V': tb_cli_version(); return 1;
		default:
			tb_cli_bad_option(VERB, c, argv[optind - 1]);
			if (c == '?')
				usage(stderr);
			return -EINVAL;
		}
	}
	return check_options(o, argc, argv);
}

int tb_cmd_top(int argc, char **argv)
{
	struct options o;
	int rc = parse_options(argc, argv, &o);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	struct source src;
	memset(&src, 0, sizeof(src));
	src.is_log = o.log != NULL;
	rc = src.is_log ? log_open(&src.log, o.log) : bus_open(&src.bus, &o);
	if (rc < 0)
		return TB_EXIT_INPUT;
	int status = run(&src, &o);
	if (src.is_log)
		log_close(&src.log);
	else
		tb_seg_close(&src.bus.seg);
	return status;
}
