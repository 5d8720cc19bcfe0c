/* bench_procs.h - what the cross-process bus benchmarks (flood.c, ceiling.c)
 * share: N producer processes started on one common clock tick, their
 * counters summed, and the pacing that holds each to a fixed rate.
 *
 * Processes: the parent maps one shared control block (anonymous, shared
 * across fork), forks the workers, waits until every one says it is ready
 * (attached, followed, pinned), then stores a start time a little in the
 * future. Every worker spins until that time, runs its window and stores its
 * counters in its own entry; the parent sums them after waitpid(). A worker
 * that fails says so in its entry and exits non-zero, and the parent gives
 * up waiting for it.
 *
 * Options (bench_procs_parse): the producers' ones both programs take,
 * --seconds S --procs N --rate R --cpus LIST (--cpu C) --yield, and each
 * program's own through a callback.
 *
 * Pacing (--rate R events/s per producer): events go out in batches of
 * BENCH_PACE_BATCH; batch k is due at start + k * BENCH_PACE_BATCH / R, and
 * the producer spins on the clock until then (with sched_yield() in the
 * spin when producers share a CPU, so the others can catch up meanwhile). A
 * producer that falls behind (preempted) sends its late batches at once, as
 * an open-loop engine serves the requests that queued up. A paced run sends
 * exactly the batches due in its window, R x S events, however late the
 * last ones go out (up to BENCH_PACE_GRACE_NS after the window); a producer
 * that cannot hold the rate shows it as an elapsed time longer than S.
 *
 * Times are CLOCK_MONOTONIC ns, one clock for every process on the machine.
 */
#ifndef TAILBUS_BENCH_PROCS_H
#define TAILBUS_BENCH_PROCS_H

#include <errno.h>
#include <sched.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_bus.h"

#define BENCH_PROCS_MAX 64
#define BENCH_CACHELINE 64
/* Events per paced batch: at 1 M events/s one batch every 64 us, at 100 M/s
 * every 0.64 us, where the batch's one clock read (tens of ns) is still small
 * beside its events. */
#define BENCH_PACE_BATCH 64
/* From "all ready" to the first event: time for every worker to see it. */
#define BENCH_START_DELAY_NS 20000000
#define BENCH_READY_TIMEOUT_MS 10000
#define BENCH_START_POLL_NS 50000
/* How long after its window a paced producer may still send the batches
 * that were due in it. */
#define BENCH_PACE_GRACE_NS 1000000000

/* The producers' options. */
struct bench_procs_opts {
	double seconds; /* each producer's window */
	int procs;      /* producer processes, each its own ring */
	double rate;    /* events/s per producer; 0: full speed */
	bool yield;     /* sched_yield() in the pacing spin (producers share a CPU) */
	int cpus[BENCH_PROCS_MAX];
	int ncpus; /* 0: not pinned */
};

/* One worker's counters: the producer's own, the window it ran, and its
 * time on a CPU and waiting for one meanwhile (schedstat). */
struct bench_proc_result {
	uint64_t attempted, written, dropped;
	uint64_t elapsed_ns, run_ns, wait_ns;
	uint64_t consumed; /* ceiling's consumer only */
	uint64_t folded;   /* flood's: SPANs a full ring folded into a lane (tb_producer_stats) */
	int32_t done;      /* 1: filled in; -1: the worker failed */
	int32_t reserved;
};

struct bench_procs {
	alignas(BENCH_CACHELINE) uint32_t ready; /* workers ready, added to atomically */
	uint32_t failed;
	alignas(BENCH_CACHELINE) int64_t start_ns; /* 0 until the parent sets it */
	alignas(BENCH_CACHELINE) uint32_t stop;    /* the consumer's cue (ceiling) */
	alignas(BENCH_CACHELINE) struct bench_proc_result res[BENCH_PROCS_MAX + 1];
};

static inline int64_t bench_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void bench_sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	nanosleep(&ts, NULL);
}

static inline void bench_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* The shared control block, or NULL with errno set. */
static inline struct bench_procs *bench_procs_map(void)
{
	void *m = mmap(NULL, sizeof(struct bench_procs), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : (struct bench_procs *)m;
}

static inline int bench_pin(int cpu)
{
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

/* "0,2-5" -> cpus[], their count (at most cap), or -1 on a malformed list. */
static inline int bench_parse_cpus(const char *s, int *cpus, int cap)
{
	int n = 0;
	while (*s) {
		char *e;
		long a = strtol(s, &e, 10), b = a;
		if (e == s || a < 0)
			return -1;
		if (*e == '-') {
			s = e + 1;
			b = strtol(s, &e, 10);
			if (e == s || b < a)
				return -1;
		}
		for (long c = a; c <= b && n < cap; c++)
			cpus[n++] = (int)c;
		if (*e != ',' && *e != '\0')
			return -1;
		s = *e ? e + 1 : e;
	}
	return n ? n : -1;
}

/* Defaults: one producer at full speed for `seconds`, not pinned. */
static inline struct bench_procs_opts bench_procs_opts_default(double seconds)
{
	struct bench_procs_opts o;
	memset(&o, 0, sizeof(o));
	o.seconds = seconds;
	o.procs = 1;
	return o;
}

/* argv[*i], if it is one of the producers' options: 1, its value taken (*i
 * moved onto it); 0 when it is not one; -1 on a malformed CPU list. */
static inline int bench_procs_opt(struct bench_procs_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	if (strcmp(a, "--yield") == 0) {
		o->yield = true;
		return 1;
	}
	if (!v)
		return 0;
	if (strcmp(a, "--seconds") == 0)
		o->seconds = atof(v);
	else if (strcmp(a, "--procs") == 0)
		o->procs = atoi(v);
	else if (strcmp(a, "--rate") == 0)
		o->rate = atof(v);
	else if (strcmp(a, "--cpus") == 0 || strcmp(a, "--cpu") == 0) {
		o->ncpus = bench_parse_cpus(v, o->cpus, BENCH_PROCS_MAX);
		if (o->ncpus < 0)
			return -1;
	} else
		return 0;
	(*i)++;
	return 1;
}

static inline bool bench_procs_opts_valid(const struct bench_procs_opts *o)
{
	return o->seconds > 0 && o->procs >= 1 && o->procs <= BENCH_PROCS_MAX && o->rate >= 0;
}

/* A program's own option `a` (its value `v`, NULL at the end of argv): 1
 * when taken (*i moved onto v if it took v), 0 when not one of its own. */
typedef int bench_opt_fn(void *ctx, const char *a, const char *v, int *i);

/* argv: the producers' options into *o, every other one through own().
 * 0, or -1 on an unknown or malformed option or invalid producer options. */
static inline int bench_procs_parse(int argc, char **argv, struct bench_procs_opts *o,
				    bench_opt_fn *own, void *ctx)
{
	for (int i = 1; i < argc; i++) {
		int rc = bench_procs_opt(o, argc, argv, &i);
		if (rc == 0)
			rc = own(ctx, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &i);
		if (rc <= 0)
			return -1;
	}
	return bench_procs_opts_valid(o) ? 0 : -1;
}

/* Worker side: ready, then wait for the start time and spin up to it.
 * Returns the start time, or 0 when the parent gave up. */
static inline int64_t bench_procs_go(struct bench_procs *c)
{
	__atomic_add_fetch(&c->ready, 1, __ATOMIC_RELEASE);
	int64_t start;
	while ((start = __atomic_load_n(&c->start_ns, __ATOMIC_ACQUIRE)) == 0)
		bench_sleep_ns(BENCH_START_POLL_NS);
	if (start < 0)
		return 0;
	while (bench_mono_ns() < start)
		bench_cpu_relax();
	return start;
}

static inline void bench_procs_fail(struct bench_procs *c, int i)
{
	c->res[i].done = -1;
	__atomic_add_fetch(&c->failed, 1, __ATOMIC_RELEASE);
}

/* Producer i pinned to the i-th CPU of --cpus (round robin); -1, said and
 * marked failed, when it cannot be. */
static inline int bench_procs_pin_producer(const struct bench_procs_opts *o, struct bench_procs *c,
					   int i, const char *who)
{
	int rc = o->ncpus ? bench_pin(o->cpus[i % o->ncpus]) : 0;
	if (rc < 0) {
		fprintf(stderr, "%s: sched_setaffinity: %s\n", who, strerror(-rc));
		bench_procs_fail(c, i);
		return -1;
	}
	return 0;
}

/* Worker i's counters for its window [start, end], and its schedstat since
 * `from` (taken at its start). */
static inline void bench_procs_report(struct bench_procs *c, int i, uint64_t attempted,
				      uint64_t written, uint64_t dropped, uint64_t start,
				      uint64_t end, struct bench_sched from)
{
	struct bench_sched to = bench_sched_now();
	c->res[i] = (struct bench_proc_result){
		.attempted = attempted, .written = written, .dropped = dropped,
		.elapsed_ns = end - start, .run_ns = to.run_ns - from.run_ns,
		.wait_ns = to.wait_ns - from.wait_ns, .done = 1};
}

/* Parent side: fork worker i, which runs fn(arg, c, i) and exits with what
 * it returns. Its pid, or -1 (said, and the worker marked failed). */
typedef int bench_worker_fn(const void *arg, struct bench_procs *c, int i);

static inline pid_t bench_procs_fork(struct bench_procs *c, int i, bench_worker_fn *fn,
				     const void *arg, const char *who)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(arg, c, i));
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", who, strerror(errno));
		bench_procs_fail(c, i);
	}
	return pid;
}

/* Parent side: wait until `n` workers are ready, then set the start time.
 * Returns 0, or -1 when one failed or they took too long (the workers are
 * told to give up). */
static inline int bench_procs_start(struct bench_procs *c, uint32_t n)
{
	for (int ms = 0; ms < BENCH_READY_TIMEOUT_MS; ms++) {
		if (__atomic_load_n(&c->failed, __ATOMIC_ACQUIRE)) {
			break;
		}
		if (__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) == n) {
			__atomic_store_n(&c->start_ns, bench_mono_ns() + BENCH_START_DELAY_NS,
					 __ATOMIC_RELEASE);
			return 0;
		}
		bench_sleep_ns(1000000);
	}
	__atomic_store_n(&c->start_ns, -1, __ATOMIC_RELEASE);
	return -1;
}

/* Parent side: reap `n` children; 0 when all exited 0. */
static inline int bench_procs_reap(const pid_t *pids, int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		if (pids[i] <= 0 || waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	}
	return bad ? -1 : 0;
}

/* Parent side, once the producers [0, n) (pids[i] each, <= 0 where a fork
 * failed) and any other workers are forked: start all `ready` of them, reap
 * the producers, then set `stop` for the others. 0, or -1 when one failed. */
static inline int bench_procs_run(struct bench_procs *c, const pid_t *pids, int n, uint32_t ready)
{
	int started = bench_procs_start(c, ready);
	int reaped = bench_procs_reap(pids, n);
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	return started < 0 || reaped < 0 ? -1 : 0;
}

/* Sum of workers [0, n): counters added, elapsed the longest. */
static inline struct bench_proc_result bench_procs_sum(const struct bench_procs *c, int n)
{
	struct bench_proc_result s;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < n; i++) {
		const struct bench_proc_result *r = &c->res[i];
		s.attempted += r->attempted;
		s.written += r->written;
		s.dropped += r->dropped;
		s.folded += r->folded;
		s.run_ns += r->run_ns;
		s.wait_ns += r->wait_ns;
		s.elapsed_ns = r->elapsed_ns > s.elapsed_ns ? r->elapsed_ns : s.elapsed_ns;
	}
	return s;
}

/* flood's line: attempted written dropped elapsed_ns run_ns wait_ns
 * folded (what bench/bus/run reads). */
static inline void bench_procs_print(const struct bench_proc_result *s)
{
	printf("%llu %llu %llu %llu %llu %llu %llu\n", (unsigned long long)s->attempted,
	       (unsigned long long)s->written, (unsigned long long)s->dropped,
	       (unsigned long long)s->elapsed_ns, (unsigned long long)s->run_ns,
	       (unsigned long long)s->wait_ns, (unsigned long long)s->folded);
}

/* ---- pacing ---- */

struct bench_pace {
	uint64_t start;
	double ns_per_batch; /* 0: full speed */
	uint64_t batches;    /* sent so far */
	bool yield;
};

static inline struct bench_pace bench_pace_init(uint64_t start, double rate, bool yield)
{
	struct bench_pace p = {start, rate > 0 ? BENCH_PACE_BATCH * 1e9 / rate : 0, 0, yield};
	return p;
}

/* The batches due in a window of `seconds` at `rate` events/s. */
static inline uint64_t bench_pace_total(double rate, double seconds)
{
	return (uint64_t)(rate * seconds / BENCH_PACE_BATCH + 0.5);
}

/* Whether the next batch is due at `now`; if not, spin once (or yield). */
static inline bool bench_pace_due(struct bench_pace *p, uint64_t now)
{
	if (now >= p->start + (uint64_t)((double)p->batches * p->ns_per_batch)) {
		p->batches++;
		return true;
	}
	if (p->yield)
		sched_yield();
	else
		bench_cpu_relax();
	return false;
}

#endif
