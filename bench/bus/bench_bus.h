/* bench_bus.h - what the bus benchmarks share: the clock they time with,
 * median/min/max over runs, a scratch directory they remove afterwards, and
 * the latencies they record.
 *
 * Static functions only: each benchmark is one translation unit and nothing
 * here is on a timed path except bench_now_ns(), which brackets batches.
 *
 * Latencies (bench_latency_ns): a trading engine's, roughly - a body that is
 * log-normal around BENCH_BODY_MEDIAN_NS (sigma BENCH_BODY_SIGMA in ln
 * units, so about 4..25 us holds 95%) and a tail of BENCH_TAIL_PERMILLE per
 * mille spread log-uniformly over 100 us .. 10 ms. A fixed seed gives the
 * same values every run, and so the same instruction counts under callgrind.
 */
#ifndef TAILBUS_BENCH_BUS_H
#define TAILBUS_BENCH_BUS_H

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_NS_PER_SEC 1000000000.0
#define BENCH_NS_PER_MS 1000000.0
#define BENCH_RUNS_MAX 101
/* Where scratch segments go: tmpfs, as on a machine without hugetlbfs. */
#define BENCH_SHM_DIR "/dev/shm"

#define BENCH_BODY_MEDIAN_NS 10000.0 /* 10 us */
#define BENCH_BODY_SIGMA 0.5
#define BENCH_TAIL_PERMILLE 10       /* 1% of requests */
#define BENCH_TAIL_LOW_NS 100000.0   /* 100 us */
#define BENCH_TAIL_HIGH_NS 10000000.0 /* 10 ms */

static inline double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * BENCH_NS_PER_SEC + (double)ts.tv_nsec;
}

struct bench_figures {
	double median, min, max;
};

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v in place. */
static inline struct bench_figures bench_figures_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), bench_cmp_double);
	return (struct bench_figures){v[n / 2], v[0], v[n - 1]};
}

/* This thread's time on a CPU and waiting on a run queue for one, in ns
 * (/proc/thread-self/schedstat); zeros where the kernel has no schedstats.
 * On a shared machine the wait says how much of a timed stretch belonged
 * to other processes. */
struct bench_sched {
	uint64_t run_ns, wait_ns;
};

static inline struct bench_sched bench_sched_now(void)
{
	struct bench_sched s = {0, 0};
	FILE *f = fopen("/proc/thread-self/schedstat", "re");
	if (f) {
		unsigned long long run, wait;
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			s = (struct bench_sched){run, wait};
		fclose(f);
	}
	return s;
}

/* Percentage of the stretch since `from` spent waiting for a CPU. */
static inline double bench_sched_wait_pct(struct bench_sched from)
{
	struct bench_sched to = bench_sched_now();
	double run = (double)(to.run_ns - from.run_ns), wait = (double)(to.wait_ns - from.wait_ns);
	return run + wait > 0 ? 100.0 * wait / (run + wait) : 0.0;
}

/* xorshift64* with a fixed seed. */
static uint64_t bench_rng_state = 0x9e3779b97f4a7c15u;

static inline uint64_t bench_rng_next(void)
{
	bench_rng_state ^= bench_rng_state >> 12;
	bench_rng_state ^= bench_rng_state << 25;
	bench_rng_state ^= bench_rng_state >> 27;
	return bench_rng_state * 0x2545f4914f6cdd1du;
}

/* Uniform in (0, 1]. */
static inline double bench_uniform(void)
{
	return ((double)(bench_rng_next() >> 11) + 1.0) / (double)(UINT64_C(1) << 53);
}

static inline uint64_t bench_latency_ns(void)
{
	if (bench_rng_next() % 1000 < BENCH_TAIL_PERMILLE) {
		double u = bench_uniform();
		return (uint64_t)exp(log(BENCH_TAIL_LOW_NS) +
				     u * (log(BENCH_TAIL_HIGH_NS) - log(BENCH_TAIL_LOW_NS)));
	}
	/* Box-Muller: one standard normal from two uniforms */
	double z = sqrt(-2.0 * log(bench_uniform())) * cos(2.0 * M_PI * bench_uniform());
	return (uint64_t)(BENCH_BODY_MEDIAN_NS * exp(BENCH_BODY_SIGMA * z));
}

/* A fresh directory "<parent>/tailbus-bench-bus.XXXXXX" in out. 0 or -errno. */
static inline int bench_scratch_dir(char *out, size_t cap, const char *parent)
{
	if (snprintf(out, cap, "%s/tailbus-bench-bus.XXXXXX", parent) >= (int)cap)
		return -ENAMETOOLONG;
	return mkdtemp(out) ? 0 : -errno;
}

/* Remove a scratch directory and the plain files in it (segments, lock
 * files, logs: the benchmarks create nothing deeper). */
static inline void bench_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		char path[4096];
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

#endif
