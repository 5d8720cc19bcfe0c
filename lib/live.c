/* live.c - seqlock readers for the live area (see tailbus/live.h).
 *
 * The copy is made with relaxed loads bracketed by an acquire load of the
 * counter before and an acquire fence plus a second load after; if the two
 * counter values differ, or the first is odd, the collector was writing and
 * the copy is thrown away. Every index read from shared memory (newest,
 * count, hist_len) is bounded by the reader's own validated layout before
 * use, so a corrupt live area yields an error or garbage figures, never an
 * out-of-bounds read.
 */
#include "tailbus/live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/codec.h"

struct copy {
	uint32_t count, newest;
	tb_live_interval iv;
	uint32_t hist_len;
	uint8_t *hist; /* caller buffer of live_hist_bytes, or NULL */
};

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
	if (c->count > cap)
		c->count = cap;
	if (c->count == 0 || age >= c->count) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&lm->seq, __ATOMIC_RELAXED) != seq)
			return -EAGAIN;
		return c->count == 0 ? -ENOENT : -ERANGE;
	}
	uint32_t k = (c->newest + cap - age) % cap;
	const tb_live_interval *iv = tb_seg_live_interval(s, id, k);
	memcpy(&c->iv, iv, sizeof(c->iv));
	c->hist_len = c->iv.hist_len <= s->layout.live_hist_bytes ? c->iv.hist_len : 0;
	if (c->hist && c->hist_len)
		memcpy(c->hist, iv + 1, c->hist_len);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&lm->seq, __ATOMIC_RELAXED) == seq ? 0 : -EAGAIN;
}

static int stable_copy(const tb_seg *s, uint32_t id, uint32_t age, struct copy *c)
{
	if (id >= s->layout.metric_capacity)
		return -EINVAL;
	int rc = -EAGAIN;
	for (int i = 0; i < TB_LIVE_READ_TRIES && rc == -EAGAIN; i++)
		rc = try_copy(s, id, age, c);
	return rc;
}

int tb_live_read_newest(const tb_seg *s, uint32_t id, tb_live_snapshot *out)
{
	struct copy c = {0};
	int rc = stable_copy(s, id, 0, &c);
	if (rc == 0) {
		out->count = c.count;
		out->newest = c.iv;
	}
	return rc;
}

int tb_live_read(const tb_seg *s, uint32_t id, uint32_t age, tb_live_interval *summary, tb_hist *h)
{
	uint8_t *buf = malloc(s->layout.live_hist_bytes ? s->layout.live_hist_bytes : 1);
	if (!buf)
		return -ENOMEM;
	struct copy c = {.hist = buf};
	int rc = stable_copy(s, id, age, &c);
	if (rc == 0) {
		*summary = c.iv;
		const char *why;
		if (!h || !c.hist_len || tb_v2_decode(buf, c.hist_len, h, &why) < 0)
			rc = 1;
	}
	free(buf);
	return rc;
}
