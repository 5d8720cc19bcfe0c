/* segguard.c - a segment file shrunk under the collector.
 *
 * Anyone who may write the segment file may also truncate it, and nothing
 * that can be found by path can forbid it: seals (F_SEAL_SHRINK) exist only
 * for memfds, which producers could not open by name. The pages past the
 * cut vanish from every mapping, and the next load or store there is a
 * SIGBUS, which would end tailbusd (and, in a producer, the engine).
 *
 * So a shrink is an event the collector survives, reports and recovers
 * from, in two places:
 * - the run loop compares the file's size with the mapping every tick
 *   (1 ms, one fstat) and, finding it short, gives the file its size back
 *   (ftruncate: the pages past the cut exist again, as zeros);
 * - a SIGBUS handler (installed by tailbusd only, for the whole process,
 *   which is its own) does the same for a fault inside the mapping and
 *   returns, so the faulting load or store is retried and succeeds. A fault
 *   that recurs with the size restored (a page the file system cannot give)
 *   gets a private zero page mapped over it, and the bus is given up: every
 *   ring is quarantined. A fault outside the segment is not ours: the
 *   default action is restored and the fault recurs.
 * - a producer that guards itself (tb_guard_segment_faults) may give the
 *   file its size back before the run loop looks; so the run loop also
 *   watches the file with inotify: the segment is only ever changed
 *   through its mappings, which raise no inotify event, so a modification
 *   event is a truncation (or a write(2)) by someone. Seen with the size
 *   already whole, where it cut is unknown, and it is taken as a cut at 0.
 * Either way the run loop then recovers (tb_segguard_check): the header
 * and the metric entries it knows are written back from its own copies,
 * every followed slot whose slot line, ring or fold lanes lay past the cut
 * is quarantined, its consumer index set to read as full (its producer's
 * events are then folded or dropped and counted by the producer, after at
 * most a ring of events written that no one reads), every free slot's ring and lanes past the cut are reset for the
 * next producer (claimed by the collector meanwhile), the drain threads, which skip their passes while a cut is
 * pending, go on, and the shrink is reported on stderr and in the sidecar.
 * What a drain thread read from zeroed memory between the fault and the end
 * of the batch it was in (at most one batch) may be counted as events.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"

/* The collector whose segment the handler guards: tailbusd has one. */
static tb_collector *guarded;
/* The last address the handler repaired, to tell a fault that recurs (any
 * thread's: atomic, and lock-free, as a handler needs). */
static void *last_fault;

static void note_cut(tb_collector *c, uint64_t size)
{
	uint64_t was = __atomic_load_n(&c->seg_cut_at, __ATOMIC_RELAXED);
	while (size < was && !__atomic_compare_exchange_n(&c->seg_cut_at, &was, size, false,
							   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	__atomic_store_n(&c->seg_cut_pending, 1, __ATOMIC_RELEASE);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	tb_collector *c = guarded;
	uint8_t *at = si->si_addr;
	if (c && at >= c->seg.base && at < c->seg.base + c->seg.size) {
		struct stat st;
		int saved = errno;
		if (fstat(c->seg.fd, &st) == 0 && (uint64_t)st.st_size < c->seg.size) {
			note_cut(c, (uint64_t)st.st_size);
			if (tb_seg_restore_size(&c->seg) == 0) {
				__atomic_store_n(&last_fault, (void *)at, __ATOMIC_RELAXED);
				errno = saved;
				return; /* the access is retried, on a page that exists again */
			}
		}
		if (at != __atomic_load_n(&last_fault, __ATOMIC_RELAXED)) {
			/* restored by someone else since: retry once */
			__atomic_store_n(&last_fault, (void *)at, __ATOMIC_RELAXED);
			errno = saved;
			return;
		}
		/* the fault recurs with the size restored, or it cannot be: a
		 * private page in its place, and the bus is given up */
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		void *p = (void *)((uintptr_t)at & ~(uintptr_t)(page - 1));
		if (mmap(p, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) != MAP_FAILED) {
			__atomic_store_n(&c->seg_lost, 1, __ATOMIC_RELEASE);
			note_cut(c, (uint64_t)((uint8_t *)p - c->seg.base));
			errno = saved;
			return;
		}
	}
	/* not the segment's: the default action, when the access recurs */
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
}

int tb_segguard_install(tb_collector *c)
{
	struct sigaction sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	guarded = c;
	return sigaction(SIGBUS, &sa, NULL) < 0 ? -errno : 0;
}

void tb_segguard_uninstall(tb_collector *c)
{
	if (guarded != c)
		return;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGBUS, &dfl, NULL);
	guarded = NULL;
}

static bool past(uint64_t cut, uint64_t off, uint64_t len)
{
	return off + len > cut;
}

/* A free slot whose ring or lanes were cut: made whole again for the next
 * producer, claimed meanwhile so that none takes it half reset. */
static void reset_free(tb_collector *c, uint32_t i)
{
	tb_slot *s = tb_seg_slot(&c->seg, i);
	uint32_t expect = TB_SLOT_FREE;
	if (!__atomic_compare_exchange_n(&s->state, &expect, TB_SLOT_CLAIMED, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	tb_seg_ring_reset(&c->seg, i, 0);
	pthread_mutex_lock(&c->slot_lock);
	tb_accounts_moved(c, i, 0);
	pthread_mutex_unlock(&c->slot_lock);
	tb_seg_folds_reset(&c->seg, i);
	__atomic_store_n(&s->state, TB_SLOT_FREE, __ATOMIC_RELEASE);
}

/* What lay past the cut is zeros now: the header and the metric entries
 * this collector has seen are its to write back; a followed slot whose
 * identity, ring or lanes were cut is no longer one its producer and we
 * agree on, and is quarantined. Returns the slots quarantined. */
static uint32_t recover(tb_collector *c, uint64_t cut, bool lost)
{
	const tb_seg_header *l = &c->seg.layout;
	if (past(cut, 0, sizeof(tb_seg_header))) {
		tb_seg_header *h = (tb_seg_header *)c->seg.base;
		tb_seg_header copy = *l;
		copy.magic = 0;
		copy.collector_pid = getpid();
		copy.collector_interval_ns = c->cfg.interval_ns;
		copy.collector_generation = c->generation;
		memcpy(h, &copy, sizeof(copy));
		__atomic_store_n(&h->magic, TB_SEG_MAGIC, __ATOMIC_RELEASE);
	}
	for (uint32_t m = 0; m < l->metric_capacity; m++) {
		if (c->metric_copy && __atomic_load_n(&c->metric_ready[m], __ATOMIC_ACQUIRE) &&
		    past(cut, l->metrics_off + (uint64_t)m * sizeof(tb_metric_entry), sizeof(tb_metric_entry))) {
			tb_metric_entry *e = tb_seg_metric(&c->seg, m);
			memcpy(e->name, c->metric_copy[m].name, sizeof(e->name));
			e->name_len = c->metric_copy[m].name_len;
			e->hash = c->metric_copy[m].hash;
			__atomic_store_n(&e->state, TB_METRIC_READY, __ATOMIC_RELEASE);
		}
	}
	uint32_t quarantined = 0;
	for (uint32_t i = 0; i < l->slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		bool cut_ring = past(cut, l->rings_off + (uint64_t)i * l->ring_stride, l->ring_stride) ||
				(l->fold_lanes &&
				 past(cut, l->folds_off + (uint64_t)i * l->fold_stride, l->fold_stride));
		if (!__atomic_load_n(&f->followed, __ATOMIC_ACQUIRE)) {
			if (cut_ring && !lost)
				reset_free(c, i);
			continue;
		}
		if (__atomic_load_n(&f->quarantined, __ATOMIC_ACQUIRE))
			continue;
		if (lost || past(cut, l->slots_off + (uint64_t)i * sizeof(tb_slot), sizeof(tb_slot)) ||
		    past(cut, l->rings_off + (uint64_t)i * l->ring_stride, l->ring_stride) ||
		    (l->fold_lanes && past(cut, l->folds_off + (uint64_t)i * l->fold_stride, l->fold_stride))) {
			tb_slot *s = tb_seg_slot(&c->seg, i);
			if (s->pid == 0) { /* its identity was cut too: ours, for housekeeping */
				s->pid = f->pid;
				s->pid_start_time = f->pid_start_time;
			}
			tb_slots_quarantine(c, i, lost ? "the segment could not be restored after a truncation"
						       : "the segment was truncated over its slot, ring or lanes");
			/* The producer writes up to the stop it last computed without
			 * a look at the ring (at most a ring of events, which no one
			 * reads: lost, though its stats count them written); from its
			 * next look on, the ring must read as full so that what follows
			 * is folded or dropped and counted. It writes at most a ring
			 * past our index, so an index a ring and more past that reads
			 * as full to it (a bad index reads as full, producer.c). */
			if (!lost) {
				uint32_t full = f->cons + 2 * l->ring_capacity + 1;
				__atomic_store_n(&tb_seg_ring(&c->seg, i)->c_head, full, __ATOMIC_RELEASE);
				pthread_mutex_lock(&c->slot_lock);
				tb_accounts_moved(c, i, full);
				pthread_mutex_unlock(&c->slot_lock);
			}
			quarantined++;
		}
	}
	tb_accounts_restore(c); /* slot lines and header cut: ours to write back */
	return quarantined;
}

/* One sidecar row for the shrink, in the current interval. */
static void report(tb_collector *c, uint64_t cut, bool lost, uint32_t quarantined, bool unknown)
{
	const char *file = strrchr(c->seg.path, '/');
	file = file ? file + 1 : c->seg.path;
	if (unknown)
		fprintf(stderr,
			"tailbusd: segment %s was truncated and its size restored before the collector "
			"looked (by a producer's guard): where it was cut is unknown, so all of it is taken "
			"as cut; %u ring%s quarantined\n",
			c->seg.path, quarantined, quarantined == 1 ? "" : "s");
	else
		fprintf(stderr,
			"tailbusd: segment %s was truncated to %llu of its %zu bytes: %s; %u ring%s quarantined, "
			"what lay past the cut is lost\n",
			c->seg.path, (unsigned long long)cut, c->seg.size,
			lost ? "its size could not be restored, the bus is given up" : "size restored",
			quarantined, quarantined == 1 ? "" : "s");
	char row[TB_SEG_PATH_MAX + 128];
	int n = snprintf(row, sizeof(row), "%.3f,segment-truncated,%s:%llu,%u,,,,,,,,,,,,\n",
			 (double)c->closer.start_ns / 1e9, file, (unsigned long long)cut, quarantined);
	if (n > 0 && (size_t)n < sizeof(row) && c->writer)
		tb_writer_append_sidecar(c->writer, row, (size_t)n);
}

int tb_segguard_watch(tb_collector *c)
{
	c->seg_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->seg_watch < 0)
		return -errno;
	if (inotify_add_watch(c->seg_watch, c->seg.path, IN_MODIFY) < 0) {
		int rc = -errno;
		close(c->seg_watch);
		c->seg_watch = -1;
		return rc;
	}
	return 0;
}

/* Whether the file was modified by a system call since the last look. */
static bool modified(tb_collector *c)
{
	if (c->seg_watch < 0)
		return false;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;
	while (read(c->seg_watch, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

bool tb_segguard_check(tb_collector *c)
{
	uint64_t size;
	bool touched = modified(c);
	if (tb_seg_size_check(&c->seg, &size) == 1) {
		note_cut(c, size);
		if (tb_seg_restore_size(&c->seg) < 0)
			__atomic_store_n(&c->seg_lost, 1, __ATOMIC_RELEASE);
	}
	/* modified, yet whole again with no cut seen: a guarded producer gave
	 * it its size back first, and where it was cut is unknown */
	bool unknown = touched && !__atomic_load_n(&c->seg_cut_pending, __ATOMIC_ACQUIRE);
	if (unknown)
		note_cut(c, 0);
	if (!__atomic_load_n(&c->seg_cut_pending, __ATOMIC_ACQUIRE))
		return false;
	/* cleared before the cut is taken: a fault noted from here on is
	 * looked at again at the next tick (at worst a cut reported twice,
	 * never one not reported) */
	__atomic_store_n(&c->seg_cut_pending, 0, __ATOMIC_RELEASE);
	uint64_t cut = __atomic_exchange_n(&c->seg_cut_at, UINT64_MAX, __ATOMIC_ACQ_REL);
	bool lost = __atomic_load_n(&c->seg_lost, __ATOMIC_ACQUIRE);
	if (cut == UINT64_MAX)
		cut = lost ? 0 : c->seg.size;
	uint32_t quarantined = recover(c, cut, lost);
	c->seg_shrinks++;
	report(c, cut, lost, quarantined, unknown && cut == 0);
	modified(c); /* our own ftruncate's event */
	return true;
}
