/* flood.c - engine threads recording tb_span, for the cross-process tests in
 * bench/bus/run (tailbusd on another core drains them): one producer as fast
 * as it can, or N producer processes, each its own ring, each at a fixed
 * rate.
 *
 *   flood --bus B [--seconds S] [--metrics M] [--now] [--no-wait]
 *         [--procs N] [--rate R] [--cpus LIST] [--cpu C] [--yield]
 *
 * Latencies are the ones of bench_bus.h, precomputed; metrics "flood0" ..
 * "flood{M-1}" take turns. At full speed (no --rate) the completion time is
 * read from the bus clock once per FLOOD_CHUNK events (so events carry real
 * times, and the loop is tb_span alone); --now reads tb_now() for every
 * event, as an engine that times each request does.
 *
 * --procs N forks N producer processes (default 1), each attached with its
 * own handle and ring ("flood-<i>"), all starting on one clock tick
 * (bench_procs.h). --rate R paces each at R events/s and sends R x S
 * events in all: batches of BENCH_PACE_BATCH, each stamped with one clock
 * read, the producer spinning on the clock between them (--yield: calling sched_yield() while it spins,
 * for producers that share a CPU). --cpus "0,2-5" pins producer i to the
 * i-th CPU of the list, round robin (--cpu C: all on C).
 *
 * Until the collector follows a new ring, the ring fills and the rest is
 * dropped. So that the timed flood measures the steady state whenever the
 * collector follows (at once, or at its next housekeeping), every producer
 * first waits for the collector's heartbeat, which it stores after each
 * housekeeping (every TB_COLLECTOR_HOUSEKEEP_NS, 100 ms), to move twice (the
 * first move may end a pass that had already looked at our slot), and only
 * then says it is ready; --no-wait starts at once, to measure the start-up
 * loss.
 *
 * Prints one line: attempted written dropped elapsed_ns run_ns wait_ns
 * folded - the producers' own counters (tb_producer_stats_get) summed, the
 * window's length, the producers' time on a CPU and waiting for one
 * meanwhile (schedstat), summed, and the SPANs a full ring folded into a
 * fold lane (0 with tailbusd --fold-lanes 0). Then each detaches: tailbusd drains what is left.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_bus.h"
#include "bench_procs.h"
#include "bench_seg.h"
#include "tailbus/producer.h"

#define FLOOD_CHUNK 4096 /* events between clock reads (and deadline checks) */
#define FLOOD_VALUES 4096
#define FLOOD_MAX_METRICS 64
#define FLOOD_DEFAULT_SECONDS 3.0
#define FOLLOW_TIMEOUT_MS 2000 /* twenty housekeeping periods */
#define FOLLOW_BEATS 2

struct flood {
	const char *bus;
	int metrics;
	bool per_event_clock;
	bool no_wait;
	struct bench_procs_opts p; /* --seconds --procs --rate --cpus --yield */
};

static int option(void *ctx, const char *a, const char *v, int *i)
{
	struct flood *o = ctx;
	if (strcmp(a, "--now") == 0)
		o->per_event_clock = true;
	else if (strcmp(a, "--no-wait") == 0)
		o->no_wait = true;
	else if (strcmp(a, "--bus") == 0 && v)
		o->bus = v, (*i)++;
	else if (strcmp(a, "--metrics") == 0 && v)
		o->metrics = atoi(v), (*i)++;
	else
		return 0;
	return 1;
}

static int parse(int argc, char **argv, struct flood *o)
{
	*o = (struct flood){.bus = NULL, .metrics = 4,
			    .p = bench_procs_opts_default(FLOOD_DEFAULT_SECONDS)};
	if (bench_procs_parse(argc, argv, &o->p, option, o) < 0 || !o->bus || o->metrics < 1 ||
	    o->metrics > FLOOD_MAX_METRICS)
		return -1;
	return 0;
}

/* Until the collector has housekept FOLLOW_BEATS times since we attached.
 * False when no collector does within FOLLOW_TIMEOUT_MS. */
static bool wait_followed(const tb_seg *s)
{
	int64_t last = bench_seg_heartbeat(s);
	int beats = 0;
	for (int ms = 0; ms < FOLLOW_TIMEOUT_MS && beats < FOLLOW_BEATS; ms++) {
		bench_sleep_ns(1000000);
		int64_t now = bench_seg_heartbeat(s);
		beats += now != last;
		last = now;
	}
	return beats == FOLLOW_BEATS;
}

struct producer {
	tb_producer *p;
	uint64_t latency[FLOOD_VALUES];
	tb_metric_t metric_of[FLOOD_VALUES]; /* metric ids in turn, precomputed */
};

/* As fast as it can, until `end`; returns the last clock read. */
static uint64_t run_full(struct producer *w, const struct flood *o, uint64_t end)
{
	tb_producer *p = w->p;
	uint64_t now;
	while ((now = tb_now(p)) < end) {
		if (o->per_event_clock) {
			for (int k = 0; k < FLOOD_CHUNK; k++) {
				uint64_t done = tb_now(p);
				tb_span(p, w->metric_of[k], done - w->latency[k], done);
			}
		} else {
			for (int k = 0; k < FLOOD_CHUNK; k++)
				tb_span(p, w->metric_of[k], now - w->latency[k], now);
		}
	}
	return now;
}

/* At o->p.rate events/s, batches of BENCH_PACE_BATCH, until `end`. */
static uint64_t run_paced(struct producer *w, const struct flood *o, uint64_t start, uint64_t end)
{
	tb_producer *p = w->p;
	struct bench_pace pace = bench_pace_init(start, o->p.rate, o->p.yield);
	uint64_t now = start;
	uint32_t k = 0;
	uint64_t total = bench_pace_total(o->p.rate, o->p.seconds), late = end + BENCH_PACE_GRACE_NS;
	while (pace.batches < total && (now = tb_now(p)) < late) {
		if (!bench_pace_due(&pace, now))
			continue;
		for (int i = 0; i < BENCH_PACE_BATCH; i++, k++) {
			uint32_t j = k & (FLOOD_VALUES - 1);
			uint64_t done = o->per_event_clock ? tb_now(p) : now;
			tb_span(p, w->metric_of[j], done - w->latency[j], done);
		}
	}
	return now;
}

/* Producer i, in its own process: attach, wait to be followed, run, report. */
static int producer_main(const void *arg, struct bench_procs *ctl, int i)
{
	const struct flood *o = arg;
	static struct producer w;
	char name[TB_THREAD_NAME_MAX];
	snprintf(name, sizeof(name), "flood-%d", i);
	const char *why = NULL;
	if (bench_procs_pin_producer(&o->p, ctl, i, "flood") < 0)
		return 1;
	w.p = tb_attach(o->bus, name);
	if (!w.p || tb_producer_error(w.p, &why) != 0) {
		fprintf(stderr, "flood: bus %s: %s\n", o->bus, w.p ? why : "out of memory");
		bench_procs_fail(ctl, i);
		return 1;
	}
	tb_metric_t ids[FLOOD_MAX_METRICS];
	for (int m = 0; m < o->metrics; m++) {
		char mname[32];
		snprintf(mname, sizeof(mname), "flood%d", m);
		ids[m] = tb_metric(w.p, mname);
	}
	bench_rng_state += (uint64_t)i; /* each producer its own latencies */
	for (int k = 0; k < FLOOD_VALUES; k++) {
		w.latency[k] = bench_latency_ns();
		w.metric_of[k] = ids[k % o->metrics];
	}
	if (!o->no_wait) {
		tb_seg seg;
		bool followed = false;
		if (bench_seg_open(&seg, NULL, o->bus, &why) == 0) {
			followed = wait_followed(&seg);
			tb_seg_close(&seg);
		}
		if (!followed) {
			fprintf(stderr, "flood: no collector housekept bus %s within %d ms\n", o->bus,
				FOLLOW_TIMEOUT_MS);
			tb_detach(w.p);
			bench_procs_fail(ctl, i);
			return 1;
		}
	}
	int64_t go = bench_procs_go(ctl);
	if (go == 0) {
		tb_detach(w.p);
		return 1;
	}
	struct bench_sched sched = bench_sched_now();
	uint64_t start = tb_now(w.p), end = start + (uint64_t)(o->p.seconds * BENCH_NS_PER_SEC);
	uint64_t now = o->p.rate > 0 ? run_paced(&w, o, start, end) : run_full(&w, o, end);
	tb_producer_stats st;
	tb_producer_stats_get(w.p, &st);
	bench_procs_report(ctl, i, st.attempted, st.written, st.dropped, start, now, sched);
	ctl->res[i].folded = st.folded;
	tb_detach(w.p);
	return 0;
}

int main(int argc, char **argv)
{
	struct flood o;
	if (parse(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: flood --bus B [--seconds S] [--metrics 1..%d] [--now] "
			"[--no-wait] [--procs 1..%d] [--rate EVENTS_PER_S] [--cpus LIST] [--yield]\n",
			FLOOD_MAX_METRICS, BENCH_PROCS_MAX);
		return 2;
	}
	struct bench_procs *ctl = bench_procs_map();
	if (!ctl) {
		perror("flood: mmap");
		return 1;
	}
	pid_t pids[BENCH_PROCS_MAX] = {0};
	for (int i = 0; i < o.p.procs && (i == 0 || pids[i - 1] > 0); i++)
		pids[i] = bench_procs_fork(ctl, i, producer_main, &o, "flood");
	if (bench_procs_run(ctl, pids, o.p.procs, (uint32_t)o.p.procs) < 0) {
		fprintf(stderr, "flood: a producer failed\n");
		return 1;
	}
	struct bench_proc_result sum = bench_procs_sum(ctl, o.p.procs);
	bench_procs_print(&sum);
	return 0;
}
