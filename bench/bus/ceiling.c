/* ceiling.c - the machine's ceiling for the bus's data volume: the same
 * 16-byte events through the same size of shared-memory SPSC ring between
 * the same two cores, with nothing else done to them. What the collector
 * achieves is quoted as a share of this (bench/bus/run).
 *
 *   ceiling [--seconds S] [--procs N] [--rate R] [--cpus LIST] [--yield]
 *           [--consumer-cpu C] [--ring-events E] [--idle-us U]
 *           [--backoff-ns B] [--evict] [--stats]
 *
 * Producers: N processes (default 1), each with its own ring, pinned and
 * started as flood's are (bench_procs.h, which also parses the options the
 * two share); each writes events shaped as tb_span's (kind SPAN, one of
 * CEIL_METRICS metrics, the latencies of bench_bus.h, w1 = intended), at
 * full speed with one clock read per CEIL_CHUNK events, or paced at --rate R
 * events/s per producer exactly as flood paces. A full ring drops the event
 * and counts it, as tb_span does.
 *
 * The ring: E events (default TB_SEG_DEFAULT_RING_EVENTS, the bus's), with
 * the bus's protocol (seg_abi.h), the best a ring of this kind does: each
 * event publishes itself by the lap bit of its first word (stored after the
 * second, with release ordering), so the producer writes no shared index;
 * it keeps a private limit (consumer index + E, reloaded only when it
 * reaches it) instead of loading the consumer's line for every event. The
 * consumer index (a free-running 64-bit counter) is on a cache line of its
 * own.
 *
 * Consumer: one process pinned to --consumer-cpu (default 1), in
 * tailbusd's loop (tb_collector_run, tb_collector_pass_paced): a pass reads
 * the clock, then visits TB_SEG_DEFAULT_SLOTS rings (those without a
 * producer stay empty, one index load each as a free slot's state is);
 * a ring that does not hold a whole batch is left alone but every
 * CEIL_PARTIAL_NS (one load of the batch's last event tells), as tailbusd's;
 * each visit copies at most CEIL_BATCH events (tailbusd's batch) into a
 * small private buffer, one by one while their lap bit says they are
 * written (no decode, no histogram), and stores the consumer index
 * (release) if it took any;
 * after the pass the clock is read again (tailbusd's deadline checks), and
 * a pass that found nothing sleeps --idle-us U if given (tailbusd --idle-us;
 * bench/bus/run runs both busy-polling). While a ring holds a batch or more,
 * this is tailbusd's cadence exactly, with a copy for each event's work.
 *
 * The back-off, tailbusd's too (TB_COLLECTOR_DEFAULT_BACKOFF_NS): after a
 * pass in which no ring gave a whole batch (the consumer has caught up),
 * the consumer spins on its own clock for --backoff-ns B (default the
 * collector's) before the next pass. A caught-up consumer that visits
 * again at once pulls the event line being written away from the producer
 * on every pass, which slows a producer at full speed many times over
 * (bench/JOURNAL.md); the slowed producer is then easy to keep up with, so
 * a consumer as cheap as a copy stays caught up for good: a second, stable
 * state, below tailbusd's own rate. The back-off keeps both consumers out
 * of it. The back-off never delays a pass while
 * the producers are ahead (every pass then takes a whole batch), so the
 * figure is the copy at tailbusd's cadence; --backoff-ns 0 gives the bare
 * loop, to see the other state. It runs until the producers have finished
 * and the rings are empty.
 *
 * --evict: after each visit the consumer flushes from every cache the event
 * lines it has read to their end, as tailbusd --evict-lines does, so that
 * the producer's next write to them (a ring later) need not take them back
 * from the consumer's core.
 *
 * --stats prints to stderr the consumer's passes, the passes it backed off
 * after, the visits that took events and those that took a whole batch.
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
#include "evict.h"
#include "tailbus/segment.h"

#define CEIL_CHUNK 4096  /* events between clock reads at full speed */
#define CEIL_VALUES 4096 /* precomputed latencies, a power of two */
#define CEIL_METRICS 4   /* as flood's default */
#define CEIL_SINK 64     /* the consumer's private buffer, events (1 KiB) */
#define CEIL_BATCH 256   /* events per visit: tailbusd's TB_COLLECTOR_BATCH */
#define CEIL_HOUSEKEEP_NS 100000000LL /* tailbusd's TB_COLLECTOR_HOUSEKEEP_NS */
#define CEIL_BACKOFF_NS 2000 /* tailbusd's TB_COLLECTOR_DEFAULT_BACKOFF_NS (collector/collector.h) */
#define CEIL_PARTIAL_NS 1000000LL /* tailbusd's TB_COLLECTOR_PARTIAL_NS */
#define CEIL_DEFAULT_SECONDS 3.0
#define CEIL_CONSUMER_CPU 1

struct ceil_ring {
	alignas(BENCH_CACHELINE) uint64_t tail; /* consumer index: events copied out */
	/* events follow, from the next cache line */
};
#define CEIL_RING_HEADER ((sizeof(struct ceil_ring) + BENCH_CACHELINE - 1) / BENCH_CACHELINE * BENCH_CACHELINE)

struct ceiling {
	struct bench_procs_opts p; /* --seconds --procs --rate --cpus --yield */
	int consumer_cpu;
	int64_t idle_ns; /* sleep after a pass that found nothing; 0: busy-poll */
	int64_t backoff_ns; /* pause after a pass with no whole batch; 0: none */
	int evict;          /* TB_EVICT_*: how to flush the lines read (tailbusd --evict-lines) */
	bool stats;
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
	uint64_t mask, head, limit, lap;
	unsigned log2;
	uint64_t attempted, dropped;
	uint64_t w0[CEIL_VALUES];      /* kind, metric and latency, precomputed */
	uint64_t latency[CEIL_VALUES];
};

static inline void emit(struct producer *w, uint64_t w0, uint64_t w1)
{
	w->attempted++;
	if (__builtin_expect(w->head == w->limit, 0)) {
		/* acquire: the consumer's copies of those slots are done */
		w->limit = __atomic_load_n(&w->r->tail, __ATOMIC_ACQUIRE) + w->mask + 1;
		if (w->head == w->limit) {
			w->dropped++;
			return;
		}
	}
	uint64_t at = w->head & w->mask;
	if (__builtin_expect(at == 0, 0)) /* a new pass over the ring */
		w->lap = tb_lap_bit((uint32_t)w->head, w->log2);
	tb_event *e = &w->ev[at];
	__atomic_store_n(&e->w1, w1, __ATOMIC_RELAXED);
	/* release: the second word is written before the first, which shows the event */
	__atomic_store_n(&e->w0, w0 | w->lap, __ATOMIC_RELEASE);
	w->head++;
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
	struct bench_pace pace = bench_pace_init(start, o->p.rate, o->p.yield);
	uint64_t now = start;
	uint32_t k = 0;
	uint64_t total = bench_pace_total(o->p.rate, o->p.seconds), late = end + BENCH_PACE_GRACE_NS;
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

static int producer_main(const void *arg, struct bench_procs *ctl, int i)
{
	const struct ceiling *o = arg;
	static struct producer w;
	if (bench_procs_pin_producer(&o->p, ctl, i, "ceiling") < 0)
		return 1;
	w.r = ring_of(o, i);
	w.ev = events_of(o, i);
	w.mask = o->events - 1;
	w.log2 = (unsigned)__builtin_ctzll(o->events);
	w.limit = o->events; /* holds a whole ring */
	w.lap = tb_lap_bit(0, w.log2);
	bench_rng_state += (uint64_t)i;
	for (int k = 0; k < CEIL_VALUES; k++) {
		w.latency[k] = bench_latency_ns();
		w.w0[k] = TB_EV_SPAN | ((uint64_t)(k % CEIL_METRICS) << TB_METRIC_SHIFT) |
			  ((w.latency[k] & TB_FIELD_MASK) << TB_FIELD_SHIFT);
	}
	memset(w.ev, 0, o->events * sizeof(tb_event)); /* fault the ring in, as a bus's is */
	if (bench_procs_go(ctl) == 0)
		return 1;
	struct bench_sched sched = bench_sched_now();
	uint64_t start = (uint64_t)bench_mono_ns(), end = start + (uint64_t)(o->p.seconds * BENCH_NS_PER_SEC);
	uint64_t now = o->p.rate > 0 ? run_paced(&w, o, start, end) : run_full(&w, end);
	bench_procs_report(ctl, i, w.attempted, w.attempted - w.dropped, w.dropped, start, now, sched);
	return 0;
}

/* ---- consumer ---- */

/* Copy out what ring i holds, a batch at most; returns the events copied.
 * As tb_collector_pass_paced does (whole_only), a ring that does not hold a
 * whole batch, by the lap bit of the batch's last event, is left alone
 * unless its short read is due (*partial_after, CEIL_PARTIAL_NS after the
 * last); at the end every ring is read to its end. */
static uint64_t consume(const struct ceiling *o, int i, uint64_t *tail, int64_t *partial_after,
			int64_t now, bool whole_only, tb_event *sink)
{
	struct ceil_ring *r = ring_of(o, i);
	const tb_event *ev = events_of(o, i);
	uint64_t mask = o->events - 1, t = *tail, n = 0;
	unsigned log2 = (unsigned)__builtin_ctzll(o->events);
	uint64_t whole = CEIL_BATCH < o->events / 4 ? CEIL_BATCH : o->events / 4;
	if (whole_only && whole > 1 && now < *partial_after) {
		uint64_t last = t + whole - 1;
		uint64_t w0 = __atomic_load_n(&ev[last & mask].w0, __ATOMIC_RELAXED);
		if ((w0 & TB_LAP_BIT) != tb_lap_bit((uint32_t)last, log2))
			return 0;
	}
	for (; n < CEIL_BATCH; n++, t++) {
		const tb_event *e = &ev[t & mask];
		/* acquire: the second word is read after the first that shows the event */
		uint64_t w0 = __atomic_load_n(&e->w0, __ATOMIC_ACQUIRE);
		if ((w0 & TB_LAP_BIT) != tb_lap_bit((uint32_t)t, log2))
			break;
		sink[t & (CEIL_SINK - 1)] = (tb_event){w0, __atomic_load_n(&e->w1, __ATOMIC_RELAXED)};
		__asm__ volatile("" : : "r"(sink) : "memory"); /* each copy happens */
	}
	if (n < CEIL_BATCH)
		*partial_after = now + CEIL_PARTIAL_NS;
	if (n == 0)
		return 0;
	if (o->evict != TB_EVICT_NONE) /* whole lines only: never the one the producer is writing */
		for (uint64_t at = *tail & ~UINT64_C(3); at + 4 <= t; at += 4)
			tb_evict_line(o->evict, &ev[at & mask]);
	/* release: our reads of the slots are done before the producer reuses them */
	__atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
	*tail = t;
	return n;
}

/* What the consumer did, for --stats. */
struct pass_stats {
	uint64_t passes, short_passes, visits, full_visits;
};

/* One pass, as tb_collector_pass_paced: the clock read it stamps the pass
 * with, then every slot. Returns the events copied; *full: whether some ring
 * gave a whole batch. */
static uint64_t consume_pass(const struct ceiling *o, uint64_t *tails, int64_t *partial_after,
			     bool whole_only, tb_event *sink, bool *full, struct pass_stats *st)
{
	uint64_t got = 0;
	int64_t now = bench_mono_ns();
	*full = false;
	for (int i = 0; i < o->rings_visited; i++) {
		uint64_t n = consume(o, i, &tails[i], &partial_after[i], now, whole_only, sink);
		got += n;
		*full |= n == CEIL_BATCH;
		st->visits += n > 0;
		st->full_visits += n == CEIL_BATCH;
	}
	return got;
}

static int consumer_main(const void *arg, struct bench_procs *ctl, int me)
{
	const struct ceiling *o = arg;
	static tb_event sink[CEIL_SINK];
	uint64_t tails[BENCH_PROCS_MAX + TB_SEG_DEFAULT_SLOTS] = {0}, consumed = 0;
	int64_t partial_after[BENCH_PROCS_MAX + TB_SEG_DEFAULT_SLOTS] = {0};
	struct timespec idle = {0, (long)o->idle_ns};
	struct pass_stats st = {0, 0, 0, 0};
	if (bench_pin(o->consumer_cpu) < 0) {
		perror("ceiling: consumer sched_setaffinity");
		bench_procs_fail(ctl, me);
		return 1;
	}
	__atomic_add_fetch(&ctl->ready, 1, __ATOMIC_RELEASE);
	struct bench_sched sched = bench_sched_now();
	int64_t next_housekeep = bench_mono_ns() + CEIL_HOUSEKEEP_NS;
	for (;;) {
		bool stop = __atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE) != 0, full;
		/* tailbusd --idle-us reads short rings on every pass, as here */
		uint64_t got = consume_pass(o, tails, partial_after, !stop && o->idle_ns == 0, sink, &full,
					    &st);
		consumed += got;
		st.passes++;
		/* tb_collector_run's clock read after each pass, for its interval
		 * close and housekeeping deadlines; what they do is not copying */
		int64_t mono = bench_mono_ns();
		if (mono >= next_housekeep)
			next_housekeep = mono + CEIL_HOUSEKEEP_NS;
		if (stop && got == 0)
			break;
		if (got == 0 && o->idle_ns > 0) {
			nanosleep(&idle, NULL); /* tailbusd --idle-us */
		} else if (!full && o->backoff_ns > 0) {
			/* caught up: let the producers run free a moment (on the clock,
			 * touching no line of theirs) rather than pull the event line
			 * being written away every pass; see the header */
			st.short_passes++;
			while (bench_mono_ns() - mono < o->backoff_ns)
				bench_cpu_relax();
		}
	}
	struct bench_sched after = bench_sched_now();
	if (o->stats)
		fprintf(stderr, "ceiling: %" PRIu64 " passes, %" PRIu64 " backed off; %" PRIu64
			" visits took events, %" PRIu64 " a whole batch; %.1f events a visit\n",
			st.passes, st.short_passes, st.visits, st.full_visits,
			st.visits ? (double)consumed / (double)st.visits : 0.0);
	ctl->res[me].consumed = consumed;
	ctl->res[me].run_ns = after.run_ns - sched.run_ns;
	ctl->res[me].wait_ns = after.wait_ns - sched.wait_ns;
	ctl->res[me].done = 1;
	return 0;
}

/* ---- main ---- */

static int option(void *ctx, const char *a, const char *v, int *i)
{
	struct ceiling *o = ctx;
	if (strcmp(a, "--stats") == 0)
		o->stats = true;
	else if (strcmp(a, "--evict") == 0)
		o->evict = tb_evict_method();
	else if (strcmp(a, "--consumer-cpu") == 0 && v)
		o->consumer_cpu = atoi(v), (*i)++;
	else if (strcmp(a, "--idle-us") == 0 && v)
		o->idle_ns = atoll(v) * 1000, (*i)++;
	else if (strcmp(a, "--backoff-ns") == 0 && v)
		o->backoff_ns = atoll(v), (*i)++;
	else if (strcmp(a, "--ring-events") == 0 && v)
		o->events = strtoull(v, NULL, 10), (*i)++;
	else
		return 0;
	return 1;
}

static int parse(int argc, char **argv, struct ceiling *o)
{
	*o = (struct ceiling){.p = bench_procs_opts_default(CEIL_DEFAULT_SECONDS),
			      .consumer_cpu = CEIL_CONSUMER_CPU, .backoff_ns = CEIL_BACKOFF_NS,
			      .events = TB_SEG_DEFAULT_RING_EVENTS};
	if (bench_procs_parse(argc, argv, &o->p, option, o) < 0 || o->idle_ns < 0 ||
	    o->idle_ns >= 1000000000 || o->backoff_ns < 0 || o->backoff_ns >= 1000000000 ||
	    o->events < 2 || (o->events & (o->events - 1)) != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct ceiling o;
	if (parse(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: ceiling [--seconds S] [--procs 1..%d] [--rate EVENTS_PER_S] "
			"[--cpus LIST] [--consumer-cpu C] [--idle-us U] [--backoff-ns B] [--evict] [--stats] "
			"[--ring-events POW2] [--yield]\n",
			BENCH_PROCS_MAX);
		return 2;
	}
	int n = o.p.procs;
	o.stride = CEIL_RING_HEADER + o.events * sizeof(tb_event);
	o.rings_visited = n > TB_SEG_DEFAULT_SLOTS ? n : TB_SEG_DEFAULT_SLOTS;
	struct bench_procs *ctl = bench_procs_map();
	void *rings = mmap(NULL, (size_t)o.rings_visited * o.stride, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!ctl || rings == MAP_FAILED) {
		perror("ceiling: mmap");
		return 1;
	}
	o.rings = rings;
	/* the consumer is worker n, after the producers */
	pid_t pids[BENCH_PROCS_MAX + 1] = {0};
	pids[n] = bench_procs_fork(ctl, n, consumer_main, &o, "ceiling");
	for (int i = 0; i < n && pids[n] > 0 && (i == 0 || pids[i - 1] > 0); i++)
		pids[i] = bench_procs_fork(ctl, i, producer_main, &o, "ceiling");
	int ran = bench_procs_run(ctl, pids, n, (uint32_t)n + 1);
	int consumer = bench_procs_reap(&pids[n], 1);
	if (ran < 0 || consumer < 0) {
		fprintf(stderr, "ceiling: a producer or the consumer failed\n");
		return 1;
	}
	struct bench_proc_result sum = bench_procs_sum(ctl, n);
	uint64_t consumed = ctl->res[n].consumed;
	if (consumed != sum.written) {
		fprintf(stderr, "ceiling: the consumer copied %" PRIu64 " events, the producers "
			"wrote %" PRIu64 "\n", consumed, sum.written);
		return 1;
	}
	const struct bench_proc_result *c = &ctl->res[n];
	printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	       " %" PRIu64 " %" PRIu64 "\n", sum.attempted, sum.written, sum.dropped,
	       sum.elapsed_ns, sum.run_ns, sum.wait_ns, consumed, c->run_ns, c->wait_ns);
	return 0;
}
