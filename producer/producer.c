/* producer.c - the producer's cold path: attach, metrics, detach, stats.
 *
 * tb_attach maps the bus segment (creating it if no one has), claims a FREE
 * slot with a CAS, writes the owner's identity while the slot is CLAIMED, and
 * publishes it LIVE with release ordering; from then on the thread's events
 * go to that slot's ring. The ring of a FREE slot is always empty and
 * consistent: the collector drains a departed producer's ring before it
 * frees the slot.
 *
 * Every failure degrades to a no-op handle whose private ring is always full,
 * so the hot path stays branch-free and every lost event is still counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tailbus/producer.h"
#include "tailbus/segment.h"

#define DEFAULT_BUS "default"

static void make_noop(tb_producer *p, int error, const char *why)
{
	/* a two-entry ring whose producer index is one ahead of its consumer:
	 * with capacity 2 that is full, so every enqueue fails */
	ck_ring_init(&p->noop.ring, 2);
	p->noop.ring.p_tail = 1;
	p->noop.ring.p_head = 1;
	p->ring = &p->noop.ring;
	p->events = p->noop.events;
	p->shared_dropped = &p->dropped;
	p->slot = -1;
	p->error = error;
	p->why = why;
}

void tb__dropped(tb_producer *p)
{
	p->dropped++;
	__atomic_store_n(p->shared_dropped, p->dropped, __ATOMIC_RELAXED);
}

static int claim_slot(tb_seg *seg, const char *thread_name)
{
	for (uint32_t i = 0; i < seg->layout.slot_count; i++) {
		tb_slot *s = tb_seg_slot(seg, i);
		uint32_t expect = TB_SLOT_FREE;
		if (!__atomic_compare_exchange_n(&s->state, &expect, TB_SLOT_CLAIMED, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		s->generation++;
		s->pid = getpid();
		s->tid = (int32_t)syscall(SYS_gettid);
		s->pid_start_time = tb_proc_start_time(s->pid);
		memset(s->thread_name, 0, sizeof(s->thread_name));
		if (thread_name)
			strncpy(s->thread_name, thread_name, sizeof(s->thread_name) - 1);
		s->dropped = 0;
		s->dropped_reported = 0;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s->attached_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		__atomic_store_n(&s->state, TB_SLOT_LIVE, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -EBUSY;
}

tb_producer *tb_attach(const char *bus, const char *thread_name)
{
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
	int rc = tb_seg_open(seg, NULL, bus, NULL, TB_SEG_CREATE, &why);
	if (rc < 0) {
		free(seg);
		make_noop(p, rc, why ? why : "cannot open the bus");
		return p;
	}
	int slot = claim_slot(seg, thread_name);
	if (slot < 0) {
		tb_seg_close(seg);
		free(seg);
		make_noop(p, slot, "every ring of the bus is taken (raise the slot count)");
		return p;
	}
	p->seg = seg;
	p->slot = slot;
	p->ring = tb_seg_ring(seg, (uint32_t)slot);
	p->events = tb_seg_events(seg, (uint32_t)slot);
	p->shared_dropped = &tb_seg_slot(seg, (uint32_t)slot)->dropped;
	return p;
}

void tb_detach(tb_producer *p)
{
	if (!p)
		return;
	tb_seg *seg = p->seg;
	if (seg) {
		tb_slot *s = tb_seg_slot(seg, (uint32_t)p->slot);
		__atomic_store_n(&s->state, TB_SLOT_DETACHED, __ATOMIC_RELEASE);
		tb_seg_close(seg);
		free(seg);
	}
	free(p);
}

tb_metric_t tb_metric(tb_producer *p, const char *name)
{
	if (!p || !p->seg)
		return TB_METRIC_NONE;
	int id = tb_seg_metric_register(p->seg, name);
	return id < 0 || id == TB_METRIC_NONE ? TB_METRIC_NONE : (tb_metric_t)id;
}

void tb_producer_stats_get(const tb_producer *p, tb_producer_stats *st)
{
	st->attempted = p->attempted;
	st->dropped = p->dropped;
	st->written = p->attempted - p->dropped;
}

int tb_producer_error(const tb_producer *p, const char **why)
{
	if (why)
		*why = p->error ? p->why : NULL;
	return p->error;
}
