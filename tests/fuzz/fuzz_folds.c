/* fuzz_folds.c - libFuzzer target for the collector's reading of fold lanes.
 *
 * A producer writes its slot's fold lanes (seg_abi.h) and can scribble on
 * all of them, the collector's `taken` fields included; the collector must
 * read them within bounds, record exactly what an honest lane grew by, and
 * count one bad event for a read it cannot trust (folds.c).
 *
 * One real collector (tb_collector_open on a bus of 2 slots, 2 lanes a
 * slot, in a private directory) serves every input; each input starts slot
 * 0's lanes empty and writes into them:
 *
 *   byte 0      bit 0: the lane (0 or 1); bit 1: mark it dirty; bit 2: read
 *               every lane, dirty or not; bits 3-4: its metric: registered
 *               m0, registered m1, an id no one registered, byte 1 as it is
 *   byte 1      a raw metric_plus_one (bits 3-4 = 3)
 *   then        records of 11 bytes: a count index (2 bytes, little-endian,
 *               taken modulo TB_FOLD_COUNTS + 2, the last two standing for
 *               `negative` and `clamped`), a field (1 byte: bit 0 `taken`,
 *               else the producer's count; bit 1: set the field to the
 *               value, else add the value to it), and the value (8 bytes)
 *
 * What must hold after the read (tb_collector_take_slot_folds):
 *   - every count read is taken as it stands (taken == counts), so a lane
 *     read twice gives nothing the second time;
 *   - if every count grew by a possible amount (none went down, all of them
 *     together by at most 2^40) and the metric is registered, the metric's
 *     events and folded counts grew by exactly that sum, and so did its
 *     series histogram's total; else one bad event, nothing recorded;
 *   - every series histogram keeps hist.h's promises (fuzz_check.h).
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

#define HEADER_BYTES 2u
#define RECORD_BYTES 11u
#define METRICS 2
#define MOST (UINT64_C(1) << 40) /* folds.c's TB_FOLD_MOST */

static tb_collector coll;
static bool ready;
static uint32_t metric_id[METRICS];

static void init(void)
{
	tb_collector_config cfg;
	fuzz_collector_config(&cfg, "fuzz-folds");
	cfg.seg.fold_lanes = 2;
	cfg.max_series = 16;
	fuzz_collector_open(&coll, &cfg, METRICS, metric_id);
	/* slot 0 LIVE and followed, as if a producer held it */
	tb_slot *slot = tb_seg_slot(&coll.seg, 0);
	slot->pid = getpid();
	slot->pid_start_time = tb_proc_start_time(getpid());
	__atomic_store_n(&slot->state, TB_SLOT_LIVE, __ATOMIC_RELEASE);
	tb_collector_pass_all(&coll);
	FUZZ_CHECK(coll.slots[0].followed, "slot 0 followed\n");
	ready = true;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int k = 7; k >= 0; k--)
		v = v << 8 | p[k];
	return v;
}

/* The producer's counter and the collector's of record index i. */
static void fields(tb_fold_lane *lane, uint32_t i, uint64_t **count, uint64_t **taken)
{
	if (i < TB_FOLD_COUNTS) {
		*count = &lane->counts[i];
		*taken = &lane->taken[i];
	} else if (i == TB_FOLD_COUNTS) {
		*count = &lane->negative;
		*taken = &lane->negative_taken;
	} else {
		*count = &lane->clamped;
		*taken = &lane->clamped_taken;
	}
}

static int64_t series_total(void)
{
	int64_t n = 0;
	for (uint32_t k = 0; k < coll.nseries; k++)
		n += tb_hist_total(&coll.series[k].hist[coll.drainers[0].cur]);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready)
		init();
	if (size < HEADER_BYTES)
		return 0;
	tb_slot_follow *f = &coll.slots[0];
	uint8_t flags = data[0];
	/* both lanes start empty: a read of every lane (bit 2) must see only
	 * what this input wrote */
	tb_seg_folds_reset(&coll.seg, 0);
	tb_fold_lane *lane = tb_seg_fold_lane(&coll.seg, 0, flags & 1);
	uint32_t metric_plus_one;
	switch ((flags >> 3) & 3) {
	case 0: metric_plus_one = metric_id[0] + 1; break;
	case 1: metric_plus_one = metric_id[1] + 1; break;
	case 2: metric_plus_one = 15 + 1; break; /* within the table, never registered */
	default: metric_plus_one = data[1] * 0x01010101u; break;
	}
	lane->metric_plus_one = metric_plus_one;
	for (size_t at = HEADER_BYTES; at + RECORD_BYTES <= size; at += RECORD_BYTES) {
		uint32_t i = (uint32_t)(data[at] | data[at + 1] << 8) % (TB_FOLD_COUNTS + 2);
		uint8_t how = data[at + 2];
		uint64_t v = le64(data + at + 3), *count, *taken;
		fields(lane, i, &count, &taken);
		uint64_t *field = how & 1 ? taken : count;
		*field = how & 2 ? v : *field + v;
	}
	if (flags & 2)
		lane->dirty = 1;

	/* what an honest read takes */
	bool ok = true;
	uint64_t sum = 0, changed = 0;
	for (uint32_t i = 0; i < TB_FOLD_COUNTS + 2; i++) {
		uint64_t *count, *taken;
		fields(lane, i, &count, &taken);
		changed |= *count ^ *taken;
		if (*count < *taken || *count - *taken > MOST)
			ok = false;
		else if (i < TB_FOLD_COUNTS) {
			sum += *count - *taken;
			if (sum > MOST)
				ok = false;
		}
	}
	uint16_t m = (uint16_t)(metric_plus_one - 1);
	bool known = metric_plus_one == metric_id[0] + 1 || metric_plus_one == metric_id[1] + 1;
	bool read = lane->dirty || (flags & 4);
	/* the series stay far from any overflow: each input starts them empty */
	for (uint32_t k = 0; k < coll.nseries; k++)
		for (int h = 0; h < 2; h++)
			tb_hist_reset(&coll.series[k].hist[h]);
	memset(coll.drainers[0].counts[coll.drainers[0].cur], 0, coll.seg.layout.metric_capacity * sizeof(tb_metric_counts));
	uint64_t bad_before = f->tally[coll.drainers[0].cur].bad_events;

	tb_folds_take_slot(&coll, 0, coll.drainers[0].cur, flags & 4, coll.drainers[0].counts[coll.drainers[0].cur],
			   coll.drainers[0].fold_grew, &coll.drainers[0].series_exhausted, false);

	FUZZ_CHECK(lane->dirty == 0, "a read lane's dirty mark is cleared\n");
	if (!read)
		return 0;
	for (uint32_t i = 0; i < TB_FOLD_COUNTS + 2; i++) {
		uint64_t *count, *taken;
		fields(lane, i, &count, &taken);
		FUZZ_CHECK(*count == *taken, "field %u: count %llu, taken %llu after a read\n", i,
			   (unsigned long long)*count, (unsigned long long)*taken);
	}
	if (!changed) {
		FUZZ_CHECK(f->tally[coll.drainers[0].cur].bad_events == bad_before && series_total() == 0,
			   "a lane that did not grow gives nothing\n");
		return 0;
	}
	if (ok && known) {
		const tb_metric_counts *mc = &coll.drainers[0].counts[coll.drainers[0].cur][m];
		FUZZ_CHECK(f->tally[coll.drainers[0].cur].bad_events == bad_before, "an honest lane counted bad\n");
		FUZZ_CHECK(mc->events == sum && mc->folded == sum, "events %llu, folded %llu, grew %llu\n",
			   (unsigned long long)mc->events, (unsigned long long)mc->folded,
			   (unsigned long long)sum);
		FUZZ_CHECK(series_total() == (int64_t)sum, "histograms hold %lld, grew %llu\n",
			   (long long)series_total(), (unsigned long long)sum);
	} else {
		FUZZ_CHECK(f->tally[coll.drainers[0].cur].bad_events == bad_before + 1, "an impossible read is one bad event\n");
		FUZZ_CHECK(series_total() == 0, "an impossible read recorded %lld\n",
			   (long long)series_total());
	}
	for (uint32_t k = 0; k < coll.nseries; k++)
		fuzz_check_hist(&coll.series[k].hist[coll.drainers[0].cur]);
	return 0;
}
