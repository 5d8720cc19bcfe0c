/* segguard.c - a segment file shrunk, or its header changed, under the
 * collector.
 *
 * Anyone who may write the segment file may also truncate it, and nothing
 * that can be found by path can forbid it: seals (F_SEAL_SHRINK) exist only
 * for memfds, which producers could not open by name. The pages past the
 * cut vanish from every mapping, and the next load or store there is a
 * SIGBUS, which would end tailbusd (and, in a producer, the engine).
 *
 * So a shrink is an event the collector survives, reports and recovers
 * from, in two places:
 * - the run loop compares the file's size with the mapping at every look
 *   (at most 50 ms apart, one fstat) and, finding it short, gives the file its size back
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
 *   event is a truncation (or a write(2)) by someone, and wakes the run
 *   loop at once (it sleeps in ppoll on the watch). Seen with the size
 *   already whole, where it cut is unknown, and it is taken as a cut at 0.
 * Either way the run loop then recovers (tb_segguard_check): the header
 * and the metric entries it knows are written back from its own copies,
 * every followed slot whose slot line, ring or fold lanes lay past the cut
 * is quarantined, its consumer index set to read as full (its producer's
 * events are then folded or dropped and counted by the producer, after at
 * most a ring of events written that no one reads), every free slot's ring and lanes past the cut are reset for the
 * next producer (claimed by the collector meanwhile), and the shrink is
 * reported on stderr and in the sidecar. The drain threads skip their
 * passes from the moment a cut is noted until the repair is done, and the
 * run loop waits for every pass begun before to end before it repairs
 * (tb_rings_gate_close). What a drain thread read from zeroed memory between the
 * fault and the end of the batch it was in (at most one batch) may be
 * counted as events.
 *
 * The header is the collector's: no one else writes it after creation.
 * Its layout fields are those the collector validated (tb_seg.layout, the
 * private copy every address comes from), and it writes its pid, interval
 * and generation there. A header written by someone else does not move
 * any region under the collector, but every new producer refuses it (a
 * bad magic: after waiting up to its attach timeout). So the run loop,
 * after the size, compares those fields with its copy every tick (a few
 * cache lines nobody else writes: no contention), and on a difference
 * says so once on stderr and in the sidecar (a `segment-header` row that
 * names the fields), counts it, and writes them back, the magic last, so
 * that producers attach again. A changed header that validates with
 * another layout may have let a producer attach and write where the
 * collector reads something else: every followed ring is then
 * quarantined. A change seen while a cut is pending is left to the cut,
 * which writes the header back itself.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "../lib/slot_word.h"

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
	__atomic_or_fetch(&c->rings_gate, TB_GATE_CUT, __ATOMIC_RELEASE);
}

/* The drain threads out of the rings before the run loop changes what they
 * read (a ring's index, its accounts, a quarantine, a slot's word): the
 * gate is closed, then each running drain thread is waited for until it has
 * skipped a pass at it, so no pass begun before is still reading, however
 * long the host keeps a drain thread off its CPU (a pass is bounded work
 * and takes no lock the run loop holds here). Past TB_GATE_WAIT_NS the
 * wait naps longer. The drain threads read nothing until
 * tb_rings_gate_open(). */
void tb_rings_gate_close(tb_collector *c)
{
	uint64_t seen[TB_COLLECTOR_MAX_DRAINERS];
	__atomic_or_fetch(&c->rings_gate, TB_GATE_REPAIR, __ATOMIC_SEQ_CST);
	for (uint32_t k = 0; k < c->ndrainers; k++)
		seen[k] = __atomic_load_n(&c->drainers[k].gate_seen, __ATOMIC_ACQUIRE);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	int64_t until = now + TB_GATE_WAIT_NS + c->cfg.idle_ns;
	const struct timespec nap = {0, 20000}, long_nap = {0, 1000000};
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		const tb_drainer *d = &c->drainers[k];
		while (d->started && !(c->stop && *c->stop) &&
		       __atomic_load_n(&d->gate_seen, __ATOMIC_ACQUIRE) == seen[k]) {
			nanosleep(now < until ? &nap : &long_nap, NULL);
			clock_gettime(CLOCK_MONOTONIC, &ts);
			now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		}
	}
}

/* release: the repair happens before any drain thread's next pass */
void tb_rings_gate_open(tb_collector *c)
{
	__atomic_and_fetch(&c->rings_gate, ~TB_GATE_REPAIR, __ATOMIC_RELEASE);
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
 * producer, held meanwhile so that none takes it half reset (slot_word.h). */
static void reset_free(tb_collector *c, uint32_t i)
{
	tb_slot *s = tb_seg_slot(&c->seg, i);
	uint64_t mending;
	if (!tb_slot_mend_begin(s, c->slots[i].generation_seen, &mending))
		return;
	tb_seg_ring_reset(&c->seg, i, 0);
	pthread_mutex_lock(&c->slot_lock);
	tb_accounts_moved(c, i, 0);
	pthread_mutex_unlock(&c->slot_lock);
	tb_seg_folds_reset(&c->seg, i);
	s->attached_ns = 0;
	tb_slot_mend_end(s, mending);
}

/* The header as the collector made or validated it, with its own fields. */
static tb_seg_header owned_header(const tb_collector *c)
{
	tb_seg_header h = c->seg.layout;
	h.collector_pid = getpid();
	h.collector_interval_ns = c->cfg.interval_ns;
	h.collector_generation = c->generation;
	return h;
}

/* The header from the collector's copy, its first `len` bytes with the
 * collector's own fields: the magic cleared first and stored last (release),
 * so that an attacher never takes a header bank written back. */
static void restore_header(tb_collector *c, size_t len)
{
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	tb_seg_header copy = owned_header(c);
	__atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
	memcpy((uint8_t *)h + sizeof(h->magic), (const uint8_t *)&copy + sizeof(copy.magic),
	       len - sizeof(copy.magic));
	h->collector_pid = copy.collector_pid;
	h->collector_interval_ns = copy.collector_interval_ns;
	h->collector_generation = copy.collector_generation;
	__atomic_store_n(&h->magic, TB_SEG_MAGIC, __ATOMIC_RELEASE);
}

/* Slot i's owner, where a cut zeroed it: written back from what the
 * collector followed, for housekeeping. (Its generation, by which its
 * owner's tb_detach knows it, comes back with the quarantine's word.) */
static void restore_owner(tb_collector *c, uint32_t i)
{
	tb_slot_follow *f = &c->slots[i];
	tb_slot *s = tb_seg_slot(&c->seg, i);
	if (s->pid == 0) {
		s->pid = f->owner.pid;
		s->pid_start_time = f->owner.start_time;
		s->pid_ns = f->owner.pid_ns;
	}
}

/* The consumer index that makes ring i read as full to its producer, which
 * writes up to the stop it last computed without a look at the ring (at
 * most a ring of events, which no one reads: lost, though its stats count
 * them written); from its next look on, what follows is folded or dropped
 * and counted. It writes at most a ring past our index, so an index a ring
 * and more past that reads as full to it (a bad index reads as full,
 * producer.c). Returns that index. */
static uint32_t read_as_full(tb_collector *c, uint32_t i)
{
	uint32_t full = c->slots[i].cons + 2 * c->seg.layout.ring_capacity + 1;
	__atomic_store_n(&tb_seg_ring(&c->seg, i)->c_head, full, __ATOMIC_RELEASE);
	return full;
}

/* Followed slot i can no longer be read: quarantined, its consumer index
 * (unless the bus is lost) set to read as full. */
static void quarantine_ring(tb_collector *c, uint32_t i, bool lost, const char *reason)
{
	restore_owner(c, i);
	tb_slots_quarantine(c, i, reason);
	if (!lost) {
		uint32_t full = read_as_full(c, i);
		pthread_mutex_lock(&c->slot_lock);
		tb_accounts_moved(c, i, full);
		pthread_mutex_unlock(&c->slot_lock);
	}
}

/* A ring quarantined before a later cut zeroed its slot line or ring
 * header: its owner, full-reading index and state, as quarantine_ring left
 * them (its accounts were moved to that index then: it is read no more). */
static void requarantine(tb_collector *c, uint32_t i)
{
	restore_owner(c, i);
	read_as_full(c, i);
	tb_slot_quarantine(tb_seg_slot(&c->seg, i), c->slots[i].generation);
}

/* What lay past the cut is zeros now: the header and the metric entries
 * this collector has seen are its to write back; a followed slot whose
 * identity, ring or lanes were cut is no longer one its producer and we
 * agree on, and is quarantined. Returns the slots quarantined. */
static uint32_t recover(tb_collector *c, uint64_t cut, bool lost)
{
	const tb_seg_header *l = &c->seg.layout;
	if (!lost && cut < c->seg.size) /* the pages past the cut are new: mapped writable again (pages.c) */
		tb_pages_map_shared(c->seg.base + cut, c->seg.size - cut);
	if (past(cut, 0, sizeof(tb_seg_header)))
		restore_header(c, sizeof(tb_seg_header));
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
		if (__atomic_load_n(&f->quarantined, __ATOMIC_ACQUIRE)) {
			/* quarantined before, and cut again: its slot line and
			 * full-reading index written back, else it would read as
			 * FREE to the next producer, over a ring no one reads */
			if (!lost && (cut_ring || past(cut, l->slots_off + (uint64_t)i * sizeof(tb_slot),
						       sizeof(tb_slot))))
				requarantine(c, i);
			continue;
		}
		if (lost || past(cut, l->slots_off + (uint64_t)i * sizeof(tb_slot), sizeof(tb_slot)) ||
		    past(cut, l->rings_off + (uint64_t)i * l->ring_stride, l->ring_stride) ||
		    (l->fold_lanes && past(cut, l->folds_off + (uint64_t)i * l->fold_stride, l->fold_stride))) {
			quarantine_ring(c, i, lost, lost ? "the segment could not be restored after a truncation"
							 : "the segment was truncated over its slot, ring or lanes");
			quarantined++;
		}
	}
	tb_accounts_restore(c); /* slot lines and header cut: ours to write back */
	return quarantined;
}

/* One sidecar row of `kind` in the current interval, named
 * <segment file name>:<what>, with `count` in its events column. */
static void sidecar_note(tb_collector *c, const char *kind, const char *what, uint32_t count)
{
	const char *file = strrchr(c->seg.path, '/');
	file = file ? file + 1 : c->seg.path;
	char row[TB_SEG_PATH_MAX + 384];
	int n = snprintf(row, sizeof(row), "%.3f,%s,%s:%s,%u,,,,,,,,,,,,,,\n", (double)c->closer.start_ns / 1e9,
			 kind, file, what, count);
	if (n > 0 && (size_t)n < sizeof(row) && c->writer)
		tb_writer_append_sidecar(c->writer, row, (size_t)n);
}

/* One sidecar row for the shrink, in the current interval. */
static void report(tb_collector *c, uint64_t cut, bool lost, uint32_t quarantined, bool unknown)
{
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
	char at[24];
	snprintf(at, sizeof(at), "%llu", (unsigned long long)cut);
	sidecar_note(c, "segment-truncated", at, quarantined);
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

/* The header's fields the collector validated (or wrote) at start, which
 * no one else may change: all of them up to the collector's line. */
#define HEADER_OWNED (offsetof(tb_seg_header, live_heap_bytes) + sizeof(uint64_t))

#define FIELD(name) {#name, offsetof(tb_seg_header, name), sizeof(((tb_seg_header *)0)->name)}
static const struct header_field {
	const char *name;
	size_t off, len;
} header_fields[] = {
	FIELD(magic), FIELD(abi_major), FIELD(abi_minor), FIELD(total_size), FIELD(page_size),
	FIELD(slot_count), FIELD(ring_capacity), FIELD(metric_capacity), FIELD(live_intervals),
	FIELD(reserved_live), FIELD(clock_kind), FIELD(slots_off), FIELD(metrics_off), FIELD(live_off),
	FIELD(live_stride), FIELD(rings_off), FIELD(ring_stride), FIELD(creator_pid), FIELD(fold_lanes),
	FIELD(created_realtime_ns), FIELD(folds_off), FIELD(fold_stride), FIELD(live_heap_off),
	FIELD(live_heap_bytes), FIELD(collector_pid), FIELD(collector_interval_ns),
	FIELD(collector_generation),
};
#undef FIELD
_Static_assert(HEADER_OWNED <= offsetof(tb_seg_header, collector_heartbeat_ns),
	       "the owned fields end before the collector's line");

/* The names of the fields of `seen` that differ from `want`, '+'-joined. */
static void changed_fields(const tb_seg_header *seen, const tb_seg_header *want, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t k = 0; k < sizeof(header_fields) / sizeof(header_fields[0]); k++) {
		const struct header_field *f = &header_fields[k];
		if (memcmp((const uint8_t *)seen + f->off, (const uint8_t *)want + f->off, f->len) == 0)
			continue;
		int w = snprintf(out + n, cap - n, "%s%s", n ? "+" : "", f->name);
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
}

/* The header changed under the collector: said once on stderr and in the
 * sidecar, counted, and written back from the collector's copy, so that
 * new producers attach again. A header that another process could have
 * taken for valid, with another layout, may have sent a producer that
 * attached meanwhile to write anywhere: every followed ring is then
 * quarantined. True if it had changed. */
static bool check_header(tb_collector *c)
{
	const tb_seg_header *h = (const tb_seg_header *)c->seg.base;
	tb_seg_header want = owned_header(c);
	if (memcmp(h, &want, HEADER_OWNED) == 0 && h->collector_pid == want.collector_pid &&
	    h->collector_interval_ns == want.collector_interval_ns &&
	    h->collector_generation == want.collector_generation)
		return false;
	/* a cut, found before or by the fault of these very loads, is the
	 * truncation path's: it writes the header back at the next tick */
	if (__atomic_load_n(&c->rings_gate, __ATOMIC_ACQUIRE) & TB_GATE_CUT)
		return false;
	tb_seg_header seen;
	memcpy(&seen, h, sizeof(seen));
	char fields[256];
	changed_fields(&seen, &want, fields, sizeof(fields));
	/* validation derives every offset from the capacities and the clock */
	bool other_layout = tb_seg_validate(&seen, c->seg.size, NULL) == 0 &&
			    (seen.slot_count != want.slot_count || seen.ring_capacity != want.ring_capacity ||
			     seen.metric_capacity != want.metric_capacity ||
			     seen.live_intervals != want.live_intervals || seen.fold_lanes != want.fold_lanes ||
			     seen.live_heap_bytes != want.live_heap_bytes || seen.clock_kind != want.clock_kind);
	restore_header(c, HEADER_OWNED);
	uint32_t quarantined = 0;
	if (other_layout)
		tb_rings_gate_close(c);
	for (uint32_t i = 0; other_layout && i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		if (!__atomic_load_n(&f->followed, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&f->quarantined, __ATOMIC_ACQUIRE))
			continue;
		quarantine_ring(c, i, false, "the segment's header described another layout meanwhile");
		quarantined++;
	}
	if (other_layout)
		tb_rings_gate_open(c);
	c->seg_header_changes++;
	fprintf(stderr,
		"tailbusd: segment %s: its header was changed under the collector (%s); written back from "
		"the collector's copy%s, %u ring%s quarantined\n",
		c->seg.path, fields, other_layout ? " (it described another valid layout)" : "", quarantined,
		quarantined == 1 ? "" : "s");
	sidecar_note(c, "segment-header", fields, quarantined);
	return true;
}

static bool check_size(tb_collector *c)
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
	bool unknown = touched && !(__atomic_load_n(&c->rings_gate, __ATOMIC_ACQUIRE) & TB_GATE_CUT);
	if (unknown)
		note_cut(c, 0);
	if (!(__atomic_load_n(&c->rings_gate, __ATOMIC_ACQUIRE) & TB_GATE_CUT))
		return false;
	tb_rings_gate_close(c);
	/* the cut's bit cleared before the cut is taken: a fault noted from
	 * here on is looked at again at the next tick (at worst a cut reported
	 * twice, never one not reported); the repair's bit keeps the drain
	 * threads out meanwhile */
	__atomic_and_fetch(&c->rings_gate, ~TB_GATE_CUT, __ATOMIC_ACQ_REL);
	uint64_t cut = __atomic_exchange_n(&c->seg_cut_at, UINT64_MAX, __ATOMIC_ACQ_REL);
	bool lost = __atomic_load_n(&c->seg_lost, __ATOMIC_ACQUIRE);
	if (cut == UINT64_MAX)
		cut = lost ? 0 : c->seg.size;
	uint32_t quarantined = recover(c, cut, lost);
	tb_rings_gate_open(c);
	c->seg_shrinks++;
	report(c, cut, lost, quarantined, unknown && cut == 0);
	modified(c); /* our own ftruncate's event */
	return true;
}

bool tb_segguard_check(tb_collector *c)
{
	bool cut = check_size(c);
	check_header(c);
	return cut;
}
