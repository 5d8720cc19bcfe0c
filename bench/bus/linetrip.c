/* linetrip.c - how long a cache line takes to go from one CPU to another and
 * back, between the two CPUs the cross-process benchmarks use, printed
 * beside each pair of runs.
 *
 *   linetrip [--cpus A,B] [--rounds R] [--trips N]
 *
 * Two threads, pinned to A (default 0) and B (default 1), pass a counter
 * back and forth: A writes i to its line and waits for i on B's line, B
 * waits for i on A's line and writes it to its own. Each round times N
 * (default 20000) such trips; R rounds (default 7). Prints one line: the
 * median, min and max over rounds of the nanoseconds one trip took (two
 * line transfers, each a write on one CPU followed by a read on the other).
 *
 * Between cores that share a cache the figure is tens of ns, between
 * sockets or virtual CPUs it can be ten times more (bench/bus/RESULTS.md has
 * this machine's). Every line of a ring crosses between the two once a pass,
 * and its index lines more often. It does not by itself say how fast a ring
 * goes: other load on the machine moves the ring's rate as much.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_bus.h"
#include "bench_procs.h"

/* each on a pair of lines of its own, so the adjacent-line prefetcher of
 * one never fetches the other */
static alignas(128) volatile uint64_t ping;
static alignas(128) volatile uint64_t pong;

struct trip {
	int cpu_a, cpu_b, rounds;
	uint64_t trips;
};

static void *answer(void *arg)
{
	const struct trip *t = arg;
	if (bench_pin(t->cpu_b) < 0) {
		perror("linetrip: sched_setaffinity");
		exit(1);
	}
	uint64_t total = (uint64_t)t->rounds * t->trips;
	for (uint64_t i = 1; i <= total; i++) {
		while (ping != i)
			bench_cpu_relax();
		pong = i;
	}
	return NULL;
}

static int parse(int argc, char **argv, struct trip *t)
{
	*t = (struct trip){.cpu_a = 0, .cpu_b = 1, .rounds = 7, .trips = 20000};
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--cpus") == 0 && v && sscanf(v, "%d,%d", &t->cpu_a, &t->cpu_b) == 2)
			i++;
		else if (strcmp(argv[i], "--rounds") == 0 && v)
			t->rounds = atoi(v), i++;
		else if (strcmp(argv[i], "--trips") == 0 && v)
			t->trips = strtoull(v, NULL, 10), i++;
		else
			return -1;
	}
	if (t->rounds < 1 || t->rounds > BENCH_RUNS_MAX || t->trips < 1 || t->cpu_a < 0 ||
	    t->cpu_b < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct trip t;
	if (parse(argc, argv, &t) < 0) {
		fprintf(stderr, "usage: linetrip [--cpus A,B] [--rounds 1..%d] [--trips N]\n",
			BENCH_RUNS_MAX);
		return 2;
	}
	if (bench_pin(t.cpu_a) < 0) {
		perror("linetrip: sched_setaffinity");
		return 1;
	}
	pthread_t other;
	if (pthread_create(&other, NULL, answer, &t) != 0) {
		perror("linetrip: pthread_create");
		return 1;
	}
	double per_trip[BENCH_RUNS_MAX];
	uint64_t i = 0;
	for (int r = 0; r < t.rounds; r++) {
		double t0 = bench_now_ns();
		for (uint64_t k = 0; k < t.trips; k++) {
			ping = ++i;
			while (pong != i)
				bench_cpu_relax();
		}
		per_trip[r] = (bench_now_ns() - t0) / (double)t.trips;
	}
	pthread_join(other, NULL);
	struct bench_figures f = bench_figures_of(per_trip, t.rounds);
	printf("%.1f %.1f %.1f\n", f.median, f.min, f.max);
	return 0;
}
