/* slots.c - which producer slots the collector follows, and their life cycle.
 *
 * Every byte a producer can write is untrusted here. Following a slot means
 * keeping our own consumer index for its ring and our own copy of its
 * owner; the producer's position hint (p_tail) is only compared against our
 * index: an honest producer's is within one ring of it, so one further off,
 * or a ring header whose size or mask is not the layout's, means the ring
 * is corrupt. It is quarantined (reported, never read again) and the other
 * rings go on.
 *
 * Slot life cycle. The run loop looks at every slot at housekeeping (every
 * 100 ms) and asks the drain thread holding a slot to hand it back to
 * producers (`release`, which that thread carries out in drain.c):
 *   LIVE, owner process gone  -> release (its ring drained first)
 *   DETACHED                  -> release (its ring drained first)
 *   CLAIMED for too long by a dead process -> release
 *   QUARANTINED, owner gone   -> release
 * and, since every field of a slot may have been scribbled on, it reclaims
 * (releases, counts and reports) a slot that no honest producer leaves so:
 *   a state that is none of the five, for SLOT_STUCK_NS;
 *   CLAIMED for SLOT_STUCK_NS by any process (a claim takes microseconds);
 *   LIVE or QUARANTINED with a pid whose process is not the one that
 *   claimed the slot (its start time differs, or was never written).
 *   LIVE with a new generation -> follow again (a new owner we did not see come)
 * A LIVE slot not yet followed is followed by its holder at its next pass.
 * A request carries the slot word it was decided on (state and
 * generation): the holder carries out nothing if the slot has moved on by
 * then (slot_word.h, tb_slot_release_begin).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "../lib/slot_word.h"

/* A process that claimed a slot and has not published it within this long
 * has died in tb_attach. */
#define CLAIM_TIMEOUT_NS 1000000000LL

/* Whether the slot's owner still runs (tailbus/owner.h). kill(pid, 0) says
 * in a microsecond whether the pid is gone; whether it is still the
 * owner's, not reused, takes its start time from /proc/<pid>/stat, so that
 * is read only every OWNER_RECHECK'th look: a pid is reused only after its
 * owner died, and noticing that within a second is soon enough. An owner
 * in another PID namespace is judged by its owner lock, one fcntl a look. */
#define OWNER_RECHECK 10
/* How long a slot may look impossible before it is reclaimed: twenty
 * housekeeping rounds, far longer than any honest transition takes. */
#define SLOT_STUCK_NS 2000000000LL

void tb_slots_quarantine(tb_collector *c, uint32_t i, const char *reason)
{
	tb_slot_follow *f = &c->slots[i];
	if (f->quarantined)
		return;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	__atomic_store_n(&f->quarantined, true, __ATOMIC_RELEASE);
	/* a detach that came first stays: the slot is released as detached,
	 * its ring unread */
	tb_slot_quarantine(tb_seg_slot(&c->seg, i), f->generation);
	fprintf(stderr, "tailbusd: ring %u (pid %d) quarantined: %s\n", i, (int)f->owner.pid, reason);
}

/* Take the slot's owner as the producer wrote it (untrusted: used only to
 * see whether it still runs). */
static void take_owner(tb_slot_follow *f, const tb_slot *s)
{
	f->owner.pid = s->pid;
	f->owner.start_time = s->pid_start_time;
	f->owner.pid_ns = s->pid_ns;
	f->owner_looks = 0;
}

/* Whether the process the slot names is the one that claimed it: gone,
 * runs, or an impostor (a pid that runs but started at another time than
 * the slot says: reused, or scribbled; a start time never written counts
 * so, as every producer writes its own when it claims the slot). A pid
 * that runs but whose start time cannot be read (/proc mounted with
 * hidepid and the producer another user's, or no descriptor left) is taken
 * as the owner: freeing a ring its producer still writes would let a
 * second producer claim it, while a slot kept for a reused pid is freed
 * once that process ends. */
static enum tb_owner_state owner_of(const tb_collector *c, tb_slot_follow *f, uint32_t i)
{
	bool check_start = f->owner_looks++ % OWNER_RECHECK == 0;
	return tb_owner_check(&f->owner, c->pid_ns, c->seg.fd, i, check_start);
}

bool tb_slots_hint_in_range(const tb_collector *c, const tb_slot_follow *f, uint32_t i,
			    uint32_t *hint, uint32_t *ahead)
{
	const tb_ring_header *ring = tb_seg_ring(&c->seg, i);
	uint32_t prod = __atomic_load_n(&ring->p_tail, __ATOMIC_ACQUIRE);
	uint32_t cap = c->seg.layout.ring_capacity;
	*hint = prod;
	*ahead = prod - f->cons;
	if (*ahead <= cap)
		return true;
	/* we may have read past it, by at most one ring, too */
	*ahead = 0;
	return -(prod - f->cons) <= cap;
}

/* Nothing but the segment's ring set-up writes the ring's size and mask. */
bool tb_slots_header_intact(const tb_collector *c, uint32_t i)
{
	const tb_ring_header *ring = tb_seg_ring(&c->seg, i);
	return ring->size == c->seg.layout.ring_capacity &&
	       ring->mask == c->seg.layout.ring_capacity - 1;
}

void tb_slots_follow(tb_collector *c, uint32_t i)
{
	tb_slot *s = tb_seg_slot(&c->seg, i);
	tb_slot_follow *f = &c->slots[i];
	tb_ring_header *ring = tb_seg_ring(&c->seg, i);
	pthread_mutex_lock(&c->slot_lock);
	f->quarantined = false;
	f->generation = s->generation;
	take_owner(f, s);
	/* drops already reported (by us or a collector before us); untrusted */
	uint64_t dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
	uint64_t reported = __atomic_load_n(&s->dropped_reported, __ATOMIC_RELAXED);
	f->dropped_seen = reported <= dropped ? reported : dropped;
	f->cons = __atomic_load_n(&ring->c_head, __ATOMIC_ACQUIRE);
	f->folds_unsure = true; /* its lanes are read whole at the next close */
	__atomic_store_n(&f->followed, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->slot_lock);
	uint32_t hint, ahead;
	if (!tb_slots_hint_in_range(c, f, i, &hint, &ahead))
		tb_slots_quarantine(c, i, "ring indices out of range at attach");
	else if (!tb_slots_header_intact(c, i))
		tb_slots_quarantine(c, i, "ring header does not match the segment's layout");
}

uint64_t tb_slots_drops(tb_collector *c, uint32_t i)
{
	uint64_t now = __atomic_load_n(&tb_seg_slot(&c->seg, i)->dropped, __ATOMIC_RELAXED);
	tb_slot_follow *f = &c->slots[i];
	/* a new owner restarts the counter at 0 */
	uint64_t delta = now >= f->dropped_seen ? now - f->dropped_seen : now;
	f->dropped_seen = now;
	__atomic_store_n(&tb_seg_slot(&c->seg, i)->dropped_reported, now, __ATOMIC_RELAXED);
	return delta;
}

/* `judged`: the slot's state and generation as the request was decided on
 * (a release carries out nothing if the slot has moved on since). */
static void ask(tb_collector *c, uint32_t i, uint32_t what, uint64_t judged)
{
	tb_slot_follow *f = &c->slots[i];
	f->release_judged = judged;
	/* release: with the word it was judged by */
	__atomic_store_n(&f->release, what, __ATOMIC_RELEASE);
	uint32_t d = __atomic_load_n(&f->holder, __ATOMIC_ACQUIRE);
	tb_drainer_poke(c, d != TB_NO_DRAINER ? d : __atomic_load_n(&f->want, __ATOMIC_RELAXED));
}

/* A slot no honest producer leaves so: released, counted, reported. */
static void reclaim(tb_collector *c, uint32_t i, uint64_t judged, const char *why,
		    unsigned long long what)
{
	tb_slot_follow *f = &c->slots[i];
	f->stuck_since_ns = 0;
	c->slots_reclaimed++;
	fprintf(stderr, "tailbusd: ring %u reclaimed: ", i);
	fprintf(stderr, why, what);
	fputc('\n', stderr);
	ask(c, i, TB_RELEASE_FREE, judged);
}

/* Whether slot i has stayed at `word` (its state and generation as read)
 * for SLOT_STUCK_NS, by the collector's own clock: one claim, not a run of
 * short ones. */
static bool stuck(tb_slot_follow *f, uint64_t word, int64_t now)
{
	if (!f->stuck_since_ns || f->stuck_word != word) {
		f->stuck_since_ns = now;
		f->stuck_word = word;
		return false;
	}
	return now - f->stuck_since_ns >= SLOT_STUCK_NS;
}

/* The owner fields the run loop reads were written by the holder when it
 * followed the slot (before publishing `followed` with release). */
static void housekeep_slot(tb_collector *c, uint32_t i, int64_t now)
{
	tb_slot *s = tb_seg_slot(&c->seg, i);
	tb_slot_follow *f = &c->slots[i];
	if (__atomic_load_n(&f->release, __ATOMIC_ACQUIRE))
		return; /* asked already */
	uint64_t word = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_ACQUIRE);
	tb_slot_word w = {.w = word};
	uint32_t state = w.f.state, generation = w.f.generation;
	bool followed = __atomic_load_n(&f->followed, __ATOMIC_ACQUIRE);
	if ((int32_t)(generation - f->generation_seen) > 0) /* the highest, in wrap order */
		f->generation_seen = generation;
	enum tb_owner_state owner = TB_OWNER_RUNS;
	if (state != TB_SLOT_CLAIMED && state <= TB_SLOT_QUARANTINED)
		f->stuck_since_ns = 0;
	switch (state) {
	case TB_SLOT_LIVE:
		/* (a header scribbled on is the holder's to see: drain.c) */
		if (followed && f->generation != generation)
			ask(c, i, TB_RELEASE_REFOLLOW, word);
		else if (followed && (owner = owner_of(c, f, i)) == TB_OWNER_IMPOSTOR)
			reclaim(c, i, word, "its pid %llu runs, but is not the process that claimed it",
				(unsigned long long)f->owner.pid);
		else if (followed && owner == TB_OWNER_GONE)
			ask(c, i, TB_RELEASE_FREE, word);
		break;
	case TB_SLOT_DETACHED:
		ask(c, i, TB_RELEASE_FREE, word);
		break;
	case TB_SLOT_CLAIMED: {
		/* attached_ns is the claimer's last store before LIVE (release),
		 * and 0 from the release that freed the slot: a claim still being
		 * written is not judged by a pid that may not be there yet (the
		 * stuck rule takes one that never finishes). Times from the
		 * segment are subtracted as unsigned: any value is defined. */
		uint64_t attached = __atomic_load_n(&s->attached_ns, __ATOMIC_ACQUIRE);
		tb_owner claimer = {__atomic_load_n(&s->pid, __ATOMIC_RELAXED), 0,
				    __atomic_load_n(&s->pid_ns, __ATOMIC_RELAXED)};
		if (attached && (int64_t)((uint64_t)now - attached) > CLAIM_TIMEOUT_NS &&
		    tb_owner_check(&claimer, c->pid_ns, c->seg.fd, i, false) == TB_OWNER_GONE)
			ask(c, i, TB_RELEASE_FREE, word);
		else if (stuck(f, word, now))
			reclaim(c, i, word, "claimed for 2 s and never published (by pid %llu)",
				(unsigned long long)(uint32_t)s->pid);
		break;
	}
	case TB_SLOT_QUARANTINED:
		if (!followed && !f->owner.pid) {
			/* quarantined before this collector started: learn whose it
			 * is (untrusted, used only to see whether it still runs) */
			take_owner(f, s);
			if (f->owner.pid <= 0) /* no owner to wait for */
				f->owner.pid = -1;
		}
		if (f->owner.pid && (owner = owner_of(c, f, i)) == TB_OWNER_IMPOSTOR)
			reclaim(c, i, word, "quarantined, and its pid %llu is not the process that claimed it",
				(unsigned long long)f->owner.pid);
		else if (f->owner.pid && owner == TB_OWNER_GONE)
			ask(c, i, TB_RELEASE_FREE, word);
		break;
	default:
		if (stuck(f, word, now))
			reclaim(c, i, word, "its state %llu is not a slot state", (unsigned long long)state);
		break;
	}
}

void tb_slots_housekeep(tb_collector *c, int64_t now)
{
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++)
		housekeep_slot(c, i, now);
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	__atomic_store_n(&h->collector_heartbeat_ns, now, __ATOMIC_RELEASE);
}
