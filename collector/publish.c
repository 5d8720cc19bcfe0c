/* publish.c - the closer's side of the live area: summaries and whole frames.
 *
 * Each closed interval of a metric becomes one record in the metric's live
 * area (a ring of live_intervals records under the metric's sequence
 * counter) and its compressed V2 frame, the very bytes of its log line's
 * payload, goes to the live heap, a byte ring shared by every metric
 * (seg_abi.h, tb_live_heap, has the protocol). Frames have no size limit
 * but TB_LIVE_FRAME_MAX, the largest the histogram layout can produce, so
 * every interval in the live area is exact however busy its metric.
 *
 * The heap is finite: a new frame overwrites the oldest bytes, and the
 * intervals whose frames they held leave the live area first (the newest
 * of them is named in the metric's let_go_start_ns). So that this costs a
 * scan of the metrics once per eighth of the heap rather than once per
 * frame, making room frees an eighth of the heap more than the frame
 * needs. The closer keeps its own copy of every metric's newest index,
 * count, frame positions and interval starts, and reads them back from the
 * segment, which group members can write, only once, when it starts.
 *
 * A collector that finds a live area an earlier one published takes over
 * what it can vouch for: per metric, the newest intervals whose frames are
 * still whole in the heap, each older than the one before and no longer
 * than TB_LIVE_FRAME_MAX, up to the first that is not; the rest leaves. A
 * counter left odd by a collector that died mid-write is made even again,
 * and that metric starts afresh.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "tailbus/codec.h"
#include "tailbus/summary.h"

/* How much more than a frame's length making room frees: an eighth of the
 * heap (TB_LIVE_HEAP_MIN leaves room for it beside the largest frame). */
#define HEAP_FREE_SHIFT 3

/* Metric m's count, as readers see it, changed under its counter, and the
 * start of the newest interval let go (0: leave it as it is). */
static void store_count(tb_live_metric *lm, uint32_t count, int64_t let_go_start_ns)
{
	uint64_t seq = lm->seq;
	__atomic_store_n(&lm->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&lm->count, count, __ATOMIC_RELAXED);
	if (let_go_start_ns)
		__atomic_store_n(&lm->let_go_start_ns, let_go_start_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&lm->seq, seq + 2, __ATOMIC_RELEASE);
}

/* How many of metric m's newest intervals, as an earlier collector left
 * them, are whole and in order; their positions into the private copy. */
static uint32_t adopt(tb_collector *c, uint32_t m, uint64_t head)
{
	struct tb_publisher *p = &c->publisher;
	uint32_t cap = c->seg.layout.live_intervals;
	uint64_t heap_bytes = c->seg.layout.live_heap_bytes;
	tb_live_metric *lm = tb_seg_live(&c->seg, m);
	uint32_t count = lm->count < cap ? lm->count : cap, newest = lm->newest % cap, n = 0;
	uint64_t newer_pos = head;
	for (; n < count; n++) {
		uint32_t k = (newest + cap - n) % cap;
		const tb_live_interval *iv = tb_seg_live_interval(&c->seg, m, k);
		uint64_t pos = iv->frame_pos, len = iv->hist_len;
		if (len == 0 || len > TB_LIVE_FRAME_MAX || pos > newer_pos || newer_pos - pos < len ||
		    head - pos > heap_bytes)
			break;
		p->frame_pos[(size_t)m * cap + k] = pos;
		p->start_ns[(size_t)m * cap + k] = iv->start_ns;
		if (pos < p->floor)
			p->floor = pos;
		newer_pos = pos;
	}
	p->newest[m] = newest;
	p->count[m] = n;
	return n;
}

int tb_publish_init(tb_collector *c)
{
	struct tb_publisher *p = &c->publisher;
	uint32_t metrics = c->seg.layout.metric_capacity, cap = c->seg.layout.live_intervals;
	if (tb_v2_frame_bound(&c->closer.merged) > TB_LIVE_FRAME_MAX)
		return -EOVERFLOW;
	p->newest = calloc(metrics, sizeof(uint32_t));
	p->count = calloc(metrics, sizeof(uint32_t));
	p->frame_pos = calloc((size_t)metrics * cap, sizeof(uint64_t));
	p->start_ns = calloc((size_t)metrics * cap, sizeof(int64_t));
	if (!p->newest || !p->count || !p->frame_pos || !p->start_ns)
		return -ENOMEM;
	p->head = __atomic_load_n(&tb_seg_live_heap(&c->seg)->head, __ATOMIC_RELAXED);
	p->floor = p->head;
	for (uint32_t m = 0; m < metrics; m++) {
		tb_live_metric *lm = tb_seg_live(&c->seg, m);
		if (lm->seq & 1) {
			/* readers wait while it is odd: empty the area, then even */
			lm->count = 0;
			__atomic_store_n(&lm->seq, lm->seq + 1, __ATOMIC_RELEASE);
		}
		uint32_t was = lm->count;
		if (was && adopt(c, m, p->head) != was)
			store_count(lm, p->count[m], 0);
	}
	return 0;
}

int64_t tb_publish_newest_start(const tb_collector *c)
{
	const struct tb_publisher *p = &c->publisher;
	uint32_t cap = c->seg.layout.live_intervals;
	int64_t newest = 0;
	for (uint32_t m = 0; m < c->seg.layout.metric_capacity; m++) {
		int64_t s = p->start_ns[(size_t)m * cap + p->newest[m] % cap];
		if (p->count[m] && s > newest)
			newest = s;
	}
	return newest;
}

void tb_publish_free(tb_collector *c)
{
	struct tb_publisher *p = &c->publisher;
	free(p->newest);
	free(p->count);
	free(p->frame_pos);
	free(p->start_ns);
}

/* Every interval whose frame begins before `limit` leaves the live area. */
static void let_go_before(tb_collector *c, uint64_t limit)
{
	struct tb_publisher *p = &c->publisher;
	uint32_t cap = c->seg.layout.live_intervals;
	for (uint32_t m = 0; m < c->seg.layout.metric_capacity; m++) {
		uint32_t n = p->count[m];
		const uint64_t *pos = p->frame_pos + (size_t)m * cap;
		while (n > 0 && pos[(p->newest[m] + cap - (n - 1)) % cap] < limit)
			n--;
		if (n != p->count[m]) {
			/* the newest let go is the one just older than those kept */
			int64_t start = p->start_ns[(size_t)m * cap + (p->newest[m] + cap - n) % cap];
			p->count[m] = n;
			store_count(tb_seg_live(&c->seg, m), n, start);
		}
	}
	p->floor = limit;
}

/* Write a frame at the heap's head and return its position: first the
 * intervals it would overwrite leave, then head moves, then the bytes. */
static uint64_t heap_append(tb_collector *c, const uint8_t *frame, size_t len)
{
	struct tb_publisher *p = &c->publisher;
	uint64_t heap_bytes = c->seg.layout.live_heap_bytes, pos = p->head;
	if (pos + len - p->floor > heap_bytes)
		let_go_before(c, pos + len - heap_bytes + (heap_bytes >> HEAP_FREE_SHIFT));
	p->head = pos + len;
	tb_live_heap *heap = tb_seg_live_heap(&c->seg);
	/* release: after the counts above; the fence: before the bytes below,
	 * so a reader that copied any of them sees the new head */
	__atomic_store_n(&heap->head, p->head, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	uint8_t *bytes = tb_seg_live_heap_bytes(&c->seg);
	uint64_t at = pos % heap_bytes, first = heap_bytes - at < len ? heap_bytes - at : len;
	memcpy(bytes + at, frame, first);
	memcpy(bytes, frame + first, len - first);
	return pos;
}

void tb_publish_interval(tb_collector *c, uint16_t m, const tb_publish_summary *s,
			 const uint8_t *frame, size_t frame_len)
{
	struct tb_publisher *p = &c->publisher;
	const tb_hist *merged = &c->closer.merged;
	uint32_t cap = c->seg.layout.live_intervals;
	uint64_t pos = heap_append(c, frame, frame_len);
	uint32_t k = p->count[m] == 0 ? 0 : (p->newest[m] + 1) % cap;
	int64_t pct[TB_SUMMARY_PERCENTILES]; /* one walk; the live area keeps no mean */
	tb_hist_values_at_percentiles(merged, tb_summary_levels, TB_SUMMARY_PERCENTILES, pct);
	tb_live_metric *lm = tb_seg_live(&c->seg, m);
	tb_live_interval *li = tb_seg_live_interval(&c->seg, m, k);
	uint64_t seq = lm->seq;
	/* odd while writing; the fence orders that store before the data */
	__atomic_store_n(&lm->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	li->start_ns = s->start_ns;
	li->length_ns = s->length_ns;
	li->count = tb_hist_total(merged);
	li->min = tb_hist_min(merged);
	li->max = tb_hist_max(merged);
	li->p50 = pct[0];
	li->p90 = pct[1];
	li->p99 = pct[2];
	li->p999 = pct[3];
	li->p9999 = pct[4];
	li->dropped = s->bus_drops;
	li->longest_gap_us = s->gap_ns / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(s->gap_ns / 1000);
	li->folded = s->counts->folded;
	li->negative = s->counts->negative;
	li->late = s->counts->late;
	li->unmatched_start = s->counts->unmatched_start;
	li->unmatched_end = s->counts->unmatched_end;
	li->hist_len = (uint32_t)frame_len;
	li->frame_pos = pos;
	p->frame_pos[(size_t)m * cap + k] = pos;
	p->start_ns[(size_t)m * cap + k] = s->start_ns;
	p->newest[m] = k;
	if (p->count[m] < cap)
		p->count[m]++;
	lm->newest = k;
	lm->count = p->count[m];
	__atomic_store_n(&lm->seq, seq + 2, __ATOMIC_RELEASE);
}
