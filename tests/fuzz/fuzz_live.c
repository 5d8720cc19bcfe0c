/* fuzz_live.c - libFuzzer target for the live area's readers (tailbus/live.h).
 *
 * The live area is written by the collector but any member of the bus's
 * group can write it too, so a reader treats it as untrusted. The harness
 * keeps one segment image in memory, laid out by tb_seg_layout for
 * LIVE_METRICS metrics of LIVE_INTERVALS records and the smallest heap, and
 * offers each input two ways:
 *   - raw: the input overwrites the metrics' live areas (sequence counters,
 *     indexes, records with any length and heap position), then the heap's
 *     head, then the first bytes of the heap;
 *   - framed: the input is a frame, written into the heap so that it wraps
 *     round the heap's end, with one honest record pointing at it whose
 *     count is the frame's total when it decodes (else 1).
 * Then every metric (and one id past the last) is read at every age (and one
 * past), with tb_live_read_newest, tb_live_read without a histogram and with
 * one carried through all the calls.
 *
 * Every read must end in one of the documented results: 0 with a histogram
 * whose total is the summary's count and that keeps hist.h's invariants
 * (fuzz_check.h), 1 (no histogram asked for), -ENOENT, -ERANGE, -EAGAIN (a
 * sequence counter left odd), -EINVAL (the id past the last) or -EBADMSG,
 * never -ENOMEM (a frame is at most TB_LIVE_FRAME_MAX). In the framed view a
 * frame that decodes must be read back whole (0), one that does not must be
 * refused (-EBADMSG). AddressSanitizer checks that no read leaves the image.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "tailbus/codec.h"
#include "tailbus/live.h"

#define LIVE_METRICS 2
#define LIVE_INTERVALS 4
/* The framed view's frame ends this far past the heap's end: it wraps. */
#define WRAP_TAIL 7
/* A head far from 0, as after a long run (any multiple of the heap would do). */
#define HEAD_LAPS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tb_seg *image(void)
{
	static tb_seg seg;
	static uint8_t *base;
	if (!base) {
		tb_seg_config cfg;
		tb_seg_config_default(&cfg);
		cfg.slot_count = 1;
		cfg.ring_capacity = 2;
		cfg.metric_capacity = LIVE_METRICS;
		cfg.live_intervals = LIVE_INTERVALS;
		cfg.fold_lanes = 0;
		cfg.live_heap_bytes = TB_LIVE_HEAP_MIN;
		FUZZ_CHECK(tb_seg_layout(&cfg, &seg.layout) == 0, "no layout");
		base = calloc(1, seg.layout.total_size);
		FUZZ_CHECK(base != NULL, "no memory for the image");
		seg.base = base;
		seg.size = seg.layout.total_size;
	}
	uint64_t live_bytes = seg.layout.live_heap_off - seg.layout.live_off;
	memset(seg.base + seg.layout.live_off, 0, live_bytes + sizeof(tb_live_heap) + seg.layout.live_heap_bytes);
	return &seg;
}

/* Copy up to `cap` bytes of the input to `dst`; returns how many. */
static size_t take(uint8_t *dst, size_t cap, const uint8_t **data, size_t *size)
{
	size_t n = *size < cap ? *size : cap;
	memcpy(dst, *data, n);
	*data += n;
	*size -= n;
	return n;
}

static void raw_view(tb_seg *s, const uint8_t *data, size_t size)
{
	uint64_t live_bytes = s->layout.live_heap_off - s->layout.live_off;
	take(s->base + s->layout.live_off, live_bytes, &data, &size);
	take((uint8_t *)&tb_seg_live_heap(s)->head, sizeof(uint64_t), &data, &size);
	take(tb_seg_live_heap_bytes(s), s->layout.live_heap_bytes, &data, &size);
}

/* Returns the frame's total, or -1 when it does not decode. */
static int64_t framed_view(tb_seg *s, const uint8_t *data, size_t size, tb_hist *h)
{
	uint64_t heap = s->layout.live_heap_bytes;
	uint64_t head = HEAD_LAPS * heap + WRAP_TAIL, pos = head - size;
	uint8_t *bytes = tb_seg_live_heap_bytes(s);
	for (size_t i = 0; i < size; i++)
		bytes[(pos + i) % heap] = data[i];
	tb_seg_live_heap(s)->head = head;
	const char *why;
	int64_t total = tb_v2_decode(data, size, h, &why) == 0 ? tb_hist_total(h) : -1;
	tb_live_metric *lm = tb_seg_live(s, 0);
	lm->count = 1;
	lm->newest = 0;
	tb_live_interval *iv = tb_seg_live_interval(s, 0, 0);
	iv->count = total >= 0 ? total : 1;
	iv->hist_len = (uint32_t)size;
	iv->frame_pos = pos;
	return total;
}

static void check_read(int rc, bool want_hist, const tb_live_interval *iv, const tb_hist *h)
{
	FUZZ_CHECK(rc != -ENOMEM, "tb_live_read ran out of memory: %s", FUZZ_ENOMEM_IS_A_BUG);
	FUZZ_CHECK(rc == 0 || rc == 1 || rc == -ENOENT || rc == -ERANGE || rc == -EAGAIN ||
			   rc == -EINVAL || rc == -EBADMSG,
		   "tb_live_read returned %d", rc);
	FUZZ_CHECK(rc != 1 || !want_hist, "a histogram was asked for, only a summary came");
	FUZZ_CHECK(rc != 0 || want_hist, "no histogram was asked for, 0 came");
	if (rc == 0) {
		FUZZ_CHECK(tb_hist_total(h) == iv->count, "total %lld, summary count %lld",
			   (long long)tb_hist_total(h), (long long)iv->count);
		fuzz_check_hist(h);
	}
}

static void read_all(const tb_seg *s, tb_hist *h)
{
	for (uint32_t id = 0; id <= LIVE_METRICS; id++) {
		tb_live_snapshot snap;
		int rc = tb_live_read_newest(s, id, &snap);
		FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EAGAIN || rc == -EINVAL,
			   "tb_live_read_newest returned %d", rc);
		FUZZ_CHECK(rc != 0 || snap.count <= LIVE_INTERVALS, "%u intervals", snap.count);
		for (uint32_t age = 0; age <= LIVE_INTERVALS; age++) {
			tb_live_interval iv;
			check_read(tb_live_read(s, id, age, &iv, NULL), false, &iv, NULL);
			check_read(tb_live_read(s, id, age, &iv, h), true, &iv, h);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tb_hist h = {0};
	tb_seg *s = image();
	raw_view(s, data, size);
	read_all(s, &h);
	if (size > 0 && size <= TB_LIVE_FRAME_MAX) {
		s = image();
		int64_t total = framed_view(s, data, size, &h);
		tb_live_interval iv;
		int rc = tb_live_read(s, 0, 0, &iv, &h);
		FUZZ_CHECK(total >= 0 ? rc == 0 : rc == -EBADMSG, "frame of total %lld read as %d",
			   (long long)total, rc);
		check_read(rc, true, &iv, &h);
		read_all(s, &h);
	}
	tb_hist_free(&h);
	return 0;
}
