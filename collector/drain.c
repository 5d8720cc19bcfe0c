/* drain.c - a drain thread: reading its rings, counting into series banks.
 *
 * A drain thread (tb_drainer) holds the rings the run loop assigned to it
 * and reads each from the collector's own consumer index, slot by slot,
 * while each event carries the lap bit that index expects (seg_abi.h), at
 * most a batch a visit, so no value a producer writes decides how far it
 * reads. Each event is counted into the histogram of its (slot, metric)
 * series, in the bank of the interval of its completion time: the thread's
 * current interval, or the next one; an event that completed before the
 * current interval began is late and counted in the current one.
 *
 * A ring changes hands at a pass boundary: the run loop writes the thread
 * it wants in `want`; the holder sees it at its next visit, stops reading
 * and stores `holder` = none with release (everything it wrote to the
 * follow state, our consumer index first, happens before); the wanted
 * thread takes it with an acquire compare-and-swap from none. So one thread
 * at a time reads a ring, and the next goes on from the index where the
 * last stopped: no event is lost or counted twice.
 *
 * The thread also carries out the run loop's requests for its slots
 * (release a slot whose owner is gone, follow one again). Event times are the producers'
 * CLOCK_MONOTONIC nanoseconds, mapped to wall-clock time with the offset
 * measured at start-up.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "../lib/slot_word.h"

static int64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t thread_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A number for the calling thread, never another's, even one that has
 * ended (a pthread_t is reused as soon as its thread is joined). */
static uint64_t this_thread(void)
{
	static uint64_t threads;
	static __thread uint64_t mine;
	if (!mine)
		mine = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
	return mine;
}

/* The thread's CPU time at `wall`, for the next pause's figure. */
static void mark_cpu(tb_drainer *d, int64_t wall)
{
	d->cpu_read_ns = thread_cpu_now();
	d->cpu_read_wall_ns = wall;
	d->cpu_reader = this_thread();
}

int tb_drainer_init(tb_drainer *d, tb_collector *c, uint32_t id, int cpu)
{
	uint32_t metrics = c->seg.layout.metric_capacity;
	memset(d, 0, sizeof(*d));
	d->c = c;
	d->id = id;
	d->cpu = cpu;
	d->counts[0] = calloc(metrics, sizeof(tb_metric_counts));
	d->counts[1] = calloc(metrics, sizeof(tb_metric_counts));
	d->fold_grew = malloc(TB_FOLD_COUNTS * sizeof(uint64_t));
	d->held = calloc(c->seg.layout.slot_count, sizeof(uint32_t));
	d->recheck = 1; /* the first pass looks at every slot */
	if (!d->counts[0] || !d->counts[1] || !d->fold_grew || !d->held)
		return -ENOMEM;
	return 0;
}

void tb_drainer_free(tb_drainer *d)
{
	free(d->counts[0]);
	free(d->counts[1]);
	free(d->fold_grew);
	free(d->held);
}

void tb_drainer_set_open(tb_drainer *d)
{
	d->open_bank = d->cur;
	d->late_before_ns = d->interval_start_ns;
}

/* Whether the bank after the current one is free: the closer has given
 * back the interval before the current one, which it held. */
static inline bool next_free(const tb_drainer *d)
{
	return __atomic_load_n(&d->c->freed_start_ns, __ATOMIC_ACQUIRE) >=
	       d->interval_start_ns - d->c->cfg.interval_ns;
}

bool tb_drainer_switch(tb_drainer *d, int64_t now_wall_ns, bool force)
{
	const tb_collector *c = d->c;
	if (!force && now_wall_ns < d->interval_start_ns + c->cfg.interval_ns + c->cfg.grace_ns)
		return false;
	if (!next_free(d))
		return false; /* the closer is behind: stay, counting what comes as ahead */
	d->cur ^= 1;
	d->interval_start_ns += c->cfg.interval_ns;
	tb_drainer_set_open(d);
	/* release: every count of the interval before happens before it */
	__atomic_store_n(&d->acked_start_ns, d->interval_start_ns, __ATOMIC_RELEASE);
	return true;
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

/* Record an event (with `partner`: a START/END pair, the partner of
 * which waited in the join table) into the bank of its completion. */
static void record(tb_drainer *d, uint32_t slot, uint16_t metric, int64_t latency,
		   int64_t completion_mono, bool partner)
{
	tb_collector *c = d->c;
	int64_t completion = add_sat(completion_mono, c->clock_offset_ns);
	int bank = d->cur;
	bool ahead = false;
	if (completion >= d->interval_start_ns + c->cfg.interval_ns) {
		if (TB_LIKELY(next_free(d))) {
			bank ^= 1;
			/* the entry is accounted for by the next interval
			 * (drain_slot counts every entry into the current one) */
			c->slots[slot].into[d->cur]--;
			c->slots[slot].into[bank]++;
			/* past the next one too: filed there, and said so (a
			 * producer's clock ahead, or a made-up time) */
			ahead = completion - d->interval_start_ns >= 2 * c->cfg.interval_ns;
		} else
			ahead = true;
	} else if (TB_UNLIKELY(completion < d->late_before_ns)) {
		bank = d->open_bank;
		d->counts[bank][metric].late++;
		d->late_total++;
	}
	d->join_adj[bank] += partner; /* the waiting event leaves the table here */
	tb_metric_counts *mc = &d->counts[bank][metric];
	mc->ahead += ahead;
	if (TB_UNLIKELY(latency < 0)) {
		mc->negative++;
		latency = 0;
	}
	mc->events++;
	tb_series *s = tb_collector_series(c, slot, metric, &d->series_exhausted);
	if (TB_UNLIKELY(!s))
		return;
	tb_hist *h = &s->hist[bank];
	if (TB_LIKELY(latency <= h->highest)) {
		tb_hist_record_in_range(h, latency);
	} else {
		tb_hist_record(h, latency); /* clamped to H and counted */
		mc->clamped++;
	}
}

static void count_join(tb_drainer *d, uint32_t slot, uint16_t metric, bool start, int rc,
		   int64_t latency, int64_t at)
{
	if (rc == TB_JOIN_MATCHED)
		record(d, slot, metric, latency, at, true);
	else if (rc == TB_JOIN_PARKED) /* taken, accounted nowhere until it leaves */
		d->join_adj[d->cur]--;
	else if (rc == TB_JOIN_FULL || rc == TB_JOIN_REPLACED) {
		/* FULL: no room to wait for its partner. REPLACED: this one waits
		 * in the place of the earlier one of its kind and sequence
		 * number, which leaves unmatched (the parked count is as before) */
		if (start)
			d->counts[d->open_bank][metric].unmatched_start++;
		else
			d->counts[d->open_bank][metric].unmatched_end++;
	}
}

/* Ask the keeper for what `need` says; a wait it counts is this thread's
 * too, for its sidecar row (the closer takes the count with an exchange). */
static void ask_keeper(tb_drainer *d, const tb_series_need *need)
{
	if (tb_series_ask(d->c, need->want, need->waiting))
		__atomic_add_fetch(&d->stalls.series_waits, 1, __ATOMIC_RELAXED);
}

/* A START (`start`) or END into the join table. False, the table as it
 * was: the event would match, and so record into its ring's series at
 * once, but a thread that waits for series memory found none faulted in
 * for it (one that only parks takes no series). */
static bool join_event(tb_drainer *d, uint32_t slot, uint16_t metric, bool start, uint64_t seq,
		       int64_t at, int64_t now_mono, int *rc, int64_t *latency)
{
	tb_collector *c = d->c;
	tb_series_need need = {0};
	pthread_mutex_lock(&c->join_lock);
	/* under the table's lock, so that the match found is the one made */
	bool go = !d->series_wait || !tb_join_would_match(&c->join, start, metric, seq) ||
		  tb_series_at_hand(c, slot, metric, &need);
	if (go)
		*rc = start ? tb_join_start(&c->join, metric, seq, at, now_mono, latency)
			    : tb_join_end(&c->join, metric, seq, at, now_mono, latency);
	pthread_mutex_unlock(&c->join_lock);
	ask_keeper(d, &need); /* the keeper woken outside the lock */
	return go;
}

/* One event, taken whole; or, false, left in its ring untouched: a
 * thread that waits for series memory (series_wait) found none faulted in
 * for a new (slot, metric) pair (keeper.c). */
static bool record_slow(tb_drainer *d, uint32_t slot, uint64_t w0, uint64_t w1, int64_t now_mono)
{
	tb_collector *c = d->c;
	unsigned kind = (unsigned)(w0 & TB_KIND_MASK);
	uint16_t metric = (uint16_t)((w0 >> TB_METRIC_SHIFT) & (TB_MAX_METRICS - 1));
	uint64_t field = w0 >> TB_FIELD_SHIFT;
	int64_t at = (int64_t)w1, latency = 0;
	int rc;
	if (!tb_collector_metric_ready(c, metric)) {
		c->slots[slot].tally[d->cur].bad_events++;
		return true;
	}
	tb_series_need need;
	switch (kind) {
	case TB_EV_SPAN:
		/* before any count sees it */
		if (d->series_wait) {
			bool go = tb_series_at_hand(c, slot, metric, &need);
			ask_keeper(d, &need);
			if (!go)
				return false;
		}
		/* the field is signed: negative, or TB_FIELD_INVALID, is counted */
		latency = (int64_t)w0 >> TB_FIELD_SHIFT;
		record(d, slot, metric, latency, add_sat(at, latency > 0 ? latency : 0), false);
		break;
	case TB_EV_START: /* a match completes at the parked END's time */
		if (!join_event(d, slot, metric, true, field, at, now_mono, &rc, &latency))
			return false;
		count_join(d, slot, metric, true, rc, latency, add_sat(at, latency > 0 ? latency : 0));
		break;
	case TB_EV_END:
		if (!join_event(d, slot, metric, false, field, at, now_mono, &rc, &latency))
			return false;
		count_join(d, slot, metric, false, rc, latency, at);
		break;
	default:
		c->slots[slot].tally[d->cur].bad_events++; /* MARK: reserved */
		break;
	}
	return true;
}

/* The drain's fast path takes the common event without record_slow(): a SPAN of
 * a metric that already has a series on this ring, its duration in [0, H],
 * completing in the current interval at or after its start (so neither
 * late nor a later interval's). It records exactly what record_slow() would
 * (test_collector checks that it does); every other event goes to
 * record_slow(). What it needs is set once per visit of a ring. */
typedef struct fast_path {
	uint64_t from, span; /* completion, monotonic ns: from + [0, span) */
	const uint32_t *fast_of; /* the ring's table for the current bank */
	char *none;              /* c->fast_discard, which the table's offsets are from */
} fast_path;

static void fast_path_set(const tb_drainer *d, const tb_slot_follow *f, fast_path *fp)
{
	const tb_collector *c = d->c;
	int64_t end, from, to;
	fp->fast_of = f->t.fast_of[d->open_bank];
	fp->none = (char *)c->fast_discard;
	fp->from = 0;
	fp->span = 0; /* none */
	/* the current interval, [late_before_ns, its end), in wall-clock time
	 * (record()), less the offset record() adds; none in a test that wants
	 * record_slow() for all */
	if (!c->decode_only && !__builtin_add_overflow(d->late_before_ns, c->cfg.interval_ns, &end) &&
	    !__builtin_sub_overflow(d->late_before_ns, c->clock_offset_ns, &from) &&
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

/* The fast record of an event's first word, by the table (fast_discard: not
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
 * fewer steps: with e the top bit of (v | sub-bucket mask), v >> (e - bank
 * magnitude) is (v << bank magnitude) >> e, which cannot overflow for
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
	       "series_index: unit magnitude 0, (v << bank magnitude) in 64 bits");

/* The fast path for one event, into its fast record s (fast_discard, whose
 * limit is 0, if not the fast path's by the table). False: nothing
 * recorded, the caller takes it one at a time.
 * What tb_hist_record_in_range would do, but for the counts into the
 * series' fast record, which tb_collector_flush_fast adds to the histogram
 * and the per-metric count, and for the minimum and maximum: only the
 * value's bucket is noted, for tb_series_settle_bounds. */
static inline bool fast_record(const fast_path *fp, tb_series_fast *s, uint64_t w0, uint64_t w1)
{
	int64_t latency = (int64_t)w0 >> TB_FIELD_SHIFT;
	uint64_t done = w1 + (uint64_t)latency;
	/* latency in [0, s->limit), i.e. [0, H] or none, and its completion in
	 * [from, from + span), each as one unsigned compare. A sum past
	 * INT64_MAX (which record_slow() saturates) wraps to at least 2^63 here:
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
static bool ring_has_batch(const tb_event *events, uint32_t mask, unsigned log2, uint32_t cons,
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
static uint32_t drain_slot(tb_drainer *d, uint32_t i, uint32_t limit, int64_t now_mono,
			   bool whole_only)
{
	tb_collector *c = d->c;
	tb_slot_follow *f = &c->slots[i];
	tb_ring_header *ring = tb_seg_ring(&c->seg, i);
	uint32_t hint, ahead;
	if (!tb_slots_hint_in_range(c, f, i, &hint, &ahead)) {
		tb_slots_quarantine(c, i, "producer index out of range (more events than the ring holds)");
		return 0;
	}
	tb_ring_tally *tally = &f->tally[d->cur];
	if (ahead > tally->high_water)
		tally->high_water = ahead;
	const tb_event *events = tb_seg_events(&c->seg, i);
	uint32_t cap = c->seg.layout.ring_capacity, mask = cap - 1;
	unsigned log2 = tb_seg_ring_log2(&c->seg);
	uint32_t cons = f->cons, n = 0;
	bool waits = false; /* for series memory: the event at cons stays */
	if (whole_only) {
		uint32_t whole = limit < cap / 4 ? limit : cap / 4; /* never near full */
		if (whole > 1 && now_mono < f->partial_after_ns &&
		    !ring_has_batch(events, mask, log2, cons, whole))
			return 0;
	}
	fast_path fp;
	fast_path_set(d, f, &fp);
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
			/* one event: one the fast path refused (record_slow() records it
			 * as the fast path would have, had it been written since),
			 * or of the last three of a run */
			uint64_t w0 = __atomic_load_n(&ev->w0, __ATOMIC_ACQUIRE);
			if ((w0 & TB_LAP_BIT) != want)
				break; /* not written yet in this pass */
			uint64_t w1 = __atomic_load_n(&ev->w1, __ATOMIC_RELAXED);
			if ((refused || !fast_record(&fp, fast_of_word(&fp, tab, w0), w0, w1)) &&
			    TB_UNLIKELY(!record_slow(d, i, w0, w1, now_mono))) {
				waits = true;
				break;
			}
			ev++;
		}
		k = (uint32_t)(ev - &events[at]);
		cons += k;
		n += k;
		if (waits) {
			d->left_waiting = true;
			break; /* read again on a later pass */
		}
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
			tally->bad_events++;
			cons++;
			n++;
		}
	}
	/* caught up: the next short read not before; but a ring whose event
	 * waits for series memory is read again at the next pass */
	if (n < limit && !waits)
		f->partial_after_ns = now_mono + TB_COLLECTOR_PARTIAL_NS;
	if (n == 0)
		return 0; /* nothing taken: leave the line the producer reads untouched */
	if (n > tally->high_water)
		tally->high_water = n;
	if (c->evict != TB_EVICT_NONE)
		evict_lines(c->evict, events, mask, f->cons, cons);
	f->cons = cons;
	tally->events += n;
	f->into[d->cur] += n;
	__atomic_store_n(&f->taken_total, f->taken_total + n, __ATOMIC_RELAXED);
	/* release: our reads of the slots happen before the producer may reuse them */
	__atomic_store_n(&ring->c_head, cons, __ATOMIC_RELEASE);
	return n;
}

/* Read what ring i holds, at most twice a ring (against an owner that
 * goes on writing); true if an event was left waiting for series memory
 * (series_wait). */
static bool drain_ring(tb_drainer *d, uint32_t i)
{
	uint64_t taken = 0, most = 2 * (uint64_t)d->c->seg.layout.ring_capacity;
	uint32_t n;
	d->left_waiting = false;
	while (taken < most && (n = drain_slot(d, i, TB_COLLECTOR_BATCH, mono_now(), false)) > 0)
		taken += n;
	return d->left_waiting;
}

/* Hand slot i back to producers: what its ring holds is drained first
 * (drain_ring), its fold lanes taken, its drops kept for the sidecar of
 * this interval. */
static void release_slot(tb_drainer *d, uint32_t i)
{
	tb_collector *c = d->c;
	tb_slot *s = tb_seg_slot(&c->seg, i);
	tb_slot_follow *f = &c->slots[i];
	/* not when the slot has moved on since it was judged: a new claim
	 * (followed at a later look), a stuck claim that published after all */
	tb_slot_word judged = {.w = f->release_judged};
	if (!tb_slot_release_begin(s, judged.w))
		return;
	/* a claim taken back is held DETACHED now, and was never published */
	uint32_t state = judged.f.state == TB_SLOT_CLAIMED ? TB_SLOT_CLAIMED
							   : __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (state == TB_SLOT_QUARANTINED && !f->followed)
		f->quarantined = true; /* quarantined before us: nothing of it is read */
	else if (state == TB_SLOT_DETACHED && !f->followed)
		tb_slots_follow(c, i); /* came and went between two passes: its events are read */
	if (f->followed && !f->quarantined) {
		/* every event is read before the ring is reset: none waits for
		 * series memory here (a series taken before the keeper faulted it
		 * in is counted) */
		bool wait = d->series_wait;
		d->series_wait = false;
		(void)drain_ring(d, i);
		d->series_wait = wait;
	}
	/* the next owner starts from a ring in order: indices where reading
	 * stopped (or 0 if it is corrupt), hint with them, and every slot
	 * marked not written, whatever the last owner left in them */
	uint32_t at = f->followed && !f->quarantined ? f->cons : 0;
	tb_seg_ring_reset(&c->seg, i, at);
	pthread_mutex_lock(&c->slot_lock);
	tb_accounts_moved(c, i, at);
	/* its fold lanes, once what its owner folded is taken (not from a
	 * quarantined ring, as nothing else is) */
	tb_folds_take_slot(c, i, d->open_bank, true, d->counts[d->open_bank], d->fold_grew,
			   &d->series_exhausted, d->series_wait);
	tb_seg_folds_reset(&c->seg, i);
	if (f->followed) /* what it dropped, for the sidecar of this interval */
		f->pending_drops += tb_slots_drops(c, i);
	__atomic_store_n(&f->followed, false, __ATOMIC_RELEASE);
	f->quarantined = false;
	pthread_mutex_unlock(&c->slot_lock);
	s->pid = 0;
	s->tid = 0;
	s->pid_start_time = 0;
	s->pid_ns = 0;
	s->attached_ns = 0; /* the next claim is judged from its own (slots.c) */
	/* a new generation: a claim taken back here cannot publish after all */
	tb_slot_free(s);
}

/* Whether this thread holds slot i for this pass: it keeps it while it is
 * wanted here, hands it over when it is wanted elsewhere, and takes it
 * when it is wanted here and nobody holds it. */
static bool take_or_hand_over(tb_drainer *d, tb_slot_follow *f)
{
	uint32_t want = __atomic_load_n(&f->want, __ATOMIC_RELAXED);
	uint32_t holder = __atomic_load_n(&f->holder, __ATOMIC_ACQUIRE);
	if (holder == d->id) {
		if (TB_LIKELY(want == d->id))
			return true;
		/* release: our consumer index and every count happen before
		 * the next holder's reads */
		__atomic_store_n(&f->holder, TB_NO_DRAINER, __ATOMIC_RELEASE);
		return false;
	}
	if (want != d->id || holder != TB_NO_DRAINER)
		return false;
	uint32_t none = TB_NO_DRAINER;
	return __atomic_compare_exchange_n(&f->holder, &none, d->id, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* Before a release: what ring i holds is read as on a pass, waiting for
 * series memory like one (release_slot reads the rest, if its owner wrote
 * on, without waiting), and its fold lanes' metrics have their series.
 * False if an event or a lane is left waiting: the release is tried
 * again at the next pass. */
static bool drained_for_release(tb_drainer *d, uint32_t i)
{
	tb_collector *c = d->c;
	tb_slot_follow *f = &c->slots[i];
	if (!d->series_wait)
		return true;
	/* came and went between two passes: followed now, as release_slot
	 * would (a DETACHED slot is written by nobody until it is freed) */
	if (!f->followed &&
	    __atomic_load_n(&tb_seg_slot(&c->seg, i)->state, __ATOMIC_ACQUIRE) == TB_SLOT_DETACHED)
		tb_slots_follow(c, i);
	if (!f->followed || f->quarantined)
		return true;
	if (drain_ring(d, i))
		return false;
	/* the fold lanes, taken at the release, record into series too */
	tb_series_need need;
	pthread_mutex_lock(&c->slot_lock); /* the lanes' taken counts: the closer's too */
	bool at_hand = tb_folds_series_at_hand(c, i, &need);
	pthread_mutex_unlock(&c->slot_lock);
	ask_keeper(d, &need);
	return at_hand;
}

/* What the run loop asked of slot i (slots.c). */
static void do_request(tb_drainer *d, uint32_t i, uint32_t what)
{
	tb_slot_follow *f = &d->c->slots[i];
	if (what == TB_RELEASE_FREE && !drained_for_release(d, i)) {
		__atomic_store_n(&d->recheck, 1, __ATOMIC_RELAXED); /* asked again next pass */
		return;
	}
	if (what == TB_RELEASE_FREE)
		release_slot(d, i);
	else if (what == TB_RELEASE_REFOLLOW)
		tb_slots_follow(d->c, i);
	__atomic_store_n(&f->release, TB_RELEASE_NONE, __ATOMIC_RELEASE);
}

/* The longest pass and gaps (tb_drain_stalls): a maximum kept with relaxed
 * atomics, which the closer exchanges for 0. */
static inline void keep_most(int64_t *at, int64_t v)
{
	if (v > __atomic_load_n(at, __ATOMIC_RELAXED))
		__atomic_store_n(at, v, __ATOMIC_RELAXED);
}

/* A read of the clock between passes: the step from the read before it,
 * where only constant work ran since (step_from_ns set), is the machine's
 * if it is TB_DRAIN_MACHINE_STEP_NS or longer (collector.h). */
static inline int64_t step_read(tb_drainer *d)
{
	int64_t now = mono_now();
	if (d->step_from_ns && now - d->step_from_ns >= TB_DRAIN_MACHINE_STEP_NS)
		d->machine_ns += now - d->step_from_ns;
	d->step_from_ns = now;
	return now;
}

static void note_gap(tb_drainer *d, int64_t now)
{
	if (!d->last_pass_ns)
		return;
	keep_most(&d->stalls.longest_gap_ns, now - d->last_pass_ns);
	int64_t pause = now - d->pass_end_ns, self = pause;
	if (pause >= TB_DRAIN_PAUSE_READ_NS) {
		/* a CPU time read by another thread (passes handed over at
		 * stop, or made by hand) says nothing of this one's: the pause
		 * is then taken whole */
		bool same = d->cpu_read_wall_ns && d->cpu_reader == this_thread();
		int64_t was_cpu = d->cpu_read_ns, was_wall = d->cpu_read_wall_ns;
		mark_cpu(d, now);
		if (same) {
			int64_t away = (now - was_wall) - (d->cpu_read_ns - was_cpu);
			int64_t not_ours = away > d->machine_ns ? away : d->machine_ns;
			self = not_ours <= 0 ? pause : not_ours < pause ? pause - not_ours : 0;
		}
	}
	d->machine_ns = 0;
	keep_most(&d->stalls.longest_self_pause_ns, self);
}

/* The run loop changed something: every slot is looked at, those held
 * are carried out what was asked and become this thread's list. A slot
 * wanted here but still held by another (which lets go at its next pass)
 * keeps the recheck up, so the next pass looks again. */
static void look_at_all(tb_drainer *d)
{
	tb_collector *c = d->c;
	bool waiting = false;
	__atomic_store_n(&d->recheck, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* the clear before the reads it answers */
	d->nheld = 0;
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		if (take_or_hand_over(d, f)) {
			d->held[d->nheld++] = i;
			uint32_t what = __atomic_load_n(&f->release, __ATOMIC_ACQUIRE);
			if (what != TB_RELEASE_NONE)
				do_request(d, i, what);
		} else if (__atomic_load_n(&f->want, __ATOMIC_RELAXED) == d->id) {
			waiting = true;
		}
	}
	if (waiting)
		__atomic_store_n(&d->recheck, 1, __ATOMIC_RELAXED);
}

/* Slot i, held, at a visit: a new producer is followed at once (one load
 * per idle slot), not at the next housekeeping: one that floods as soon as
 * it attaches must not fill its ring before anyone reads it. True if its
 * ring is to be read. */
static inline bool readable(tb_drainer *d, uint32_t i)
{
	tb_collector *c = d->c;
	tb_slot_follow *f = &c->slots[i];
	if (!f->followed &&
	    __atomic_load_n(&tb_seg_slot(&c->seg, i)->state, __ATOMIC_ACQUIRE) == TB_SLOT_LIVE)
		tb_slots_follow(c, i);
	return f->followed && !f->quarantined;
}

void tb_drainer_serve_requests(tb_drainer *d)
{
	look_at_all(d);
	for (uint32_t k = 0; k < d->nheld; k++)
		readable(d, d->held[k]);
}

uint64_t tb_drainer_pass(tb_drainer *d, bool whole_only)
{
	uint64_t total = 0;
	bool full = false;
	/* the segment was cut: nothing is read until the run loop has found
	 * out which rings are still whole and repaired it (segguard.c). The
	 * release: what this thread did before (its last pass) happens before
	 * the run loop's repair, which waits to see the count move. */
	if (TB_UNLIKELY(__atomic_load_n(&d->c->rings_gate, __ATOMIC_ACQUIRE))) {
		__atomic_store_n(&d->gate_seen, d->gate_seen + 1, __ATOMIC_RELEASE);
		d->step_from_ns = 0;
		return 0;
	}
	int64_t now = step_read(d);
	note_gap(d, now); /* no step of the pass is measured: its end sets step_from_ns */
	__atomic_store_n(&d->last_pass_ns, now, __ATOMIC_RELAXED); /* the closer reads it */
	if (TB_UNLIKELY(__atomic_load_n(&d->recheck, __ATOMIC_ACQUIRE)))
		look_at_all(d);
	for (uint32_t k = 0; k < d->nheld; k++) {
		uint32_t i = d->held[k];
		if (!readable(d, i))
			continue;
		uint32_t n = drain_slot(d, i, TB_COLLECTOR_BATCH, now, whole_only);
		total += n;
		full |= n == TB_COLLECTOR_BATCH;
	}
	d->last_pass_full = full;
	if (total)
		__atomic_store_n(&d->events_total, d->events_total + total, __ATOMIC_RELAXED);
	d->pass_end_ns = mono_now();
	if (!full) /* a back-off or a sleep follows, which hides the call */
		mark_cpu(d, d->pass_end_ns);
	d->step_from_ns = d->own_loop ? d->pass_end_ns : 0;
	keep_most(&d->stalls.longest_pass_ns, d->pass_end_ns - now);
	return total;
}

uint64_t tb_drainer_drain_all(tb_drainer *d)
{
	uint32_t passes = 2 * (d->c->seg.layout.ring_capacity / TB_COLLECTOR_BATCH + 1);
	uint64_t total = 0, n;
	while (passes-- > 0 && (n = tb_drainer_pass(d, false)) > 0)
		total += n;
	return total;
}

/* How many of ring i's events from our index are written, in order, and
 * complete before `before` (monotonic ns), at most `most`; a START event,
 * which completes nothing itself, goes with the events around it. */
static uint32_t complete_before(const tb_collector *c, uint32_t i, int64_t before, uint32_t most)
{
	const tb_event *events = tb_seg_events(&c->seg, i);
	uint32_t mask = c->seg.layout.ring_capacity - 1, cons = c->slots[i].cons, n = 0;
	unsigned log2 = tb_seg_ring_log2(&c->seg);
	for (; n < most; n++) {
		const tb_event *ev = &events[(cons + n) & mask];
		uint64_t w0 = __atomic_load_n(&ev->w0, __ATOMIC_ACQUIRE);
		if ((w0 & TB_LAP_BIT) != tb_lap_bit(cons + n, log2))
			break;
		int64_t at = (int64_t)__atomic_load_n(&ev->w1, __ATOMIC_RELAXED), latency;
		switch ((unsigned)(w0 & TB_KIND_MASK)) {
		case TB_EV_SPAN:
			latency = (int64_t)w0 >> TB_FIELD_SHIFT;
			at = add_sat(at, latency > 0 ? latency : 0);
			break;
		case TB_EV_END:
			break;
		default:
			continue;
		}
		if (at >= before)
			break;
	}
	return n;
}

uint64_t tb_drainer_drain_before(tb_drainer *d, int64_t before_wall_ns)
{
	tb_collector *c = d->c;
	int64_t before = add_sat(before_wall_ns, -c->clock_offset_ns);
	uint64_t total = 0;
	for (uint32_t k = 0; k < d->nheld; k++) {
		uint32_t i = d->held[k], n, got;
		if (!readable(d, i))
			continue;
		do {
			n = complete_before(c, i, before, TB_COLLECTOR_BATCH);
			got = n ? drain_slot(d, i, n, mono_now(), false) : 0;
			total += got;
		} while (n && got == n);
	}
	return total;
}

static void count_expired(void *ctx, uint16_t metric, bool was_start)
{
	tb_drainer *d = ctx;
	d->join_adj[d->open_bank]++; /* it leaves the table */
	if (metric >= d->c->seg.layout.metric_capacity)
		return;
	if (was_start)
		d->counts[d->open_bank][metric].unmatched_start++;
	else
		d->counts[d->open_bank][metric].unmatched_end++;
}

void tb_drainer_housekeep(tb_drainer *d, int64_t now)
{
	tb_collector *c = d->c;
	if (__atomic_load_n(&c->rings_gate, __ATOMIC_ACQUIRE))
		return; /* the run loop is at the rings (tb_drainer_pass) */
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		if (__atomic_load_n(&f->holder, __ATOMIC_ACQUIRE) != d->id)
			continue;
		if (f->followed && !f->quarantined && !tb_slots_header_intact(c, i))
			tb_slots_quarantine(c, i, "ring header does not match the segment's layout");
	}
	(void)now;
}

void tb_drainer_expire_all(tb_drainer *d)
{
	tb_collector *c = d->c;
	pthread_mutex_lock(&c->join_lock);
	/* a "now" past every parked event's deadline */
	tb_join_expire(&c->join, INT64_MAX - c->join.timeout_ns, count_expired, d);
	pthread_mutex_unlock(&c->join_lock);
}

/* The test hooks: run `ns` of the thread's CPU time between two of its
 * measured clock reads (in the back-off's spin, as the host does when it
 * takes the CPU; or as housekeeping's own work). CPU time, not wall time,
 * so that being preempted meanwhile makes it no shorter. */
static void test_busy(int64_t ns)
{
	int64_t until = thread_cpu_now() + ns;
	while (thread_cpu_now() < until) {
	}
}

/* Caught up: spin on our own clock until `until`, touching no line a
 * producer writes (TB_COLLECTOR_DEFAULT_BACKOFF_NS). Between two reads of
 * the clock the spin runs a pause instruction: constant work, whose long
 * steps are the machine's (step_read). */
static void back_off(tb_drainer *d, int64_t until)
{
	const tb_collector *c = d->c;
	step_read(d);
	if (TB_UNLIKELY(c->cfg.test_backoff_busy_ns > 0))
		test_busy(c->cfg.test_backoff_busy_ns);
	while (!*c->stop && step_read(d) < until) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
}

void *tb_drainer_main(void *arg)
{
	tb_drainer *d = arg;
	tb_collector *c = d->c;
	struct timespec idle = {(time_t)(c->cfg.idle_ns / 1000000000),
				(long)(c->cfg.idle_ns % 1000000000)};
	if (d->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(d->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			fprintf(stderr, "tailbusd: drain thread %u: cannot pin to CPU %d: %s\n", d->id,
				d->cpu, strerror(errno));
	}
	char name[16];
	snprintf(name, sizeof(name), "tb-drain%u", d->id);
	pthread_setname_np(pthread_self(), name);
	mark_cpu(d, mono_now());
	d->own_loop = true;
	/* with a keeper, a new series waits for its memory (keeper.c) */
	d->series_wait = __atomic_load_n(&c->keeper_running, __ATOMIC_ACQUIRE) != 0;
	while (!*c->stop) {
		/* --idle-us sleeps after a pass that took nothing, so every pass
		 * there reads what there is: one that left a short ring alone
		 * would read as quiet and sleep while that ring fills */
		uint64_t n = tb_drainer_pass(d, c->cfg.idle_ns == 0);
		/* from the pass's end to the next clock read only constant
		 * work runs (the switch is O(1)), but for housekeeping, which
		 * walks the slots: its step is taken whole (step_read) */
		int64_t mono = step_read(d);
		tb_drainer_switch(d, mono + c->clock_offset_ns, false);
		if (mono >= d->next_housekeep_ns) {
			tb_drainer_housekeep(d, mono);
			if (TB_UNLIKELY(c->cfg.test_housekeep_busy_ns > 0))
				test_busy(c->cfg.test_housekeep_busy_ns);
			d->next_housekeep_ns = mono + TB_COLLECTOR_HOUSEKEEP_NS;
			d->step_from_ns = 0;
		}
		if (n == 0 && c->cfg.idle_ns > 0) {
			step_read(d);
			nanosleep(&idle, NULL); /* off CPU: the CPU time finds it */
			d->step_from_ns = mono_now();
		}
		else if (!d->last_pass_full && c->cfg.backoff_ns > 0)
			back_off(d, mono + c->cfg.backoff_ns);
	}
	d->series_wait = false; /* what is left is drained after the keeper stops */
	d->own_loop = false; /* the run loop's passes follow, with its work between */
	d->step_from_ns = 0;
	/* the gap from its last pass to its end is its own (a collector kept
	 * off its CPU, then stopped, left its rings unread that long: the
	 * last close puts it beside their drops); the run loop's passes then
	 * begin afresh, the time to the first of them being the stop's */
	int64_t last = __atomic_load_n(&d->last_pass_ns, __ATOMIC_RELAXED);
	if (last)
		keep_most(&d->stalls.longest_gap_ns, mono_now() - last);
	__atomic_store_n(&d->last_pass_ns, 0, __ATOMIC_RELAXED);
	return NULL;
}
