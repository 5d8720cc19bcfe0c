/* load.c - `tailbus load`: an open-loop load generator and a reference FIFO
 * engine, recording every request's latency through the bus.
 *
 *   tailbus load --bus NAME [--dir SEGDIR] --rate R [--poisson] --duration D [--warmup W]
 *                [--service-ns N] [--stall-every T --stall-ns S] [--closed]
 *                [--sweep R1:R2:STEPS] [--metric NAME] [--seed SEED] [--json]
 *                [--cpu C] [--engine-cpu E] [--late-ns L] [--queue Q] [--drain X]
 *                [--record on|off]
 *
 * The idea. A generator means to send request i at a time computed from i
 * alone (start + floor(i * 1e9 / R) by tb_schedule_at, or, with --poisson,
 * the running sum of exponential gaps in integer ns drawn from a sequence
 * seeded by --seed, so the same seed gives the same schedule). It spins on
 * the bus clock until a request is due and sends it; when it is behind it
 * sends at once and keeps the intended time. It never sleeps and never skips.
 * Requests go through a bounded SPSC queue (a Concurrency Kit ring) to the
 * engine, a FIFO server that spends --service-ns on each, starting at
 * max(arrival, previous completion), and that freezes for S ns every T s when
 * asked. Each completion is recorded with tb_span(intended, done): latency is
 * measured from the intended time, so a stalled engine cannot hide behind a
 * generator that waited for it.
 *
 * --closed runs the classic closed loop for contrast: one request outstanding,
 * sent at max(intended, previous done), and each completion recorded twice:
 * from the actual send as "<metric>.closed" (what closed-loop tools report)
 * and from the intended time as "<metric>" (what users experience). The gap
 * between the two is coordinated omission, in one run.
 *
 * Threads. By default the generator and the engine share one thread, and so
 * one core (--cpu): each turn of one spin loop reads the clock once, lets the
 * engine finish and start requests, then lets the generator send what is due.
 * Both roles run on timestamps, not on when the loop noticed: a request is
 * served from max(its send time, the engine's previous completion) whichever
 * turn picks it up, so the engine's capacity is exactly 1/service and sends
 * are as punctual as on a core of their own, while a two-core machine keeps its
 * other core for tailbusd. --engine-cpu E runs the engine on its own thread
 * pinned to E; the queue then crosses cores, as it would in front of a real
 * engine. Only the engine records, through one producer handle per run.
 *
 * Late sends. A send more than --late-ns after its intended time is late, and
 * goes into one of three bins: "held back" when the generator saw it due but
 * could not send (the queue was full, or a closed loop was waiting for its
 * response); "descheduled" when it fell due in a gap of the sending thread's
 * spin loop (clock reads more than max(--late-ns, 1 us) apart with no work of
 * ours between them: the OS or a hypervisor had the core); "busy" otherwise
 * (it fell due while the thread was sending or serving others: more than one
 * thread can schedule). Descheduled measures the machine; held back and busy
 * measure the load. Open loop with a deep enough queue is never held back,
 * however slow the engine: its latency grows instead. A bounded queue is the
 * admission buffer of a real system; when an overloaded engine fills it the
 * generator is held back and its sends go late, which is how a machine that
 * cannot hold the rate shows up in the late count. The longest gap of the
 * engine's thread is a stall the machine added; the sweep's rules (knee,
 * periodic stall) and the growth verdict do not count what it can explain.
 *
 * Service time. Besides latency from the intended time, the engine times its
 * own work: done (the clock read at which it completes a request, the T1 it
 * records) minus the start of service, max(arrival, the previous request's
 * completion by the model). It is the service time plus the engine loop's
 * reaction (from when the work is due to end to the turn that sees it) plus
 * any stall during service: what the engine's own code and the machine under
 * it add, without the queueing in front of it. That is the figure the
 * observer effect is about: does recording slow the engine's own work?
 *
 * --record off: the engine records nothing into the bus (it never calls
 * tb_attach, tb_metric or tb_span, and no handle is opened) while everything
 * else, the schedule, the queue, the in-process histograms and the report,
 * stays the same, so a run with it on and a run with it off differ only by
 * the recording (bench/observer compares them). --bus is optional then.
 *
 * Warm-up: requests intended before start + W are recorded on the bus as
 * "<metric>.warmup" and left out of the report. A sweep runs each rate in
 * turn and names its metrics "<metric>.r<rate>[.closed|.warmup]".
 *
 * Invariants:
 *   - intended times never depend on when earlier requests were sent;
 *   - every request intended before start + D is sent and every sent request
 *     is served and recorded, or the report counts it as unsent/unserved
 *     (the run's drain limit, --drain): nothing is left out silently;
 *   - the in-process histogram records exactly the values sent to the bus, in
 *     the collector's layout, so the bus log's figures equal the report's;
 *   - the timed loop does not allocate, print or make a system call other
 *     than clock reads (vDSO).
 */
#include <ck_pr.h>
#include <ck_ring.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"
#include "tailbus/analysis.h"
#include "tailbus/hist.h"
#include "tailbus/producer.h"
#include "tailbus/segment.h"
#include "tailbus/summary.h"
#include "tailbus/sweep.h"

#define VERB "load"
#define DEFAULT_METRIC "load"

/* One microsecond: about 20 clock reads on a VM (tb_now costs ~50 ns there),
 * and 5-10 turns of the spin loop, so a send on time is never late. */
#define LATE_NS_DEFAULT 1000
/* 2^16 - 1 requests (a ck ring of 2^16 slots holds one less) of 16 bytes:
 * 1 MiB, like a producer ring. Deep enough that open loop is not held back
 * by a few seconds of overload at tens of thousands of requests a second. */
#define QUEUE_DEFAULT 65535
#define QUEUE_MIN 2
#define QUEUE_MAX (1u << 24)
/* The shortest gap in the spin loop counted as the thread not running: an
 * idle turn is one clock read (~50 ns on a VM), a short turn a few hundred ns. */
#define GAP_MIN_NS 1000
/* A turn of at most this many sends, starts and completions is well under a
 * microsecond of our own work; one that took longer was interrupted. */
#define SHORT_TURN_ACTIONS 8
/* The schedule starts this long after setup, so setup is not a late send. */
#define START_LEAD_NS 2000000LL
/* Default warm-up: this fraction of the duration. */
#define WARMUP_FRACTION 0.1
/* Default drain limit: this many durations, at least one second. An engine
 * at utilisation u builds a backlog of (u - 1) * D seconds of work, so twice
 * the duration drains anything up to u = 3. */
#define DRAIN_DURATIONS 2.0
#define DRAIN_MIN_NS TB_NS_PER_SEC
#define RATE_MAX 1000000000LL  /* one request per ns */
#define DURATION_MAX_S 86400.0 /* a day */
#define SWEEP_STEPS_MAX 64
/* The series (latency by time of completion) uses 2 significant digits (1%
 * buckets): enough to see a trend, 36 KiB a row instead of 270 KiB. A row is
 * a second, or as many whole seconds as keep a long run to SERIES_MAX_ROWS
 * rows (10 MiB). */
#define SERIES_SIG_DIGITS 2
#define SERIES_MAX_ROWS 300
/* A series second with fewer samples says nothing about a trend. */
#define SERIES_MIN_COUNT 100
/* "Latency grows over the run": the last second's p50 is this many times the
 * first's (and higher by more than the engine's thread was ever off its
 * core). A stall or a noisy second moves p99, not p50. */
#define GROWTH_RATIO 2.0
/* Indexes into tb_summary.pct (tb_summary_levels: 50, 90, 99, 99.9, 99.99). */
#define P50 0
#define P90 1
#define P99 2
#define P999 3
#define P9999 4
/* Room for "<metric>.r<rate>.closed" before it is checked against the limit. */
#define NAME_BUF (TB_METRIC_NAME_MAX + 32)

/* ---- the request and its queue ---- */

typedef struct tb_load_req {
	int64_t intended;
	int64_t sent;
} tb_load_req;
CK_RING_PROTOTYPE(tb_load_req, tb_load_req)

/* ---- configuration ---- */

struct config {
	const char *bus;
	const char *dir; /* --dir: the segment directory, else $TAILBUS_DIR's search */
	const char *metric;
	uint64_t rate;          /* this run's rate (the sweep sets it per run) */
	int64_t sweep_from, sweep_to, sweep_steps;
	bool poisson, closed, json;
	const char *plot_dir; /* --plot: latency against offered rate, for --sweep */
	uint64_t seed;
	int64_t duration_ns, warmup_ns, service_ns, stall_every_ns, stall_ns, late_ns, drain_ns;
	bool warmup_set, drain_set;
	uint32_t queue;
	int cpu, engine_cpu; /* -1: not pinned / no engine thread */
	bool record;         /* false: --record off, nothing goes to the bus */
};

/* ---- the generator ---- */

/* Gaps in the sending thread's spin loop: time it was not running our code.
 * A gap is either the time between two turns, or a short turn (few actions,
 * well under a microsecond of work) that took longer than the threshold. */
struct spin {
	int64_t last_read;        /* the clock read that ended the previous turn */
	int64_t gap_from, gap_to; /* the latest gap */
	int64_t threshold;        /* max(--late-ns, GAP_MIN_NS) */
	uint64_t gaps;
	int64_t stolen_ns, max_gap_ns;
};

struct gen {
	int64_t start, end, measure_from, late_ns;
	uint64_t rate, i;
	bool poisson, closed, finished;
	uint64_t prng;
	int64_t due;
	int64_t held_at; /* the latest turn at which a due request was held back */
	int64_t ended;   /* when the sending loop stopped */
	/* measured sends (intended at or after measure_from) */
	uint64_t sent, sent_measured, late, late_held, late_descheduled, late_busy;
	int64_t last_send, max_lag_ns;
	struct spin spin;
};

/* splitmix64: a seeded sequence, the same numbers for the same seed. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* An exponential gap of mean 1e9/rate ns, rounded to whole ns. */
static int64_t poisson_gap(struct gen *g)
{
	double u = (double)(next_random(&g->prng) >> 11) * 0x1.0p-53; /* [0, 1) */
	return llround(-log1p(-u) * (double)TB_NS_PER_SEC / (double)g->rate);
}

/* Intended time of request g->i into g->due. */
static void schedule_next(struct gen *g)
{
	if (g->poisson) {
		g->due = (g->i == 0 ? g->start : g->due) + poisson_gap(g);
	} else if (tb_schedule_at(g->start, g->rate, g->i, &g->due) < 0) {
		g->due = INT64_MAX; /* past any end: the schedule is over */
	}
}

static void gen_init(struct gen *g, const struct config *c, int64_t start)
{
	memset(g, 0, sizeof(*g));
	g->start = start;
	g->end = start + c->duration_ns;
	g->measure_from = start + c->warmup_ns;
	g->rate = c->rate;
	g->poisson = c->poisson;
	g->closed = c->closed;
	g->prng = c->seed;
	g->late_ns = c->late_ns;
	g->held_at = INT64_MIN;
	g->spin.last_read = start;
	g->spin.threshold = c->late_ns > GAP_MIN_NS ? c->late_ns : GAP_MIN_NS;
	schedule_next(g);
	g->finished = g->due >= g->end;
}

/* Count a send and, when late, why: held back (it was due at a turn that
 * could not send it), descheduled (it fell due in the latest gap of the
 * loop), or busy (it fell due while the thread was at work on others). */
static void account_send(struct gen *g, int64_t due, int64_t now)
{
	g->sent++;
	if (due < g->measure_from)
		return;
	int64_t lag = now - due;
	g->sent_measured++;
	g->last_send = now;
	if (lag > g->max_lag_ns)
		g->max_lag_ns = lag;
	if (lag <= g->late_ns)
		return;
	g->late++;
	if (due <= g->held_at)
		g->late_held++;
	else if (due >= g->spin.gap_from && due < g->spin.gap_to)
		g->late_descheduled++;
	else
		g->late_busy++;
}

/* ---- the engine ---- */

struct engine {
	bool busy;
	tb_load_req cur;
	int64_t target;   /* when the request in service completes, by the model */
	int64_t free_at;  /* the engine takes no request before this */
	int64_t service_ns, stall_every_ns, stall_ns, next_stall, stall_until_end;
	int64_t measure_from;
	uint64_t stalls;
	bool closed;
	/* recording */
	tb_producer *p;
	tb_metric_t m_main, m_closed, m_warmup;
	tb_hist open, closed_h; /* collector layout: the bus log must agree */
	tb_hist service;        /* done - start of service, measured requests */
	int64_t started;        /* when the request in service started, by the model */
	tb_hist *series;        /* per second of completion, from measure_from */
	size_t nseries;
	int64_t series_ns; /* the length of a row */
	uint64_t measured, warmup;
	int64_t last_done;
	struct spin spin; /* the engine's thread: its gaps stall the engine too */
};

/* What the two roles share, each hot field on its own cache line. */
struct run {
	ck_ring_t ring;
	tb_load_req *buf;
	alignas(TB_CACHELINE) uint64_t completed; /* written by the engine (release) */
	alignas(TB_CACHELINE) int gen_done;       /* written by the generator (release) */
	alignas(TB_CACHELINE) int64_t deadline;   /* set before the run, read-only in it */
	struct gen gen;
	alignas(TB_CACHELINE) struct engine eng;
};

static void engine_stall(struct engine *e, int64_t now)
{
	while (now >= e->next_stall) {
		int64_t from = e->next_stall, to = from + e->stall_ns;
		/* frozen: the request in service finishes S later, no new one starts */
		if (e->busy && e->target > from)
			e->target += e->stall_ns;
		if (e->free_at < to)
			e->free_at = to;
		e->stalls++;
		e->next_stall = from + e->stall_every_ns;
		if (e->next_stall >= e->stall_until_end)
			e->next_stall = INT64_MAX;
	}
}

static void engine_record(struct run *r, int64_t done)
{
	struct engine *e = &r->eng;
	const tb_load_req *q = &e->cur;
	/* e->p is NULL with --record off: the same loop, no recording call */
	if (q->intended < e->measure_from) {
		if (e->p)
			tb_span(e->p, e->m_warmup, (uint64_t)q->intended, (uint64_t)done);
		e->warmup++;
	} else {
		if (e->p)
			tb_span(e->p, e->m_main, (uint64_t)q->intended, (uint64_t)done);
		tb_hist_record(&e->open, done - q->intended);
		tb_hist_record(&e->service, done - e->started);
		if (e->closed) {
			if (e->p)
				tb_span(e->p, e->m_closed, (uint64_t)q->sent, (uint64_t)done);
			tb_hist_record(&e->closed_h, done - q->sent);
		}
		size_t row = (size_t)((done - e->measure_from) / e->series_ns);
		if (row < e->nseries)
			tb_hist_record(&e->series[row], done - q->intended);
		e->measured++;
		e->last_done = done;
	}
	/* release: a closed-loop generator on another thread sends the next
	 * request only after it sees this count */
	__atomic_store_n(&r->completed, __atomic_load_n(&r->completed, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

/* One turn of the engine at time `now`. Returns the number of requests it
 * completed or started. */
static int engine_poll(struct run *r, int64_t now)
{
	struct engine *e = &r->eng;
	int actions = 0;
	engine_stall(e, now);
	for (;;) {
		if (e->busy) {
			if (now < e->target)
				return actions;
			engine_record(r, now);
			/* chain on the model's completion, not on when we noticed it */
			if (e->free_at < e->target)
				e->free_at = e->target;
			e->busy = false;
			actions++;
		}
		if (now < e->free_at || !ck_ring_dequeue_spsc_tb_load_req(&r->ring, r->buf, &e->cur))
			return actions;
		e->started = e->cur.sent > e->free_at ? e->cur.sent : e->free_at;
		e->target = e->started + e->service_ns;
		e->busy = true;
		actions++;
	}
}

/* One turn of the generator: send every request that is due (all at once
 * when behind), unless the queue is full or a closed loop is waiting.
 * Returns the number sent. */
static int gen_poll(struct run *r, int64_t now)
{
	struct gen *g = &r->gen;
	int sent = 0;
	while (!g->finished && g->due <= now) {
		tb_load_req q = {g->due, now};
		/* acquire: pairs with the engine's release of its count */
		bool waiting = g->closed && __atomic_load_n(&r->completed, __ATOMIC_ACQUIRE) < g->sent;
		if (waiting || !ck_ring_enqueue_spsc_tb_load_req(&r->ring, r->buf, &q)) {
			g->held_at = now; /* held back: this send and those due by now go late */
			break;
		}
		account_send(g, g->due, now);
		g->i++;
		schedule_next(g);
		g->finished = g->due >= g->end;
		sent++;
	}
	return sent;
}

static void spin_gap(struct spin *s, int64_t from, int64_t to, int64_t start)
{
	int64_t gap = to - from;
	if (to < start || gap <= s->threshold)
		return;
	s->gaps++;
	s->stolen_ns += gap;
	if (gap > s->max_gap_ns)
		s->max_gap_ns = gap;
	s->gap_from = from;
	s->gap_to = to;
}

/* After a turn that began at `now` and did `actions` sends, starts and
 * completions: read the clock again (only when there was work, so an idle
 * turn costs one read) and note a short turn that took too long. */
static void spin_end(struct spin *s, int64_t now, int actions, int64_t start, tb_producer *p)
{
	if (!actions) {
		s->last_read = now;
		return;
	}
	int64_t end = (int64_t)tb_now(p);
	if (actions <= SHORT_TURN_ACTIONS)
		spin_gap(s, now, end, start);
	s->last_read = end;
}

static bool engine_idle(struct run *r)
{
	return !r->eng.busy && ck_ring_size(&r->ring) == 0;
}

/* Generator and engine interleaved in the calling thread. */
static void run_one_thread(struct run *r, tb_producer *p)
{
	struct gen *g = &r->gen;
	for (;;) {
		int64_t now = (int64_t)tb_now(p);
		if (now >= r->deadline || (g->finished && engine_idle(r))) {
			g->ended = now;
			break;
		}
		spin_gap(&g->spin, g->spin.last_read, now, g->start);
		int actions = engine_poll(r, now);
		actions += gen_poll(r, now);
		spin_end(&g->spin, now, actions, g->start, p);
	}
}

static int pin_to(int cpu)
{
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void attach_metrics(struct engine *e, tb_producer *p, const char *const names[3])
{
	e->p = p;
	e->m_main = tb_metric(p, names[0]);
	e->m_closed = tb_metric(p, names[1]);
	e->m_warmup = tb_metric(p, names[2]);
}

/* Sets the schedule's start a little after `now` (below, with the run). */
static void begin_run(struct run *r, const struct config *c, int64_t now);

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
	int rc = pin_to(t->c->engine_cpu);
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
		attach_metrics(&r->eng, p, t->names);
	__atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
	/* acquire: the schedule and the engine's start state are written before go */
	while (!__atomic_load_n(&t->go, __ATOMIC_ACQUIRE))
		ck_pr_stall();
	struct spin *s = &r->eng.spin;
	for (;;) {
		int64_t now = (int64_t)tb_now(p);
		if (now >= r->deadline)
			break;
		spin_gap(s, s->last_read, now, r->gen.start);
		int actions = engine_poll(r, now);
		spin_end(s, now, actions, r->gen.start, p);
		/* acquire: after the generator's last enqueue, an empty ring stays empty */
		if (!actions && __atomic_load_n(&r->gen_done, __ATOMIC_ACQUIRE) && engine_idle(r))
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
static int run_two_threads(struct run *r, const struct config *c, const char *const names[3],
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
		spin_gap(&g->spin, g->spin.last_read, now, g->start);
		spin_end(&g->spin, now, gen_poll(r, now), g->start, p);
	}
	__atomic_store_n(&r->gen_done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	*dropped += t.dropped;
	return 0;
}

/* ---- one run: set up, run, collect ---- */

struct result {
	uint64_t rate;
	char metric[NAME_BUF], metric_closed[NAME_BUF], metric_warmup[NAME_BUF];
	tb_summary open, closed, service;
	double achieved, send_rate;
	uint64_t warmup, late, late_held, late_descheduled, late_busy, unsent, unserved, stalls;
	uint64_t gaps;
	int64_t stolen_ns, max_gap_ns, max_lag_ns, run_ns;
	int64_t engine_max_gap_ns; /* the longest the engine's thread lost its core */
	size_t nseries;
	int64_t series_ns;
	struct series_row {
		int64_t count, p50, p99, max;
	} *series;
	bool growing, knee;
};

static int hist_alloc(tb_hist *h, int digits)
{
	int32_t len = tb_hist_counts_len(TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, digits);
	if (len < 0)
		return len;
	int64_t *counts = malloc((size_t)len * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	/* writes every counter now, so no page is first touched in the timed loop */
	int rc = tb_hist_init_at(h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, digits,
				 counts, (size_t)len);
	if (rc < 0) {
		free(counts);
		return rc;
	}
	h->owns_counts = 1;
	return 0;
}

static void engine_free(struct engine *e)
{
	tb_hist_free(&e->open);
	tb_hist_free(&e->closed_h);
	tb_hist_free(&e->service);
	for (size_t i = 0; i < e->nseries; i++)
		tb_hist_free(&e->series[i]);
	free(e->series);
}

static int engine_init(struct engine *e, const struct config *c)
{
	memset(e, 0, sizeof(*e));
	e->service_ns = c->service_ns;
	e->closed = c->closed;
	e->next_stall = INT64_MAX;
	int64_t span = c->duration_ns - c->warmup_ns + c->drain_ns;
	int64_t seconds = span / TB_NS_PER_SEC + 1;
	e->series_ns = TB_NS_PER_SEC * ((seconds + SERIES_MAX_ROWS - 1) / SERIES_MAX_ROWS);
	e->nseries = (size_t)(span / e->series_ns) + 2;
	e->series = calloc(e->nseries, sizeof(*e->series));
	if (!e->series)
		return -ENOMEM;
	int rc = hist_alloc(&e->open, TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc == 0)
		rc = hist_alloc(&e->closed_h, TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc == 0)
		rc = hist_alloc(&e->service, TB_HIST_DEFAULT_SIG_DIGITS);
	for (size_t i = 0; rc == 0 && i < e->nseries; i++)
		rc = hist_alloc(&e->series[i], SERIES_SIG_DIGITS);
	return rc;
}

static void engine_start(struct engine *e, const struct config *c, int64_t start)
{
	e->measure_from = start + c->warmup_ns;
	e->free_at = start;
	if (c->stall_ns > 0 && c->stall_every_ns > 0) {
		/* stalls sit mid-period in the measured window: W + T/2, W + 3T/2, ...
		 * so a measured window of k periods holds exactly k stalls */
		e->stall_every_ns = c->stall_every_ns;
		e->stall_ns = c->stall_ns;
		e->next_stall = e->measure_from + c->stall_every_ns / 2;
		e->stall_until_end = start + c->duration_ns;
		if (e->next_stall >= e->stall_until_end)
			e->next_stall = INT64_MAX;
	}
}

static void collect_series(struct result *res, const struct engine *e)
{
	size_t n = 0;
	for (size_t i = 0; i < e->nseries; i++) {
		if (tb_hist_total(&e->series[i]))
			n = i + 1;
	}
	res->series = calloc(n ? n : 1, sizeof(*res->series));
	if (!res->series)
		return;
	res->nseries = n;
	res->series_ns = e->series_ns;
	const struct series_row *first = NULL, *last = NULL;
	for (size_t i = 0; i < n; i++) {
		const tb_hist *h = &e->series[i];
		struct series_row *row = &res->series[i];
		row->count = tb_hist_total(h);
		row->p50 = tb_hist_value_at_percentile(h, 50.0);
		row->p99 = tb_hist_value_at_percentile(h, 99.0);
		row->max = tb_hist_max(h);
		if (row->count >= SERIES_MIN_COUNT) {
			if (!first)
				first = row;
			last = row;
		}
	}
	/* a rise no larger than the engine thread's longest gap is the machine */
	res->growing = first && last != first &&
		       (double)last->p50 > GROWTH_RATIO * (double)first->p50 &&
		       last->p50 - first->p50 > e->spin.max_gap_ns;
}

/* What was left undone at the deadline. */
static void count_leftovers(struct run *r, struct result *res)
{
	struct gen *g = &r->gen;
	if (!g->finished && !g->poisson) {
		/* requests i with floor(i * 1e9 / rate) < D: ceil(D * rate / 1e9) */
		unsigned __int128 n = ((unsigned __int128)(g->end - g->start) * g->rate +
				       TB_NS_PER_SEC - 1) / TB_NS_PER_SEC;
		res->unsent = (uint64_t)n - g->i;
		g->finished = true;
	}
	while (!g->finished) {
		res->unsent++;
		g->i++;
		schedule_next(g);
		g->finished = g->due >= g->end;
	}
	res->unserved = ck_ring_size(&r->ring) + (r->eng.busy ? 1 : 0);
}

static void collect(struct run *r, const struct config *c, struct result *res)
{
	const struct gen *g = &r->gen;
	const struct engine *e = &r->eng;
	res->rate = c->rate;
	tb_summarize(&e->open, &res->open);
	tb_summarize(&e->service, &res->service);
	if (c->closed)
		tb_summarize(&e->closed_h, &res->closed);
	/* served (sent) per second of the measured window, from its start to the
	 * end of the schedule or to the last completion (send) if later: an
	 * engine that keeps up achieves exactly the offered rate */
	int64_t served_ns = (e->last_done > g->end ? e->last_done : g->end) - e->measure_from;
	res->achieved = (double)e->measured * 1e9 / (double)served_ns;
	int64_t sent_ns = (g->last_send > g->end ? g->last_send : g->end) - g->measure_from;
	res->send_rate = (double)g->sent_measured * 1e9 / (double)sent_ns;
	res->warmup = e->warmup;
	res->late = g->late;
	res->late_held = g->late_held;
	res->late_descheduled = g->late_descheduled;
	res->late_busy = g->late_busy;
	res->max_lag_ns = g->max_lag_ns;
	res->gaps = g->spin.gaps;
	res->stolen_ns = g->spin.stolen_ns;
	res->max_gap_ns = g->spin.max_gap_ns;
	res->engine_max_gap_ns = e->spin.max_gap_ns;
	res->stalls = e->stalls;
	res->run_ns = g->ended - g->start; /* the sending loop's time, its gaps' denominator */
	count_leftovers(r, res);
	collect_series(res, e);
}

static void metric_names(const struct config *c, bool sweep, struct result *res)
{
	if (sweep)
		snprintf(res->metric, sizeof(res->metric), "%s.r%" PRIu64, c->metric, c->rate);
	else
		snprintf(res->metric, sizeof(res->metric), "%s", c->metric);
	snprintf(res->metric_closed, sizeof(res->metric_closed), "%s.closed", res->metric);
	snprintf(res->metric_warmup, sizeof(res->metric_warmup), "%s.warmup", res->metric);
}

static void begin_run(struct run *r, const struct config *c, int64_t now)
{
	int64_t start = now + START_LEAD_NS;
	r->deadline = start + c->duration_ns + c->drain_ns;
	gen_init(&r->gen, c, start);
	engine_start(&r->eng, c, start);
	r->eng.spin = r->gen.spin;
}

/* Run one rate. `p` records in one-thread mode; with an engine thread it is
 * the generator's clock only and the thread attaches its own handle, whose
 * drops are added to *dropped. */
static int run_rate(struct run *r, const struct config *c, tb_producer *p, struct result *res,
		    uint64_t *dropped)
{
	int rc = engine_init(&r->eng, c);
	if (rc < 0) {
		engine_free(&r->eng);
		return rc;
	}
	ck_ring_init(&r->ring, c->queue);
	r->completed = 0;
	r->gen_done = 0;
	const char *names[3] = {res->metric, res->metric_closed, res->metric_warmup};
	if (c->engine_cpu < 0) {
		if (p) /* NULL with --record off */
			attach_metrics(&r->eng, p, names);
		begin_run(r, c, (int64_t)tb_now(p));
		run_one_thread(r, p);
		r->eng.spin = r->gen.spin; /* one thread: one set of gaps */
	} else if ((rc = run_two_threads(r, c, names, p, dropped)) < 0) {
		engine_free(&r->eng);
		return rc;
	}
	collect(r, c, res);
	engine_free(&r->eng);
	return rc;
}

/* ---- figures and rules ---- */

static void fmt_ns(char *buf, size_t cap, double ns)
{
	if (ns >= 1e9)
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, cap, "%.2f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, cap, "%.2f us", ns / 1e3);
	else
		snprintf(buf, cap, "%.0f ns", ns);
}

/* A sweep's rates as tailbus/sweep.h reads them. */
static void sweep_points(const struct result *res, size_t n, tb_sweep_point *pts)
{
	for (size_t k = 0; k < n; k++)
		pts[k] = (tb_sweep_point){.rate = res[k].rate,
					  .achieved = res[k].achieved,
					  .count = (int64_t)res[k].open.total,
					  .p50 = res[k].open.pct[P50],
					  .p99 = res[k].open.pct[P99],
					  .p999 = res[k].open.pct[P999],
					  .machine_gap_ns = res[k].engine_max_gap_ns};
}

/* ---- text report ---- */

static void print_figures(const char *label, const tb_summary *s)
{
	char v[6][32];
	fmt_ns(v[0], sizeof(v[0]), (double)s->pct[P50]);
	fmt_ns(v[1], sizeof(v[1]), (double)s->pct[P90]);
	fmt_ns(v[2], sizeof(v[2]), (double)s->pct[P99]);
	fmt_ns(v[3], sizeof(v[3]), (double)s->pct[P999]);
	fmt_ns(v[4], sizeof(v[4]), (double)s->pct[P9999]);
	fmt_ns(v[5], sizeof(v[5]), (double)s->max);
	printf("  %-22s p50 %s  p90 %s%s  p99 %s%s  p99.9 %s%s  p99.99 %s%s  max %s\n", label, v[0],
	       v[1], s->insufficient[P90] ? "*" : "", v[2], s->insufficient[P99] ? "*" : "", v[3],
	       s->insufficient[P999] ? "*" : "", v[4], s->insufficient[P9999] ? "*" : "", v[5]);
}

static void print_series(const struct result *res)
{
	if (res->nseries < 2)
		return;
	char per[32];
	snprintf(per, sizeof(per), "p50 per %" PRId64 " s:",
		 (int64_t)(res->series_ns / TB_NS_PER_SEC));
	printf("  %-22s ", res->series_ns == TB_NS_PER_SEC ? "p50 per second:" : per);
	for (size_t i = 0; i < res->nseries; i++) {
		char v[32];
		fmt_ns(v, sizeof(v), (double)res->series[i].p50);
		printf("%s%s", i ? ", " : "", v);
	}
	printf("\n");
	if (res->growing)
		printf("  NOT STEADY: p50 grows over the run: the engine serves fewer requests than\n"
		       "  are offered and its queue grows; these percentiles depend on the duration\n");
}

static void print_late(const struct result *res, const struct config *c, uint64_t count)
{
	char lag[32], thr[32], gap[32];
	fmt_ns(thr, sizeof(thr), (double)c->late_ns);
	fmt_ns(lag, sizeof(lag), (double)res->max_lag_ns);
	fmt_ns(gap, sizeof(gap), (double)res->max_gap_ns);
	printf("  late sends             %" PRIu64 " of %" PRIu64 " (more than %s after intended; "
	       "the latest %s)\n",
	       res->late, count, thr, lag);
	if (!res->late)
		return;
	printf("    held back            %" PRIu64 "%s\n", res->late_held,
	       !res->late_held ? ""
	       : c->closed     ? " (a closed loop waits for each response)"
			       : " (the queue to the engine was full: it cannot keep up)");
	printf("    generator busy       %" PRIu64 "%s\n", res->late_busy,
	       res->late_busy ? " (due while it sent or served others: more than one thread "
				"can schedule)"
			      : "");
	printf("    thread descheduled   %" PRIu64 " (it lost its core %.2f%% of the run, %" PRIu64
	       " times, the longest %s: the machine, not the load)\n",
	       res->late_descheduled,
	       res->run_ns > 0 ? 100.0 * (double)res->stolen_ns / (double)res->run_ns : 0.0,
	       res->gaps, gap);
}

static void print_run(const struct result *res, const struct config *c)
{
	uint64_t count = (uint64_t)res->open.total;
	printf("  offered %" PRIu64 "/s, achieved %.1f/s (sent %.1f/s)\n", res->rate, res->achieved,
	       res->send_rate);
	printf("  requests               %" PRIu64 " measured, %" PRIu64 " in warm-up (%s)\n", count,
	       res->warmup, res->metric_warmup);
	if (c->closed)
		print_figures("from send (closed):", &res->closed);
	print_figures(c->closed ? "from intended (truth):" : "from intended:", &res->open);
	print_figures("service (done-start):", &res->service);
	print_late(res, c, count);
	if (res->stalls)
		printf("  engine stalls          %" PRIu64 "\n", res->stalls);
	if (res->unsent || res->unserved)
		printf("  UNFINISHED: %" PRIu64 " requests never sent and %" PRIu64
		       " never served before the drain limit (--drain); their latency is missing\n",
		       res->unsent, res->unserved);
	print_series(res);
}

static void print_header(const struct config *c, size_t nruns)
{
	char svc[32], stall[32];
	fmt_ns(svc, sizeof(svc), (double)c->service_ns);
	printf("tailbus load: %s loop, %s arrivals, ", c->closed ? "closed" : "open",
	       c->poisson ? "Poisson" : "constant-rate");
	if (nruns > 1)
		printf("%" PRId64 "..%" PRId64 "/s in %zu steps", c->sweep_from, c->sweep_to, nruns);
	else
		printf("%" PRIu64 "/s", c->rate);
	printf(" for %.3f s (first %.3f s warm-up), seed %" PRIu64 "\n", (double)c->duration_ns / 1e9,
	       (double)c->warmup_ns / 1e9, c->seed);
	printf("engine: FIFO, %s per request", svc);
	if (c->stall_ns > 0) {
		fmt_ns(stall, sizeof(stall), (double)c->stall_ns);
		printf(", frozen %s every %.3f s", stall, (double)c->stall_every_ns / 1e9);
	}
	printf("; %s\n", c->engine_cpu < 0 ? "generator and engine share one thread"
					   : "engine on its own thread");
}

static void print_sweep(const struct result *res, size_t n, int knee, int tail,
			const struct config *c)
{
	printf("\nlatency from intended time, per offered rate (metrics '%s.r<rate>'):\n", c->metric);
	printf("%10s %11s %9s %10s %10s %10s %10s %7s %11s%s\n", "offered/s", "achieved/s", "count",
	       "p50", "p99", "p99.9", "max", "late", "lost core", c->closed ? "  p99 closed" : "");
	bool unfinished = false;
	for (size_t k = 0; k < n; k++) {
		unfinished |= res[k].unsent || res[k].unserved;
		char v[6][32];
		fmt_ns(v[4], sizeof(v[4]), (double)res[k].engine_max_gap_ns);
		fmt_ns(v[5], sizeof(v[5]), (double)res[k].closed.pct[P99]);
		fmt_ns(v[0], sizeof(v[0]), (double)res[k].open.pct[P50]);
		fmt_ns(v[1], sizeof(v[1]), (double)res[k].open.pct[P99]);
		fmt_ns(v[2], sizeof(v[2]), (double)res[k].open.pct[P999]);
		fmt_ns(v[3], sizeof(v[3]), (double)res[k].open.max);
		printf("%10" PRIu64 " %11.1f %9" PRId64 " %10s %9s%s %9s%s %10s %7" PRIu64 " %11s", res[k].rate,
		       res[k].achieved, res[k].open.total, v[0], v[1],
		       res[k].open.insufficient[P99] ? "*" : " ", v[2],
		       res[k].open.insufficient[P999] ? "*" : " ", v[3], res[k].late, v[4]);
		if (c->closed)
			printf(" %12s", v[5]);
		printf("%s\n", (int)k == knee ? "  <- knee" : "");
	}
	printf("(* fewer than %d samples beyond: too few to trust; lost core: the longest time the\n"
	       " engine's thread was not running, a stall the machine added)\n",
	       TB_MIN_SAMPLES_BEYOND);
	if (unfinished)
		printf("UNFINISHED: some rates left requests unsent or unserved at the drain limit "
		       "(--drain); --json has the counts\n");
	if (knee >= 0)
		printf("knee: %" PRIu64 "/s, the first rate whose p99 is more than %.0fx the lowest "
		       "rate's (by more than the machine's longest hiccup) or that achieves less than "
		       "%.0f%% of what it offers\n",
		       res[knee].rate, TB_SWEEP_KNEE_P99_RATIO, TB_SWEEP_KNEE_ACHIEVED * 100);
	else
		printf("knee: none in this range (no p99 above %.0fx the lowest rate's, every rate "
		       "achieved)\n",
		       TB_SWEEP_KNEE_P99_RATIO);
	if (tail == TB_TAIL_STALL)
		printf("periodic stall suspected: p99.9 is %.0fx p50 or more at each of the %d lowest "
		       "rates, where queueing cannot explain it, and longer than the engine's thread "
		       "ever lost its core\n",
		       TB_SWEEP_STALL_TAIL_RATIO, TB_SWEEP_STALL_LOW_RATES);
	else if (tail == TB_TAIL_MACHINE)
		printf("p99.9 is %.0fx p50 or more at the %d lowest rates, but no longer than the "
		       "engine's thread lost its core: the machine's hiccups, not a stall in the engine\n",
		       TB_SWEEP_STALL_TAIL_RATIO, TB_SWEEP_STALL_LOW_RATES);
}

/* ---- JSON report ---- */

/* The figures of one histogram as JSON members, after "metric" when given. */
static void json_summary(const char *metric, const tb_summary *s)
{
	if (metric) {
		printf("\"metric\":");
		tb_cli_json_string(stdout, metric);
		printf(",");
	}
	printf("\"count\":%" PRId64 ",\"min\":%" PRId64, s->total, s->min);
	for (int p = 0; p < TB_SUMMARY_PERCENTILES; p++)
		printf(",\"%s\":%" PRId64, tb_summary_keys[p], s->pct[p]);
	printf(",\"max\":%" PRId64 ",\"insufficient\":[", s->max);
	for (int p = 0, n = 0; p < TB_SUMMARY_PERCENTILES; p++) {
		if (s->insufficient[p])
			printf("%s\"%s\"", n++ ? "," : "", tb_summary_keys[p]);
	}
	printf("]");
}

static void json_run(const struct result *res, const struct config *c, bool knee)
{
	printf("{\"offered\":%" PRIu64 ",\"achieved\":%.3f,\"send_rate\":%.3f,", res->rate,
	       res->achieved, res->send_rate);
	json_summary(res->metric, &res->open);
	printf(",\"service\":{");
	json_summary(NULL, &res->service);
	printf("},\"warmup_count\":%" PRIu64 ",\"late\":%" PRIu64 ",\"late_held\":%" PRIu64
	       ",\"late_busy\":%" PRIu64 ",\"late_descheduled\":%" PRIu64
	       ",\"max_send_lag_ns\":%" PRId64 ",\"gaps\":%" PRIu64
	       ",\"stolen_ns\":%" PRId64 ",\"max_gap_ns\":%" PRId64
	       ",\"engine_max_gap_ns\":%" PRId64 ",\"run_ns\":%" PRId64
	       ",\"stalls\":%" PRIu64 ",\"unsent\":%" PRIu64 ",\"unserved\":%" PRIu64
	       ",\"growing\":%s,\"knee\":%s,\"closed\":",
	       res->warmup, res->late, res->late_held, res->late_busy, res->late_descheduled,
	       res->max_lag_ns, res->gaps, res->stolen_ns, res->max_gap_ns, res->engine_max_gap_ns,
	       res->run_ns, res->stalls, res->unsent, res->unserved, res->growing ? "true" : "false",
	       knee ? "true" : "false");
	if (c->closed) {
		printf("{");
		json_summary(res->metric_closed, &res->closed);
		printf("}");
	} else {
		printf("null");
	}
	int64_t row_s = (int64_t)(res->series_ns / TB_NS_PER_SEC);
	printf(",\"series_row_s\":%" PRId64 ",\"series\":[", row_s);
	for (size_t i = 0; i < res->nseries; i++) {
		const struct series_row *row = &res->series[i];
		printf("%s{\"t\":%" PRId64 ",\"count\":%" PRId64 ",\"p50\":%" PRId64
		       ",\"p99\":%" PRId64 ",\"max\":%" PRId64 "}",
		       i ? "," : "", (int64_t)i * row_s, row->count, row->p50, row->p99, row->max);
	}
	printf("]}");
}

struct bus_state {
	bool off;          /* --record off: the bus is not used at all */
	const char *error; /* NULL when recording into the bus (or off) */
	uint64_t dropped;
	bool no_collector;
};

static void print_json(const struct result *res, size_t n, const struct config *c, int knee,
		       int tail, const struct bus_state *b)
{
	printf("{\"bus\":");
	if (c->bus)
		tb_cli_json_string(stdout, c->bus);
	else
		printf("null");
	printf(",\"record\":%s", b->off ? "false" : "true");
	printf(",\"bus_ok\":%s,\"collector\":%s,\"drops\":%" PRIu64
	       ",\"mode\":\"%s\",\"arrivals\":\"%s\",\"seed\":%" PRIu64 ",\"service_ns\":%" PRId64
	       ",\"stall_every_ns\":%" PRId64 ",\"stall_ns\":%" PRId64 ",\"duration_ns\":%" PRId64
	       ",\"warmup_ns\":%" PRId64 ",\"drain_ns\":%" PRId64 ",\"late_ns\":%" PRId64
	       ",\"queue\":%" PRIu32 ",\"threads\":%d,\"runs\":[",
	       b->error || b->off ? "false" : "true",
	       b->error || b->off || b->no_collector ? "false" : "true",
	       b->dropped, c->closed ? "closed" : "open", c->poisson ? "poisson" : "constant",
	       c->seed, c->service_ns, c->stall_every_ns, c->stall_ns, c->duration_ns, c->warmup_ns,
	       c->drain_ns, c->late_ns, c->queue - 1, c->engine_cpu < 0 ? 1 : 2);
	for (size_t k = 0; k < n; k++) {
		printf("%s", k ? "," : "");
		json_run(&res[k], c, (int)k == knee);
	}
	printf("],\"knee_rate\":");
	if (knee >= 0)
		printf("%" PRIu64, res[knee].rate);
	else
		printf("null");
	printf(",\"stall_suspected\":%s,\"tail_from_machine\":%s,",
	       tail == TB_TAIL_STALL ? "true" : "false", tail == TB_TAIL_MACHINE ? "true" : "false");
	fflush(stdout);
	tb_cli_env_json(stdout);
	printf("}\n");
}

/* ---- options ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus load --bus NAME (--rate R | --sweep R1:R2:STEPS) --duration D\n"
		"         [--dir SEGDIR] [--poisson] [--warmup W] [--service-ns N]\n"
		"         [--stall-every T --stall-ns S] [--closed] [--metric NAME] [--seed SEED]\n"
		"         [--json] [--cpu C] [--engine-cpu E] [--late-ns L] [--queue Q] [--drain X]\n"
		"         [--plot DIR] [--record on|off] [--version]\n"
		"Open-loop load from intended send times, served by a FIFO engine and recorded\n"
		"through the bus as <metric> (from intended), <metric>.warmup and, with --closed,\n"
		"<metric>.closed (from the actual send). The bus is found in --dir, else\n"
		"$TAILBUS_DIR, else hugetlbfs or /dev/shm. D, W, T, X, N, S and L are durations\n"
		"(10s, 100ms, 500us, 1m): a bare number is seconds for D, W, T and X and\n"
		"nanoseconds for N, S and L. Defaults: --warmup D/10, --service-ns 0,\n"
		"--metric %s, --seed 1, --late-ns %d, --queue %d, --drain 2D (at least 1 s).\n"
		"Generator and engine share one thread (on CPU C) unless --engine-cpu gives\n"
		"the engine its own.\n"
		"The report adds the engine's service time (done minus start of service).\n"
		"--record off: record nothing into the bus (no tb_attach, no tb_span), all else\n"
		"the same, to measure the observer effect; --bus is optional then.\n",
		DEFAULT_METRIC, LATE_NS_DEFAULT, QUEUE_DEFAULT);
}

/* What each option takes (tailbus/units.h). Durations take any unit; a bare
 * number keeps the option's unit: seconds for the run's spans, ns for the
 * engine's. */
#define DURATION_MAX_NS ((int64_t)DURATION_MAX_S * TB_UNIT_S)
static const tb_unit_spec run_span = {TB_UNIT_DURATION, TB_UNIT_S, 1, DURATION_MAX_NS};
static const tb_unit_spec run_span_or_zero = {TB_UNIT_DURATION, TB_UNIT_S, 0, DURATION_MAX_NS};
static const tb_unit_spec engine_ns = {TB_UNIT_DURATION, TB_UNIT_NS, 0, DURATION_MAX_NS};
static const tb_unit_spec late_ns = {TB_UNIT_DURATION, TB_UNIT_NS, 1, DURATION_MAX_NS};
static const tb_unit_spec rate = {TB_UNIT_COUNT, 1, 1, RATE_MAX};
static const tb_unit_spec sweep_steps = {TB_UNIT_COUNT, 1, 1, SWEEP_STEPS_MAX};
static const tb_unit_spec queue = {TB_UNIT_COUNT, 1, QUEUE_MIN, QUEUE_MAX};
static const tb_unit_spec cpu = {TB_UNIT_COUNT, 1, 0, CPU_SETSIZE - 1};
static const tb_unit_spec seed = {TB_UNIT_COUNT, 1, 0, INT64_MAX};

/* R1:R2:STEPS, R1 <= R2, STEPS >= 1 (R1 == R2 when STEPS is 1). */
static bool parse_sweep(const char *opt, const char *s, struct config *c)
{
	char buf[96];
	char *a = buf, *b = NULL, *d = NULL;
	if (strlen(s) < sizeof(buf)) {
		strcpy(buf, s);
		b = strchr(a, ':');
		d = b ? strchr(b + 1, ':') : NULL;
	}
	if (!b || !d) {
		tb_cli_bad_value(VERB, opt, s, "want R1:R2:STEPS");
		return false;
	}
	*b++ = 0;
	*d++ = 0;
	if (tb_unit_parse(a, &rate, &c->sweep_from) < 0 || tb_unit_parse(b, &rate, &c->sweep_to) < 0 ||
	    tb_unit_parse(d, &sweep_steps, &c->sweep_steps) < 0 || c->sweep_from > c->sweep_to ||
	    (c->sweep_steps == 1 && c->sweep_from != c->sweep_to)) {
		tb_cli_bad_value(VERB, opt, s,
				 "want R1:R2:STEPS, rates 1..%lld with R1 <= R2, 1..%d steps "
				 "(R1 = R2 for one step)",
				 (long long)RATE_MAX, SWEEP_STEPS_MAX);
		return false;
	}
	return true;
}

static bool parse_one(int opt, const char *name, const char *arg, struct config *c)
{
	int64_t v;
	switch (opt) {
	case 'b': c->bus = arg; return true;
	case 'm': c->metric = arg; return true;
	case 'r':
		if (!tb_cli_unit(VERB, name, arg, &rate, &v))
			return false;
		c->rate = (uint64_t)v;
		return true;
	case 'P': c->poisson = true; return true;
	case 'C': c->closed = true; return true;
	case 'j': c->json = true; return true;
	case 'p': c->plot_dir = arg; return true;
	case 'd': return tb_cli_unit(VERB, name, arg, &run_span, &c->duration_ns);
	case 'w':
		c->warmup_set = true;
		return tb_cli_unit(VERB, name, arg, &run_span_or_zero, &c->warmup_ns);
	case 'D':
		c->drain_set = true;
		return tb_cli_unit(VERB, name, arg, &run_span_or_zero, &c->drain_ns);
	case 'T': return tb_cli_unit(VERB, name, arg, &run_span, &c->stall_every_ns);
	case 'S': return tb_cli_unit(VERB, name, arg, &engine_ns, &c->stall_ns);
	case 'n': return tb_cli_unit(VERB, name, arg, &engine_ns, &c->service_ns);
	case 'l': return tb_cli_unit(VERB, name, arg, &late_ns, &c->late_ns);
	case 'q':
		if (!tb_cli_unit(VERB, name, arg, &queue, &v))
			return false;
		c->queue = (uint32_t)v;
		return true;
	case 'c':
	case 'e':
		if (!tb_cli_unit(VERB, name, arg, &cpu, &v))
			return false;
		*(opt == 'c' ? &c->cpu : &c->engine_cpu) = (int)v;
		return true;
	case 's':
		if (!tb_cli_unit(VERB, name, arg, &seed, &v))
			return false;
		c->seed = (uint64_t)v;
		return true;
	case 'W': return parse_sweep(name, arg, c);
	case 'R':
		if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
			tb_cli_bad_value(VERB, name, arg, "want on or off");
			return false;
		}
		c->record = strcmp(arg, "on") == 0;
		return true;
	case 'B': c->dir = arg; return true;
	}
	return false;
}

/* Checks across options, after the defaults that depend on others. */
static int check_config(struct config *c)
{
	if ((!c->bus && c->record) || (!c->rate && !c->sweep_steps) || !c->duration_ns) {
		tb_cli_error(VERB, "--bus (unless --record off), --rate (or --sweep) and --duration "
			     "are required");
		usage(stderr);
		return -EINVAL;
	}
	if (c->rate && c->sweep_steps) {
		tb_cli_error(VERB, "--rate and --sweep exclude each other");
		return -EINVAL;
	}
	if (!c->warmup_set)
		c->warmup_ns = (int64_t)((double)c->duration_ns * WARMUP_FRACTION);
	if (c->warmup_ns >= c->duration_ns) {
		tb_cli_error(VERB, "--warmup must be shorter than --duration");
		return -EINVAL;
	}
	if (!c->drain_set) {
		c->drain_ns = (int64_t)((double)c->duration_ns * DRAIN_DURATIONS);
		if (c->drain_ns < DRAIN_MIN_NS)
			c->drain_ns = DRAIN_MIN_NS;
	}
	if ((c->stall_ns > 0) != (c->stall_every_ns > 0)) {
		tb_cli_error(VERB, "--stall-every and --stall-ns go together");
		return -EINVAL;
	}
	if (c->stall_ns >= c->stall_every_ns && c->stall_ns > 0) {
		tb_cli_error(VERB, "--stall-ns must be shorter than --stall-every");
		return -EINVAL;
	}
	/* the longest name this run registers must be a valid metric name */
	char longest[NAME_BUF];
	int len = snprintf(longest, sizeof(longest), "%s%s.warmup", c->metric,
			   c->sweep_steps ? ".r1000000000" : "");
	if (len < 0 || (size_t)len >= sizeof(longest) || !tb_seg_metric_name_valid(c->metric) ||
	    !tb_seg_metric_name_valid(longest)) {
		tb_cli_error(VERB, "--metric '%s' is not a valid metric name: [A-Za-z0-9_.:-] only, "
			     "and short enough that '%s' fits in %d bytes",
			     c->metric, c->sweep_steps ? "<metric>.r<rate>.warmup" : "<metric>.warmup",
			     TB_METRIC_NAME_MAX - 1);
		return -EINVAL;
	}
	if (c->cpu >= 0 && c->cpu == c->engine_cpu) {
		tb_cli_error(VERB, "--engine-cpu must differ from --cpu: two spinning threads "
			     "cannot share a core");
		return -EINVAL;
	}
	return 0;
}

static int parse(int argc, char **argv, struct config *c)
{
	static const struct option longs[] = {
		{"bus", required_argument, 0, 'b'},	    {"rate", required_argument, 0, 'r'},
		{"poisson", no_argument, 0, 'P'},	    {"duration", required_argument, 0, 'd'},
		{"warmup", required_argument, 0, 'w'},	    {"service-ns", required_argument, 0, 'n'},
		{"stall-every", required_argument, 0, 'T'}, {"stall-ns", required_argument, 0, 'S'},
		{"closed", no_argument, 0, 'C'},	    {"sweep", required_argument, 0, 'W'},
		{"metric", required_argument, 0, 'm'},	    {"seed", required_argument, 0, 's'},
		{"json", no_argument, 0, 'j'},		    {"cpu", required_argument, 0, 'c'},
		{"engine-cpu", required_argument, 0, 'e'},  {"late-ns", required_argument, 0, 'l'},
		{"queue", required_argument, 0, 'q'},	    {"drain", required_argument, 0, 'D'},
		{"plot", required_argument, 0, 'p'},	    {"record", required_argument, 0, 'R'},
		{"dir", required_argument, 0, 'B'},	    {"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},	    {0, 0, 0, 0}};
	int opt, idx = 0;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 1;
		}
		if (opt == 'V') {
			tb_cli_version();
			return 1;
		}
		if (opt == '?' || opt == ':') {
			tb_cli_bad_option(VERB, opt, argv[optind - 1]);
			if (opt == '?')
				usage(stderr);
			return -EINVAL;
		}
		if (!parse_one(opt, longs[idx].name, optarg, c))
			return -EINVAL;
	}
	if (optind < argc) {
		tb_cli_error(VERB, "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return check_config(c);
}

/* ---- the bus ---- */

static tb_producer *attach_bus(const struct config *c, struct bus_state *b)
{
	tb_producer *p = tb_attach(c->bus, "load");
	if (!p)
		return NULL;
	const char *why = NULL;
	if (tb_producer_error(p, &why) < 0) {
		b->error = why ? why : "unknown error";
		tb_cli_error(VERB, "bus '%s' is unavailable (%s): running anyway; the figures below "
			     "are in-process only and nothing reaches a log",
			     c->bus, b->error);
	} else if (tb_producer_collector(p, NULL) != TB_COLLECTOR_SERVING) {
		b->no_collector = true;
		tb_cli_error(VERB, "no tailbusd is draining bus '%s': events wait in the ring and "
			     "are dropped (and counted) once it is full",
			     c->bus);
	}
	return p;
}

/* ---- the verb ---- */

static void sweep_rates(const struct config *c, uint64_t *rates, size_t *n)
{
	if (!c->sweep_steps) {
		rates[0] = c->rate;
		*n = 1;
		return;
	}
	*n = (size_t)c->sweep_steps;
	for (size_t k = 0; k < *n; k++) {
		double span = (double)(c->sweep_to - c->sweep_from);
		rates[k] = *n == 1 ? (uint64_t)c->sweep_from
				   : (uint64_t)llround((double)c->sweep_from +
						       span * (double)k / (double)(*n - 1));
	}
}

static int run_all(struct config *c, tb_producer *p, struct result *res, const uint64_t *rates,
		   size_t n, uint64_t *dropped)
{
	struct run *r = aligned_alloc(TB_CACHELINE, (sizeof(struct run) + TB_CACHELINE - 1) /
							    TB_CACHELINE * TB_CACHELINE);
	tb_load_req *buf = malloc(c->queue * sizeof(*buf));
	int rc = r && buf ? 0 : -ENOMEM;
	if (buf) /* every page touched now, not on the first lap of the timed loop */
		memset(buf, 0, c->queue * sizeof(*buf));
	for (size_t k = 0; rc == 0 && k < n; k++) {
		memset(r, 0, sizeof(*r));
		r->buf = buf;
		c->rate = rates[k];
		metric_names(c, c->sweep_steps > 0, &res[k]);
		rc = run_rate(r, c, p, &res[k], dropped);
	}
	free(buf);
	free(r);
	return rc;
}

/* The knee marker's label: the rate and which rule found it (tb_sweep_knee). */
static void knee_label(char *buf, size_t cap, const struct result *res, int knee, int rule)
{
	const struct result *k = &res[knee];
	if (rule == TB_KNEE_ACHIEVED)
		snprintf(buf, cap, "knee %" PRIu64 "/s: achieved %.0f%%", k->rate,
			 100.0 * k->achieved / (double)k->rate);
	else
		snprintf(buf, cap, "knee %" PRIu64 "/s: p99 %.1fx the lowest rate's", k->rate,
			 res[0].open.pct[P99] > 0
				 ? (double)k->open.pct[P99] / (double)res[0].open.pct[P99] : 0.0);
}

/* --plot DIR with --sweep: p50, p99, p99.9 and max against offered rate,
 * the knee marked with the rule that found it; a figure with fewer than
 * TB_MIN_SAMPLES_BEYOND samples beyond it is drawn hollow. The subtitle says
 * what was run and how many samples each rate had. Returns 0 or a negative
 * errno. */
static int plot_sweep(const struct config *c, const struct result *res, size_t n, int knee, int rule)
{
	static const char *labels[] = {"p50", "p99", "p99.9", "max"};
	static const double levels[] = {50.0, 99.0, 99.9, 100.0};
	enum { FIGS = 4 };
	tb_plot_point *pts = calloc(n * FIGS, sizeof(*pts));
	bool *weak = calloc(n * FIGS, sizeof(*weak));
	if (!pts || !weak) {
		free(pts);
		free(weak);
		return -ENOMEM;
	}
	tb_plot_series series[FIGS];
	int64_t fewest = INT64_MAX, most = 0;
	for (size_t k = 0; k < n; k++) {
		const tb_summary *s = &res[k].open;
		const int64_t v[FIGS] = {s->pct[P50], s->pct[P99], s->pct[P999], s->max};
		for (int f = 0; f < FIGS; f++) {
			pts[(size_t)f * n + k] = (tb_plot_point){(double)res[k].rate, (double)v[f]};
			weak[(size_t)f * n + k] = f < FIGS - 1 && !tb_percentile_sufficient(s->total, levels[f]);
		}
		fewest = s->total < fewest ? s->total : fewest;
		most = s->total > most ? s->total : most;
	}
	for (int f = 0; f < FIGS; f++)
		series[f] = (tb_plot_series){labels[f], pts + (size_t)f * n, n, NULL, TB_PLOT_SOLID, true,
					     weak + (size_t)f * n};
	char path[PATH_MAX], subtitle[256], low[32], high[32], knee_text[96] = "";
	tb_plot_count(low, sizeof(low), fewest);
	tb_plot_count(high, sizeof(high), most);
	snprintf(subtitle, sizeof(subtitle),
		 "bus %s, metric %s.r<rate>, %s loop, %s arrivals, %g s per rate after a %g s warm-up, "
		 "%s to %s samples per rate",
		 c->record && c->bus ? c->bus : "(none: --record off)", c->metric,
		 c->closed ? "closed" : "open", c->poisson ? "Poisson" : "constant",
		 (double)c->duration_ns / TB_NS_PER_SEC, (double)c->warmup_ns / TB_NS_PER_SEC, low, high);
	if (knee >= 0)
		knee_label(knee_text, sizeof(knee_text), res, knee, rule);
	snprintf(path, sizeof(path), "%s/latency-vs-rate.svg", c->plot_dir);
	mkdir(c->plot_dir, 0755);
	int rc = tb_plot_latency_vs_rate(path, "Latency from the intended time by offered rate",
					 subtitle, series, FIGS,
					 knee >= 0 ? (double)res[knee].rate : 0.0, knee_text);
	free(pts);
	free(weak);
	if (rc == 0)
		fprintf(c->json ? stderr : stdout, "plot: %s\n", path);
	return rc;
}

static void report(const struct config *c, const struct result *res, size_t n,
		   const struct bus_state *b)
{
	tb_sweep_point pts[SWEEP_STEPS_MAX];
	sweep_points(res, n, pts);
	int rule = TB_KNEE_NONE;
	int knee = n > 1 ? tb_sweep_knee(pts, n, &rule) : -1;
	int tail = n > 1 ? tb_sweep_tail(pts, n, knee) : TB_TAIL_NORMAL;
	if (c->plot_dir && n > 1 && plot_sweep(c, res, n, knee, rule) < 0)
		tb_cli_error(VERB, "cannot write the plot in %s", c->plot_dir);
	if (c->json) {
		print_json(res, n, c, knee, tail, b);
		return;
	}
	print_header(c, n);
	tb_cli_env_line(stdout);
	if (b->off)
		printf("recording off (--record off): nothing sent to the bus, in-process figures "
		       "only\n");
	else
		printf("bus '%s': %s\n", c->bus,
		       b->error ? "unavailable, in-process figures only"
		       : b->dropped ? "EVENTS DROPPED, the log is incomplete"
				    : "every event recorded");
	if (n > 1) {
		print_sweep(res, n, knee, tail, c);
		return;
	}
	printf("\n%" PRIu64 "/s as metric '%s'%s\n", res->rate, res->metric,
	       c->closed ? " (and '.closed')" : "");
	print_run(res, c);
	printf("(* fewer than %d samples beyond this percentile: too few to trust)\n",
	       TB_MIN_SAMPLES_BEYOND);
}

/* Roundup to a power of two: ck rings need one (and hold one less). */
static uint32_t ring_size_for(uint32_t queue)
{
	uint32_t n = QUEUE_MIN;
	while (n < queue + 1 && n < QUEUE_MAX)
		n <<= 1;
	return n;
}

/* Is `cpu` one this process may run on? Checked before anything is pinned. */
static bool cpu_allowed(int cpu)
{
	cpu_set_t set;
	return cpu < 0 || (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_ISSET(cpu, &set));
}

int tb_cmd_load(int argc, char **argv)
{
	struct config c = {.metric = DEFAULT_METRIC, .seed = 1, .late_ns = LATE_NS_DEFAULT,
			   .queue = QUEUE_DEFAULT, .cpu = -1, .engine_cpu = -1, .record = true};
	int rc = parse(argc, argv, &c);
	if (rc)
		return rc > 0 ? TB_EXIT_OK : TB_EXIT_USAGE;
	/* tb_attach has no directory argument: it searches $TAILBUS_DIR first,
	 * so --dir is that variable for this process (and its engine thread) */
	if (c.dir && setenv("TAILBUS_DIR", c.dir, 1) < 0) {
		tb_cli_error(VERB, "cannot use --dir '%s': %s", c.dir, strerror(errno));
		return TB_EXIT_USAGE;
	}
	c.queue = ring_size_for(c.queue);
	int bad_cpu = !cpu_allowed(c.cpu) ? c.cpu : !cpu_allowed(c.engine_cpu) ? c.engine_cpu : -1;
	if (bad_cpu >= 0 || (rc = pin_to(c.cpu)) < 0) {
		tb_cli_error(VERB, "cannot run on CPU %d: %s", bad_cpu >= 0 ? bad_cpu : c.cpu,
			     bad_cpu >= 0 ? "not among this process's CPUs" : strerror(-rc));
		return TB_EXIT_USAGE;
	}
	uint64_t rates[SWEEP_STEPS_MAX];
	size_t n;
	sweep_rates(&c, rates, &n);
	struct bus_state b = {.off = !c.record};
	/* with --record off no handle at all: the loop's clock reads take NULL */
	tb_producer *p = c.record ? attach_bus(&c, &b) : NULL;
	struct result *res = calloc(n, sizeof(*res));
	if ((c.record && !p) || !res) {
		tb_cli_error(VERB, "out of memory");
		free(res);
		tb_detach(p);
		return TB_EXIT_INPUT;
	}
	uint64_t engine_dropped = 0;
	rc = run_all(&c, p, res, rates, n, &engine_dropped);
	if (rc < 0) {
		tb_cli_error(VERB, "cannot run the engine thread on CPU %d: %s", c.engine_cpu,
			     strerror(-rc));
	} else {
		if (p) {
			tb_producer_stats st;
			tb_producer_stats_get(p, &st);
			b.dropped = b.error ? 0 : st.dropped + engine_dropped;
		}
		report(&c, res, n, &b);
	}
	bool unfinished = false;
	for (size_t k = 0; k < n; k++) {
		unfinished |= res[k].unsent || res[k].unserved;
		free(res[k].series);
	}
	if (b.dropped)
		tb_cli_error(VERB, "%" PRIu64 " events did not fit in the bus ring: the log misses "
			     "them (is tailbusd running and keeping up?)",
			     b.dropped);
	free(res);
	tb_detach(p);
	if (rc < 0)
		return TB_EXIT_USAGE;
	return b.error || b.dropped || unfinished ? TB_EXIT_INPUT : TB_EXIT_OK;
}
