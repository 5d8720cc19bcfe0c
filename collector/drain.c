/* drain.c - following producer slots and draining their rings.
 *
 * Every byte a producer can write is untrusted here. The collector keeps its
 * own consumer index per ring and its own copy of the layout. It reads a
 * ring slot by slot from its own index while each event carries the lap bit
 * that index expects (seg_abi.h), at most a batch per pass, so no value a
 * producer writes decides how far it reads. The producer's position hint
 * (p_tail) is only compared against our index: an honest producer's is
 * within one ring of it, so one further off, or a ring header whose size or
 * mask is not the layout's, means the ring is corrupt; it is quarantined
 * (reported, never read again) and the other rings go on. Ring addresses and
 * masks come from the validated layout, never from the ring header.
 *
 * Slot life cycle, driven by housekeeping every 100 ms:
 *   LIVE, not followed      -> follow: take its consumer index (validated)
 *   LIVE, owner process gone -> treat as DETACHED
 *   DETACHED                 -> drain what is left, then hand the slot back FREE
 *   CLAIMED for too long by a dead process -> FREE
 *
 * Event times are the producers' CLOCK_MONOTONIC nanoseconds; the interval of
 * an event is that of its completion, mapped to wall-clock time with the
 * offset measured at start-up.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collector.h"

/* A process that claimed a slot and has not published it within this long
 * has died in tb_attach. */
#define CLAIM_TIMEOUT_NS 1000000000LL

static int64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tb_collector_now(const tb_collector *c)
{
	return mono_now() + c->clock_offset_ns;
}

static void quarantine(tb_collector *c, uint32_t i, const char *reason)
{
	tb_slot_follow *f = &c->slots[i];
	if (f->quarantined)
		return;
	f->quarantined = true;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	tb_slot *s = tb_seg_slot(&c->seg, i);
	__atomic_store_n(&s->state, TB_SLOT_QUARANTINED, __ATOMIC_RELEASE);
	fprintf(stderr, "tailbusd: ring %u (pid %d) quarantined: %s\n", i, (int)f->pid, reason);
}

/* Whether the slot's owner still runs. kill(pid, 0) says in a microsecond
 * whether the pid is gone; whether it is still the owner's, not reused, takes
 * its start time from /proc/<pid>/stat (10-500 us here, the drain stopped
 * meanwhile), so that is read only every OWNER_RECHECK'th look: a pid is
 * reused only after its owner died, and noticing that within a second is
 * soon enough. */
#define OWNER_RECHECK 10

/* Take the slot's owner as the producer wrote it (untrusted: used only to
 * see whether it still runs). */
static void take_owner(tb_slot_follow *f, const tb_slot *s)
{
	f->pid = s->pid;
	f->pid_start_time = s->pid_start_time;
	f->owner_looks = 0;
}

static bool owner_alive(tb_slot_follow *f)
{
	if (f->pid <= 0)
		return false;
	if (kill(f->pid, 0) < 0 && errno == ESRCH)
		return false;
	if (f->owner_looks++ % OWNER_RECHECK != 0)
		return true;
	uint64_t start = tb_proc_start_time(f->pid);
	return start != 0 && (f->pid_start_time == 0 || start == f->pid_start_time);
}

/* The producer's position hint is at most one ring ahead of our index (we
 * may have read past it, by at most one ring, too). Records the backlog it
 * shows in the high-water mark. */
static bool hint_in_range(tb_collector *c, tb_slot_follow *f, const tb_ring_header *ring, uint32_t *hint)
{
	uint32_t prod = __atomic_load_n(&ring->p_tail, __ATOMIC_ACQUIRE);
	uint32_t ahead = prod - f->cons, cap = c->seg.layout.ring_capacity;
	*hint = prod;
	if (ahead <= cap) {
		if (ahead > f->high_water)
			f->high_water = ahead;
		return true;
	}
	return -ahead <= cap;
}

/* Nothing but tb_ring_header_init writes the ring's size and mask. */
static bool header_intact(const tb_collector *c, const tb_ring_header *ring)
{
	return ring->size == c->seg.layout.ring_capacity &&
	       ring->mask == c->seg.layout.ring_capacity - 1;
}

static void follow(tb_collector *c, uint32_t i)
{
	tb_slot *s = tb_seg_slot(&c->seg, i);
	tb_slot_follow *f = &c->slots[i];
	tb_ring_header *ring = tb_seg_ring(&c->seg, i);
	f->followed = true;
	f->quarantined = false;
	f->generation = s->generation;
	take_owner(f, s);
	/* drops already reported (by us or a collector before us); untrusted */
	uint64_t dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
	uint64_t reported = __atomic_load_n(&s->dropped_reported, __ATOMIC_RELAXED);
	f->dropped_seen = reported <= dropped ? reported : dropped;
	f->cons = __atomic_load_n(&ring->c_head, __ATOMIC_ACQUIRE);
	f->folds_unsure = true; /* its lanes are read whole at the next close */
	uint32_t hint;
	if (!hint_in_range(c, f, ring, &hint))
		quarantine(c, i, "ring indices out of range at attach");
	else if (!header_intact(c, ring))
		quarantine(c, i, "ring header does not match the segment's layout");
}

/* Cold: the first event of (slot, metric) takes a series from the pool. */
static tb_series *new_series(tb_collector *c, uint32_t slot, uint16_t metric)
{
	tb_slot_follow *f = &c->slots[slot];
	if (c->nseries == c->cfg.max_series) {
		c->series_exhausted++;
		return NULL;
	}
	tb_series *s = &c->series[c->nseries++];
	s->slot = slot;
	s->metric = metric;
	f->t.series_of[metric] = s;
	for (int h = 0; h < 2; h++) {
		*s->fast[h] = (tb_series_fast){.limit = (uint64_t)TB_HIST_DEFAULT_HIGHEST + 1};
		/* within reach: tb_collector_open checks the pool */
		f->t.fast_of[h][tb_fast_entry(metric)] =
			(uint32_t)(((const char *)s->fast[h] - c->fast_none) / TB_FAST_OFFSET_UNIT);
	}
	return s;
}

/* a + b for event times, which come from producers: saturated, so a
 * timestamp near either end of the range is never undefined arithmetic */
static inline int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (TB_UNLIKELY(__builtin_add_overflow(a, b, &r)))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

tb_series *tb_collector_series(tb_collector *c, uint32_t slot, uint16_t metric)
{
	tb_series *s = c->slots[slot].t.series_of[metric];
	return s ? s : new_series(c, slot, metric);
}

static void record(tb_collector *c, uint32_t slot, uint16_t metric, int64_t latency,
		   int64_t completion_mono)
{
	int64_t completion = add_sat(completion_mono, c->clock_offset_ns);
	int half = c->cur;
	if (completion >= c->interval_start_ns + c->cfg.interval_ns) {
		half ^= 1;
	} else if (TB_UNLIKELY(completion < c->late_before_ns)) {
		half = c->open_half;
		c->counts[half][metric].late++;
		c->late_total++;
	}
	tb_metric_counts *mc = &c->counts[half][metric];
	if (TB_UNLIKELY(latency < 0)) {
		mc->negative++;
		latency = 0;
	}
	mc->events++;
	tb_series *s = tb_collector_series(c, slot, metric);
	if (TB_UNLIKELY(!s))
		return;
	tb_hist *h = &s->hist[half];
	if (TB_LIKELY(latency <= h->highest)) {
		tb_hist_record_in_range(h, latency);
	} else {
		tb_hist_record(h, latency); /* clamped to H and counted */
		mc->clamped++;
	}
}

/* Metrics are registered once and never removed: a metric seen READY is
 * remembered, so the hot loop reads no shared line for it again. The array
 * covers every 14-bit id; ids past the segment's capacity are never set. */
bool tb_collector_metric_ready(tb_collector *c, uint16_t metric)
{
	if (TB_LIKELY(c->metric_ready[metric]))
		return true;
	if (metric >= c->seg.layout.metric_capacity)
		return false;
	const tb_metric_entry *e = tb_seg_metric(&c->seg, metric);
	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != TB_METRIC_READY)
		return false;
	c->metric_ready[metric] = 1;
	return true;
}

static void joined(tb_collector *c, uint32_t slot, uint16_t metric, bool start, int rc,
		   int64_t latency, int64_t at)
{
	if (rc == TB_JOIN_MATCHED)
		record(c, slot, metric, latency, at);
	else if (rc == TB_JOIN_FULL && start) /* no room to wait for its other half */
		c->counts[c->open_half][metric].unmatched_start++;
	else if (rc == TB_JOIN_FULL)
		c->counts[c->open_half][metric].unmatched_end++;
}

static void decode(tb_collector *c, uint32_t slot, uint64_t w0, uint64_t w1, int64_t now_mono)
{
	unsigned kind = (unsigned)(w0 & TB_KIND_MASK);
	uint16_t metric = (uint16_t)((w0 >> TB_METRIC_SHIFT) & (TB_MAX_METRICS - 1));
	uint64_t field = w0 >> TB_FIELD_SHIFT;
	int64_t at = (int64_t)w1, latency = 0;
	int rc;
	if (!tb_collector_metric_ready(c, metric)) {
		c->slots[slot].bad_events++;
		return;
	}
	switch (kind) {
	case TB_EV_SPAN:
		/* the field is signed: negative, or TB_FIELD_INVALID, is counted */
		latency = (int64_t)w0 >> TB_FIELD_SHIFT;
		record(c, slot, metric, latency, add_sat(at, latency > 0 ? latency : 0));
		break;
	case TB_EV_START: /* a match completes at the parked END's time */
		rc = tb_join_start(&c->join, metric, field, at, now_mono, &latency);
		joined(c, slot, metric, true, rc, latency, add_sat(at, latency > 0 ? latency : 0));
		break;
	case TB_EV_END:
		rc = tb_join_end(&c->join, metric, field, at, now_mono, &latency);
		joined(c, slot, metric, false, rc, latency, at);
		break;
	default:
		c->slots[slot].bad_events++; /* MARK: reserved */
		break;
	}
}

/* The drain's fast path takes the common event without decode(): a SPAN of
 * a metric that already has a series on this ring, its duration in [0, H],
 * completing in the open half's interval at or after late_before_ns (so
 * neither late nor a later interval's). Outside a close that is the current
 * interval; during one, the next (the closing half takes nothing more), so
 * the drain keeps its speed while a close runs. It records exactly what
 * decode() would (test_collector checks that it does, in both); every other
 * event goes to decode(). What it needs is set once per visit of a ring. */
typedef struct fast_path {
	uint64_t from, span; /* completion, monotonic ns: from + [0, span) */
	const uint32_t *fast_of; /* the ring's table for the open half */
	char *none;              /* c->fast_none, which the table's offsets are from */
} fast_path;

static void fast_path_set(const tb_collector *c, const tb_slot_follow *f, fast_path *fp)
{
	int64_t end, from, to;
	fp->fast_of = f->t.fast_of[c->open_half];
	fp->none = (char *)c->fast_none;
	fp->from = 0;
	fp->span = 0; /* none */
	/* the open half's interval, [late_before_ns, its end), in wall-clock
	 * time (record()), less the offset record() adds; none in a test that
	 * wants decode() for all */
	if (!c->decode_only && !__builtin_add_overflow(c->late_before_ns, c->cfg.interval_ns, &end) &&
	    !__builtin_sub_overflow(c->late_before_ns, c->clock_offset_ns, &from) &&
	    !__builtin_sub_overflow(end, c->clock_offset_ns, &to)) {
		/* an interval that began before the clock's zero (a long one,
		 * soon after boot): every completion the clock can give is
		 * after its start, none late */
		if (from < 0)
			from = 0;
		if (from < to) {
			fp->from = (uint64_t)from;
			fp->span = (uint64_t)to - (uint64_t)from;
		}
	}
}

/* The fast path's table for a pass over the ring whose lap bit is `want`
 * (TB_FAST_ENTRIES in collector.h). */
static inline const uint32_t *fast_table(const fast_path *fp, uint64_t want)
{
	return fp->fast_of + (TB_LAP_BIT - want);
}

/* The fast record of an event's first word, by the table (fast_none: not
 * the fast path's). */
static inline tb_series_fast *fast_of_word(const fast_path *fp, const uint32_t *tab, uint64_t w0)
{
	return (tb_series_fast *)(fp->none + (size_t)tab[w0 & TB_FAST_INDEX_MASK] * TB_FAST_OFFSET_UNIT);
}

/* The first count of the bucket of top bit e (with the sub-bucket mask's,
 * so e >= TB_SERIES_HALF_MAG) less the 1024 sub-buckets' shift: one load
 * where computing it took a copy and a shift of e, and the offset folded
 * into an add (series_index). */
#define FIRST(e) ((e) < TB_SERIES_HALF_MAG ? 0 : ((uint64_t)(e) - TB_SERIES_HALF_MAG) << TB_SERIES_HALF_MAG)
#define FIRST4(e) FIRST(e), FIRST((e) + 1), FIRST((e) + 2), FIRST((e) + 3)
#define FIRST16(e) FIRST4(e), FIRST4((e) + 4), FIRST4((e) + 8), FIRST4((e) + 12)
static const uint64_t bucket_first[64] = {FIRST16(0), FIRST16(16), FIRST16(32), FIRST16(48)};
#undef FIRST16
#undef FIRST4
#undef FIRST

/* tb__hist_index for the series layout (TB_SERIES_*, collector.h), in
 * fewer steps: with e the top bit of (v | sub-bucket mask), v >> (e - half
 * magnitude) is (v << half magnitude) >> e, which cannot overflow for
 * v <= H < 2^53, and the bucket's place is bucket_first[e]. */
static inline size_t series_index(uint64_t v, uint64_t *bucket)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	/* GCC's bsr, 64 bits wide: from 63 ^ __builtin_clzll it makes the
	 * same bsr but as an int, which it then sign-extends on every event
	 * (clang does not, and has no such builtin) */
	uint64_t e = (uint64_t)__builtin_ia32_bsrdi((long long)(v | TB_SERIES_SUB_MASK));
#else
	uint64_t e = 63u ^ (unsigned)__builtin_clzll(v | TB_SERIES_SUB_MASK);
#endif
	*bucket = e;
	return ((v << TB_SERIES_HALF_MAG) >> e) + bucket_first[e];
}
_Static_assert(TB_SERIES_UNIT_MAG == 0 && TB_HIST_DEFAULT_HIGHEST < (INT64_C(1) << 53),
	       "series_index: unit magnitude 0, (v << half magnitude) in 64 bits");

/* The fast path for one event, into its fast record s (fast_none, whose
 * limit is 0, if not the fast path's by the table). False: nothing
 * recorded, the caller takes it one at a time.
 * What tb_hist_record_in_range would do, but for the counts into the
 * series' fast record, which tb_collector_fold_events adds to the histogram
 * and the per-metric count, and for the minimum and maximum: only the
 * value's bucket is noted, for tb_collector_settle_bounds. */
static inline bool fast_record(const fast_path *fp, tb_series_fast *s, uint64_t w0, uint64_t w1)
{
	int64_t latency = (int64_t)w0 >> TB_FIELD_SHIFT;
	uint64_t done = w1 + (uint64_t)latency;
	/* latency in [0, s->limit), i.e. [0, H] or none, and its completion in
	 * [from, from + span), each as one unsigned compare. A sum past
	 * INT64_MAX (which decode() saturates) wraps to at least 2^63 here:
	 * never in range, since 0 <= from < from + span <= INT64_MAX. */
	if (TB_LIKELY((uint64_t)latency < s->limit && done - fp->from < fp->span)) {
		uint64_t e;
		tb_fast_counts(s)[series_index((uint64_t)latency, &e)]++;
		s->events++;
		s->seen[e - TB_SERIES_HALF_MAG] = 1;
		return true;
	}
	return false;
}

/* One event by the fast path, if its entry in `tab` says it is one: its
 * first word loaded with acquire, then its second. */
static inline bool fast_event(const fast_path *fp, const uint32_t *tab, const tb_event *ev)
{
	uint64_t w0 = __atomic_load_n(&ev->w0, __ATOMIC_ACQUIRE);
	tb_series_fast *s = fast_of_word(fp, tab, w0);
	uint64_t w1 = __atomic_load_n(&ev->w1, __ATOMIC_RELAXED);
	return fast_record(fp, s, w0, w1);
}

_Static_assert(TB_RING_HEADER_SIZE % 64 == 0 && sizeof(tb_event) == 16,
	       "events start on a 64-byte line, four to a line");

/* Flush the lines of ring events [from, to) read to their end, from every
 * cache (evict.h): only whole lines, so never the one the producer is
 * writing. */
static void evict_lines(int how, const tb_event *events, uint32_t mask, uint32_t from, uint32_t to)
{
	for (uint32_t at = from & ~3u; (int32_t)(to - (at + 4)) >= 0; at += 4)
		tb_evict_line(how, &events[at & mask]);
}

/* Whether the ring holds `whole` events from our index: the last of them
 * written in this pass (the producer publishes in order), by one load. */
static bool holds(const tb_event *events, uint32_t mask, unsigned log2, uint32_t cons,
		  uint32_t whole)
{
	uint32_t last = cons + whole - 1;
	uint64_t w0 = __atomic_load_n(&events[last & mask].w0, __ATOMIC_RELAXED);
	return (w0 & TB_LAP_BIT) == tb_lap_bit(last, log2);
}

/* Take up to `limit` events from ring i. Returns how many. With
 * `whole_only`, a ring that does not hold a whole batch is left alone (but
 * for the load that tells) unless TB_COLLECTOR_PARTIAL_NS have passed since
 * it was last read short. */
static uint32_t drain_slot(tb_collector *c, uint32_t i, uint32_t limit, int64_t now_mono,
			   bool whole_only)
{
	tb_slot_follow *f = &c->slots[i];
	tb_ring_header *ring = tb_seg_ring(&c->seg, i);
	uint32_t hint;
	if (!hint_in_range(c, f, ring, &hint)) {
		quarantine(c, i, "producer index out of range (more events than the ring holds)");
		return 0;
	}
	const tb_event *events = tb_seg_events(&c->seg, i);
	uint32_t cap = c->seg.layout.ring_capacity, mask = cap - 1;
	unsigned log2 = tb_seg_ring_log2(&c->seg);
	uint32_t cons = f->cons, n = 0;
	if (whole_only) {
		uint32_t whole = limit < cap / 4 ? limit : cap / 4; /* never near full */
		if (whole > 1 && now_mono < f->partial_after_ns &&
		    !holds(events, mask, log2, cons, whole))
			return 0;
	}
	fast_path fp;
	fast_path_set(c, f, &fp);
	while (n < limit) {
		/* up to the end of the slot array, the lap bit to expect is one */
		uint32_t at = cons & mask, run = mask + 1 - at, k;
		if (run > limit - n)
			run = limit - n;
		const tb_event *ev = &events[at], *end = ev + run;
		uint64_t want = tb_lap_bit(cons, log2);
		const uint32_t *tab = fast_table(&fp, want);
		while (ev < end) {
			/* Four at a time while the fast path takes them; its table
			 * entry says per event that it is written in this pass and
			 * a SPAN. Any other event goes one at a time below, in ring
			 * order (START and END, whose joins depend on it, too). */
			bool refused = false; /* by the fast path, the event at ev */
			for (; end - ev >= 4; ev += 4) {
				unsigned j = 0;
#pragma GCC unroll 4
				for (; j < 4; j++)
					if (TB_UNLIKELY(!fast_event(&fp, tab, &ev[j])))
						break;
				if (TB_UNLIKELY(j < 4)) {
					ev += j;
					refused = true;
					break;
				}
			}
			if (ev == end)
				break;
			/* one event: one the fast path refused (decode() records it
			 * as the fast path would have, had it been written since),
			 * or of the last three of a run */
			uint64_t w0 = __atomic_load_n(&ev->w0, __ATOMIC_ACQUIRE);
			if ((w0 & TB_LAP_BIT) != want)
				break; /* not written yet in this pass */
			uint64_t w1 = __atomic_load_n(&ev->w1, __ATOMIC_RELAXED);
			if (refused || !fast_record(&fp, fast_of_word(&fp, tab, w0), w0, w1))
				decode(c, i, w0, w1, now_mono);
			ev++;
		}
		k = (uint32_t)(ev - &events[at]);
		cons += k;
		n += k;
		if (k < run) {
			/* Not written, by its lap bit: the end of what the producer
			 * has written, unless its hint (loaded before, with acquire)
			 * shows it past this index. Then the event was written with
			 * its lap bit spoiled (by a metric word not from tb_metric(),
			 * say), and waiting for it would stall the ring for good. It
			 * is counted and skipped, and its lap bit set to what it
			 * would be had it been written, so that one pass later it
			 * reads as not written again: the slot is ours until c_head
			 * passes it. */
			if ((int32_t)(hint - cons) <= 0)
				break;
			tb_event *bad = (tb_event *)&events[cons & mask];
			uint64_t w0 = __atomic_load_n(&bad->w0, __ATOMIC_RELAXED);
			__atomic_store_n(&bad->w0, (w0 & ~TB_LAP_BIT) | tb_lap_bit(cons, log2),
					 __ATOMIC_RELAXED);
			f->bad_events++;
			cons++;
			n++;
		}
	}
	if (n < limit) /* caught up: the next short read not before */
		f->partial_after_ns = now_mono + TB_COLLECTOR_PARTIAL_NS;
	if (n == 0)
		return 0; /* nothing taken: leave the line the producer reads untouched */
	if (n > f->high_water)
		f->high_water = n;
	if (c->evict != TB_EVICT_NONE)
		evict_lines(c->evict, events, mask, f->cons, cons);
	f->cons = cons;
	f->interval_events += n;
	/* release: our reads of the slots happen before the producer may reuse them */
	__atomic_store_n(&ring->c_head, cons, __ATOMIC_RELEASE);
	return n;
}

static uint64_t pass(tb_collector *c, bool whole_only)
{
	uint64_t total = 0;
	bool full = false;
	int64_t now = mono_now();
	if (c->last_pass_ns && now - c->last_pass_ns > c->longest_gap_ns)
		c->longest_gap_ns = now - c->last_pass_ns;
	c->last_pass_ns = now;
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		/* a new producer is followed at once (one load per idle slot), not at
		 * the next housekeeping: a producer that floods as soon as it
		 * attaches must not fill its ring before anyone reads it */
		if (!f->followed &&
		    __atomic_load_n(&tb_seg_slot(&c->seg, i)->state, __ATOMIC_ACQUIRE) == TB_SLOT_LIVE)
			follow(c, i);
		if (f->followed && !f->quarantined) {
			uint32_t n = drain_slot(c, i, TB_COLLECTOR_BATCH, now, whole_only);
			total += n;
			full |= n == TB_COLLECTOR_BATCH;
		}
	}
	c->last_pass_full = full;
	return total;
}

uint64_t tb_collector_drain_pass(tb_collector *c)
{
	return pass(c, false);
}

uint64_t tb_collector_poll_pass(tb_collector *c)
{
	return pass(c, true);
}

uint64_t tb_collector_drain_all(tb_collector *c)
{
	uint32_t passes = 2 * (c->seg.layout.ring_capacity / TB_COLLECTOR_BATCH + 1);
	uint64_t total = 0, n;
	while (passes-- > 0 && (n = tb_collector_drain_pass(c)) > 0)
		total += n;
	tb_collector_fold_events(c);
	return total;
}

uint64_t tb_collector_catch_up(tb_collector *c)
{
	uint32_t passes = 2 * (c->seg.layout.ring_capacity / TB_COLLECTOR_BATCH + 1);
	uint64_t total = 0;
	do
		total += tb_collector_drain_pass(c);
	while (c->last_pass_full && --passes > 0);
	return total;
}

void tb_collector_fold_events(tb_collector *c)
{
	for (uint32_t k = 0; k < c->nseries; k++) {
		tb_series *s = &c->series[k];
		for (int h = 0; h < 2; h++) {
			tb_series_fast *fs = s->fast[h];
			tb_hist *hist = &s->hist[h];
			if (fs->events == 0)
				continue;
			c->counts[h][s->metric].events += fs->events;
			hist->total += (int64_t)fs->events;
			fs->events = 0;
		}
	}
}

_Static_assert(TB_SERIES_HALF_MAG + TB_SERIES_BUCKETS == 53 && TB_HIST_DEFAULT_HIGHEST < (INT64_C(1) << 53),
	       "tb_series_fast.seen: a byte for every top bit a value up to H can have");

/* The counts of a series half that seen[b] (tb_series_fast) stands for,
 * [*from, *to): the upper half of sub-buckets from bucket_first, all of
 * them for b = 0 (series_index). */
static void bucket_counts(const tb_hist *h, unsigned b, int32_t *from, int32_t *to)
{
	uint64_t first = bucket_first[b + TB_SERIES_HALF_MAG], half = (uint64_t)1 << TB_SERIES_HALF_MAG;
	*from = (int32_t)(b == 0 ? first : first + half);
	*to = (int32_t)(first + 2 * half);
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

void tb_collector_settle_bounds(tb_collector *c, int half)
{
	for (uint32_t k = 0; k < c->nseries; k++)
		settle_half(c->series[k].fast[half], &c->series[k].hist[half]);
}

static void release_slot(tb_collector *c, uint32_t i)
{
	tb_slot *s = tb_seg_slot(&c->seg, i);
	tb_slot_follow *f = &c->slots[i];
	if (f->followed && !f->quarantined) {
		/* what is left: at most a ring, since the owner is gone (bounded
		 * anyway, against one that goes on writing) */
		uint64_t taken = 0, most = 2 * (uint64_t)c->seg.layout.ring_capacity;
		uint32_t n;
		while (taken < most && (n = drain_slot(c, i, TB_COLLECTOR_BATCH, mono_now(), false)) > 0)
			taken += n;
	}
	/* the next owner starts from a ring in order: indices where reading
	 * stopped (or 0 if it is corrupt), hint with them, and every slot
	 * marked not written, whatever the last owner left in them */
	tb_seg_ring_reset(&c->seg, i, f->followed && !f->quarantined ? f->cons : 0);
	/* and its fold lanes, once what its owner folded is taken (not from
	 * a quarantined ring, as nothing else is) */
	tb_collector_take_slot_folds(c, i, c->open_half, true);
	tb_seg_folds_reset(&c->seg, i);
	/* keep what it dropped for the sidecar of this interval */
	if (f->followed)
		f->pending_drops += tb_collector_slot_drops(c, i);
	f->followed = false;
	f->quarantined = false;
	s->pid = 0;
	s->tid = 0;
	s->pid_start_time = 0;
	__atomic_store_n(&s->state, TB_SLOT_FREE, __ATOMIC_RELEASE);
}

static void housekeep_slot(tb_collector *c, uint32_t i, int64_t now)
{
	tb_slot *s = tb_seg_slot(&c->seg, i);
	tb_slot_follow *f = &c->slots[i];
	uint32_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	switch (state) {
	case TB_SLOT_LIVE:
		if (!f->followed || f->generation != s->generation)
			follow(c, i);
		else if (!owner_alive(f))
			release_slot(c, i);
		else if (!f->quarantined && !header_intact(c, tb_seg_ring(&c->seg, i)))
			quarantine(c, i, "ring header does not match the segment's layout");
		break;
	case TB_SLOT_DETACHED:
		if (!f->followed)
			follow(c, i);
		release_slot(c, i);
		break;
	case TB_SLOT_CLAIMED:
		if ((int64_t)(now - (int64_t)s->attached_ns) > CLAIM_TIMEOUT_NS && s->attached_ns &&
		    tb_proc_start_time(s->pid) == 0)
			release_slot(c, i);
		break;
	case TB_SLOT_QUARANTINED:
		if (!f->followed && !f->pid) {
			/* quarantined before this collector started: learn whose it
			 * is (untrusted, used only to see whether it still runs) */
			take_owner(f, s);
			if (f->pid <= 0) /* no owner to wait for */
				f->pid = -1;
		}
		if (f->pid && !owner_alive(f)) {
			f->quarantined = true;
			release_slot(c, i);
		}
		break;
	default:
		break;
	}
}

static void expired(void *ctx, uint16_t metric, bool was_start)
{
	tb_collector *c = ctx;
	if (metric >= c->seg.layout.metric_capacity)
		return;
	if (was_start)
		c->counts[c->open_half][metric].unmatched_start++;
	else
		c->counts[c->open_half][metric].unmatched_end++;
}

void tb_collector_housekeep(tb_collector *c, int64_t now)
{
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++)
		housekeep_slot(c, i, now);
	tb_join_expire(&c->join, now, expired, c);
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	__atomic_store_n(&h->collector_heartbeat_ns, now, __ATOMIC_RELEASE);
}

void tb_collector_expire_all(tb_collector *c)
{
	/* a "now" past every parked half's deadline */
	tb_join_expire(&c->join, INT64_MAX - c->join.timeout_ns, expired, c);
}
