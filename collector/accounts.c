/* accounts.c - what the collector took from the rings and fold lanes,
 * against what reached the log, kept in the segment so that a collector
 * started after one was killed counts exactly what the dead one lost.
 *
 * A killed collector takes with it the intervals it had not yet written:
 * the events it had drained into its series halves (its consumer index,
 * c_head, already past them, so no one reads them again) and the fold lane
 * events it had taken. Both are counted here in the units the producers
 * count them in: ring entries (tb_producer_stats.written) and folded
 * events (.folded).
 *
 * The accounts, per slot (tb_slot, the collector's fields):
 * - logged_head: a ring index such that c_head - logged_head is the number
 *   of entries taken from the ring whose interval has not been written;
 * - folds_taken, folds_logged: fold lane events taken, and of them those
 *   whose interval has been written.
 *
 * The protocol. The holder of a ring counts every entry it takes into the
 * half of the interval that accounts for it (tb_slot_follow.into: the
 * interval the event was recorded, late, bad or unmatched in). When the
 * closer closes an interval, it takes each ring's count of that half
 * (tb_accounts_take) together with the folds the half holds; it writes the
 * interval's log lines and sidecar rows, waits until the writer has
 * written them whole or lost them (tb_writer_settle), and only then adds
 * the counts to the accounts (tb_accounts_publish) and stores the
 * interval's start as `logged_start_ns`. So at any moment
 *   c_head - logged_head = what the halves of the unwritten intervals hold
 *                          (and what the closer is writing).
 * A restarted collector whose predecessor did not stop cleanly (the header
 * still names its pid) reports the sum over the slots of c_head -
 * logged_head and folds_taken - folds_logged as lost, and starts the
 * accounts afresh.
 *
 * The bound. The count is exact but for two windows of a few microseconds
 * each: a kill between a write's completion and the publication after it
 * counts that interval both logged and lost; a kill while the closer is
 * taking a slot's lanes, between the lanes' `taken` and folds_taken, loses
 * what it took from them uncounted. An interval the writer lost (a full
 * disk) is reported as lost intervals by the writer, not here. A START or
 * END half waiting in the join table is counted with the interval it was
 * taken in, so a half the killed collector held there is not counted lost.
 *
 * Invariant, per slot, under slot_lock: head + into[0] + into[1] +
 * pend_ring == our consumer index (tb_accounts_moved keeps it when a
 * ring's indexes are set without reading what lay between).
 */
#include <stdio.h>
#include <stdlib.h>

#include "collector.h"

static tb_seg_header *header(tb_collector *c)
{
	return (tb_seg_header *)c->seg.base;
}

int tb_accounts_init(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	uint32_t n = c->seg.layout.slot_count;
	a->head = calloc(n, sizeof(*a->head));
	a->pend_ring = calloc(n, sizeof(*a->pend_ring));
	a->folds_taken = calloc(n, sizeof(*a->folds_taken));
	a->folds_logged = calloc(n, sizeof(*a->folds_logged));
	a->pend_folds = calloc(n, sizeof(*a->pend_folds));
	if (!a->head || !a->pend_ring || !a->folds_taken || !a->folds_logged || !a->pend_folds)
		return -1;
	return 0;
}

void tb_accounts_free(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	free(a->head);
	free(a->pend_ring);
	free(a->folds_taken);
	free(a->folds_logged);
	free(a->pend_folds);
}

/* Slot i's accounts, from the collector's copy into the segment. */
static void store_slot(tb_collector *c, uint32_t i)
{
	struct tb_accounts *a = &c->accounts;
	tb_slot *s = tb_seg_slot(&c->seg, i);
	__atomic_store_n(&s->logged_head, a->head[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->folds_taken, a->folds_taken[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->folds_logged, a->folds_logged[i], __ATOMIC_RELAXED);
}

void tb_accounts_adopt(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	tb_seg_header *h = header(c);
	/* a collector that stops cleanly clears its pid: one still named was
	 * killed (the bus lock says it is not running) */
	int32_t pid = __atomic_load_n(&h->collector_pid, __ATOMIC_ACQUIRE);
	a->inherited = __atomic_load_n(&h->collector_accounts, __ATOMIC_ACQUIRE) && pid != 0;
	a->dead_pid = pid;
	a->logged_start_ns = __atomic_load_n(&h->logged_start_ns, __ATOMIC_ACQUIRE);
	a->dead_from_ns = a->logged_start_ns ? a->logged_start_ns + h->collector_interval_ns : 0;
	int64_t ring = 0, folds = 0;
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot *s = tb_seg_slot(&c->seg, i);
		uint32_t head = __atomic_load_n(&tb_seg_ring(&c->seg, i)->c_head, __ATOMIC_ACQUIRE);
		uint64_t taken = __atomic_load_n(&s->folds_taken, __ATOMIC_RELAXED);
		/* signed: a matched START/END pair may account for its other
		 * half on the ring of the half that completed it */
		ring += (int32_t)(head - __atomic_load_n(&s->logged_head, __ATOMIC_RELAXED));
		folds += (int64_t)(taken - __atomic_load_n(&s->folds_logged, __ATOMIC_RELAXED));
		a->head[i] = head;
		a->folds_taken[i] = a->folds_logged[i] = taken;
		store_slot(c, i);
	}
	a->lost_ring = a->inherited && ring > 0 ? (uint64_t)ring : 0;
	a->lost_folds = a->inherited && folds > 0 ? (uint64_t)folds : 0;
	__atomic_store_n(&h->collector_accounts, 1, __ATOMIC_RELEASE);
}

void tb_accounts_report(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	if (!a->inherited)
		return;
	unsigned long long lost = a->lost_ring + a->lost_folds, folds = a->lost_folds;
	double from = (double)(a->dead_from_ns ? a->dead_from_ns : c->closer.start_ns) / 1e9;
	fprintf(stderr,
		"tailbusd: the collector before this one (pid %d) was killed: %llu events it had taken "
		"(%llu of them from fold lanes) never reached the log; counted lost\n",
		(int)a->dead_pid, lost, folds);
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "# tailbus: %llu events lost: the collector before this one (pid %d) was killed "
			 "after taking them, before the intervals from %.3f were logged\n",
			 lost, (int)a->dead_pid, from);
	if (n > 0 && (size_t)n < sizeof(line))
		tb_writer_append_log(c->writer, line, (size_t)n);
	n = snprintf(line, sizeof(line), "%.3f,collector-lost,collector:%d,%llu,,,,,,,,,%llu,,,\n", from,
		     (int)a->dead_pid, lost, folds);
	if (n > 0 && (size_t)n < sizeof(line))
		tb_writer_append_sidecar(c->writer, line, (size_t)n);
}

void tb_accounts_take(tb_collector *c, int half)
{
	struct tb_accounts *a = &c->accounts;
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		a->pend_ring[i] += f->into[half];
		f->into[half] = 0;
		a->pend_folds[i] += f->tally[half].folded;
	}
	pthread_mutex_unlock(&c->slot_lock);
}

void tb_accounts_publish(tb_collector *c, int64_t start_ns)
{
	struct tb_accounts *a = &c->accounts;
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		if (!a->pend_ring[i] && !a->pend_folds[i])
			continue;
		a->head[i] += a->pend_ring[i];
		a->folds_logged[i] += a->pend_folds[i];
		a->pend_ring[i] = 0;
		a->pend_folds[i] = 0;
		store_slot(c, i);
	}
	pthread_mutex_unlock(&c->slot_lock);
	a->logged_start_ns = start_ns;
	__atomic_store_n(&header(c)->logged_start_ns, start_ns, __ATOMIC_RELEASE);
}

void tb_accounts_folds_taken(tb_collector *c, uint32_t i, uint64_t n)
{
	c->accounts.folds_taken[i] += n;
	__atomic_store_n(&tb_seg_slot(&c->seg, i)->folds_taken, c->accounts.folds_taken[i],
			 __ATOMIC_RELAXED);
}

void tb_accounts_moved(tb_collector *c, uint32_t i, uint32_t index)
{
	struct tb_accounts *a = &c->accounts;
	const tb_slot_follow *f = &c->slots[i];
	a->head[i] = index - (f->into[0] + f->into[1] + a->pend_ring[i]);
	store_slot(c, i);
}

void tb_accounts_restore(tb_collector *c)
{
	tb_seg_header *h = header(c);
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++)
		store_slot(c, i);
	pthread_mutex_unlock(&c->slot_lock);
	__atomic_store_n(&h->logged_start_ns, c->accounts.logged_start_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&h->collector_accounts, 1, __ATOMIC_RELEASE);
}
