/* loops.c - the timed loops of one `tailbus load` run, on one thread or two.
 *
 * By default the generator and the engine share one thread, and so one core
 * (--cpu): each turn of one spin loop reads the clock once, lets the engine
 * finish and start requests, then lets the generator send what is due. Both
 * roles run on timestamps, not on when the loop noticed, so sends are as
 * punctual as on a core of their own, while a two-core machine keeps its
 * other core for tailbusd. --engine-cpu E runs the engine on its own thread
 * pinned to E; the queue then crosses cores, as it would in front of a real
 * engine. Only the engine records, through one producer handle per run.
 *
 * Invariants: the schedule starts after every thread is pinned and attached;
 * the loops do not allocate, print or make a system call other than clock
 * reads (vDSO); the engine's thread ends only when the generator is done and
 * the queue is empty, or at the deadline.
 */
#include <ck_pr.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "load.h"

/* The schedule starts this long after setup, so setup is not a late send. */
#define START_LEAD_NS 2000000LL

/* Sets the schedule's start a little after `now`. */
static void begin_run(struct run *r, const struct config *c, int64_t now)
{
	int64_t start = now + START_LEAD_NS;
	r->deadline = start + c->duration_ns + c->drain_ns;
	load_gen_init(&r->gen, c, start);
	load_engine_start(&r->eng, c, start);
	r->eng.spin = r->gen.spin;
}

/* Generator and engine interleaved in the calling thread, recording through
 * `p` (NULL with --record off). */
void load_run_one_thread(struct run *r, const struct config *c, const char *const names[3],
			 tb_producer *p)
{
	struct gen *g = &r->gen;
	if (p)
		load_engine_attach(&r->eng, p, names);
	begin_run(r, c, (int64_t)tb_now(p));
	for (;;) {
		int64_t now = (int64_t)tb_now(p);
		if (now >= r->deadline || (g->finished && load_engine_idle(r))) {
			g->ended = now;
			break;
		}
		load_spin_gap(&g->spin, g->spin.last_read, now, g->start);
		int actions = load_engine_poll(r, now);
		actions += load_gen_poll(r, now);
		load_spin_end(&g->spin, now, actions, g->start, p);
	}
	r->eng.spin = r->gen.spin; /* one thread: one set of gaps */
}

/* Pins the calling thread to `cpu` (-1: leaves it). 0 or a negative errno. */
int load_pin_to(int cpu)
{
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct engine_thread {
	struct run *r;
	const struct config *c;
	const char *names[3];
	int ready;   /* 1: attached and pinned; negative errno: could not (release) */
	int go;      /* the schedule is set (release) */
	uint64_t dropped;
};

static void *engine_main(void *arg)
{
	struct engine_thread *t = arg;
	struct run *r = t->r;
	int rc = load_pin_to(t->c->engine_cpu);
	/* the recording thread's own ring (a counted no-op if the bus is gone);
	 * none with --record off, where p only reads the clock (tb_now(NULL)) */
	tb_producer *p = NULL;
	if (rc == 0 && t->c->record && !(p = tb_attach(t->c->bus, "load-engine")))
		rc = -ENOMEM;
	if (rc < 0) {
		__atomic_store_n(&t->ready, rc, __ATOMIC_RELEASE);
		return NULL;
	}
	if (p)
		load_engine_attach(&r->eng, p, t->names);
	__atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
	/* acquire: the schedule and the engine's start state are written before go */
	while (!__atomic_load_n(&t->go, __ATOMIC_ACQUIRE))
		ck_pr_stall();
	struct spin *s = &r->eng.spin;
	for (;;) {
		int64_t now = (int64_t)tb_now(p);
		if (now >= r->deadline)
			break;
		load_spin_gap(s, s->last_read, now, r->gen.start);
		int actions = load_engine_poll(r, now);
		load_spin_end(s, now, actions, r->gen.start, p);
		/* acquire: after the generator's last enqueue, an empty ring stays empty */
		if (!actions && __atomic_load_n(&r->gen_done, __ATOMIC_ACQUIRE) && load_engine_idle(r))
			break;
	}
	if (p) {
		tb_producer_stats st;
		tb_producer_stats_get(p, &st);
		t->dropped = tb_producer_error(p, NULL) ? 0 : st.dropped;
		tb_detach(p);
	}
	r->eng.p = NULL;
	return NULL;
}

/* The generator in the calling thread, the engine in a thread of its own,
 * which pins itself and attaches before the schedule starts. `p` only reads
 * the clock here. Adds the engine handle's drops to *dropped. */
int load_run_two_threads(struct run *r, const struct config *c, const char *const names[3],
			 tb_producer *p, uint64_t *dropped)
{
	struct engine_thread t = {.r = r, .c = c};
	memcpy(t.names, names, sizeof(t.names));
	pthread_t th;
	int rc = pthread_create(&th, NULL, engine_main, &t);
	if (rc)
		return -rc;
	while ((rc = __atomic_load_n(&t.ready, __ATOMIC_ACQUIRE)) == 0)
		ck_pr_stall();
	if (rc < 0) {
		pthread_join(th, NULL);
		return rc;
	}
	begin_run(r, c, (int64_t)tb_now(p));
	__atomic_store_n(&t.go, 1, __ATOMIC_RELEASE);
	struct gen *g = &r->gen;
	for (;;) {
		int64_t now = (int64_t)tb_now(p);
		if (now >= r->deadline || g->finished) {
			g->ended = now;
			break;
		}
		load_spin_gap(&g->spin, g->spin.last_read, now, g->start);
		load_spin_end(&g->spin, now, load_gen_poll(r, now), g->start, p);
	}
	__atomic_store_n(&r->gen_done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	*dropped += t.dropped;
	return 0;
}
