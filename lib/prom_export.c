/* prom_export.c - running sums of the live area for a scrape (tailbus/prom_export.h).
 *
 * Per metric the exporter keeps the start time of the newest interval it has
 * added (`last_start`). A poll reads the metric's published intervals newest
 * first, summaries only, until it meets one it has (start <= last_start);
 * then it takes the new ones oldest first, each with its histogram, and adds
 * it. Intervals are identified by their start, which grows from one to the
 * next, so a publish between two reads (which moves every age up by one) is
 * noticed and the read is retried one age older: an interval is added once,
 * never twice, never skipped while the live area still holds it.
 *
 * A metric that already had intervals at the first poll starts from its
 * newest (nothing before the exporter counts); one registered later starts
 * from nothing. An interval the live area holds without its histogram (a
 * collector whose live records have a size limit) adds its count to
 * `events` and to `summary_only`, never to the histogram, so the two can be
 * told apart. One whose histogram does not decode to its count (a producer
 * scribbled on the live heap) is passed over, counted nowhere, and the
 * poll says whose it was; the ones after it are added as ever.
 *
 * Drops are the bus's: every metric published at one close carries the same
 * figure, so a bus adds the drops of each interval start once, remembered in
 * a small ring of the starts it has counted.
 */
#include "tailbus/prom_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/bus.h"
#include "tailbus/live.h"
#include "tailbus/seg_abi.h"

#define NS_PER_S 1e9
#define US_PER_S 1e6
/* Interval starts whose drops a bus has counted: more than the live area's
 * depth of intervals, so a start is never forgotten while still readable. */
#define DROP_STARTS 1024
#define BUSES_MAX 64
/* A metric's label text: its name, or "metric#<id>" (tb_seg_metric_shown_name). */
#define NAME_MAX_LEN TB_METRIC_NAME_MAX

struct metric {
	bool followed;     /* READY and seen by a poll */
	bool needs_base;   /* seen by the first poll: what it had published before is left out */
	char name[NAME_MAX_LEN];
	int64_t last_start; /* newest interval added (0: none) */
	bool has_hist;
	tb_hist hist;      /* the sum of the added intervals' histograms */
	double events, folded, summary_only;
	double negative, late, unmatched_start, unmatched_end;
};

struct bus {
	const tb_seg *seg;
	char name[TB_SEG_PATH_MAX];
	bool polled; /* the first poll (the baseline) is done */
	struct metric *metrics; /* metric_capacity of seg */
	uint32_t nmetrics;      /* ... as it was when metrics was made */
	/* a replaced file's metrics, whose sums go on under their names
	 * (tb_prom_export_replace_bus) */
	struct metric *retired;
	uint32_t nretired;
	double dropped;
	double gap_s; /* the newest added interval's longest drain gap */
	int64_t gap_start;
	int64_t drop_starts[DROP_STARTS];
	uint32_t drop_next;
};

struct tb_prom_export {
	int poll_rc;                      /* the last poll's error (outranks()) */
	char where[TB_SEG_PATH_MAX + 64]; /* ... whose */
	uint64_t passed_over;                    /* corrupt intervals passed over, ever */
	char passed_where[TB_SEG_PATH_MAX + 64]; /* ... the newest one's */
	char host[256];
	int schema;
	size_t nbus;
	struct bus bus[BUSES_MAX];
	tb_hist scratch;
};

int tb_prom_export_new(tb_prom_export **out, const char *host, int schema)
{
	if (schema < TB_PROM_SCHEMA_MIN || schema > TB_PROM_SCHEMA_MAX || !host || !*host ||
	    strlen(host) >= sizeof((*out)->host))
		return -EINVAL;
	tb_prom_export *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	snprintf(e->host, sizeof(e->host), "%s", host);
	e->schema = schema;
	*out = e;
	return 0;
}

int tb_prom_export_add_bus(tb_prom_export *e, const tb_seg *seg, const char *name)
{
	if (e->nbus == BUSES_MAX)
		return -ENOSPC;
	struct bus *b = &e->bus[e->nbus];
	memset(b, 0, sizeof(*b));
	b->metrics = calloc(seg->layout.metric_capacity, sizeof(*b->metrics));
	if (!b->metrics)
		return -ENOMEM;
	b->nmetrics = seg->layout.metric_capacity;
	b->seg = seg;
	snprintf(b->name, sizeof(b->name), "%s", name);
	e->nbus++;
	return 0;
}

static void free_metrics(struct metric *m, uint32_t n)
{
	for (uint32_t id = 0; m && id < n; id++)
		tb_hist_free(&m[id].hist);
	free(m);
}

int tb_prom_export_replace_bus(tb_prom_export *e, const tb_seg *seg)
{
	for (size_t i = 0; i < e->nbus; i++) {
		struct bus *b = &e->bus[i];
		if (b->seg != seg)
			continue;
		struct metric *fresh = calloc(seg->layout.metric_capacity, sizeof(*fresh));
		if (!fresh)
			return -ENOMEM;
		/* a metric of the file before last that never came back is let go */
		free_metrics(b->retired, b->nretired);
		b->retired = b->metrics;
		b->nretired = b->nmetrics;
		b->metrics = fresh;
		b->nmetrics = seg->layout.metric_capacity;
		b->polled = true; /* no baseline: everything in the new file is new */
		return 0;
	}
	return -ENOENT;
}

/* A metric of a replaced file with m's name: its sums carried into m, and
 * its place in the retired list emptied. */
static void carry_retired(struct bus *b, struct metric *m)
{
	for (uint32_t id = 0; id < b->nretired; id++) {
		struct metric *r = &b->retired[id];
		if (!r->followed || strcmp(r->name, m->name) != 0)
			continue;
		int64_t last = m->last_start;
		*m = *r;
		m->last_start = last;
		m->needs_base = false;
		memset(r, 0, sizeof(*r));
		return;
	}
}

/* "bus <name>, metric <label>": whose read an error or a pass-over was. */
static void whose(char *out, size_t cap, const struct bus *b, const struct metric *m)
{
	snprintf(out, cap, "bus %s, metric %s", b->name, m->name);
}

/* A metric's label, fixed when it is first followed, so that its counters
 * never move to another series: its shown name (tb_seg_metric_shown_name),
 * or metric#<id> when a metric followed before has that label (the same
 * name registered twice, the other entry shown under it since). */
static void label(struct bus *b, uint32_t id, struct metric *m)
{
	tb_seg_metric_shown_name(b->seg, id, m->name, sizeof(m->name));
	for (uint32_t k = 0; k < b->nmetrics; k++) {
		if (k != id && b->metrics[k].followed && strcmp(b->metrics[k].name, m->name) == 0) {
			tb_seg_metric_id_name(id, m->name, sizeof(m->name));
			return;
		}
	}
}

static void count_drops(struct bus *b, const tb_live_interval *iv)
{
	for (uint32_t i = 0; i < DROP_STARTS; i++) {
		if (b->drop_starts[i] == iv->start_ns)
			return;
	}
	b->drop_starts[b->drop_next++ % DROP_STARTS] = iv->start_ns;
	b->dropped += (double)iv->dropped;
	if (iv->start_ns >= b->gap_start) {
		b->gap_start = iv->start_ns;
		b->gap_s = iv->longest_gap_us / US_PER_S;
	}
}

/* Add interval `start` of metric `id`: at `age` unless publishes moved it older. */
static int add_interval(tb_prom_export *e, struct bus *b, uint32_t id, uint32_t age, int64_t start)
{
	struct metric *m = &b->metrics[id];
	tb_live_interval iv;
	int rc;
	for (;;) {
		rc = tb_live_read(b->seg, id, age, &iv, &e->scratch);
		if (rc < 0 && rc != -EBADMSG) /* -EBADMSG: the summary was read */
			return rc == -ERANGE ? 0 : rc; /* aged out of the live area meanwhile */
		if (iv.start_ns == start)
			break;
		if (iv.start_ns < start)
			return 0; /* not there any more: nothing to add */
		age++;
	}
	if (rc == -EBADMSG) {
		/* its histogram does not decode to its count (a scribbled live
		 * heap): passed over, so that the newer ones are added, and
		 * counted for the caller to say */
		m->last_start = start;
		e->passed_over++;
		whose(e->passed_where, sizeof(e->passed_where), b, m);
		return rc;
	}
	m->events += (double)iv.count;
	m->folded += (double)iv.folded;
	m->negative += (double)iv.negative;
	m->late += (double)iv.late;
	m->unmatched_start += (double)iv.unmatched_start;
	m->unmatched_end += (double)iv.unmatched_end;
	m->last_start = start;
	count_drops(b, &iv);
	if (rc == 1 || e->scratch.total == 0) {
		m->summary_only += rc == 1 ? (double)iv.count : 0;
		return 0;
	}
	if (!m->has_hist) {
		rc = tb_hist_init_like(&m->hist, &e->scratch);
		if (rc < 0)
			return rc;
		m->has_hist = true;
	}
	return tb_hist_add_growing(&m->hist, &e->scratch);
}

/* The starts of a metric's intervals newer than `last`, newest first. */
struct new_starts {
	int64_t last;
	int64_t *starts;
	uint32_t n;
};

static void starts_begin(void *arg)
{
	((struct new_starts *)arg)->n = 0;
}

static int starts_interval(void *arg, const tb_live_interval *iv, const tb_hist *h)
{
	struct new_starts *ns = arg;
	(void)h;
	if (iv->start_ns <= ns->last)
		return 1;
	ns->starts[ns->n++] = iv->start_ns;
	return 0;
}

static int follow_metric(tb_prom_export *e, struct bus *b, uint32_t id)
{
	static const tb_live_window_fns fns = {starts_begin, starts_interval};
	struct metric *m = &b->metrics[id];
	uint32_t cap = b->seg->layout.live_intervals;
	struct new_starts ns = {m->last_start, malloc((cap ? cap : 1) * sizeof(int64_t)), 0};
	if (!ns.starts)
		return -ENOMEM;
	/* summaries only: the histograms of the new ones are read as they are added */
	int rc = tb_live_read_window(b->seg, id, cap, NULL, &fns, &ns);
	uint32_t n = ns.n;
	if (rc == 0 && m->needs_base) {
		/* the baseline: what was published before the exporter does not
		 * count; taken at the first read that succeeds, not at the first
		 * poll, which may have failed for this metric (a collector
		 * caught mid-publish) */
		if (n)
			m->last_start = ns.starts[0];
		n = 0;
		m->needs_base = false;
	}
	int bad = 0;
	for (uint32_t k = n; rc == 0 && k-- > 0;) {
		rc = add_interval(e, b, id, k, ns.starts[k]);
		if (rc == -EBADMSG) {
			bad = rc;
			rc = 0;
		}
	}
	free(ns.starts);
	return rc ? rc : bad;
}

/* Whether error `rc` is the one a poll reports rather than `have`: the
 * first, but any before an interval passed over (-EBADMSG), which is
 * counted apart (tb_prom_export_passed_over) and must not hide another. */
static bool outranks(int rc, int have)
{
	return rc < 0 && (have == 0 || (have == -EBADMSG && rc != -EBADMSG));
}

/* 0, or -ENOMEM; the poll's error and whose it is into e->poll_rc and
 * e->where. */
static int poll_bus(tb_prom_export *e, struct bus *b)
{
	for (uint32_t id = 0; id < b->seg->layout.metric_capacity; id++) {
		const tb_metric_entry *entry = tb_seg_metric(b->seg, id);
		if (__atomic_load_n(&entry->state, __ATOMIC_ACQUIRE) != TB_METRIC_READY)
			continue;
		struct metric *m = &b->metrics[id];
		if (!m->followed) {
			label(b, id, m);
			m->followed = true;
			m->needs_base = !b->polled; /* later ones are new: all of them counts */
			carry_retired(b, m);
		}
		int rc = follow_metric(e, b, id);
		if (rc == -ENOMEM)
			return rc;
		if (outranks(rc, e->poll_rc)) {
			e->poll_rc = rc;
			whose(e->where, sizeof(e->where), b, m);
		}
	}
	b->polled = true;
	return 0;
}

const char *tb_prom_export_where(const tb_prom_export *e)
{
	return e->where;
}

uint64_t tb_prom_export_passed_over(const tb_prom_export *e, const char **newest)
{
	if (newest)
		*newest = e->passed_where;
	return e->passed_over;
}

int tb_prom_export_poll(tb_prom_export *e)
{
	e->poll_rc = 0;
	e->where[0] = '\0';
	for (size_t i = 0; i < e->nbus; i++) {
		int rc = poll_bus(e, &e->bus[i]);
		if (rc == -ENOMEM)
			return rc;
	}
	return e->poll_rc;
}

void tb_prom_export_free(tb_prom_export *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nbus; i++) {
		free_metrics(e->bus[i].metrics, e->bus[i].nmetrics);
		free_metrics(e->bus[i].retired, e->bus[i].nretired);
	}
	tb_hist_free(&e->scratch);
	free(e);
}

/* Rendering: one family at a time, its series gathered from every bus. */
struct gather {
	size_t n;
	tb_prom_labels *labels;
	const tb_hist **hists;
	double *values;
};

enum per_metric { PM_EVENTS, PM_FOLDED, PM_SUMMARY_ONLY, PM_NEGATIVE, PM_LATE, PM_UNMATCHED_START,
		  PM_UNMATCHED_END };
enum per_bus { PB_DROPPED, PB_HEARTBEAT_AGE, PB_GAP };

static double metric_value(const struct metric *m, enum per_metric what)
{
	switch (what) {
	case PM_EVENTS: return m->events;
	case PM_FOLDED: return m->folded;
	case PM_NEGATIVE: return m->negative;
	case PM_LATE: return m->late;
	case PM_UNMATCHED_START: return m->unmatched_start;
	case PM_UNMATCHED_END: return m->unmatched_end;
	default: return m->summary_only;
	}
}

static double bus_value(const struct bus *b, enum per_bus what, int64_t now_mono_ns, bool *present)
{
	*present = true;
	if (what == PB_DROPPED)
		return b->dropped;
	if (what == PB_GAP)
		return b->gap_s;
	int64_t age = 0;
	/* never beat: no figure rather than a made-up one */
	*present = tb_bus_heartbeat_age(b->seg, now_mono_ns, &age);
	return (double)age / NS_PER_S;
}

static int emit(const tb_prom_export *e, tb_prom_buf *out, bool protobuf, tb_prom_family *f,
		const struct gather *g)
{
	f->n = g->n;
	f->labels = g->labels;
	f->values = g->values;
	f->hists = (const tb_hist *const *)g->hists;
	if (protobuf && g->n == 0)
		return 0; /* a family without series is not worth a message */
	return protobuf ? tb_prom_pb_family(out, f, e->schema) : tb_prom_text_family(out, f);
}

static int render_histograms(const tb_prom_export *e, struct gather *g, tb_prom_buf *out, bool pb)
{
	g->n = 0;
	for (size_t i = 0; i < e->nbus; i++) {
		const struct bus *b = &e->bus[i];
		for (uint32_t id = 0; id < b->seg->layout.metric_capacity; id++) {
			const struct metric *m = &b->metrics[id];
			if (!m->has_hist)
				continue;
			g->labels[g->n] = (tb_prom_labels){b->name, m->name, e->host};
			g->hists[g->n++] = &m->hist;
		}
	}
	tb_prom_family f = {.name = "tailbus_latency_seconds", .type = TB_PROM_HISTOGRAM,
			    .help = "Latency from the intended start, every interval published since "
				    "the exporter started (HDR counts mapped to buckets)."};
	return emit(e, out, pb, &f, g);
}

static int render_per_metric(const tb_prom_export *e, struct gather *g, tb_prom_buf *out, bool pb,
			     enum per_metric what, const char *name, const char *help)
{
	g->n = 0;
	for (size_t i = 0; i < e->nbus; i++) {
		const struct bus *b = &e->bus[i];
		for (uint32_t id = 0; id < b->seg->layout.metric_capacity; id++) {
			const struct metric *m = &b->metrics[id];
			if (!m->followed)
				continue;
			g->labels[g->n] = (tb_prom_labels){b->name, m->name, e->host};
			g->values[g->n++] = metric_value(m, what);
		}
	}
	tb_prom_family f = {.name = name, .help = help, .type = TB_PROM_COUNTER};
	return emit(e, out, pb, &f, g);
}

static int render_per_bus(const tb_prom_export *e, struct gather *g, tb_prom_buf *out, bool pb,
			  int64_t now, enum per_bus what, const char *name, const char *help)
{
	g->n = 0;
	for (size_t i = 0; i < e->nbus; i++) {
		bool present;
		double v = bus_value(&e->bus[i], what, now, &present);
		if (!present)
			continue;
		g->labels[g->n] = (tb_prom_labels){e->bus[i].name, NULL, e->host};
		g->values[g->n++] = v;
	}
	tb_prom_family f = {.name = name, .help = help,
			    .type = what == PB_DROPPED ? TB_PROM_COUNTER : TB_PROM_GAUGE};
	return emit(e, out, pb, &f, g);
}

/* The counter and gauge families after the latency histograms, in the
 * order they are served. */
static const struct {
	enum per_metric what;
	const char *name, *help;
} metric_families[] = {
	{PM_EVENTS, "tailbus_events_total", "Events of the metric's intervals since the exporter started."},
	{PM_FOLDED, "tailbus_folded_total",
	 "Of tailbus_events_total, events taken from fold lanes (2 significant digits: their ring was full)."},
	{PM_NEGATIVE, "tailbus_negative_total",
	 "Of tailbus_events_total, completions before their intended time, recorded as 0."},
	{PM_LATE, "tailbus_late_total",
	 "Of tailbus_events_total, events counted in a later interval than the one they completed in."},
	{PM_UNMATCHED_START, "tailbus_unmatched_start_total",
	 "START events that never met their END (expired, or no room to wait)."},
	{PM_UNMATCHED_END, "tailbus_unmatched_end_total",
	 "END events that never met their START (expired, or no room to wait)."},
	{PM_SUMMARY_ONLY, "tailbus_summary_only_total",
	 "Of tailbus_events_total, events of intervals the live area held without their histogram: "
	 "not in tailbus_latency_seconds."},
};
static const struct {
	enum per_bus what;
	const char *name, *help;
} bus_families[] = {
	{PB_DROPPED, "tailbus_dropped_total", "Events lost to full rings on the bus since the exporter started."},
	{PB_HEARTBEAT_AGE, "tailbus_collector_heartbeat_age_seconds",
	 "Age of the collector's heartbeat (refreshed every 100 ms)."},
	{PB_GAP, "tailbus_collector_longest_drain_gap_seconds",
	 "The collector's longest time between two passes over the rings, in the newest interval."},
};

int tb_prom_export_render(const tb_prom_export *e, bool pb, int64_t now, tb_prom_buf *out)
{
	size_t most = e->nbus;
	for (size_t i = 0; i < e->nbus; i++)
		most += e->bus[i].seg->layout.metric_capacity;
	struct gather g = {0};
	g.labels = calloc(most, sizeof(*g.labels));
	g.hists = calloc(most, sizeof(*g.hists));
	g.values = calloc(most, sizeof(*g.values));
	int rc = g.labels && g.hists && g.values ? 0 : -ENOMEM;
	if (rc == 0)
		rc = render_histograms(e, &g, out, pb);
	for (size_t i = 0; rc == 0 && i < sizeof(metric_families) / sizeof(metric_families[0]); i++)
		rc = render_per_metric(e, &g, out, pb, metric_families[i].what, metric_families[i].name,
				       metric_families[i].help);
	for (size_t i = 0; rc == 0 && i < sizeof(bus_families) / sizeof(bus_families[0]); i++)
		rc = render_per_bus(e, &g, out, pb, now, bus_families[i].what, bus_families[i].name,
				    bus_families[i].help);
	free(g.labels);
	free(g.hists);
	free(g.values);
	return rc;
}
