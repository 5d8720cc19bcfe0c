/* fuzz_ring.c - libFuzzer target for the collector's reading of a ring.
 *
 * Producers write their ring (its events and its position hint) and can
 * scribble on its header and their slot; the collector must read none of it
 * out of bounds, read exactly the events the ring protocol says are there,
 * and quarantine a ring that cannot be honest (seg_abi.h, drain.c).
 *
 * One real collector (tb_collector_open on a bus of 2 slots of 64-event
 * rings, in a private directory) serves every input; each input rewrites
 * slot 0 and its ring from scratch and lets the collector find it:
 *
 *   bytes 0-3   ring index the ring starts at (little-endian)
 *   bytes 4-7   the producer's position hint, relative to it (signed)
 *   byte  8     bit 0: scribble the header's size, bit 1: its mask,
 *               bits 2-3: the slot's state (LIVE, DETACHED, CLAIMED, junk),
 *               bit 4: each event's second word is taken as a signed 32-bit
 *               offset from the collector's current interval start (its
 *               low half), so that completions fall within two seconds of
 *               it: late, current and next, the drain's fast path and not
 *   then        up to 64 events of 16 bytes (little-endian words), written
 *               at the ring indices from the start on, lap bit and all as
 *               the input has them, except that a metric field of 0-3 is
 *               replaced by the id of registered metric m0-m3 (ids are
 *               placed by a hash of the name, which seeds cannot know)
 *
 * Then three drain passes and a housekeeping pass. What must hold:
 *   - a LIVE slot whose hint is within one ring of the start and whose
 *     header is intact is read exactly as far as the events carry the lap
 *     bit of their index, in order, and on past one that does not while the
 *     hint shows the producer past it (a spoiled event, counted as bad and
 *     its lap bit mended so that it reads as not written one pass on); at
 *     most a ring; its consumer index is published there;
 *   - one whose hint is further off, or whose header was scribbled, is
 *     quarantined at once and nothing is read from it; one whose hint is
 *     more than a ring from where the reading stopped is quarantined then;
 *   - whatever the state, the collector's index moves at most a ring;
 *   - every event read is accounted for: recorded, parked or counted as
 *     bad (unregistered metric, unknown kind);
 *   - every series histogram, its bounds settled as the close settles them
 *     (tb_series_settle_bounds), keeps hist.h's promises (fuzz_check.h)
 *     and its min_raw lies at its lowest non-zero count above value 0.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_collector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RING_EVENTS 64u
#define HEADER_BYTES 9u
#define METRICS 4

static tb_collector coll;
static bool ready;
static uint32_t metric_id[METRICS];
static uint64_t w0_before[RING_EVENTS];

static void init(void)
{
	tb_collector_config cfg;
	fuzz_collector_config(&cfg, "fuzz-ring");
	cfg.seg.ring_capacity = RING_EVENTS;
	fuzz_collector_open(&coll, &cfg, METRICS, metric_id);
	ready = true;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t counted(size_t field)
{
	uint64_t n = 0;
	for (int h = 0; h < 2; h++) {
		for (uint32_t m = 0; m < coll.seg.layout.metric_capacity; m++)
			n += *(const uint64_t *)((const char *)&coll.drainers[0].counts[h][m] + field);
	}
	return n;
}

/* Every event read is accounted for. The input says which were SPANs of a
 * registered metric (each recorded once), which were bad (counted), and
 * which were START or END events: two per match (recorded once), one per
 * one still parked, and one per one counted unmatched (refused for want of
 * room, or replaced by a later one of its kind and sequence). */
static void check_accounts(uint32_t start, uint32_t n)
{
	uint64_t spans = 0, bad = 0, start_end = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t w0 = w0_before[k];
		if ((w0 & TB_LAP_BIT) != tb_lap_bit(start + k, tb_seg_ring_log2(&coll.seg))) {
			bad++; /* spoiled, skipped */
			continue;
		}
		uint32_t metric = (uint32_t)(w0 >> TB_METRIC_SHIFT) & (TB_MAX_METRICS - 1), kind = w0 & TB_KIND_MASK;
		bool known = false;
		for (int m = 0; m < METRICS; m++)
			known |= metric == metric_id[m];
		if (!known || kind == TB_EV_MARK)
			bad++;
		else if (kind == TB_EV_SPAN)
			spans++;
		else
			start_end++;
	}
	uint64_t recorded = counted(offsetof(tb_metric_counts, events));
	FUZZ_CHECK((coll.slots[0].tally[0].bad_events + coll.slots[0].tally[1].bad_events) == bad, "%llu bad events counted, %llu read\n",
		   (unsigned long long)(coll.slots[0].tally[0].bad_events + coll.slots[0].tally[1].bad_events), (unsigned long long)bad);
	FUZZ_CHECK(recorded >= spans, "%llu recorded, %llu SPANs read\n", (unsigned long long)recorded,
		   (unsigned long long)spans);
	uint64_t matched = recorded - spans;
	uint64_t left = coll.join.used + counted(offsetof(tb_metric_counts, unmatched_start)) +
			counted(offsetof(tb_metric_counts, unmatched_end));
	FUZZ_CHECK(start_end == 2 * matched + left, "%llu START/END events read: %llu matched, %llu left\n",
		   (unsigned long long)start_end, (unsigned long long)matched, (unsigned long long)left);
}

/* Both banks of every series, settled: the drain's fast path leaves the
 * bounds to the close. */
static void check_series(void)
{
	for (int bank = 0; bank < 2; bank++) {
		tb_series_settle_bounds(&coll, bank);
		for (uint32_t k = 0; k < coll.nseries; k++) {
			const tb_hist *h = &coll.series[k].hist[bank];
			fuzz_check_hist(h); /* bounds too: they come from settle here */
		}
	}
}

static bool hint_near(uint32_t hint, uint32_t index)
{
	uint32_t ahead = hint - index;
	return ahead <= RING_EVENTS || -ahead <= RING_EVENTS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready)
		init();
	if (size < HEADER_BYTES)
		return 0;
	tb_seg *seg = &coll.seg;
	tb_slot *slot = tb_seg_slot(seg, 0);
	tb_slot_follow *f = &coll.slots[0];
	uint32_t start = le32(data), hint = start + le32(data + 4);
	uint8_t flags = data[8];
	size_t given = (size - HEADER_BYTES) / sizeof(tb_event);
	if (given > RING_EVENTS)
		given = RING_EVENTS;

	/* a fresh slot 0, unknown to the collector, and its ring */
	__atomic_store_n(&slot->state, TB_SLOT_FREE, __ATOMIC_RELEASE);
	struct tb_slot_tables tables = f->t;
	memset(f, 0, sizeof(*f));
	f->t = tables;
	tb_collector_flush_fast(&coll); /* none left for this input's counts */
	memset(coll.drainers[0].counts[0], 0, seg->layout.metric_capacity * sizeof(tb_metric_counts));
	memset(coll.drainers[0].counts[1], 0, seg->layout.metric_capacity * sizeof(tb_metric_counts));
	tb_join_expire(&coll.join, INT64_MAX - coll.join.timeout_ns, NULL, NULL);
	tb_seg_ring_reset(seg, 0, start);
	tb_ring_header *ring = tb_seg_ring(seg, 0);
	tb_event *events = tb_seg_events(seg, 0);
	for (size_t j = 0; j < given; j++) {
		tb_event *e = &events[(start + j) & (RING_EVENTS - 1)];
		memcpy(e, data + HEADER_BYTES + j * sizeof(tb_event), sizeof(tb_event));
		if (flags & 0x10)
			e->w1 = (uint64_t)(coll.drainers[0].interval_start_ns - coll.clock_offset_ns +
					   (int32_t)(uint32_t)e->w1);
		uint32_t m = (uint32_t)(e->w0 >> TB_METRIC_SHIFT) & (TB_MAX_METRICS - 1);
		if (m < METRICS) /* name a registered metric by its real id */
			e->w0 = (e->w0 & ~((uint64_t)(TB_MAX_METRICS - 1) << TB_METRIC_SHIFT)) |
				(uint64_t)metric_id[m] << TB_METRIC_SHIFT;
	}
	ring->p_tail = hint;
	if (flags & 1)
		ring->size ^= 0x80000001u;
	if (flags & 2)
		ring->mask = ring->mask * 2 + 1;
	static const uint32_t states[4] = {TB_SLOT_LIVE, TB_SLOT_DETACHED, TB_SLOT_CLAIMED, 0x5a5a};
	uint32_t state = states[(flags >> 2) & 3];
	slot->pid = getpid();
	slot->pid_start_time = tb_proc_start_time(getpid());
	slot->generation++;
	slot->attached_ns = 1;
	__atomic_store_n(&slot->state, state, __ATOMIC_RELEASE);

	/* what the protocol says the collector may read: slots in order while
	 * their lap bit is their index's, and past one whose lap bit is not
	 * while the hint shows the producer past it (spoiled: counted bad);
	 * at most a ring. The first words as they are now: the collector mends
	 * the lap bit of a spoiled one. */
	uint32_t expect = 0;
	while (expect < RING_EVENTS) {
		uint32_t index = start + expect;
		w0_before[expect] = events[index & (RING_EVENTS - 1)].w0;
		bool written = (w0_before[expect] & TB_LAP_BIT) == tb_lap_bit(index, tb_seg_ring_log2(seg));
		if (!written && (int32_t)(hint - index) <= 0)
			break;
		expect++;
	}
	/* an honest producer's hint is within a ring of the collector's index,
	 * checked at every pass: so at the start, and after what was read */
	bool sane = hint_near(hint, start) && !(flags & 3);
	uint32_t want = sane ? expect : 0;
	bool honest = sane && hint_near(hint, start + want);

	for (int pass = 0; pass < 3; pass++)
		tb_collector_pass_all(&coll);
	tb_collector_flush_fast(&coll);
	check_series();
	if (state == TB_SLOT_LIVE) {
		FUZZ_CHECK(f->followed, "a LIVE slot is followed on the first pass\n");
		FUZZ_CHECK(f->quarantined == !honest, "quarantined %d, honest ring %d (%s)\n",
			   f->quarantined, honest, f->reason);
		FUZZ_CHECK(f->cons - start == want, "read %u events, the ring holds %u\n",
			   f->cons - start, want);
		if (want > 0)
			FUZZ_CHECK(ring->c_head == f->cons, "published %u, read to %u\n", ring->c_head,
				   f->cons);
		check_accounts(start, want);
		/* a spoiled event's lap bit is mended: one pass on, it reads as not written */
		for (uint32_t k = 0; k < want; k++)
			FUZZ_CHECK((events[(start + k) & (RING_EVENTS - 1)].w0 & TB_LAP_BIT) !=
					   tb_lap_bit(start + k + RING_EVENTS, tb_seg_ring_log2(seg)),
				   "slot of index %u reads as written one pass on\n", start + k);
	}
	int64_t now = tb_collector_now(&coll) - coll.clock_offset_ns;
	tb_collector_housekeep(&coll, now);
	if (f->followed)
		FUZZ_CHECK(f->cons - start <= RING_EVENTS, "read %u events from a ring of %u\n",
			   f->cons - start, RING_EVENTS);
	return 0;
}
