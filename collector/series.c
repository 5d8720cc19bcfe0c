/* series.c - the series pool: a histogram pair per (slot, metric).
 *
 * One anonymous mapping holds, first, the fast path's "none" record (limit
 * 0: no event is recorded through it), then for every series its two
 * banks, each a fast record (tb_series_fast, one line) followed by the
 * bank's counts. Series are taken in order, under series_lock, the first
 * time a (slot, metric) pair records; `nseries` is published with release
 * so the closer, which walks [0, nseries), sees a series whole.
 *
 * The mapping is committed lazily by the kernel; the series keeper
 * (keeper.c) faults in series ahead of those taken. A drain thread takes
 * only a series already faulted in (tb_series_at_hand); the closer, and a
 * drain thread handing a slot back (which cannot leave events behind), take
 * one whatever its state, and fault in one taken before the keeper did
 * themselves, counted in series_unready.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "collector.h"

/* The counts of one series bank (the default layout). */
static int32_t series_counts_len(void)
{
	return tb_hist_counts_len(TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
				  TB_HIST_DEFAULT_SIG_DIGITS);
}

size_t tb_series_bytes_per_bank(void)
{
	return sizeof(tb_series_fast) + (size_t)series_counts_len() * sizeof(int64_t);
}

/* The pool's mapping: the "none" record, then max_series x 2 banks. */
static size_t pool_bytes_for(uint32_t max_series)
{
	return sizeof(tb_series_fast) + 2 * (size_t)max_series * tb_series_bytes_per_bank();
}

int tb_series_pool_init(tb_collector *c)
{
	int32_t len = series_counts_len();
	size_t per = tb_series_bytes_per_bank();
	if (pool_bytes_for(c->cfg.max_series) > (size_t)UINT32_MAX * TB_FAST_OFFSET_UNIT)
		return -E2BIG;
	c->series_pool_bytes = pool_bytes_for(c->cfg.max_series);
	c->series_pool = mmap(NULL, c->series_pool_bytes, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->series_pool == MAP_FAILED) {
		c->series_pool = NULL;
		return -ENOMEM;
	}
	c->fast_discard = c->series_pool; /* zeroed: limit 0 */
	c->series = calloc(c->cfg.max_series, sizeof(*c->series));
	if (!c->series)
		return -ENOMEM;
	for (uint32_t k = 0; k < c->cfg.max_series; k++) {
		for (int bank = 0; bank < 2; bank++) {
			tb_series_fast *fast =
				(tb_series_fast *)(c->series_pool + sizeof(tb_series_fast) +
						   ((size_t)k * 2 + (size_t)bank) * per);
			c->series[k].fast[bank] = fast;
			tb_hist_init_zeroed(&c->series[k].hist[bank], TB_HIST_DEFAULT_LOWEST,
					    TB_HIST_DEFAULT_HIGHEST, TB_HIST_DEFAULT_SIG_DIGITS,
					    tb_fast_counts(fast), (size_t)len);
		}
	}
	tb_series_prefault(c);
	return 0;
}

void tb_series_pool_free(tb_collector *c)
{
	free(c->series);
	if (c->series_pool)
		munmap(c->series_pool, c->series_pool_bytes);
}

/* Series n's pages, both banks (side by side in the pool), faulted in. */
static void fault_in_series(tb_collector *c, uint32_t n)
{
	tb_pages_fault_in(c->series[n].fast[0], 2 * tb_series_bytes_per_bank());
}

/* Cold: the first event of (slot, metric) takes a series from the pool,
 * under series_lock. `faulted`: a series the caller faulted in before
 * the lock (or UINT32_MAX). *ask: how many series to ask the keeper for
 * once the lock is let go (0: none). */
static tb_series *new_series(tb_collector *c, uint32_t slot, uint16_t metric, uint64_t *exhausted,
			     uint32_t faulted, uint32_t *ask)
{
	tb_slot_follow *f = &c->slots[slot];
	tb_series *s = __atomic_load_n(&f->t.series_of[metric], __ATOMIC_ACQUIRE);
	*ask = 0;
	if (s) /* taken meanwhile by the closer (fold lanes) */
		return s;
	uint32_t n = c->nseries;
	if (n == c->cfg.max_series) {
		++*exhausted;
		return NULL;
	}
	s = &c->series[n];
	/* not faulted in by the keeper yet (taken by the closer, or at a
	 * slot's release): faulted in whole, before any drain thread records
	 * into it, by the caller before the lock or else here; counted */
	uint32_t ready = __atomic_load_n(&c->series_ready, __ATOMIC_ACQUIRE);
	if (n >= ready) {
		if (n != faulted && n >= __atomic_load_n(&c->series_faulted_to, __ATOMIC_ACQUIRE)) {
			fault_in_series(c, n);
			__atomic_add_fetch(&c->series_faulted_on_take, 1, __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&c->series_unready, 1, __ATOMIC_RELAXED);
	} else if (ready - (n + 1) <= c->cfg.series_reserve / 2 &&
		   __atomic_load_n(&c->series_wanted, __ATOMIC_RELAXED) <= ready) {
		/* half the reserve or less left, and no refill asked for: one, to
		 * the keeper's own target, so it is asked once */
		*ask = tb_series_target(c, n + 1);
	}
	s->slot = slot;
	s->metric = metric;
	for (int h = 0; h < 2; h++) {
		*s->fast[h] = (tb_series_fast){.limit = (uint64_t)TB_HIST_DEFAULT_HIGHEST + 1};
		/* within reach: tb_series_pool_init checks the pool */
		__atomic_store_n(&f->t.fast_of[h][tb_fast_entry(metric)],
				 (uint32_t)(((const char *)s->fast[h] - c->fast_discard) / TB_FAST_OFFSET_UNIT),
				 __ATOMIC_RELEASE);
	}
	__atomic_store_n(&f->t.series_of[metric], s, __ATOMIC_RELEASE);
	__atomic_store_n(&c->nseries, n + 1, __ATOMIC_RELEASE);
	return s;
}

tb_series *tb_collector_series(tb_collector *c, uint32_t slot, uint16_t metric, uint64_t *exhausted)
{
	tb_series *s = __atomic_load_n(&c->slots[slot].t.series_of[metric], __ATOMIC_ACQUIRE);
	if (TB_LIKELY(s != NULL))
		return s;
	/* the series this is likely to take, faulted in before the lock, which
	 * a drain thread meeting a new pair waits for (unless the closer did,
	 * before the caller's lock) */
	uint32_t next = __atomic_load_n(&c->nseries, __ATOMIC_ACQUIRE), faulted = UINT32_MAX;
	if (next < c->cfg.max_series && next >= __atomic_load_n(&c->series_ready, __ATOMIC_ACQUIRE)) {
		if (next >= __atomic_load_n(&c->series_faulted_to, __ATOMIC_ACQUIRE)) {
			fault_in_series(c, next);
			__atomic_add_fetch(&c->series_faulted_on_take, 1, __ATOMIC_RELAXED);
		}
		faulted = next;
	}
	uint32_t ask;
	pthread_mutex_lock(&c->series_lock);
	s = new_series(c, slot, metric, exhausted, faulted, &ask);
	pthread_mutex_unlock(&c->series_lock);
	tb_series_ask(c, ask, false);
	return s;
}

void tb_series_fault_ahead_for_lanes(tb_collector *c, uint32_t i)
{
	uint32_t next = __atomic_load_n(&c->nseries, __ATOMIC_ACQUIRE);
	uint32_t from = __atomic_load_n(&c->series_ready, __ATOMIC_ACQUIRE);
	uint32_t to = __atomic_load_n(&c->series_faulted_to, __ATOMIC_ACQUIRE);
	if (from < to)
		from = to;
	if (next >= c->cfg.max_series || from >= (uint64_t)next + c->seg.layout.fold_lanes)
		return; /* none left, or as many as the lanes could take in already */
	if (from < next)
		from = next;
	const tb_slot_follow *f = &c->slots[i];
	uint32_t want = next;
	for (uint32_t k = 0; k < c->seg.layout.fold_lanes; k++) {
		const tb_fold_lane *lane = tb_seg_fold_lane(&c->seg, i, k);
		uint32_t metric_plus_one = __atomic_load_n(&lane->metric_plus_one, __ATOMIC_ACQUIRE);
		if (metric_plus_one == 0 || metric_plus_one > c->seg.layout.metric_capacity ||
		    __atomic_load_n(&f->t.series_of[metric_plus_one - 1], __ATOMIC_ACQUIRE))
			continue;
		/* a lane the lock's holder may take a series for: a guess, as
		 * the lane may hold nothing new; a series faulted in for
		 * nothing is one of the next taken anyway */
		want++;
	}
	if (want > c->cfg.max_series)
		want = c->cfg.max_series;
	for (; from < want; from++) {
		fault_in_series(c, from);
		/* release: its pages are in before a taker skips them */
		__atomic_store_n(&c->series_faulted_to, from + 1, __ATOMIC_RELEASE);
	}
}

bool tb_series_at_hand(tb_collector *c, uint32_t slot, uint16_t metric, tb_series_need *need)
{
	need->want = 0;
	need->waiting = false;
	if (TB_LIKELY(__atomic_load_n(&c->slots[slot].t.series_of[metric], __ATOMIC_ACQUIRE) != NULL))
		return true;
	pthread_mutex_lock(&c->series_lock);
	uint32_t n = c->nseries;
	if (c->slots[slot].t.series_of[metric] || n == c->cfg.max_series) {
		/* taken meanwhile; or none is left, which record() counts */
	} else if (n < __atomic_load_n(&c->series_ready, __ATOMIC_ACQUIRE)) {
		(void)new_series(c, slot, metric, NULL, UINT32_MAX, &need->want);
	} else {
		need->want = n + 1;
		need->waiting = true;
	}
	pthread_mutex_unlock(&c->series_lock);
	return !need->waiting;
}

/* Metrics are registered once and never removed: a metric seen READY is
 * remembered, so the hot loop reads no shared line for it again. The array
 * covers every 14-bit id; ids past the segment's capacity are never set. */
bool tb_collector_metric_ready(tb_collector *c, uint16_t metric)
{
	if (TB_LIKELY(__atomic_load_n(&c->metric_ready[metric], __ATOMIC_RELAXED)))
		return true;
	if (metric >= c->seg.layout.metric_capacity)
		return false;
	const tb_metric_entry *e = tb_seg_metric(&c->seg, metric);
	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != TB_METRIC_READY)
		return false;
	/* its name, to write back should the segment be cut (segguard.c); the
	 * entry is written once, before READY */
	if (c->metric_copy)
		memcpy(&c->metric_copy[metric], e, sizeof(*e));
	__atomic_store_n(&c->metric_ready[metric], 1, __ATOMIC_RELEASE);
	return true;
}

void tb_series_flush_fast(tb_collector *c, int bank, tb_metric_counts *counts)
{
	uint32_t n = __atomic_load_n(&c->nseries, __ATOMIC_ACQUIRE);
	for (uint32_t k = 0; k < n; k++) {
		tb_series *s = &c->series[k];
		tb_series_fast *fs = s->fast[bank];
		if (fs->events == 0)
			continue;
		counts[s->metric].events += fs->events;
		s->hist[bank].total += (int64_t)fs->events;
		fs->events = 0;
	}
}

/* The first count of the bucket of top bit e (with the sub-bucket mask's,
 * so e >= TB_SERIES_HALF_MAG) less the 1024 sub-buckets' shift, as the
 * drain's series_index finds it. */
static uint64_t bucket_first(unsigned e)
{
	return e < TB_SERIES_HALF_MAG ? 0 : ((uint64_t)e - TB_SERIES_HALF_MAG) << TB_SERIES_HALF_MAG;
}

_Static_assert(TB_SERIES_HALF_MAG + TB_SERIES_BUCKETS == 53 && TB_HIST_DEFAULT_HIGHEST < (INT64_C(1) << 53),
	       "tb_series_fast.seen: a byte for every top bit a value up to H can have");

/* The counts of a series bank that seen[b] (tb_series_fast) stands for,
 * [*from, *to): the upper half of sub-buckets from bucket_first, all of
 * them for b = 0. */
static void bucket_counts(const tb_hist *h, unsigned b, int32_t *from, int32_t *to)
{
	uint64_t first = bucket_first(b + TB_SERIES_HALF_MAG), bank = (uint64_t)1 << TB_SERIES_HALF_MAG;
	*from = (int32_t)(b == 0 ? first : first + bank);
	*to = (int32_t)(first + 2 * bank);
	if (*to > h->counts_len)
		*to = h->counts_len;
}

/* Whether any of the eight counts from c is not 0. */
static inline bool any_of_8(const int64_t *c)
{
	return (c[0] | c[1] | c[2] | c[3] | c[4] | c[5] | c[6] | c[7]) != 0;
}

/* A bucket's counts run from a multiple of 1024 to the next (bucket 0's
 * from 0 to 2048), and counts_len is a multiple of 1024: whole groups of
 * eight, which the scans below test at a time. */
_Static_assert(((size_t)1 << TB_SERIES_HALF_MAG) % 8 == 0, "buckets of whole groups of eight");

/* The first non-zero count in [from, to) above index 0 (value 0), or -1. */
static int32_t first_above_0(const int64_t *c, int32_t from, int32_t to)
{
	for (int32_t g = from; g < to; g += 8) {
		if (!any_of_8(c + g))
			continue;
		for (int32_t i = g > 0 ? g : 1; i < g + 8; i++)
			if (c[i])
				return i;
	}
	return -1;
}

/* The last non-zero count in [from, to), or -1. */
static int32_t last_nonzero(const int64_t *c, int32_t from, int32_t to)
{
	for (int32_t g = to - 8; g >= from; g -= 8) {
		if (!any_of_8(c + g))
			continue;
		for (int32_t i = g + 7; i >= g; i--)
			if (c[i])
				return i;
	}
	return -1;
}

static void settle_half(tb_series_fast *fs, tb_hist *h)
{
	int32_t from, to, i, b;
	/* the least non-zero value: a bucket whose counts are all of 0 gives none */
	for (b = 0; b < TB_SERIES_BUCKETS; b++) {
		if (!fs->seen[b])
			continue;
		bucket_counts(h, (unsigned)b, &from, &to);
		if ((i = first_above_0(h->counts, from, to)) >= 0) {
			int64_t v = tb_hist_value_at_index(h, i);
			if (h->min_raw == 0 || v < h->min_raw)
				h->min_raw = v;
			break;
		}
	}
	/* the greatest: the highest bucket has a count (a recorded 0 included),
	 * and its highest equivalent value bounds what it holds */
	for (b = TB_SERIES_BUCKETS - 1; b >= 0 && !fs->seen[b]; b--)
		;
	if (b >= 0) {
		bucket_counts(h, (unsigned)b, &from, &to);
		if ((i = last_nonzero(h->counts, from, to)) >= 0) {
			int64_t v = tb_hist_highest_equivalent(h, tb_hist_value_at_index(h, i));
			if (v > h->highest)
				v = h->highest;
			if (v > h->max_raw)
				h->max_raw = v;
		}
	}
	memset(fs->seen, 0, sizeof(fs->seen));
}

void tb_series_settle_bounds(tb_collector *c, int bank)
{
	uint32_t n = __atomic_load_n(&c->nseries, __ATOMIC_ACQUIRE);
	for (uint32_t k = 0; k < n; k++)
		settle_half(c->series[k].fast[bank], &c->series[k].hist[bank]);
}
