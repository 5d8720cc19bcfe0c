/* flood.c - one engine thread recording tb_span as fast as it can, for the
 * cross-process test in bench/bus/run (tailbusd on another core drains it).
 *
 *   flood --bus B [--seconds S] [--metrics M] [--now] [--no-wait] [--cpu N]
 *
 * Latencies are the ones of bench_bus.h, precomputed; metrics "flood0" ..
 * "flood{M-1}" take turns. By default the completion time is read from the
 * bus clock once per FLOOD_CHUNK events (so events carry real times, and the
 * loop is tb_span alone); --now reads tb_now() for every event, as an engine
 * that times each request does.
 *
 * Until the collector follows a new ring, the ring fills and the rest is
 * dropped. So that the timed flood measures the steady state whenever the
 * collector follows (at once, or at its next housekeeping), flood first waits
 * for the collector's heartbeat, which it stores after each housekeeping
 * (every TB_COLLECTOR_HOUSEKEEP_NS, 100 ms), to move twice (the first move
 * may end a pass that had already looked at our slot), and only then starts;
 * --no-wait starts at once, to measure the start-up loss.
 *
 * Prints one line: attempted written dropped elapsed_ns run_ns wait_ns -
 * the producer's own counters, the flood's length, and this thread's time
 * on a CPU and waiting for one meanwhile (schedstat). Then it detaches:
 * tailbusd drains what is left.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_bus.h"
#include "tailbus/producer.h"
#include "tailbus/segment.h"

#define FLOOD_CHUNK 4096 /* events between clock reads (and deadline checks) */
#define FLOOD_VALUES 4096
#define FLOOD_MAX_METRICS 64
#define FLOOD_DEFAULT_SECONDS 3.0
#define FOLLOW_TIMEOUT_MS 2000 /* twenty housekeeping periods */
#define FOLLOW_BEATS 2

struct flood {
	const char *bus;
	double seconds;
	int metrics;
	bool per_event_clock;
	bool no_wait;
	int cpu;
};

static int parse(int argc, char **argv, struct flood *o)
{
	*o = (struct flood){.bus = NULL, .seconds = FLOOD_DEFAULT_SECONDS, .metrics = 4, .cpu = -1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--now") == 0)
			o->per_event_clock = true;
		else if (strcmp(a, "--no-wait") == 0)
			o->no_wait = true;
		else if (strcmp(a, "--bus") == 0 && v)
			o->bus = v, i++;
		else if (strcmp(a, "--seconds") == 0 && v)
			o->seconds = atof(v), i++;
		else if (strcmp(a, "--metrics") == 0 && v)
			o->metrics = atoi(v), i++;
		else if (strcmp(a, "--cpu") == 0 && v)
			o->cpu = atoi(v), i++;
		else
			return -1;
	}
	if (!o->bus || o->seconds <= 0 || o->metrics < 1 || o->metrics > FLOOD_MAX_METRICS)
		return -1;
	return 0;
}

/* Until the collector has housekept FOLLOW_BEATS times since we attached.
 * False when no collector does within FOLLOW_TIMEOUT_MS. */
static bool wait_followed(const tb_producer *p)
{
	const tb_seg_header *h = (const tb_seg_header *)((const tb_seg *)p->seg)->base;
	int64_t last = __atomic_load_n(&h->collector_heartbeat_ns, __ATOMIC_ACQUIRE);
	int beats = 0;
	for (int ms = 0; ms < FOLLOW_TIMEOUT_MS && beats < FOLLOW_BEATS; ms++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		int64_t now = __atomic_load_n(&h->collector_heartbeat_ns, __ATOMIC_ACQUIRE);
		beats += now != last;
		last = now;
	}
	return beats == FOLLOW_BEATS;
}

int main(int argc, char **argv)
{
	struct flood o;
	if (parse(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: flood --bus B [--seconds S] [--metrics 1..%d] [--now] "
			"[--no-wait] [--cpu N]\n", FLOOD_MAX_METRICS);
		return 2;
	}
	if (o.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			perror("flood: sched_setaffinity");
			return 1;
		}
	}
	tb_producer *p = tb_attach(o.bus, "flood");
	const char *why = NULL;
	if (!p || tb_producer_error(p, &why) != 0) {
		fprintf(stderr, "flood: bus %s: %s\n", o.bus, p ? why : "out of memory");
		return 1;
	}
	static uint64_t latency[FLOOD_VALUES];
	static tb_metric_t metric_of[FLOOD_VALUES]; /* metric ids in turn, precomputed */
	tb_metric_t ids[FLOOD_MAX_METRICS];
	for (int m = 0; m < o.metrics; m++) {
		char name[32];
		snprintf(name, sizeof(name), "flood%d", m);
		ids[m] = tb_metric(p, name);
	}
	for (int i = 0; i < FLOOD_VALUES; i++) {
		latency[i] = bench_latency_ns();
		metric_of[i] = ids[i % o.metrics];
	}
	if (!o.no_wait && !wait_followed(p)) {
		fprintf(stderr, "flood: no collector housekept bus %s within %d ms\n", o.bus,
			FOLLOW_TIMEOUT_MS);
		tb_detach(p);
		return 1;
	}
	struct bench_sched sched = bench_sched_now();
	uint64_t start = tb_now(p), end = start + (uint64_t)(o.seconds * BENCH_NS_PER_SEC), now;
	while ((now = tb_now(p)) < end) {
		if (o.per_event_clock) {
			for (int k = 0; k < FLOOD_CHUNK; k++) {
				uint64_t done = tb_now(p);
				tb_span(p, metric_of[k], done - latency[k], done);
			}
		} else {
			for (int k = 0; k < FLOOD_CHUNK; k++)
				tb_span(p, metric_of[k], now - latency[k], now);
		}
	}
	struct bench_sched after = bench_sched_now();
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
	       st.attempted, st.written, st.dropped, now - start, after.run_ns - sched.run_ns,
	       after.wait_ns - sched.wait_ns);
	tb_detach(p);
	return 0;
}
