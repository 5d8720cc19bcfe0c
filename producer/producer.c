/* producer.c - the producer's cold path: attach, metrics, detach, stats.
 *
 * tb_attach maps the bus segment (creating it if no one has), claims a FREE
 * slot with a CAS, writes the owner's identity while the slot is CLAIMED, and
 * publishes it LIVE with release ordering; from then on the thread's events
 * go to that slot's ring. The ring of a FREE slot is always empty and
 * consistent: the collector drains a departed producer's ring before it
 * frees the slot.
 *
 * Every failure degrades to a no-op handle that is always at its stop, so
 * the hot path needs no test of its own and every lost event is still
 * counted (tb__full).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tailbus/bus.h"
#include "tailbus/owner.h"
#include "../lib/map_guard.h"
#include "../lib/slot_word.h"
#include "tailbus/producer.h"
#include "tailbus/segment.h"

#define DEFAULT_BUS "default"

static void make_noop(tb_producer *p, int error, const char *why)
{
	/* cur == stop sends every event to tb__full, which drops it */
	p->cur = p->stop = p->events = NULL;
	p->lap = 0;
	p->lap_start = p->head_seen = 0;
	p->written = 0;
	p->mask = 0;
	p->log2 = 0;
	p->ring = NULL;
	p->shared_dropped = &p->dropped;
	p->folds = NULL;
	p->fold_lanes = 0;
	p->shared_folded = &p->folded;
	p->slot = -1;
	p->error = error;
	p->why = why;
}

/* Place the handle at ring index `head` of a live ring, with no room known
 * yet: the next event goes to tb__full, which finds it. */
static void place(tb_producer *p, uint32_t head)
{
	p->lap_start = head & ~p->mask;
	p->lap = tb_lap_bit(head, p->log2);
	p->cur = p->stop = p->events + (head & p->mask);
}

/* A SPAN that found the ring full, into the lane of its metric (taking a
 * free one for it if need be). False: not a SPAN, or no lane for it. */
static bool fold(tb_producer *p, uint64_t w0)
{
	if ((w0 & TB_KIND_MASK) != TB_EV_SPAN)
		return false;
	uint32_t metric = (uint32_t)(w0 >> TB_METRIC_SHIFT) & (TB_MAX_METRICS - 1);
	if (metric == TB_METRIC_NONE_ID) /* no metric: the collector would count it bad */
		return false;
	tb_fold_lane *lane = NULL;
	for (uint32_t k = 0; k < p->fold_lanes; k++) {
		if (p->fold_metric_plus_one[k] == metric + 1) {
			lane = &p->folds[k];
			break;
		}
		if (p->fold_metric_plus_one[k] == 0) { /* lanes are taken in order: the first free one */
			p->fold_metric_plus_one[k] = metric + 1;
			lane = &p->folds[k];
			__atomic_store_n(&lane->metric_plus_one, metric + 1, __ATOMIC_RELEASE);
			break;
		}
	}
	if (!lane)
		return false;
	int64_t d = (int64_t)w0 >> TB_FIELD_SHIFT; /* TB_FIELD_INVALID: negative */
	uint64_t v = (uint64_t)d;
	if (d < 0) {
		v = 0;
		__atomic_store_n(&lane->negative, lane->negative + 1, __ATOMIC_RELAXED);
	} else if (d > TB_FOLD_HIGHEST) {
		v = (uint64_t)TB_FOLD_HIGHEST;
		__atomic_store_n(&lane->clamped, lane->clamped + 1, __ATOMIC_RELAXED);
	}
	uint64_t *count = &lane->counts[tb_fold_index(v)];
	__atomic_store_n(count, *count + 1, __ATOMIC_RELAXED);
	/* after the count (release): the collector that clears it reads it */
	__atomic_store_n(&lane->dirty, 1, __ATOMIC_RELEASE);
	p->folded++;
	__atomic_store_n(p->shared_folded, p->folded, __ATOMIC_RELAXED);
	return true;
}

void tb__full(tb_producer *p, uint64_t w0, uint64_t w1)
{
	if (p->events) {
		uint32_t head = tb__head(p);
		if (head != p->head_seen) {
			/* the index is 32 bits: count what was written since the
			 * last call (at most one ring, so it has not wrapped) */
			p->written += head - p->head_seen;
			p->head_seen = head;
			/* the position, as a hint for the collector (seg_abi.h) */
			__atomic_store_n(&p->ring->p_tail, head, __ATOMIC_RELEASE);
		}
		if (p->cur == p->events + p->mask + 1) /* the end of the slot array: next pass */
			place(p, head);
		/* acquire: the collector's reads of the slots it gave back are
		 * done before we write them again */
		uint32_t cons = __atomic_load_n(&p->ring->c_head, __ATOMIC_ACQUIRE);
		uint32_t used = head - cons;
		if (used <= p->mask) { /* room after all (a bad index reads as full) */
			uint32_t room = p->mask + 1 - used;
			uint32_t to_end = p->lap_start + p->mask + 1 - head;
			p->stop = p->cur + (room < to_end ? room : to_end);
			tb__emit(p, w0, w1);
			return;
		}
		if (fold(p, w0))
			return;
	}
	p->dropped++;
	/* only this thread writes its slot's counter: relaxed is enough for
	 * the collector to see it eventually */
	__atomic_store_n(p->shared_dropped, p->dropped, __ATOMIC_RELAXED);
}

/* Map this thread's ring into the page tables now, writable, on the cold
 * path: else the engine's first pass over it takes a page fault every 4 KiB
 * (a few microseconds each here), one call in 256. A kernel before 5.14
 * refuses the advice (EINVAL) and the faults come as before. Any other
 * failure is a ring the file system cannot back (tmpfs or hugetlbfs out of
 * memory, a sparse file made bigger than its file system): a store into it
 * would be a SIGBUS, so the handle records nothing instead. 0 or -errno. */
static int prefault_ring(void *ring, uint64_t bytes)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise(ring, (size_t)bytes, MADV_POPULATE_WRITE) < 0 && errno != EINVAL)
		return -errno;
#else
	(void)ring;
	(void)bytes;
#endif
	return 0;
}

/* The owner lock's namespace word (seg_abi.h): ours, or "another, judge by
 * the lock" when /proc cannot say which is ours. */
static uint64_t owner_pid_ns(void)
{
	uint64_t ns = tb_pid_namespace();
	return ns ? ns : TB_PID_NS_UNKNOWN;
}

static int claim_slot(tb_seg *seg, const char *thread_name, uint32_t *generation)
{
	for (uint32_t i = 0; i < seg->layout.slot_count; i++) {
		tb_slot *s = tb_seg_slot(seg, i);
		uint64_t claimed;
		if (!tb_slot_claim(s, &claimed))
			continue;
		/* the owner lock. Held by another open: the slot's last owner
		 * is still letting go (between its DETACHED and its unlock), a
		 * claim taken back from a stopped claimer, or a fork()ed child
		 * of a dead owner keeps it; the slot is not ours to take yet.
		 * A file system without OFD locks: the pid alone judges us. */
		int locked = tb_owner_lock(seg->fd, i);
		if (locked == -EAGAIN) {
			tb_slot_settle(s, claimed, TB_SLOT_FREE);
			continue;
		}
		/* its pages before it is published: a ring that cannot have
		 * them is given back as it was found, and no one reads it */
		int rc = prefault_ring(tb_seg_ring(seg, i), seg->layout.ring_stride);
		if (rc < 0) {
			if (locked == 0)
				tb_owner_unlock(seg->fd, i);
			tb_slot_settle(s, claimed, TB_SLOT_FREE);
			return rc;
		}
		s->pid = getpid();
		s->tid = (int32_t)syscall(SYS_gettid);
		s->pid_start_time = tb_proc_start_time(s->pid);
		s->pid_ns = locked == 0 ? owner_pid_ns() : 0;
		memset(s->thread_name, 0, sizeof(s->thread_name));
		if (thread_name)
			strncpy(s->thread_name, thread_name, sizeof(s->thread_name) - 1);
		s->dropped = 0;
		s->dropped_reported = 0;
		s->folded = 0;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		/* last, with release: the collector judges a claim by its pid
		 * only once this is set (and the claim complete) */
		__atomic_store_n(&s->attached_ns, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
				 __ATOMIC_RELEASE);
		/* the collector takes back a claim stuck for seconds (this thread
		 * stopped here): then the slot is no longer ours to publish,
		 * even if another has claimed it since (slot_word.h) */
		if (!tb_slot_settle(s, claimed, TB_SLOT_LIVE)) {
			if (locked == 0)
				tb_owner_unlock(seg->fd, i);
			continue;
		}
		*generation = tb_slot_word_generation(claimed);
		return (int)i;
	}
	return -EBUSY;
}

/* Held from a segment's open to its listing in the guard table, and by a
 * fork() (an atfork prepare handler): a child never inherits an open that
 * its handler cannot find and let go of. What can take long in an attach
 * (creating the segment, waiting for its creator) is done before, outside
 * it (open_listed), so a fork waits for no more than an open and two maps.
 * Recursive, so that a fork's handlers on the forking thread (another
 * library's, calling tb_attach) do not wait for themselves; signals are
 * blocked while it is held, so that a handler that forks never runs on a
 * thread inside that step. */
static pthread_mutex_t listing;
static pthread_mutexattr_t listing_kind;

static void fork_prepare(void)
{
	pthread_mutex_lock(&listing);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&listing);
}

/* A fork()ed child lets go of its parent's rings (map_guard.h). The lock
 * is made anew: the child's thread is not the owner the parent's recorded
 * (a recursive mutex refuses an unlock by another). */
static void fork_child(void)
{
	tb__map_guard_forget_writable();
	pthread_mutex_init(&listing, &listing_kind);
}

static void watch_forks(void)
{
	pthread_mutexattr_init(&listing_kind);
	pthread_mutexattr_settype(&listing_kind, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&listing, &listing_kind);
	tb__map_guard_prepare_forks();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Opens the bus (creating it if it is not there) and lists the open in the
 * guard table. The slow part runs first on an open of its own, closed before
 * anything is locked through it, so a child forked meanwhile holds nothing
 * of ours; the open that stays is made under the listing lock and finds the
 * segment ready, waiting at most READY_WAIT_MS. It is tried again when the
 * segment changed in between (removed and made anew, its header being
 * written back). */
#define READY_WAIT_MS 100
#define OPEN_TRIES 3

static int open_listed(tb_seg *seg, const char *bus, const char **why)
{
	tb_seg_config quick;
	tb_seg_config_default(&quick);
	quick.wait_ms = READY_WAIT_MS;
	int rc = 0;
	for (int tries = 0; tries < OPEN_TRIES; tries++) {
		tb_seg ready;
		rc = tb_seg_open(&ready, NULL, bus, NULL, TB_SEG_CREATE, why);
		if (rc < 0)
			return rc;
		tb_seg_close(&ready);
		sigset_t all, before;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &before);
		pthread_mutex_lock(&listing);
		rc = tb_seg_open(seg, NULL, bus, &quick, TB_SEG_CREATE, why);
		if (rc == 0 && tb__map_guard_add(seg->base, seg->size, seg->fd, true) < 0) {
			/* unlisted, it would be neither guarded nor let go of in a child */
			tb_seg_close(seg);
			rc = -ENOSPC;
			*why = "more handles attached in this process than the library tracks "
			       "(TB_GUARD_SEGMENTS)";
		}
		pthread_mutex_unlock(&listing);
		pthread_sigmask(SIG_SETMASK, &before, NULL);
		if (rc != -ETIMEDOUT && rc != -EINVAL)
			return rc;
	}
	return rc;
}

tb_producer *tb_attach(const char *bus, const char *thread_name)
{
	static pthread_once_t forks = PTHREAD_ONCE_INIT;
	pthread_once(&forks, watch_forks);
	tb_producer *p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (!bus)
		bus = getenv("TAILBUS_BUS");
	if (!bus || !*bus)
		bus = DEFAULT_BUS;
	tb_seg *seg = calloc(1, sizeof(*seg));
	if (!seg) {
		make_noop(p, -ENOMEM, "out of memory");
		return p;
	}
	const char *why = NULL;
	int rc = open_listed(seg, bus, &why);
	if (rc < 0) {
		free(seg);
		make_noop(p, rc, why ? why : "cannot open the bus");
		return p;
	}
	uint32_t generation = 0;
	int slot = claim_slot(seg, thread_name, &generation);
	if (slot < 0) {
		tb__map_guard_remove(seg->base);
		tb_seg_close(seg);
		free(seg);
		make_noop(p, slot, slot == -EBUSY ? "every ring of the bus is taken (raise the slot count)"
				   : "the bus's ring cannot be backed by memory (its file system is full)");
		return p;
	}
	p->seg = seg;
	p->slot = slot;
	p->generation = generation;
	p->owner_pid = getpid();
	p->ring = tb_seg_ring(seg, (uint32_t)slot);
	p->events = tb_seg_events(seg, (uint32_t)slot);
	p->mask = seg->layout.ring_capacity - 1;
	p->log2 = tb_seg_ring_log2(seg);
	/* a FREE slot's ring is empty and consistent: start where the collector
	 * stands, and learn the room on the first event */
	p->head_seen = __atomic_load_n(&p->ring->c_head, __ATOMIC_ACQUIRE);
	place(p, p->head_seen);
	/* the hint starts here, not where the slot's last owner left it (it
	 * must stay within a ring of what the collector has read) */
	__atomic_store_n(&p->ring->p_tail, p->head_seen, __ATOMIC_RELEASE);
	p->written = 0;
	p->shared_dropped = &tb_seg_slot(seg, (uint32_t)slot)->dropped;
	p->shared_folded = &tb_seg_slot(seg, (uint32_t)slot)->folded;
	/* a FREE slot's lanes are free and empty (the collector resets them
	 * when it frees the slot); a metric takes one on its first fold */
	p->fold_lanes = seg->layout.fold_lanes;
	if (p->fold_lanes) {
		p->folds = tb_seg_fold_lane(seg, (uint32_t)slot, 0);
		prefault_ring(p->folds, seg->layout.fold_stride);
	}
	return p;
}

/* A live handle inherited through fork() records nowhere in the child
 * (fork_child): to the child it is not live. */
static bool inherited(const tb_producer *p)
{
	return p->seg && getpid() != p->owner_pid;
}

void tb_detach(tb_producer *p)
{
	if (!p)
		return;
	tb_seg *seg = p->seg;
	if (seg) {
		tb_slot *s = tb_seg_slot(seg, (uint32_t)p->slot);
		/* Only the process that claimed the slot gives it back: a child
		 * of fork() that detaches an inherited handle (an atexit handler,
		 * a destructor) leaves its parent's ring alone. And only the
		 * claim it made: one taken back and claimed again since (by any
		 * process, whatever its pid) has another generation. */
		if (!inherited(p)) {
			/* the final position, so the collector drains exactly what
			 * was written; a hint only, and only into our claim's ring */
			if (tb_slot_held(__atomic_load_n(tb_slot_word_of(s), __ATOMIC_ACQUIRE), p->generation))
				__atomic_store_n(&p->ring->p_tail, tb__head(p), __ATOMIC_RELEASE);
			tb_slot_detach(s, p->generation);
			/* after DETACHED: a forked child sharing this open must
			 * not keep the lock (closing our descriptor would not
			 * drop it then) */
			tb_owner_unlock(seg->fd, (uint32_t)p->slot);
		}
		tb__map_guard_remove(seg->base);
		tb_seg_close(seg);
		free(seg);
	}
	free(p);
}

tb_metric_t tb_metric(tb_producer *p, const char *name)
{
	uint64_t id = TB_METRIC_NONE_ID;
	if (p && p->seg) {
		int rc = tb_seg_metric_register(p->seg, name);
		if (rc >= 0)
			id = (uint64_t)rc & (TB_MAX_METRICS - 1);
	}
	return (tb_metric_t){id << TB_METRIC_SHIFT};
}

void tb_producer_stats_get(const tb_producer *p, tb_producer_stats *st)
{
	st->written = p->written + (p->events ? tb__head(p) - p->head_seen : 0);
	st->dropped = p->dropped;
	st->folded = p->folded;
	st->attempted = st->written + st->dropped + st->folded;
}

int tb_producer_error(const tb_producer *p, const char **why)
{
	if (inherited(p)) {
		if (why)
			*why = "the handle was attached by the parent process: a fork()ed child "
			       "records nothing through it (call tb_attach in the child)";
		return -EPERM;
	}
	if (why)
		*why = p->error ? p->why : NULL;
	return p->error;
}

int tb_producer_collector(const tb_producer *p, const char **why)
{
	if (!p->seg || inherited(p))
		return tb_producer_error(p, why);
	/* the shared header, not the private copy: these fields are the
	 * collector's and change while we are attached */
	const tb_seg_header *h = (const tb_seg_header *)((const tb_seg *)p->seg)->base;
	return tb_bus_collector_state(h, (int64_t)tb_now(p), why);
}

_Static_assert(TB_GUARD_SEGMENTS == TB_MAP_GUARD_MAPPINGS, "one table");

int tb_guard_segment_faults(void)
{
	return tb__map_guard_install();
}

uint64_t tb_guard_repairs(void)
{
	return tb__map_guard_repairs();
}
