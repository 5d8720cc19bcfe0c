/* live.c - seqlock readers for the live area (see tailbus/live.h).
 *
 * The copy is made with relaxed loads bracketed by an acquire load of the
 * counter before and an acquire fence plus a second load after; if the two
 * counter values differ, or the first is odd, the collector was writing and
 * the copy is thrown away. An interval's frame lives in the live heap
 * (seg_abi.h, tb_live_heap): it is copied between the same two loads of the
 * counter, and is whole only if the heap's head, loaded after the copy (an
 * acquire fence between), is still within one heap's length of the frame's
 * position; otherwise the collector made room over it, and has changed the
 * counter before doing so. Every index and length read from shared memory
 * (newest, count, hist_len, frame_pos) is bounded by the reader's own
 * validated layout before use, so a corrupt live area yields an error or
 * garbage figures, never an out-of-bounds read.
 *
 * A window (tb_live_read_window) is read one interval at a time, so a
 * publish may come between two reads and move every age up by one. The
 * intervals' start times tell: they must fall strictly from the newest to
 * the oldest, and a walk in which they do not is thrown away and begun
 * again.
 */
#include "tailbus/live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/codec.h"

struct copy {
	uint32_t count, newest;
	int64_t let_go_start_ns;
	tb_live_interval iv;
	uint8_t *hist;   /* NULL: the summary only */
	size_t hist_cap; /* bytes at hist */
	bool grow;       /* the frame is longer than hist_cap: grow it, try again */
};

static bool frame_whole(uint64_t head, uint64_t pos, uint64_t len, uint64_t heap_bytes)
{
	return pos + len >= pos && pos + len <= head && head - pos <= heap_bytes;
}

/* The frame of c->iv into c->hist: 0, -EAGAIN (the collector made room over
 * it meanwhile, or the counter moved) or -EBADMSG (impossible while the
 * counter stood still: a scribbled live area). */
static int copy_frame(const tb_seg *s, const tb_live_metric *lm, uint64_t seq, struct copy *c)
{
	uint64_t heap_bytes = s->layout.live_heap_bytes;
	uint64_t pos = c->iv.frame_pos, len = c->iv.hist_len;
	const tb_live_heap *heap = tb_seg_live_heap(s);
	bool bad = len == 0 || len > TB_LIVE_FRAME_MAX;
	if (!bad && len > c->hist_cap) {
		c->grow = true;
		return -EAGAIN;
	}
	if (!bad && frame_whole(__atomic_load_n(&heap->head, __ATOMIC_ACQUIRE), pos, len, heap_bytes)) {
		const uint8_t *bytes = tb_seg_live_heap_bytes(s);
		uint64_t at = pos % heap_bytes, first = heap_bytes - at < len ? heap_bytes - at : len;
		memcpy(c->hist, bytes + at, first);
		memcpy(c->hist + first, bytes, len - first);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (frame_whole(__atomic_load_n(&heap->head, __ATOMIC_RELAXED), pos, len, heap_bytes))
			return 0;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&lm->seq, __ATOMIC_RELAXED) != seq ? -EAGAIN : -EBADMSG;
}

/* One attempt at a stable copy of interval `age`. */
static int try_copy(const tb_seg *s, uint32_t id, uint32_t age, struct copy *c)
{
	const tb_live_metric *lm = tb_seg_live(s, id);
	uint64_t seq = __atomic_load_n(&lm->seq, __ATOMIC_ACQUIRE);
	if (seq & 1)
		return -EAGAIN;
	uint32_t cap = s->layout.live_intervals;
	c->count = __atomic_load_n(&lm->count, __ATOMIC_RELAXED);
	c->newest = __atomic_load_n(&lm->newest, __ATOMIC_RELAXED) % cap;
	c->let_go_start_ns = __atomic_load_n(&lm->let_go_start_ns, __ATOMIC_RELAXED);
	if (c->count > cap)
		c->count = cap;
	if (c->count == 0 || age >= c->count) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&lm->seq, __ATOMIC_RELAXED) != seq)
			return -EAGAIN;
		return c->count == 0 ? -ENOENT : -ERANGE;
	}
	uint32_t k = (c->newest + cap - age) % cap;
	memcpy(&c->iv, tb_seg_live_interval(s, id, k), sizeof(c->iv));
	if (c->hist) {
		int rc = copy_frame(s, lm, seq, c);
		if (rc < 0)
			return rc;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&lm->seq, __ATOMIC_RELAXED) == seq ? 0 : -EAGAIN;
}

static int stable_copy(const tb_seg *s, uint32_t id, uint32_t age, struct copy *c)
{
	if (id >= s->layout.metric_capacity)
		return -EINVAL;
	int rc = -EAGAIN;
	for (int i = 0; i < TB_LIVE_READ_TRIES && rc == -EAGAIN; i++) {
		c->grow = false;
		rc = try_copy(s, id, age, c);
		if (rc == -EAGAIN && c->grow) {
			/* at least doubled, to at most TB_LIVE_FRAME_MAX (copy_frame
			 * checked the length): a few growths at most. Not tb_grow,
			 * whose doubling could pass that cap. */
			size_t want = c->iv.hist_len > 2 * c->hist_cap ? c->iv.hist_len : 2 * c->hist_cap;
			if (want > TB_LIVE_FRAME_MAX)
				want = TB_LIVE_FRAME_MAX;
			uint8_t *p = realloc(c->hist, want);
			if (!p)
				return -ENOMEM;
			c->hist = p;
			c->hist_cap = want;
			i--; /* growing is not a torn read */
		}
	}
	return rc;
}

int tb_live_read_newest(const tb_seg *s, uint32_t id, tb_live_snapshot *out)
{
	struct copy c = {0};
	int rc = stable_copy(s, id, 0, &c);
	if (rc == 0) {
		out->count = c.count;
		out->newest = c.iv;
		out->let_go_start_ns = c.let_go_start_ns;
	}
	return rc;
}

bool tb_live_let_go(const tb_seg *s, uint32_t id, uint32_t n, uint32_t read,
		    int64_t newest_start_ns, int64_t length_ns)
{
	tb_live_snapshot snap;
	if (read == 0 || read >= n || tb_live_read_newest(s, id, &snap) < 0 || !snap.let_go_start_ns)
		return false;
	/* times from the segment: an arithmetic that overflows is no window */
	int64_t back, oldest;
	if (__builtin_mul_overflow((int64_t)(n - 1), length_ns, &back) ||
	    __builtin_sub_overflow(newest_start_ns, back, &oldest))
		return false;
	return snap.let_go_start_ns >= oldest;
}

/* A first buffer that holds most frames without growing. */
#define FRAME_GUESS 4096

int tb_live_read(const tb_seg *s, uint32_t id, uint32_t age, tb_live_interval *summary, tb_hist *h)
{
	struct copy c = {0};
	if (h) {
		c.hist = malloc(FRAME_GUESS);
		if (!c.hist)
			return -ENOMEM;
		c.hist_cap = FRAME_GUESS;
	}
	int rc = stable_copy(s, id, age, &c);
	/* -EBADMSG from the copy: a frame the record cannot have, read while
	 * the counter stood still, so the record itself is a stable copy */
	if (rc == 0 || rc == -EBADMSG)
		*summary = c.iv;
	if (rc == 0) {
		const char *why;
		if (!h)
			rc = 1;
		else if ((rc = tb_v2_decode(c.hist, c.iv.hist_len, h, &why)) != -ENOMEM)
			rc = rc == 0 && tb_hist_total(h) == c.iv.count ? 0 : -EBADMSG;
	}
	free(c.hist);
	return rc;
}

/* One walk over ages 0..n-1; -ESTALE when start times did not fall strictly. */
static int walk_window(const tb_seg *s, uint32_t id, uint32_t n, tb_hist *scratch,
		       const tb_live_window_fns *fns, void *arg)
{
	int64_t previous_start = INT64_MAX;
	for (uint32_t age = 0; age < n; age++) {
		tb_live_interval iv;
		int rc = tb_live_read(s, id, age, &iv, scratch);
		if (rc == -ENOENT || rc == -ERANGE)
			return 0; /* fewer intervals published than the window holds */
		if (rc < 0)
			return rc;
		if (iv.start_ns >= previous_start)
			return -ESTALE;
		previous_start = iv.start_ns;
		rc = fns->interval(arg, &iv, scratch);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
	}
	return 0;
}

int tb_live_read_window(const tb_seg *s, uint32_t id, uint32_t n, tb_hist *scratch,
			const tb_live_window_fns *fns, void *arg)
{
	int rc = -ESTALE;
	for (int i = 0; i < TB_LIVE_WINDOW_TRIES && rc == -ESTALE; i++) {
		fns->begin(arg);
		rc = walk_window(s, id, n, scratch, fns, arg);
	}
	return rc;
}
