/* interval.c - closing an interval: merge, publish, log, account.
 *
 * For each metric, the current-interval histograms of its series (one per
 * producer ring that recorded it) are added into one scratch histogram:
 * merged counts, never averaged percentiles. The result is published to the
 * metric's live area under its sequence counter and written as one tagged
 * line of the interval log (tag = metric name). Every counter that must not
 * go into the log (events, drops, negative, late, clamped, unmatched halves,
 * ring high-water marks) goes to the health sidecar. Then the halves swap:
 * the next interval's histograms become the current ones.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "tailbus/codec.h"
#include "tailbus/log.h"
#include "tailbus/summary.h"

#define LOG_ZLEVEL 9  /* as Java's log writer: smallest lines */
#define SIDECAR_ROW_MAX 384

/* The metric's name as a log tag, read defensively from shared memory. */
static void metric_tag(const tb_collector *c, uint16_t m, char *out, size_t cap)
{
	const tb_metric_entry *e = tb_seg_metric(&c->seg, m);
	char name[TB_METRIC_NAME_MAX];
	memcpy(name, e->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (tb_seg_metric_name_valid(name))
		snprintf(out, cap, "%s", name);
	else
		snprintf(out, cap, "metric-%u", (unsigned)m);
}

static int reserve(tb_growbuf *b, size_t more)
{
	size_t need = b->len + more;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 65536;
	while (cap < need)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* Publish the merged histogram's summary, and its compressed frame when it
 * fits, under the metric's sequence counter. */
static void publish_live(tb_collector *c, uint16_t m, int64_t start, int64_t length,
			 uint64_t bus_drops, int64_t gap_ns, uint64_t folded, const uint8_t *frame,
			 size_t frame_len)
{
	tb_live_metric *lm = tb_seg_live(&c->seg, m);
	uint32_t k = lm->count == 0 ? 0 : (lm->newest + 1) % c->seg.layout.live_intervals;
	tb_live_interval *li = tb_seg_live_interval(&c->seg, m, k);
	int64_t pct[TB_SUMMARY_PERCENTILES]; /* one walk; the live area keeps no mean */
	tb_hist_values_at_percentiles(&c->merged, tb_summary_levels, TB_SUMMARY_PERCENTILES, pct);
	bool fits = frame && frame_len <= c->seg.layout.live_hist_bytes;
	uint64_t seq = lm->seq;
	/* odd while writing; the fence orders that store before the data */
	__atomic_store_n(&lm->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	li->start_ns = start;
	li->length_ns = length;
	li->count = tb_hist_total(&c->merged);
	li->min = tb_hist_min(&c->merged);
	li->max = tb_hist_max(&c->merged);
	li->p50 = pct[0];
	li->p90 = pct[1];
	li->p99 = pct[2];
	li->p999 = pct[3];
	li->p9999 = pct[4];
	li->dropped = bus_drops;
	li->longest_gap_us = gap_ns / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(gap_ns / 1000);
	li->folded = folded;
	li->hist_len = fits ? (uint32_t)frame_len : 0;
	if (fits)
		memcpy((uint8_t *)(li + 1), frame, frame_len);
	lm->newest = k;
	if (lm->count < c->seg.layout.live_intervals)
		lm->count++;
	__atomic_store_n(&lm->seq, seq + 2, __ATOMIC_RELEASE);
}

/* Encode the merged histogram once: V2 inner, then the compressed frame. */
static int encode_merged(tb_collector *c, uint8_t **frame, size_t *frame_len)
{
	size_t inner_cap = tb_v2_inner_bound(&c->merged), inner_len;
	*frame = c->scratch + inner_cap;
	int rc = tb_v2_encode_inner(&c->merged, c->scratch, inner_cap, &inner_len);
	return rc < 0 ? rc
		      : tb_v2_compress(c->scratch, inner_len, LOG_ZLEVEL, *frame,
				       c->scratch_cap - inner_cap, frame_len);
}

static int sidecar_row(tb_growbuf *b, double start, const char *scope, const char *name,
		       const tb_metric_counts *mc, uint64_t dropped, uint64_t high_water,
		       int64_t gap_ns)
{
	if (reserve(b, SIDECAR_ROW_MAX) < 0)
		return -ENOMEM;
	char gap[24] = ""; /* empty where it does not apply */
	if (gap_ns >= 0)
		snprintf(gap, sizeof(gap), "%" PRId64, gap_ns / 1000);
	int n = snprintf(b->p + b->len, SIDECAR_ROW_MAX,
			 "%.3f,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 "\n",
			 start, scope, name, mc->events, dropped, mc->negative, mc->late, mc->clamped,
			 mc->unmatched_start, mc->unmatched_end, high_water, gap, mc->folded);
	b->len += (size_t)(n < SIDECAR_ROW_MAX ? n : SIDECAR_ROW_MAX - 1);
	return 0;
}

/* Move metric m's series into c->merged: their closed halves are left
 * empty for the interval after next, in the same pass. */
static void merge_metric(tb_collector *c, uint16_t m)
{
	tb_hist_reset(&c->merged);
	for (uint32_t k = 0; k < c->nseries; k++) {
		if (c->series[k].metric == m)
			tb_hist_move(&c->merged, &c->series[k].hist[c->cur]);
	}
}

uint64_t tb_collector_slot_drops(tb_collector *c, uint32_t i)
{
	uint64_t now = __atomic_load_n(&tb_seg_slot(&c->seg, i)->dropped, __ATOMIC_RELAXED);
	tb_slot_follow *f = &c->slots[i];
	/* a new owner restarts the counter at 0 */
	uint64_t delta = now >= f->dropped_seen ? now - f->dropped_seen : now;
	f->dropped_seen = now;
	__atomic_store_n(&tb_seg_slot(&c->seg, i)->dropped_reported, now, __ATOMIC_RELAXED);
	return delta;
}

/* Drop deltas of every ring this interval; returns the bus total. */
static uint64_t collect_drops(tb_collector *c, uint64_t *drops)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		drops[i] = (c->slots[i].followed ? tb_collector_slot_drops(c, i) : 0) +
			   c->slots[i].pending_drops;
		c->slots[i].pending_drops = 0;
		total += drops[i];
	}
	return total;
}

/* Sidecar rows for every ring that did anything this interval, with the
 * collector's longest gap between passes; *rows: how many. */
static int slot_rows(tb_collector *c, double start, const uint64_t *drops, int64_t gap_ns,
		     int *rows)
{
	int rc = 0;
	*rows = 0;
	for (uint32_t i = 0; rc == 0 && i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		if (!f->interval_events && !f->interval_folded && !drops[i] && !f->bad_events &&
		    !f->quarantined)
			continue;
		char thread[TB_THREAD_NAME_MAX], name[96];
		memcpy(thread, tb_seg_slot(&c->seg, i)->thread_name, sizeof(thread));
		thread[sizeof(thread) - 1] = '\0';
		for (char *p = thread; *p; p++) {
			if (*p == ',' || *p < ' ')
				*p = '_';
		}
		snprintf(name, sizeof(name), "ring%u:%d:%s%s", i, (int)f->pid, thread,
			 f->quarantined ? ":quarantined" : "");
		tb_metric_counts mc = {.events = f->interval_events + f->interval_folded,
				       .folded = f->interval_folded};
		rc = sidecar_row(&c->side, start, "ring", name, &mc, drops[i], f->high_water, gap_ns);
		++*rows;
		if (rc == 0 && f->bad_events) {
			tb_metric_counts bad = {.events = f->bad_events};
			rc = sidecar_row(&c->side, start, "ring-bad-events", name, &bad, 0, 0, -1);
		}
		f->interval_events = 0;
		f->interval_folded = 0;
		f->bad_events = 0;
		f->high_water = 0;
	}
	return rc;
}

/* One metric: merge, publish, log line, sidecar row. */
static int close_metric(tb_collector *c, uint16_t m, double base, int64_t length_ns,
			uint64_t bus_drops, int64_t gap_ns)
{
	tb_metric_counts *mc = &c->counts[c->cur][m];
	int64_t start = c->interval_start_ns;
	double start_sec = (double)start / 1e9;
	char tag[TB_METRIC_NAME_MAX + 16];
	merge_metric(c, m);
	metric_tag(c, m, tag, sizeof(tag));
	uint8_t *frame = NULL;
	size_t frame_len = 0;
	int rc = encode_merged(c, &frame, &frame_len);
	if (rc < 0)
		return rc;
	publish_live(c, m, start, length_ns, bus_drops, gap_ns, mc->folded, frame, frame_len);
	if (tb_hist_total(&c->merged) > 0) {
		if (reserve(&c->log, tb_log_line_bound(&c->merged)) < 0)
			return -ENOMEM;
		int n = tb_log_format_line_frame(c->log.p + c->log.len, c->log.cap - c->log.len, tag,
						 start_sec - base, (double)length_ns / 1e9,
						 tb_hist_max(&c->merged), frame, frame_len);
		if (n < 0)
			return n;
		c->log.len += (size_t)n;
	}
	return sidecar_row(&c->side, start_sec, "metric", tag, mc, 0, 0, -1);
}

int tb_collector_close_interval(tb_collector *c, int64_t length_ns)
{
	double base = tb_writer_begin_interval(c->writer, c->interval_start_ns);
	tb_collector_take_folds(c, c->cur); /* before the ring rows, which show them */
	uint64_t drops[c->seg.layout.slot_count];
	uint64_t fresh_drops = collect_drops(c, drops), bus_drops = fresh_drops + c->drops_carried;
	uint32_t published = 0;
	c->log.len = c->side.len = 0;
	int rows;
	int64_t gap_ns = c->longest_gap_ns; /* what this close reports */
	int rc = slot_rows(c, (double)c->interval_start_ns / 1e9, drops, gap_ns, &rows);
	/* reported: what the close's own passes see goes to the next rows. Not
	 * reported (no ring did anything): kept for the next close's rows, and
	 * no further, so that a stall that straddles a close, its rings read
	 * only after it (a producer that left meanwhile), still shows beside
	 * them, and one on a quiet bus is not shown beside later traffic */
	if (rows > 0 || c->gap_kept) {
		c->longest_gap_ns = 0;
		c->gap_kept = false;
	} else {
		c->gap_kept = true;
	}
	/* The drain goes on between metrics: a close takes milliseconds (tens
	 * the first time a series half is used), long enough to fill a ring at
	 * full rate. What it takes goes to the next half, as late if it
	 * completed in this interval (see open_half). */
	tb_collector_set_closing(c, true); /* from here what is drained is the next half's */
	tb_collector_fold_events(c);
	tb_collector_settle_bounds(c, c->cur);
	for (uint32_t m = 0; rc == 0 && m < c->seg.layout.metric_capacity; m++) {
		tb_metric_counts *mc = &c->counts[c->cur][m];
		if (mc->events || mc->unmatched_start || mc->unmatched_end || mc->late) {
			rc = close_metric(c, (uint16_t)m, base, length_ns, bus_drops, gap_ns);
			published++;
			if (!c->stopping)
				tb_collector_catch_up(c);
		}
	}
	/* this close's drops, shown with no metric: with the next close's, once */
	c->drops_carried = published ? 0 : fresh_drops;
	if (rc == 0 && c->side.len)
		rc = tb_writer_append_sidecar(c->writer, c->side.p, c->side.len);
	if (rc == 0 && c->log.len)
		rc = tb_writer_append_log(c->writer, c->log.p, c->log.len);
	if (rc == 0)
		rc = tb_writer_end_interval(c->writer);
	/* the closed half becomes the next interval's (merge_metric emptied
	 * every series that recorded; this catches any it could not) */
	for (uint32_t k = 0; k < c->nseries; k++) {
		if (tb_hist_total(&c->series[k].hist[c->cur]))
			tb_hist_reset(&c->series[k].hist[c->cur]);
	}
	memset(c->counts[c->cur], 0, c->seg.layout.metric_capacity * sizeof(tb_metric_counts));
	c->cur ^= 1;
	c->interval_start_ns += c->cfg.interval_ns;
	tb_collector_set_closing(c, false);
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	__atomic_store_n(&h->intervals_published, h->intervals_published + 1, __ATOMIC_RELEASE);
	return rc;
}
