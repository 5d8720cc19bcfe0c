/* ceiling.c - the machine's ceiling for the bus's data volume: the same
 * 16-byte events through the same size of shared-memory SPSC ring between
 * the same two cores, with nothing else done to them. What the collector
 * achieves is quoted as a share of this (bench/bus/run).
 *
 *   ceiling [--seconds S] [--procs N] [--rate R] [--cpus LIST]
 *           [--consumer-cpu C] [--ring-events E] [--yield]
 *
 * Producers: N processes (default 1), each with its own ring, pinned and
 * started as flood's are (bench_procs.h); each writes events shaped as
 * tb_span's (kind SPAN, one of CEIL_METRICS metrics, the latencies of
 * bench_bus.h, w1 = intended), at full speed with one clock read per
 * CEIL_CHUNK events, or paced at --rate R events/s per producer exactly as
 * flood paces. A full ring drops the event and counts it, as tb_span does.
 *
 * The ring: E events (default TB_SEG_DEFAULT_RING_EVENTS, the bus's), a
 * producer index and a consumer index on cache lines of their own, free-
 * running 64-bit counters, at most E - 1 events held (as a ck_ring of E
 * slots). This is the best a ring of this kind does, so the producer keeps
 * a private limit (consumer index + E - 1, reloaded only when it reaches it)
 * instead of loading the consumer's line for every event, and publishes its
 * index after every event, as an event must become visible at once.
 *
 * Consumer: one process pinned to --consumer-cpu (default 1), round robin
 * over the rings as tailbusd's drain pass goes over a bus's slots: every
 * pass visits TB_SEG_DEFAULT_SLOTS rings (those without a producer stay
 * empty), and each visit loads the ring's producer index (acquire), copies
 * at most CEIL_BATCH events (tailbusd's batch) into a small private buffer,
 * one by one (no decode, no histogram), and stores the consumer index
 * (release). The cadence matters as much as the copy: a consumer that
 * re-reads one ring's producer index as fast as it can pulls that line away
 * from the producer, which writes it for every event, and slows the
 * producer several times over (this ceiling did so at first and measured a
 * seventh of tailbusd's rate). It runs until the producers have finished
 * and the rings are empty.
 *
 * Prints one line: attempted written dropped elapsed_ns run_ns wait_ns
 * consumed consumer_run_ns consumer_wait_ns - the first six as flood prints
 * them (summed over producers), then the events the consumer copied (equal
 * to written, or ceiling fails) and the consumer's time on its CPU and
 * waiting for it, from its start to its end (schedstat).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_bus.h"
#include "bench_procs.h"
#include "tailbus/segment.h"

#define CEIL_CHUNK 4096  /* events between clock reads at full speed */
#define CEIL_VALUES 4096 /* precomputed latencies, a power of two */
#define CEIL_METRICS 4   /* as flood's default */
#define CEIL_SINK 64     /* the consumer's private buffer, events (1 KiB) */
#define CEIL_BATCH 256   /* events per visit: tailbusd's TB_COLLECTOR_BATCH */
#define CEIL_DEFAULT_SECONDS 3.0
#define CEIL_CONSUMER_CPU 1

struct ceil_ring {
	alignas(BENCH_CACHELINE) uint64_t head; /* producer index: events written */
	alignas(BENCH_CACHELINE) uint64_t tail; /* consumer index: events copied out */
	/* events follow, from the next cache line */
};
#define CEIL_RING_HEADER ((sizeof(struct ceil_ring) + BENCH_CACHELINE - 1) / BENCH_CACHELINE * BENCH_CACHELINE)

struct ceiling {
	double seconds;
	int procs;
	double rate;
	bool yield;
	int cpus[BENCH_PROCS_MAX];
	int ncpus;
	int consumer_cpu;
	int rings_visited; /* per pass: max(procs, TB_SEG_DEFAULT_SLOTS) */
	uint64_t events; /* per ring, a power of two */
	uint8_t *rings;  /* shared: procs x stride */
	size_t stride;
};

static struct ceil_ring *ring_of(const struct ceiling *o, int i)
{
	return (struct ceil_ring *)(o->rings + (size_t)i * o->stride);
}

static tb_event *events_of(const struct ceiling *o, int i)
{
	return (tb_event *)((uint8_t *)ring_of(o, i) + CEIL_RING_HEADER);
}

/* ---- producer ---- */

struct producer {
	struct ceil_ring *r;
	tb_event *ev;
	uint64_t mask, head, limit;
	uint64_t attempted, dropped;
	uint64_t w0[CEIL_VALUES];      /* kind, metric and latency, precomputed */
	uint64_t latency[CEIL_VALUES];
};

static inline void emit(struct producer *w, uint64_t w0, uint64_t w1)
{
	w->attempted++;
	if (__builtin_expect(w->head == w->limit, 0)) {
		/* acquire: the consumer's copies of those slots are done */
		w->limit = __atomic_load_n(&w->r->tail, __ATOMIC_ACQUIRE) + w->mask;
		if (w->head == w->limit) {
			w->dropped++;
			return;
		}
	}
	w->ev[w->head & w->mask] = (tb_event){w0, w1};
	w->head++;
	/* release: the event is written before the index that shows it */
	__atomic_store_n(&w->r->head, w->head, __ATOMIC_RELEASE);
}

static uint64_t run_full(struct producer *w, uint64_t end)
{
	uint64_t now;
	while ((now = (uint64_t)bench_mono_ns()) < end) {
		for (int k = 0; k < CEIL_CHUNK; k++)
			emit(w, w->w0[k], now - w->latency[k]);
	}
	return now;
}

static uint64_t run_paced(struct producer *w, const struct ceiling *o, uint64_t start,
			  uint64_t end)
{
	struct bench_pace pace = bench_pace_init(start, o->rate, o->yield);
	uint64_t now = start;
	uint32_t k = 0;
	uint64_t total = bench_pace_total(o->rate, o->seconds), late = end + BENCH_PACE_GRACE_NS;
	while (pace.batches < total && (now = (uint64_t)bench_mono_ns()) < late) {
		if (!bench_pace_due(&pace, now))
			continue;
		for (int i = 0; i < BENCH_PACE_BATCH; i++, k++) {
			uint32_t j = k & (CEIL_VALUES - 1);
			emit(w, w->w0[j], now - w->latency[j]);
		}
	}
	return now;
}

static int producer_main(const struct ceiling *o, struct bench_procs *ctl, int i)
{
	static struct producer w;
	if (o->ncpus && bench_pin(o->cpus[i % o->ncpus]) < 0) {
		perror("ceiling: sched_setaffinity");
		bench_procs_fail(ctl, i);
		return 1;
	}
	w.r = ring_of(o, i);
	w.ev = events_of(o, i);
	w.mask = o->events - 1;
	w.limit = w.mask; /* holds at most events - 1 */
	bench_rng_state += (uint64_t)i;
	for (int k = 0; k < CEIL_VALUES; k++) {
		w.latency[k] = bench_latency_ns();
		w.w0[k] = ((uint64_t)TB_EV_SPAN << TB_KIND_SHIFT) |
			  ((uint64_t)(k % CEIL_METRICS) << TB_METRIC_SHIFT) |
			  (w.latency[k] & TB_FIELD_MASK);
	}
	memset(w.ev, 0, o->events * sizeof(tb_event)); /* fault the ring in, as a bus's is */
	if (bench_procs_go(ctl) == 0)
		return 1;
	struct bench_sched sched = bench_sched_now();
	uint64_t start = (uint64_t)bench_mono_ns(), end = start + (uint64_t)(o->seconds * BENCH_NS_PER_SEC);
	uint64_t now = o->rate > 0 ? run_paced(&w, o, start, end) : run_full(&w, end);
	struct bench_sched after = bench_sched_now();
	ctl->res[i] = (struct bench_proc_result){
		.attempted = w.attempted, .written = w.attempted - w.dropped, .dropped = w.dropped,
		.elapsed_ns = now - start, .run_ns = after.run_ns - sched.run_ns,
		.wait_ns = after.wait_ns - sched.wait_ns, .done = 1};
	return 0;
}

/* ---- consumer ---- */

/* Copy out everything ring i holds; returns the events copied. */
static uint64_t consume(const struct ceiling *o, int i, uint64_t *tail, tb_event *sink)
{
	struct ceil_ring *r = ring_of(o, i);
	const tb_event *ev = events_of(o, i);
	/* acquire: the events up to head are written */
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), t = *tail;
	if (head == t)
		return 0;
	uint64_t mask = o->events - 1, n = head - t;
	if (n > CEIL_BATCH) {
		n = CEIL_BATCH;
		head = t + n;
	}
	for (; t != head; t++) {
		memcpy(&sink[t & (CEIL_SINK - 1)], &ev[t & mask], sizeof(tb_event));
		__asm__ volatile("" : : "r"(sink) : "memory"); /* each copy happens */
	}
	/* release: our reads of the slots are done before the producer reuses them */
	__atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
	*tail = t;
	return n;
}

static int consumer_main(const struct ceiling *o, struct bench_procs *ctl)
{
	static tb_event sink[CEIL_SINK];
	uint64_t tails[BENCH_PROCS_MAX + TB_SEG_DEFAULT_SLOTS] = {0}, consumed = 0;
	int me = o->procs;
	if (bench_pin(o->consumer_cpu) < 0) {
		perror("ceiling: consumer sched_setaffinity");
		bench_procs_fail(ctl, me);
		return 1;
	}
	__atomic_add_fetch(&ctl->ready, 1, __ATOMIC_RELEASE);
	struct bench_sched sched = bench_sched_now();
	for (;;) {
		bool stop = __atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE) != 0;
		uint64_t got = 0;
		for (int i = 0; i < o->rings_visited; i++)
			got += consume(o, i, &tails[i], sink);
		consumed += got;
		if (stop && got == 0)
			break;
	}
	struct bench_sched after = bench_sched_now();
	ctl->res[me].consumed = consumed;
	ctl->res[me].run_ns = after.run_ns - sched.run_ns;
	ctl->res[me].wait_ns = after.wait_ns - sched.wait_ns;
	ctl->res[me].done = 1;
	return 0;
}

/* ---- main ---- */

static int parse(int argc, char **argv, struct ceiling *o)
{
	*o = (struct ceiling){.seconds = CEIL_DEFAULT_SECONDS, .procs = 1,
			      .consumer_cpu = CEIL_CONSUMER_CPU,
			      .events = TB_SEG_DEFAULT_RING_EVENTS};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--yield") == 0)
			o->yield = true;
		else if (strcmp(a, "--seconds") == 0 && v)
			o->seconds = atof(v), i++;
		else if (strcmp(a, "--procs") == 0 && v)
			o->procs = atoi(v), i++;
		else if (strcmp(a, "--rate") == 0 && v)
			o->rate = atof(v), i++;
		else if (strcmp(a, "--consumer-cpu") == 0 && v)
			o->consumer_cpu = atoi(v), i++;
		else if (strcmp(a, "--ring-events") == 0 && v)
			o->events = strtoull(v, NULL, 10), i++;
		else if ((strcmp(a, "--cpus") == 0 || strcmp(a, "--cpu") == 0) && v) {
			o->ncpus = bench_parse_cpus(v, o->cpus, BENCH_PROCS_MAX);
			if (o->ncpus < 0)
				return -1;
			i++;
		} else
			return -1;
	}
	if (o->seconds <= 0 || o->procs < 1 || o->procs > BENCH_PROCS_MAX || o->rate < 0 ||
	    o->events < 2 || (o->events & (o->events - 1)) != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct ceiling o;
	if (parse(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: ceiling [--seconds S] [--procs 1..%d] [--rate EVENTS_PER_S] "
			"[--cpus LIST] [--consumer-cpu C] [--ring-events POW2] [--yield]\n",
			BENCH_PROCS_MAX);
		return 2;
	}
	o.stride = CEIL_RING_HEADER + o.events * sizeof(tb_event);
	o.rings_visited = o.procs > TB_SEG_DEFAULT_SLOTS ? o.procs : TB_SEG_DEFAULT_SLOTS;
	struct bench_procs *ctl = bench_procs_map();
	void *rings = mmap(NULL, (size_t)o.rings_visited * o.stride, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!ctl || rings == MAP_FAILED) {
		perror("ceiling: mmap");
		return 1;
	}
	o.rings = rings;
	pid_t pids[BENCH_PROCS_MAX + 1] = {0};
	fflush(NULL);
	pids[o.procs] = fork();
	if (pids[o.procs] == 0)
		_exit(consumer_main(&o, ctl));
	for (int i = 0; i < o.procs && pids[o.procs] > 0; i++) {
		fflush(NULL);
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(producer_main(&o, ctl, i));
		if (pids[i] < 0)
			break;
	}
	int started = bench_procs_start(ctl, (uint32_t)o.procs + 1);
	int reaped = bench_procs_reap(pids, o.procs);
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
	int consumer = bench_procs_reap(&pids[o.procs], 1);
	if (started < 0 || reaped < 0 || consumer < 0) {
		fprintf(stderr, "ceiling: a producer or the consumer failed\n");
		return 1;
	}
	struct bench_proc_result sum = bench_procs_sum(ctl, o.procs);
	uint64_t consumed = ctl->res[o.procs].consumed;
	if (consumed != sum.written) {
		fprintf(stderr, "ceiling: the consumer copied %" PRIu64 " events, the producers "
			"wrote %" PRIu64 "\n", consumed, sum.written);
		return 1;
	}
	const struct bench_proc_result *c = &ctl->res[o.procs];
	printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	       " %" PRIu64 " %" PRIu64 "\n", sum.attempted, sum.written, sum.dropped,
	       sum.elapsed_ns, sum.run_ns, sum.wait_ns, consumed, c->run_ns, c->wait_ns);
	return 0;
}
