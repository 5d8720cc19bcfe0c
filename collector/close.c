/* close.c - the closer: an interval's finished banks become its report.
 *
 * An interval is closed once every drain thread has moved past it (each
 * publishes the start of its current interval, acked_start_ns). The closer
 * then owns that interval's bank of every series and every drain thread's
 * per-metric counts for it. For each metric, the banks of its series (one
 * per ring that recorded it) are added into one scratch histogram: merged
 * counts, never averaged percentiles. The result is encoded once; the
 * frame is published with its summary to the live area (publish.c) and
 * written as one tagged line of the interval log (tag = metric name). Every counter that must not
 * go into the log (events, drops, negative, late, clamped, unmatched
 * banks, ring high-water marks, the drain threads' stalls) goes to the
 * health sidecar. Then the bank is given back empty (freed_start_ns), for
 * the drain threads to count the interval after next into.
 *
 * The closer runs on the run loop's thread and never reads a ring.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "tailbus/codec.h"
#include "tailbus/log.h"
#include "tailbus/summary.h"
#include "tailbus/grow.h"

#define SIDECAR_ROW_MAX 384

static int reserve(tb_growbuf *b, size_t more)
{
	return tb_grow((void **)&b->p, &b->cap, b->len + more, 65536);
}

/* Encode the merged histogram once: V2 inner, then the compressed frame. */
static int encode_merged(tb_collector *c, uint8_t **frame, size_t *frame_len)
{
	struct tb_closer *k = &c->closer;
	size_t inner_cap = tb_v2_inner_bound(&k->merged), inner_len;
	*frame = k->scratch + inner_cap;
	int rc = tb_v2_encode_inner(&k->merged, k->scratch, inner_cap, &inner_len);
	return rc < 0 ? rc
		      : tb_v2_compress(k->scratch, inner_len, TB_LOG_ZLEVEL, *frame,
				       k->scratch_cap - inner_cap, frame_len);
}

/* One sidecar row; `gap_ns` < 0 leaves its column empty, as do `pass_ns`,
 * `self_pause_ns` and `series_waits` (the drain threads' rows only) and
 * `drain` (the drain thread of a drain or ring row). */
typedef struct sidecar_extra {
	uint64_t dropped, high_water;
	int64_t gap_ns, pass_ns, self_pause_ns;
	int64_t drain, series_waits;
} sidecar_extra;

static void int_or_empty(char *out, size_t cap, int64_t v)
{
	out[0] = '\0';
	if (v >= 0)
		snprintf(out, cap, "%" PRId64, v);
}

static void us_or_empty(char *out, size_t cap, int64_t ns)
{
	int_or_empty(out, cap, ns >= 0 ? ns / 1000 : -1);
}

static int sidecar_row(tb_growbuf *b, double start, const char *scope, const char *name,
		       const tb_metric_counts *mc, const sidecar_extra *x)
{
	if (reserve(b, SIDECAR_ROW_MAX) < 0)
		return -ENOMEM;
	char gap[24], pass[24], self[24], drain[24], waits[24];
	us_or_empty(gap, sizeof(gap), x->gap_ns);
	us_or_empty(pass, sizeof(pass), x->pass_ns);
	us_or_empty(self, sizeof(self), x->self_pause_ns);
	int_or_empty(drain, sizeof(drain), x->drain);
	int_or_empty(waits, sizeof(waits), x->series_waits);
	int n = snprintf(b->p + b->len, SIDECAR_ROW_MAX,
			 "%.3f,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%s\n",
			 start, scope, name, mc->events, x->dropped, mc->negative, mc->late, mc->clamped,
			 mc->unmatched_start, mc->unmatched_end, x->high_water, gap, mc->folded,
			 mc->ahead, pass, self, drain, waits);
	b->len += (size_t)(n < SIDECAR_ROW_MAX ? n : SIDECAR_ROW_MAX - 1);
	return 0;
}

static const sidecar_extra no_extra = {
	.gap_ns = -1, .pass_ns = -1, .self_pause_ns = -1, .drain = -1, .series_waits = -1};

/* Move metric m's series into the merged scratch: their closed banks are
 * left empty for the interval after next, in the same pass. */
static void merge_metric(tb_collector *c, uint16_t m, int bank)
{
	uint32_t n = __atomic_load_n(&c->nseries, __ATOMIC_ACQUIRE);
	tb_hist_reset(&c->closer.merged);
	for (uint32_t k = 0; k < n; k++) {
		if (c->series[k].metric == m)
			tb_hist_move(&c->closer.merged, &c->series[k].hist[bank]);
	}
}

/* Drop deltas of every ring this interval, and what was folded into the
 * lanes of each followed ring, into bank `bank`; returns the bus's drops.
 * The lock is held for one slot at a time: a drain thread that follows or
 * releases a slot meanwhile waits for one slot's lanes, not every one's. */
static uint64_t take_drops_and_folds(tb_collector *c, int bank, uint64_t *drops)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		tb_series_fault_ahead_for_lanes(c, i); /* not under the lock */
		pthread_mutex_lock(&c->slot_lock);
		tb_folds_take_slot(c, i, bank, false, c->closer.sum, c->closer.fold_grew,
				   &c->closer.series_exhausted, false);
		drops[i] = (__atomic_load_n(&f->followed, __ATOMIC_ACQUIRE) ? tb_slots_drops(c, i) : 0) +
			   f->pending_drops;
		f->pending_drops = 0;
		pthread_mutex_unlock(&c->slot_lock);
		total += drops[i];
	}
	return total;
}

/* Sidecar rows for every ring that did anything this interval, with the
 * drain threads' longest gap between passes; *rows: how many. */
static int slot_rows(tb_collector *c, int bank, double start, const uint64_t *drops,
		     int64_t gap_ns, int *rows)
{
	int rc = 0;
	*rows = 0;
	for (uint32_t i = 0; rc == 0 && i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		tb_ring_tally *t = &f->tally[bank];
		bool quarantined = __atomic_load_n(&f->quarantined, __ATOMIC_ACQUIRE);
		if (!t->events && !t->folded && !drops[i] && !t->bad_events && !quarantined)
			continue;
		char thread[TB_THREAD_NAME_MAX], name[96];
		memcpy(thread, tb_seg_slot(&c->seg, i)->thread_name, sizeof(thread));
		thread[sizeof(thread) - 1] = '\0';
		for (char *p = thread; *p; p++) {
			if (*p == ',' || *p < ' ')
				*p = '_';
		}
		snprintf(name, sizeof(name), "ring%u:%d:%s%s", i, (int)f->owner.pid, thread,
			 quarantined ? ":quarantined" : "");
		tb_metric_counts mc = {.events = t->events + t->folded, .folded = t->folded};
		sidecar_extra x = no_extra;
		x.dropped = drops[i];
		x.high_water = t->high_water;
		x.gap_ns = gap_ns;
		/* the drain thread that holds it now, else the one it goes to */
		uint32_t holder = __atomic_load_n(&f->holder, __ATOMIC_ACQUIRE);
		x.drain = holder != TB_NO_DRAINER ? holder : __atomic_load_n(&f->want, __ATOMIC_RELAXED);
		rc = sidecar_row(&c->closer.sidecar, start, "ring", name, &mc, &x);
		++*rows;
		if (rc == 0 && t->bad_events) {
			tb_metric_counts bad = {.events = t->bad_events};
			rc = sidecar_row(&c->closer.sidecar, start, "ring-bad-events", name, &bad, &no_extra);
		}
		memset(t, 0, sizeof(*t));
	}
	return rc;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint32_t us32(int64_t ns)
{
	return ns / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(ns / 1000);
}

/* A row per drain thread: the events it took since the last close, its
 * longest pass, its longest gap between passes, the longest pause between
 * them it ran itself and its waits for series memory (tb_drain_stalls);
 * *longest_gap: the longest wall gap. */
static int drain_rows(tb_collector *c, double start, int64_t *longest_gap)
{
	int rc = 0;
	int64_t worst_pass = 0, worst_self = 0, waits = 0, now = mono_ns();
	*longest_gap = 0;
	for (uint32_t k = 0; rc == 0 && k < c->ndrainers; k++) {
		tb_drainer *d = &c->drainers[k];
		tb_drain_stalls s = {
			.longest_pass_ns = __atomic_exchange_n(&d->stalls.longest_pass_ns, 0, __ATOMIC_RELAXED),
			.longest_gap_ns = __atomic_exchange_n(&d->stalls.longest_gap_ns, 0, __ATOMIC_RELAXED),
			.longest_self_pause_ns =
				__atomic_exchange_n(&d->stalls.longest_self_pause_ns, 0, __ATOMIC_RELAXED),
			.series_waits = __atomic_exchange_n(&d->stalls.series_waits, 0, __ATOMIC_RELAXED),
		};
		/* a gap still going on (the whole collector was stopped, say, and
		 * this thread has not passed since it went on): reported now, beside
		 * the drops it caused, which this close reads */
		int64_t last = __atomic_load_n(&d->last_pass_ns, __ATOMIC_RELAXED);
		if (last && now - last > s.longest_gap_ns)
			s.longest_gap_ns = now - last;
		uint64_t total = __atomic_load_n(&d->events_total, __ATOMIC_RELAXED);
		tb_metric_counts mc = {.events = total - c->closer.drained_seen[k]};
		c->closer.drained_seen[k] = total;
		if (s.longest_gap_ns > *longest_gap)
			*longest_gap = s.longest_gap_ns;
		if (s.longest_self_pause_ns > c->closer.longest_self_pause_ns)
			c->closer.longest_self_pause_ns = s.longest_self_pause_ns;
		char name[32];
		snprintf(name, sizeof(name), "drain%u:cpu%d", k, d->cpu);
		sidecar_extra x = no_extra;
		x.gap_ns = s.longest_gap_ns;
		x.pass_ns = s.longest_pass_ns;
		x.self_pause_ns = s.longest_self_pause_ns;
		x.drain = k;
		x.series_waits = s.series_waits;
		waits += s.series_waits;
		rc = sidecar_row(&c->closer.sidecar, start, "drain", name, &mc, &x);
		if (s.longest_pass_ns > worst_pass)
			worst_pass = s.longest_pass_ns;
		if (s.longest_self_pause_ns > worst_self)
			worst_self = s.longest_self_pause_ns;
	}
	/* for tools reading the segment (top, export): before the interval
	 * count is published with release */
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	__atomic_store_n(&h->drain_threads, c->ndrainers, __ATOMIC_RELAXED);
	__atomic_store_n(&h->drain_longest_pass_us, us32(worst_pass), __ATOMIC_RELAXED);
	__atomic_store_n(&h->drain_self_pause_us, us32(worst_self), __ATOMIC_RELAXED);
	__atomic_store_n(&h->closes_behind, (uint32_t)c->closer.behind, __ATOMIC_RELAXED);
	__atomic_store_n(&h->series_waits, waits > UINT32_MAX ? UINT32_MAX : (uint32_t)waits, __ATOMIC_RELAXED);
	return rc;
}

static void count_expired(void *ctx, uint16_t metric, bool was_start)
{
	tb_collector *c = ctx;
	c->accounts.join_left++; /* it leaves the table, counted in the next close */
	if (metric >= c->seg.layout.metric_capacity)
		return;
	if (was_start)
		c->closer.expired[metric].unmatched_start++;
	else
		c->closer.expired[metric].unmatched_end++;
}

/* The scan of the join table runs here, off the drain threads, in chunks
 * with the lock let go between them: a drain thread that meets a START or
 * END meanwhile waits for one chunk at most, not a pass over the table. */
void tb_closer_expire(tb_collector *c, int64_t now)
{
	uint32_t at = 0;
	do {
		pthread_mutex_lock(&c->join_lock);
		at = tb_join_expire_some(&c->join, now, at, TB_JOIN_EXPIRE_CHUNK, count_expired, c, NULL);
		pthread_mutex_unlock(&c->join_lock);
	} while (at != 0);
}

/* The interval's counts per metric: every drain thread's for the bank,
 * what the fast path recorded into the series banks, and the banks
 * expired since the last close. */
static void sum_counts(tb_collector *c, int bank)
{
	uint32_t metrics = c->seg.layout.metric_capacity;
	tb_metric_counts *sum = c->closer.sum;
	for (uint32_t m = 0; m < metrics; m++) {
		sum[m].unmatched_start += c->closer.expired[m].unmatched_start;
		sum[m].unmatched_end += c->closer.expired[m].unmatched_end;
	}
	memset(c->closer.expired, 0, metrics * sizeof(tb_metric_counts));
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		tb_metric_counts *dc = c->drainers[k].counts[bank];
		for (uint32_t m = 0; m < metrics; m++) {
			sum[m].events += dc[m].events;
			sum[m].negative += dc[m].negative;
			sum[m].late += dc[m].late;
			sum[m].clamped += dc[m].clamped;
			sum[m].unmatched_start += dc[m].unmatched_start;
			sum[m].unmatched_end += dc[m].unmatched_end;
			sum[m].folded += dc[m].folded;
			sum[m].ahead += dc[m].ahead;
		}
		memset(dc, 0, metrics * sizeof(*dc));
	}
	tb_series_flush_fast(c, bank, sum);
}

/* One metric: merge, publish, log line, sidecar row. */
static int close_metric(tb_collector *c, uint16_t m, int bank, double base, int64_t length_ns,
			uint64_t bus_drops, int64_t gap_ns)
{
	tb_metric_counts *mc = &c->closer.sum[m];
	int64_t start = c->closer.start_ns;
	double start_sec = (double)start / 1e9;
	char tag[TB_METRIC_NAME_MAX + 16];
	merge_metric(c, m, bank);
	tb_seg_metric_shown_name(&c->seg, m, tag, sizeof(tag)); /* the log tag */
	uint8_t *frame = NULL;
	size_t frame_len = 0;
	int rc = encode_merged(c, &frame, &frame_len);
	if (rc < 0)
		return rc;
	tb_publish_summary ps = {start, length_ns, bus_drops, gap_ns, mc};
	tb_publish_interval(c, m, &ps, frame, frame_len);
	const tb_hist *merged = &c->closer.merged;
	tb_growbuf *log = &c->closer.log;
	if (tb_hist_total(merged) > 0) {
		if (reserve(log, tb_log_line_bound(merged)) < 0)
			return -ENOMEM;
		int n = tb_log_format_line_frame(log->p + log->len, log->cap - log->len, tag,
						 start_sec - base, (double)length_ns / 1e9,
						 tb_hist_max(merged), frame, frame_len);
		if (n < 0)
			return n;
		log->len += (size_t)n;
	}
	return sidecar_row(&c->closer.sidecar, start_sec, "metric", tag, mc, &no_extra);
}

static uint32_t count_lines(const tb_growbuf *b)
{
	uint32_t n = 0;
	if (!b->len)
		return 0;
	for (const char *p = (const char *)b->p, *end = p + b->len;
	     (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
		n++;
	return n;
}

bool tb_closer_due(const tb_collector *c)
{
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		if (__atomic_load_n(&c->drainers[k].acked_start_ns, __ATOMIC_ACQUIRE) <= c->closer.start_ns)
			return false;
	}
	return true;
}

/* Tests: a closer made slow on purpose (tb_collector_config.test_close_delay_ns). */
static void test_delay(const tb_collector *c)
{
	int64_t ns = c->cfg.test_close_delay_ns;
	if (ns <= 0)
		return;
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	nanosleep(&ts, NULL);
}

int tb_closer_close(tb_collector *c, int64_t length_ns)
{
	struct tb_closer *k = &c->closer;
	int bank = k->bank;
	double base = tb_writer_begin_interval(c->writer, k->start_ns);
	double start_sec = (double)k->start_ns / 1e9;
	uint32_t metrics = c->seg.layout.metric_capacity;
	test_delay(c);
	memset(k->sum, 0, metrics * sizeof(*k->sum));
	uint64_t drops[c->seg.layout.slot_count];
	/* folds before the ring rows, which show them */
	uint64_t fresh_drops = take_drops_and_folds(c, bank, drops);
	tb_accounts_take(c, bank); /* before the ring rows clear the tallies */
	uint64_t bus_drops = fresh_drops + k->drops_carried;
	uint32_t published = 0;
	k->log.len = k->sidecar.len = 0;
	int64_t drain_gap;
	int rc = drain_rows(c, start_sec, &drain_gap);
	if (drain_gap > k->longest_gap_ns)
		k->longest_gap_ns = drain_gap;
	int rows = 0;
	int64_t gap_ns = k->longest_gap_ns; /* what this close reports */
	if (rc == 0)
		rc = slot_rows(c, bank, start_sec, drops, gap_ns, &rows);
	/* reported: the next rows start afresh. Not reported (no ring did
	 * anything): kept for the next close's rows, and no further, so that
	 * a stall that straddles a close still shows beside the rings read
	 * after it, and one on a quiet bus is not shown beside later traffic */
	if (rows > 0 || k->gap_kept) {
		k->longest_gap_ns = 0;
		k->gap_kept = false;
	} else {
		k->gap_kept = true;
	}
	sum_counts(c, bank);
	tb_series_settle_bounds(c, bank);
	/* the live area shows a gap beside a metric's interval only: one this
	 * close cannot show goes with the next close's metrics, once, as its
	 * drops do (a whole collector stopped, its rings drained after the
	 * switch: the stall's drops and the stall itself are this close's, the
	 * events the next one's) */
	int64_t live_gap = gap_ns > k->gap_carried ? gap_ns : k->gap_carried;
	for (uint32_t m = 0; rc == 0 && m < metrics; m++) {
		tb_metric_counts *mc = &k->sum[m];
		if (mc->events || mc->unmatched_start || mc->unmatched_end || mc->late) {
			rc = close_metric(c, (uint16_t)m, bank, base, length_ns, bus_drops, live_gap);
			published++;
		}
	}
	/* this close's drops, shown with no metric: with the next close's, once */
	k->drops_carried = published ? 0 : fresh_drops;
	k->gap_carried = published ? 0 : gap_ns;
	tb_accounts_writing(c, k->start_ns, rc == 0 ? count_lines(&k->log) : 0);
	if (rc == 0 && k->sidecar.len)
		rc = tb_writer_append_sidecar(c->writer, k->sidecar.p, k->sidecar.len);
	if (rc == 0 && k->log.len)
		rc = tb_writer_append_log(c->writer, k->log.p, k->log.len);
	if (rc == 0)
		rc = tb_writer_end_interval(c->writer);
	/* the interval is in the files (or reported lost from them) before
	 * the accounts say so (accounts.c) */
	tb_writer_settle(c->writer);
	tb_accounts_publish(c, k->start_ns);
	/* the closed bank is given back empty (merge_metric emptied every
	 * series that recorded; this catches any it could not) */
	uint32_t n = __atomic_load_n(&c->nseries, __ATOMIC_ACQUIRE);
	for (uint32_t s = 0; s < n; s++) {
		if (tb_hist_total(&c->series[s].hist[bank]))
			tb_hist_reset(&c->series[s].hist[bank]);
	}
	/* release: the emptied bank and counts happen before a drain thread
	 * counts into them again */
	__atomic_store_n(&c->freed_start_ns, k->start_ns, __ATOMIC_RELEASE);
	k->start_ns += c->cfg.interval_ns;
	k->bank ^= 1;
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	__atomic_store_n(&h->intervals_published, h->intervals_published + 1, __ATOMIC_RELEASE);
	return rc;
}

int tb_closer_init(tb_collector *c)
{
	struct tb_closer *k = &c->closer;
	int rc = tb_hist_init(&k->merged, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
			      TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc < 0)
		return rc;
	k->scratch_cap = tb_v2_inner_bound(&k->merged) + tb_v2_frame_bound(&k->merged);
	k->scratch = malloc(k->scratch_cap);
	k->sum = calloc(c->seg.layout.metric_capacity, sizeof(tb_metric_counts));
	k->fold_grew = malloc(TB_FOLD_COUNTS * sizeof(uint64_t));
	k->drained_seen = calloc(c->ndrainers, sizeof(uint64_t));
	k->expired = calloc(c->seg.layout.metric_capacity, sizeof(tb_metric_counts));
	if (!k->scratch || !k->sum || !k->fold_grew || !k->drained_seen || !k->expired)
		return -ENOMEM;
	return tb_publish_init(c);
}

void tb_closer_free(tb_collector *c)
{
	struct tb_closer *k = &c->closer;
	tb_hist_free(&k->merged);
	free(k->scratch);
	free(k->sum);
	free(k->fold_grew);
	free(k->drained_seen);
	free(k->expired);
	free(k->log.p);
	free(k->sidecar.p);
	tb_publish_free(c);
}
