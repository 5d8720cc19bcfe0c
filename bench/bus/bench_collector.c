/* bench_collector.c - what the collector's work costs on one core, in
 * process: draining rings into histograms, and closing an interval.
 *
 * The collector is the real one (tb_collector_open on a scratch bus under
 * /dev/shm, its log in a scratch directory; both removed at exit), and the
 * producers are real handles (tb_attach) in this same process, so the
 * collector follows their slots exactly as tailbusd would. Events are SPANs
 * over a few metrics with the latencies of bench_bus.h, all completing in the
 * collector's current interval (no late or next-interval events).
 *
 *   drain   1 ring, DRAIN_METRICS metrics. Untimed: fill the ring to its
 *           capacity - 1 events with tb_span. Timed: tb_collector_drain_all()
 *           (decode, validate, record into the (ring, metric) histogram).
 *           A run repeats fill + drain until --min-ms of draining; its
 *           figure is the median drain's events per second of drain time. The events were just
 *           written by this core, so this is the in-cache best case: the
 *           cross-process test in bench/bus/run has the producer on another core.
 *   drain_xcore  the same, but each fill runs on another CPU (a thread pinned
 *           to PRODUCER_CPU) and is finished before the timed drain starts:
 *           every event line comes from the other core's cache, with no
 *           producer running at the same time. Between drain (in cache) and
 *           the cross-process test (both at once), it isolates what the
 *           cache-line transfers alone cost.
 *   close   CLOSE_RINGS rings x CLOSE_METRICS metrics (docs/design.md's
 *           per-second housekeeping case). Untimed: fill every ring to its
 *           capacity - 1 events over all metrics, drain everything, reap the
 *           log writer's finished writes (tailbusd does that every 100 ms).
 *           Timed: tb_collector_close_interval() - merge per metric, publish
 *           to the live area, encode and queue the log lines and the health
 *           sidecar, reset the closed histograms. One run is one interval; at
 *           1 s intervals its ms are the collector's ms of CPU per second.
 *           Its thread CPU time is reported too (cpu_ms): on a shared
 *           machine the wall time includes turns another process had.
 *           The first close of each bank of the series is reported apart
 *           (close_first): it is the one that faults the counts' pages in.
 *           Each close's minor page faults (getrusage) are reported too:
 *           unlike its ms they do not depend on what else runs.
 *
 * The benchmark's own thread is pinned to COLLECTOR_CPU (when the machine has
 * it), as tailbusd is with --cpu in the cross-process test. With TB_EVICT
 * set in the environment the collector flushes each event line it has read
 * (tailbusd --evict-lines), to see what that costs the drain.
 *
 *   bench_collector [--runs R] [--min-ms MS] [--tsv]
 * Single-operation mode, for callgrind with --toggle-collect on
 * tb_collector_drain_all or tb_collector_close_interval (so the untimed fill
 * is not counted): N fill+drain cycles, or N intervals. drain_many is drain
 * over DRAIN_MANY_RINGS rings, each filled as drain's one: its instructions
 * per event beside drain's say whether the drain's cost per event depends on
 * how many rings it serves. boundary is close followed by what else a drain
 * thread does between two passes at an interval's end, outside the ring
 * reads: its housekeeping (tb_drainer_housekeep) and a look at every slot
 * (tb_drainer_serve_requests, which it does after a rebalance); with
 * --toggle-collect on tb_drainer_switch, tb_drainer_housekeep or
 * tb_drainer_serve_requests it counts that step alone, the drain thread's
 * whole share of the close and of its housekeeping.
 *   bench_collector --op drain|drain_many|close|boundary --iters N
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_bus.h"
#include "collector.h"
#include "tailbus/producer.h"
#include "../bench_util.h"

#define COLL_BUS "bench-coll"
#define COLL_VALUES 4096 /* precomputed latencies, a power of two */
#define DRAIN_RINGS 1
#define DRAIN_MANY_RINGS 13 /* drain_many: the 13-producer case */
#define DRAIN_METRICS 4
#define CLOSE_RINGS 8
#define CLOSE_METRICS 64
#define COLL_MAX_RINGS DRAIN_MANY_RINGS
#define COLL_MAX_METRICS CLOSE_METRICS
#define PRODUCER_CPU 0  /* as flood in the cross-process test */
#define COLLECTOR_CPU 1  /* as tailbusd --cpu 1 */
#define COLL_RUNS_DEFAULT 11
#define COLL_MIN_MS_DEFAULT 50

struct coll_bench {
	tb_collector c;
	bool opened;
	tb_producer *p[COLL_MAX_RINGS];
	int nrings, nmetrics;
	tb_metric_t ids[COLL_MAX_METRICS];
	uint64_t latency[COLL_VALUES];
	uint64_t pos;     /* running index into latencies and metrics */
	uint64_t events;  /* written into rings */
	uint64_t drops;   /* should stay 0: a fill never overfills */
	char seg_dir[256], log_dir[256];
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int setup(struct coll_bench *b, int nrings, int nmetrics, const char **why)
{
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (bench_scratch_dir(b->seg_dir, sizeof(b->seg_dir), BENCH_SHM_DIR) < 0 ||
	    bench_scratch_dir(b->log_dir, sizeof(b->log_dir), tmp) < 0) {
		*why = "cannot create the scratch directories";
		return -1;
	}
	setenv("TAILBUS_DIR", b->seg_dir, 1); /* where tb_attach looks */
	tb_collector_config cfg;
	tb_collector_config_default(&cfg);
	cfg.bus = COLL_BUS;
	cfg.dir = b->seg_dir;
	cfg.writer.dir = b->log_dir;
	cfg.writer.comment = "Logged by bench_collector";
	cfg.fresh = true;
	cfg.evict_lines = getenv("TB_EVICT") != NULL;
	if (tb_collector_open(&b->c, &cfg, why) < 0)
		return -1;
	b->opened = true;
	b->nrings = nrings;
	b->nmetrics = nmetrics;
	for (int r = 0; r < nrings; r++) {
		char name[32];
		snprintf(name, sizeof(name), "bench-%d", r);
		b->p[r] = tb_attach(COLL_BUS, name);
		if (!b->p[r] || tb_producer_error(b->p[r], why) != 0)
			return -1;
	}
	for (int m = 0; m < nmetrics; m++) {
		char name[32];
		snprintf(name, sizeof(name), "m%d", m);
		b->ids[m] = tb_metric(b->p[0], name);
		if (tb_metric_id(b->ids[m]) == TB_METRIC_NONE_ID) {
			*why = "cannot register a metric";
			return -1;
		}
	}
	tb_collector_housekeep(&b->c, mono_ns()); /* follow the new slots */
	/* every LIVE slot of the segment is one of ours (a fresh bus) */
	int live = 0;
	for (uint32_t i = 0; i < b->c.seg.layout.slot_count; i++) {
		if (__atomic_load_n(&tb_seg_slot(&b->c.seg, i)->state, __ATOMIC_ACQUIRE) != TB_SLOT_LIVE)
			continue;
		live++;
		if (!b->c.slots[i].followed) {
			*why = "the collector does not follow a producer's ring";
			return -1;
		}
	}
	if (live != nrings) {
		*why = "the segment does not hold one live ring per producer";
		return -1;
	}
	for (size_t i = 0; i < COLL_VALUES; i++)
		b->latency[i] = bench_latency_ns();
	return 0;
}

static void teardown(struct coll_bench *b)
{
	for (int r = 0; r < b->nrings; r++)
		tb_detach(b->p[r]);
	if (b->opened)
		tb_collector_close(&b->c);
	if (b->seg_dir[0]) {
		tb_seg_unlink(b->seg_dir, COLL_BUS);
		bench_remove_dir(b->seg_dir);
	}
	if (b->log_dir[0])
		bench_remove_dir(b->log_dir);
}

static uint64_t dropped_of(const tb_producer *p)
{
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	return st.dropped;
}

/* Fill ring r to capacity - 1 events (it must be empty), all completing in
 * the middle of the collector's current interval. */
static void fill(struct coll_bench *b, int r)
{
	tb_producer *p = b->p[r];
	uint32_t n = b->c.seg.layout.ring_capacity - 1;
	uint64_t done = (uint64_t)(b->c.drainers[0].interval_start_ns - b->c.clock_offset_ns +
				   b->c.cfg.interval_ns / 2);
	uint64_t dropped = dropped_of(p);
	for (uint32_t k = 0; k < n; k++, b->pos++) {
		uint64_t lat = b->latency[b->pos & (COLL_VALUES - 1)];
		tb_span(p, b->ids[b->pos % (uint64_t)b->nmetrics], done - lat, done);
	}
	b->events += n;
	b->drops += dropped_of(p) - dropped;
}

/* Drains timed in one run, at most: one drain is ~0.5 ms or more, so this
 * is far above what --min-ms asks for in practice. */
#define DRAINS_MAX 4096

/* One timed drain of a full ring; events/s. */
static double drain_once(struct coll_bench *b)
{
	double t0 = bench_now_ns();
	tb_collector_drain_all(&b->c);
	double ns = bench_now_ns() - t0;
	return (double)(b->c.seg.layout.ring_capacity - 1) / ns * BENCH_NS_PER_SEC;
}

/* One run of drain: fill + drain until min_ns of draining; the median
 * drain's events/s (a drain that a preemption lands in is an outlier). */
static double drain_run(struct coll_bench *b, double min_ns)
{
	static double rate[DRAINS_MAX];
	double ns = 0;
	int n = 0;
	while (ns < min_ns && n < DRAINS_MAX) {
		fill(b, 0);
		rate[n] = drain_once(b);
		ns += (double)(b->c.seg.layout.ring_capacity - 1) / rate[n++] * BENCH_NS_PER_SEC;
	}
	return bench_figures_of(rate, n).median;
}

static int pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

struct filler {
	struct coll_bench *b;
	int rc;
};

static void *fill_elsewhere(void *arg)
{
	struct filler *f = arg;
	f->rc = pin_to(PRODUCER_CPU);
	if (f->rc == 0)
		fill(f->b, 0);
	return NULL;
}

/* drain_xcore's run: the fill on PRODUCER_CPU, finished (joined) before the
 * timed drain here. Returns events/s, or < 0 when the thread cannot run. */
static double drain_xcore_run(struct coll_bench *b, double min_ns)
{
	static double rate[DRAINS_MAX];
	double ns = 0;
	int n = 0;
	while (ns < min_ns && n < DRAINS_MAX) {
		struct filler f = {b, 0};
		pthread_t t;
		if (pthread_create(&t, NULL, fill_elsewhere, &f) != 0)
			return -1;
		pthread_join(t, NULL);
		if (f.rc < 0)
			return -1;
		rate[n] = drain_once(b);
		ns += (double)(b->c.seg.layout.ring_capacity - 1) / rate[n++] * BENCH_NS_PER_SEC;
	}
	return bench_figures_of(rate, n).median;
}

/* The untimed part of an interval: every ring filled and drained. */
static int interval_prepare(struct coll_bench *b)
{
	for (int r = 0; r < b->nrings; r++) {
		fill(b, r);
		tb_collector_drain_all(&b->c);
	}
	return tb_writer_poll(b->c.writer);
}

static long minor_faults(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

/* This thread's CPU time: what the close costs the collector's core, without
 * the time another process held it (wall time includes that). */
static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * BENCH_NS_PER_SEC + (double)ts.tv_nsec;
}

/* One interval; its close in wall ns, or < 0 on an error. *cpu_ns gets the
 * thread's CPU time over the close and *faults the page faults it took
 * (neither depends on other load the way its wall time does). */
static double close_run(struct coll_bench *b, double *cpu_ns, double *faults)
{
	if (interval_prepare(b) < 0)
		return -1;
	long f0 = minor_faults();
	double c0 = thread_cpu_ns();
	double t0 = bench_now_ns();
	int rc = tb_collector_close_interval(&b->c, b->c.cfg.interval_ns);
	double ns = bench_now_ns() - t0;
	*cpu_ns = thread_cpu_ns() - c0;
	*faults = (double)(minor_faults() - f0);
	return rc < 0 ? rc : ns;
}

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--runs R] [--min-ms MS] [--tsv]\n"
		"       %s --op drain|drain_many|close|boundary --iters N\n",
		argv0, argv0);
	return 2;
}

/* The operations run_only takes: drain 0, close 1, drain_many 2, boundary
 * 3, anything else -1. */
static int op_index(const char *name)
{
	return strcmp(name, "drain") == 0 ? 0 : strcmp(name, "close") == 0 ? 1
	       : strcmp(name, "drain_many") == 0 ? 2 : strcmp(name, "boundary") == 0 ? 3 : -1;
}

static int run_only(const char *op, uint64_t iters)
{
	static struct coll_bench b;
	const char *why = "unknown error";
	bool many = strcmp(op, "drain_many") == 0;
	bool drain = many || strcmp(op, "drain") == 0;
	bool boundary = strcmp(op, "boundary") == 0;
	int rc = setup(&b, many ? DRAIN_MANY_RINGS : drain ? DRAIN_RINGS : CLOSE_RINGS,
		       drain ? DRAIN_METRICS : CLOSE_METRICS, &why);
	for (uint64_t i = 0; rc == 0 && i < iters; i++) {
		if (drain) {
			for (int r = 0; r < b.nrings; r++)
				fill(&b, r);
			tb_collector_drain_all(&b.c);
		} else if (interval_prepare(&b) < 0 ||
			   tb_collector_close_interval(&b.c, b.c.cfg.interval_ns) < 0) {
			why = "closing an interval failed";
			rc = -1;
		} else if (boundary) {
			for (uint32_t k = 0; k < b.c.ndrainers; k++) {
				tb_drainer_housekeep(&b.c.drainers[k], mono_ns());
				tb_drainer_serve_requests(&b.c.drainers[k]);
			}
		}
	}
	if (rc == 0)
		printf("%s x %" PRIu64 ": %" PRIu64 " events, %u series, %" PRIu64 " drops\n", op,
		       iters, b.events, b.c.nseries, b.drops);
	else
		fprintf(stderr, "bench_collector: %s\n", why);
	teardown(&b);
	return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct bench_args a = {.runs = COLL_RUNS_DEFAULT, .min_ms = COLL_MIN_MS_DEFAULT};
	if (bench_args_parse(&a, argc, argv, NULL, op_index) < 0)
		return usage(argv[0]);
	if (a.op)
		return run_only(a.op, a.iters);
	const int runs = a.runs;
	const double min_ms = a.min_ms;
	const bool tsv = a.tsv;

	static struct coll_bench d, k;
	const char *why = "unknown error";
	double rate[BENCH_RUNS_MAX], xrate[BENCH_RUNS_MAX], close_ms[BENCH_RUNS_MAX];
	bool pinned = pin_to(COLLECTOR_CPU) == 0, xcore = pinned;
	if (setup(&d, DRAIN_RINGS, DRAIN_METRICS, &why) < 0) {
		fprintf(stderr, "%s: drain set-up failed: %s\n", argv[0], why);
		teardown(&d);
		return 1;
	}
	double wait[3] = {0, 0, 0}; /* % waiting for a CPU: drain, drain_xcore, close */
	struct bench_sched sched = bench_sched_now();
	drain_run(&d, min_ms * BENCH_NS_PER_MS); /* warm-up */
	for (int r = 0; r < runs; r++)
		rate[r] = drain_run(&d, min_ms * BENCH_NS_PER_MS);
	wait[0] = bench_sched_wait_pct(sched);
	sched = bench_sched_now();
	if (xcore && drain_xcore_run(&d, min_ms * BENCH_NS_PER_MS) < 0) /* warm-up */
		xcore = false;
	for (int r = 0; xcore && r < runs; r++)
		xrate[r] = drain_xcore_run(&d, min_ms * BENCH_NS_PER_MS);
	wait[1] = bench_sched_wait_pct(sched); /* this thread's: the fills run on another */
	uint32_t drain_series = d.c.nseries;
	uint64_t drain_drops = d.drops;
	uint32_t capacity = d.c.seg.layout.ring_capacity;
	teardown(&d);

	if (setup(&k, CLOSE_RINGS, CLOSE_METRICS, &why) < 0) {
		fprintf(stderr, "%s: close set-up failed: %s\n", argv[0], why);
		teardown(&k);
		return 1;
	}
	/* Warm-up: the first close of each bank of the series (cur, cur ^ 1)
	 * resets, and so commits, every page of its counts up to its highest
	 * value; timed apart, as a one-off. */
	int status = 0;
	double first_ms[2], first_faults[2], close_faults[BENCH_RUNS_MAX];
	double first_cpu[2], close_cpu[BENCH_RUNS_MAX];
	for (int h = 0; h < 2; h++) {
		double ns = close_run(&k, &first_cpu[h], &first_faults[h]);
		if (ns < 0)
			status = 1;
		first_ms[h] = ns / BENCH_NS_PER_MS;
	}
	sched = bench_sched_now();
	for (int r = 0; status == 0 && r < runs; r++) {
		double ns = close_run(&k, &close_cpu[r], &close_faults[r]);
		if (ns < 0)
			status = 1;
		close_ms[r] = ns / BENCH_NS_PER_MS;
		close_cpu[r] /= BENCH_NS_PER_MS;
	}
	wait[2] = bench_sched_wait_pct(sched);
	tb_writer_stats ws;
	tb_writer_get_stats(k.c.writer, &ws);
	char backend[64]; /* a copy: the writer's own string goes with it at teardown */
	snprintf(backend, sizeof(backend), "%s", tb_writer_backend(k.c.writer));
	uint32_t close_series = k.c.nseries;
	uint64_t close_drops = k.drops;
	teardown(&k);
	if (status) {
		fprintf(stderr, "%s: closing an interval failed\n", argv[0]);
		return 1;
	}
	if (drain_drops || close_drops) {
		fprintf(stderr, "%s: a fill dropped events: the ring was not empty\n", argv[0]);
		return 1;
	}

	if (pinned)
		printf("# pinned to CPU %d; drain_xcore fills on CPU %d\n", COLLECTOR_CPU,
		       PRODUCER_CPU);
	else
		printf("# not pinned (no CPU %d): no drain_xcore\n", COLLECTOR_CPU);
	struct bench_figures fr = bench_figures_of(rate, runs);
	struct bench_figures fc = bench_figures_of(close_ms, runs);
	printf("# drain: 1 ring of %u events, %d metrics, %u series; runs of fill (capacity - 1 "
	       "events) + timed drain until >= %g ms drained, each the median drain; %d runs\n",
	       capacity, DRAIN_METRICS, drain_series, min_ms, runs);
	printf("# close: %d rings x %d metrics, %u series, %u events per interval, writer %s "
	       "(%" PRIu64 " appends, %" PRIu64 " waited for a buffer); %d intervals after the "
	       "first close of each bank (close_first)\n",
	       CLOSE_RINGS, CLOSE_METRICS, close_series, CLOSE_RINGS * (capacity - 1), backend,
	       ws.appends, ws.buffer_waits, runs);
	const char *fmt = tsv ? "%s\t%s\t%.3f\t%.3f\t%.3f\t%.1f\n"
			      : "%-16s %-14s %12.3f %12.3f %12.3f %8.1f%%\n";
	if (tsv)
		printf("op\tunit\tmedian\tmin\tmax\tcpu_wait_pct\n");
	else
		printf("%-16s %-14s %12s %12s %12s %9s\n", "operation", "unit", "median", "min", "max",
		       "cpu wait");
	/* ns/event from events/s: the slowest run gives the max */
	printf(fmt, "drain", "Mevents/s", fr.median / 1e6, fr.min / 1e6, fr.max / 1e6, wait[0]);
	printf(fmt, "drain", "ns/event", 1e9 / fr.median, 1e9 / fr.max, 1e9 / fr.min, wait[0]);
	if (xcore) {
		struct bench_figures fx = bench_figures_of(xrate, runs);
		printf(fmt, "drain_xcore", "Mevents/s", fx.median / 1e6, fx.min / 1e6, fx.max / 1e6,
		       wait[1]);
		printf(fmt, "drain_xcore", "ns/event", 1e9 / fx.median, 1e9 / fx.max, 1e9 / fx.min,
		       wait[1]);
	}
	printf(fmt, "close_interval", "ms/interval", fc.median, fc.min, fc.max, wait[2]);
	struct bench_figures ff = bench_figures_of(first_ms, 2);
	printf(fmt, "close_first", "ms/interval", ff.median, ff.min, ff.max, wait[2]);
	struct bench_figures fcpu = bench_figures_of(close_cpu, runs);
	printf(fmt, "close_interval", "cpu_ms/interval", fcpu.median, fcpu.min, fcpu.max, wait[2]);
	first_cpu[0] /= BENCH_NS_PER_MS;
	first_cpu[1] /= BENCH_NS_PER_MS;
	fcpu = bench_figures_of(first_cpu, 2);
	printf(fmt, "close_first", "cpu_ms/interval", fcpu.median, fcpu.min, fcpu.max, wait[2]);
	struct bench_figures pf = bench_figures_of(close_faults, runs);
	printf(fmt, "close_interval", "faults/interval", pf.median, pf.min, pf.max, wait[2]);
	pf = bench_figures_of(first_faults, 2);
	printf(fmt, "close_first", "faults/interval", pf.median, pf.min, pf.max, wait[2]);
	return 0;
}
