/* bench_span.c - what recording one event costs the engine thread: tb_span
 * with given timestamps, against two baselines timed in the same run.
 *
 * Operations (per event; the inputs are the next of SPAN_VALUES precomputed
 * (intended, done) pairs, see bench_bus.h for the latencies):
 *   store       baseline (a): the pair stored as one 16-byte event into a
 *               local array of STORE_L1_EVENTS (16 KiB, stays in L1); an
 *               empty asm with a memory clobber after each store keeps the
 *               compiler from dropping, merging or widening the stores;
 *   store_ring  the same into an array as large as the ring (1 MiB), so the
 *               stores walk the same footprint the ring's do;
 *   hdr_record  baseline (b): tb_hist_record() of the latency into a 1 ns ..
 *               1 h, 3-digit histogram in this thread (the alternative to
 *               a bus: an HDR histogram per engine thread);
 *   span        tb_span(p, m, intended, done) into a real segment's ring;
 *   span_now    the same with done = tb_now(p): what an engine that reads
 *               the bus clock pays per event;
 *   span_full   tb_span into a full ring: the cold path that finds no room and
 *               folds the SPAN into its metric's fold lane (no ring write;
 *               the drop path where the bus has no lanes);
 *   span_harness  op span's loop and loads without the call (for callgrind:
 *               span - span_harness is tb_span's own instructions);
 *   tb_now      the bus clock read;
 *   clock_gettime  clock_gettime(CLOCK_MONOTONIC) called directly.
 *
 * The segment: a bus in a scratch TAILBUS_DIR under /dev/shm, attached with
 * tb_attach() as an engine would, with no collector; the directory is removed
 * at exit. To time the producer alone, every operation runs in batches of
 * SPAN_BATCH events (fewer than the ring holds) and, between batches and
 * untimed, span and span_now move the ring's consumer index up to the
 * producer's: an instantaneous consumer, so every timed call takes the common
 * path (no drops; checked). span_full fills the ring first and never empties
 * it. Each batch is timed with clock_gettime(); the cost of an empty pair of
 * clock reads (measured at start, its median) is subtracted from each batch.
 *
 * Timing mode (default): each operation runs --runs times after one warm-up
 * run, each run made of as many batches as last --min-ms and summed up by
 * its median batch; the table gives median, min and max ns/event over runs
 * and the median as a ratio to each baseline's median, and the share of the
 * operation's wall time this thread spent waiting for a CPU.
 *   bench_span [--runs R] [--min-ms MS] [--tsv] [--percall]
 * --percall also times single calls between two TSC reads (lfence; rdtsc;
 * lfence ... rdtscp; lfence), interleaved with empty pairs, and prints the
 * distribution of both and of (pair around a call) - (median empty pair).
 * Single-operation mode, for callgrind: set up, run one operation exactly N
 * times (in the same batches), print a checksum. Instructions per event are
 * (total for 2N - total for N) / N; bench/bus/run does that.
 *   bench_span --op NAME --iters N
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#include "bench_bus.h"
#include "tailbus/hist.h"
#include "tailbus/producer.h"
#include "bench_seg.h"
#include "../bench_util.h"

#define SPAN_BUS "bench-span"
#define SPAN_THREAD "bench-span"
/* Precomputed inputs: a power of two (the index wraps with a mask), 96 KiB
 * in all, so input loads are L1/L2 hits and not what is timed. */
#define SPAN_VALUES 4096
/* Events per timed batch: well under the ring's capacity (TB_SEG_DEFAULT_RING_EVENTS). */
#define SPAN_BATCH 4096
#define STORE_L1_EVENTS 1024 /* 16 KiB of events: inside any L1d */
#define SPAN_RUNS_DEFAULT 11
#define SPAN_MIN_MS_DEFAULT 50
#define TIMER_SAMPLES 10001
#define PERCALL_SAMPLES (1u << 20)
#define TSC_CALIBRATE_NS 50000000.0 /* 50 ms */
#define TSC_STEP_READS 100000

struct span_bench {
	tb_producer *p;
	tb_metric_t metric;
	tb_seg seg;     /* our own mapping of the bus, to reach the ring from outside */
	bool seg_open;
	tb_ring_header *ring; /* the handle's ring, found in the segment (bench_seg.h) */
	uint32_t ring_capacity;
	uint64_t intended[SPAN_VALUES];
	uint64_t done[SPAN_VALUES];
	int64_t latency[SPAN_VALUES];
	tb_event *small, *big; /* store's and store_ring's arrays */
	uint64_t pos;          /* running index into the inputs and arrays */
	tb_hist hist;
	uint64_t checksum;
	double *batch_ns;  /* one run's batches, ns/event */
	size_t batch_cap;
	char dir[256];
};

/* ---- operations: each records n events ---- */

static void op_store(struct span_bench *b, uint32_t n)
{
	uint64_t pos = b->pos;
	for (uint32_t i = 0; i < n; i++, pos++) {
		uint32_t k = (uint32_t)pos & (SPAN_VALUES - 1);
		b->small[pos & (STORE_L1_EVENTS - 1)] = (tb_event){b->done[k], b->intended[k]};
		__asm__ volatile("" : : : "memory");
	}
	b->pos = pos;
}

static void op_store_ring(struct span_bench *b, uint32_t n)
{
	uint64_t pos = b->pos, mask = b->ring_capacity - 1;
	for (uint32_t i = 0; i < n; i++, pos++) {
		uint32_t k = (uint32_t)pos & (SPAN_VALUES - 1);
		b->big[pos & mask] = (tb_event){b->done[k], b->intended[k]};
		__asm__ volatile("" : : : "memory");
	}
	b->pos = pos;
}

static void op_hdr_record(struct span_bench *b, uint32_t n)
{
	uint64_t pos = b->pos;
	for (uint32_t i = 0; i < n; i++, pos++)
		tb_hist_record(&b->hist, b->latency[pos & (SPAN_VALUES - 1)]);
	b->pos = pos;
}

static void op_span(struct span_bench *b, uint32_t n)
{
	uint64_t pos = b->pos;
	for (uint32_t i = 0; i < n; i++, pos++) {
		uint32_t k = (uint32_t)pos & (SPAN_VALUES - 1);
		tb_span(b->p, b->metric, b->intended[k], b->done[k]);
	}
	b->pos = pos;
}

/* op_span without tb_span: the same loop and the same loads of the handle,
 * the metric and the two timestamps, handed to an empty asm statement (which
 * may write memory, as tb_span's stores may, so everything is loaded again
 * each time). span - span_harness is tb_span's own instructions. */
static void op_span_harness(struct span_bench *b, uint32_t n)
{
	uint64_t pos = b->pos;
	for (uint32_t i = 0; i < n; i++, pos++) {
		uint32_t k = (uint32_t)pos & (SPAN_VALUES - 1);
		__asm__ volatile("" : : "r"(b->p), "r"(b->metric.bits), "r"(b->intended[k]), "r"(b->done[k])
				 : "memory");
	}
	b->pos = pos;
}

static void op_span_now(struct span_bench *b, uint32_t n)
{
	uint64_t pos = b->pos;
	for (uint32_t i = 0; i < n; i++, pos++) {
		uint64_t done = tb_now(b->p);
		tb_span(b->p, b->metric, done - (uint64_t)b->latency[pos & (SPAN_VALUES - 1)], done);
	}
	b->pos = pos;
}

static void op_tb_now(struct span_bench *b, uint32_t n)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum += tb_now(b->p);
	b->checksum += sum;
}

static void op_clock_gettime(struct span_bench *b, uint32_t n)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += (uint64_t)ts.tv_nsec;
	}
	b->checksum += sum;
}

/* ---- the ring, from the outside ---- */

/* The instantaneous consumer: everything written so far has been read. */
static void ring_consume_all(struct span_bench *b)
{
	__atomic_store_n(&b->ring->c_head, tb__head(b->p), __ATOMIC_RELEASE);
}

static void ring_fill(struct span_bench *b)
{
	ring_consume_all(b);
	for (uint32_t i = 0; i < b->ring_capacity; i++)
		tb_span(b->p, b->metric, b->intended[i & (SPAN_VALUES - 1)],
			b->done[i & (SPAN_VALUES - 1)]);
}

static void nothing(struct span_bench *b)
{
	(void)b;
}

struct op {
	const char *name;
	void (*batch)(struct span_bench *b, uint32_t n);
	void (*prepare)(struct span_bench *b); /* once, before the first batch */
	void (*between)(struct span_bench *b); /* before every batch, untimed */
};

static const struct op ops[] = {
	{"store", op_store, nothing, nothing},
	{"store_ring", op_store_ring, nothing, nothing},
	{"hdr_record", op_hdr_record, nothing, nothing},
	{"span", op_span, ring_consume_all, ring_consume_all},
	{"span_now", op_span_now, ring_consume_all, ring_consume_all},
	{"span_full", op_span, ring_fill, nothing},
	{"span_harness", op_span_harness, nothing, nothing},
	{"tb_now", op_tb_now, nothing, nothing},
	{"clock_gettime", op_clock_gettime, nothing, nothing},
};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))
#define OP_STORE 0
#define OP_HDR 2

/* The operation's index in ops, or -1. */
static int op_index(const char *name)
{
	for (size_t i = 0; i < N_OPS; i++) {
		if (strcmp(ops[i].name, name) == 0)
			return (int)i;
	}
	return -1;
}

/* ---- set-up ---- */

static int bench_setup(struct span_bench *b, const char **why)
{
	if (bench_scratch_dir(b->dir, sizeof(b->dir), BENCH_SHM_DIR) < 0) {
		*why = "cannot create a scratch directory under " BENCH_SHM_DIR;
		return -1;
	}
	setenv("TAILBUS_DIR", b->dir, 1);
	b->p = tb_attach(SPAN_BUS, SPAN_THREAD);
	if (!b->p || tb_producer_error(b->p, why) != 0)
		return -1;
	b->metric = tb_metric(b->p, "span");
	if (bench_seg_open(&b->seg, b->dir, SPAN_BUS, why) < 0)
		return -1;
	b->seg_open = true;
	int slot = bench_seg_own_slot(&b->seg, SPAN_THREAD);
	if (slot < 0) {
		*why = "the handle's ring is not in the segment's slot table";
		return -1;
	}
	b->ring = tb_seg_ring(&b->seg, (uint32_t)slot);
	b->ring_capacity = b->seg.layout.ring_capacity;
	if (b->ring_capacity <= SPAN_BATCH) {
		*why = "the ring is not larger than a batch";
		return -1;
	}
	uint64_t t = UINT64_C(1) << 40; /* any base: only the differences matter */
	for (size_t i = 0; i < SPAN_VALUES; i++) {
		b->latency[i] = (int64_t)bench_latency_ns();
		b->intended[i] = t;
		b->done[i] = t + (uint64_t)b->latency[i];
		t += 1000;
	}
	b->small = aligned_alloc(TB_CACHELINE, STORE_L1_EVENTS * sizeof(tb_event));
	b->big = aligned_alloc(TB_CACHELINE, (size_t)b->ring_capacity * sizeof(tb_event));
	if (!b->small || !b->big || tb_hist_init(&b->hist, TB_HIST_DEFAULT_LOWEST,
						 TB_HIST_DEFAULT_HIGHEST, TB_HIST_DEFAULT_SIG_DIGITS)) {
		*why = "out of memory";
		return -1;
	}
	memset(b->small, 0, STORE_L1_EVENTS * sizeof(tb_event));
	memset(b->big, 0, (size_t)b->ring_capacity * sizeof(tb_event));
	return 0;
}

static void bench_teardown(struct span_bench *b)
{
	if (b->p)
		tb_detach(b->p);
	if (b->seg_open)
		tb_seg_close(&b->seg);
	if (b->dir[0]) {
		tb_seg_unlink(b->dir, SPAN_BUS);
		bench_remove_dir(b->dir);
	}
	free(b->small);
	free(b->big);
	free(b->batch_ns);
	tb_hist_free(&b->hist);
}

/* ---- timing ---- */

/* Median cost of an empty pair of clock reads: subtracted from each batch. */
static double timer_cost_ns(void)
{
	static double v[TIMER_SAMPLES];
	for (int i = 0; i < TIMER_SAMPLES; i++) {
		double t0 = bench_now_ns();
		v[i] = bench_now_ns() - t0;
	}
	return bench_figures_of(v, TIMER_SAMPLES).median;
}

/* One run: batches until min_ns of timed work; returns the median batch's
 * ns/event (a batch that a preemption or an interrupt lands in is an
 * outlier, not the operation's cost: this may be a shared machine). */
static double time_run(struct span_bench *b, const struct op *op, double min_ns, double timer_ns,
		       uint64_t *events)
{
	double ns = 0;
	size_t n = 0;
	while (ns < min_ns) {
		if (n == b->batch_cap) {
			size_t cap = b->batch_cap ? 2 * b->batch_cap : 4096;
			double *v = realloc(b->batch_ns, cap * sizeof(*v));
			if (!v)
				break;
			b->batch_ns = v;
			b->batch_cap = cap;
		}
		op->between(b);
		double t0 = bench_now_ns();
		op->batch(b, SPAN_BATCH);
		double t = bench_now_ns() - t0 - timer_ns;
		ns += t;
		b->batch_ns[n++] = t / SPAN_BATCH;
	}
	*events = (uint64_t)n * SPAN_BATCH;
	return n ? bench_figures_of(b->batch_ns, (int)n).median : 0;
}

struct row {
	struct bench_figures f;
	uint64_t events;   /* per run */
	uint64_t drops;    /* during the operation: dropped or folded (the ring full) */
	double cpu_wait;   /* % of its wall time spent waiting for a CPU */
};

static struct row measure(struct span_bench *b, const struct op *op, int runs, double min_ns,
			  double timer_ns)
{
	double v[BENCH_RUNS_MAX];
	struct row r;
	tb_producer_stats st;
	tb_producer_stats_get(b->p, &st);
	uint64_t dropped = st.dropped + st.folded; /* either: the ring was full */
	struct bench_sched sched = bench_sched_now();
	op->prepare(b);
	time_run(b, op, min_ns, timer_ns, &r.events); /* warm-up */
	for (int i = 0; i < runs; i++)
		v[i] = time_run(b, op, min_ns, timer_ns, &r.events);
	r.f = bench_figures_of(v, runs);
	tb_producer_stats_get(b->p, &st);
	r.drops = st.dropped + st.folded - dropped;
	r.cpu_wait = bench_sched_wait_pct(sched);
	return r;
}

/* ---- single calls between TSC reads (x86 only) ---- */
#ifdef HAVE_TSC

static inline uint64_t tsc_begin(void)
{
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
}

static inline uint64_t tsc_end(void)
{
	unsigned aux;
	uint64_t t = __rdtscp(&aux);
	_mm_lfence();
	return t;
}

static double tsc_per_ns(void)
{
	double t0 = bench_now_ns();
	uint64_t c0 = __rdtsc();
	while (bench_now_ns() - t0 < TSC_CALIBRATE_NS)
		;
	double t1 = bench_now_ns();
	return (double)(__rdtsc() - c0) / (t1 - t0);
}

/* The smallest non-zero step between back-to-back TSC reads: 1 tick on bare
 * metal, more where a hypervisor scales or emulates the TSC. */
static uint64_t tsc_step(void)
{
	uint64_t step = UINT64_MAX, prev = __rdtsc();
	for (int i = 0; i < TSC_STEP_READS; i++) {
		uint64_t t = __rdtsc();
		if (t != prev && t - prev < step)
			step = t - prev;
		prev = t;
	}
	return step;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static const double percall_levels[] = {50, 90, 99, 99.9, 99.99, 100};
#define N_PERCALL_LEVELS (sizeof(percall_levels) / sizeof(percall_levels[0]))

static uint64_t at_level(const uint64_t *sorted, size_t n, double pct)
{
	size_t k = (size_t)(pct / 100.0 * (double)(n - 1) + 0.5);
	return sorted[k < n ? k : n - 1];
}

/* Interleaved: an empty TSC pair, then a pair around one call. */
static void percall(struct span_bench *b, const struct op *op, uint64_t *empty, uint64_t *call)
{
	op->prepare(b);
	/* warm up as the timed runs are warm: two passes over the ring (or as
	 * many calls), so no first touch of a page is timed */
	for (uint32_t i = 0; i < 2 * b->ring_capacity; i += SPAN_BATCH) {
		op->between(b);
		op->batch(b, SPAN_BATCH);
	}
	for (uint32_t i = 0; i < PERCALL_SAMPLES; i++) {
		if (i % SPAN_BATCH == 0)
			op->between(b);
		uint64_t t0 = tsc_begin();
		empty[i] = tsc_end() - t0;
		t0 = tsc_begin();
		op->batch(b, 1);
		call[i] = tsc_end() - t0;
	}
	qsort(empty, PERCALL_SAMPLES, sizeof(*empty), cmp_u64);
	qsort(call, PERCALL_SAMPLES, sizeof(*call), cmp_u64);
}

static int print_percall(struct span_bench *b, bool tsv)
{
	static const char *names[] = {"store", "hdr_record", "span"};
	uint64_t *empty = malloc(PERCALL_SAMPLES * sizeof(uint64_t));
	uint64_t *call = malloc(PERCALL_SAMPLES * sizeof(uint64_t));
	if (!empty || !call) {
		free(empty);
		free(call);
		return -1;
	}
	double per_ns = tsc_per_ns();
	uint64_t step = tsc_step();
	printf("# tsc_step: %" PRIu64 " ticks, %.2f ns\n", step, (double)step / per_ns);
	printf("# percall: TSC %.3f GHz; %u calls per operation, each between lfence;rdtsc;lfence "
	       "and rdtscp;lfence, interleaved with as many empty pairs; figures in ns; "
	       "'call-empty' = pair around a call minus the median empty pair\n",
	       per_ns, PERCALL_SAMPLES);
	if (tsv)
		printf("percall\tseries");
	else
		printf("%-24s", "operation / series");
	for (size_t l = 0; l < N_PERCALL_LEVELS; l++) {
		char h[16];
		snprintf(h, sizeof(h), l + 1 == N_PERCALL_LEVELS ? "max" : "p%g", percall_levels[l]);
		printf(tsv ? "\t%s" : " %9s", h);
	}
	printf("\n");
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		percall(b, &ops[op_index(names[k])], empty, call);
		double base = (double)at_level(empty, PERCALL_SAMPLES, 50);
		const char *series[] = {"empty pair", "pair around call", "call-empty"};
		for (int s = 0; s < 3; s++) {
			const uint64_t *v = s == 0 ? empty : call;
			if (tsv)
				printf("percall\t%s %s", names[k], series[s]);
			else
				printf("%-11s %-12s", names[k], series[s]);
			for (size_t l = 0; l < N_PERCALL_LEVELS; l++) {
				double x = (double)at_level(v, PERCALL_SAMPLES, percall_levels[l]);
				if (s == 2)
					x -= base;
				printf(tsv ? "\t%.2f" : " %9.2f", x / per_ns);
			}
			printf("\n");
		}
	}
	free(empty);
	free(call);
	return 0;
}

#else
static int print_percall(struct span_bench *b, bool tsv)
{
	(void)b;
	(void)tsv;
	printf("# percall: no TSC on this architecture\n");
	return 0;
}
#endif

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--runs R] [--min-ms MS] [--tsv] [--percall]\n"
		"       %s --op NAME --iters N   (NAME: store store_ring hdr_record span\n"
		"                                  span_now span_full span_harness tb_now\n"
		"                                  clock_gettime)\n",
		argv0, argv0);
	return 2;
}

static void run_only(struct span_bench *b, const struct op *op, uint64_t iters)
{
	op->prepare(b);
	while (iters > 0) {
		uint32_t n = iters < SPAN_BATCH ? (uint32_t)iters : SPAN_BATCH;
		op->between(b);
		op->batch(b, n);
		iters -= n;
	}
	tb_producer_stats st;
	tb_producer_stats_get(b->p, &st);
	b->checksum += b->pos + (uint64_t)b->hist.total + st.attempted + st.dropped;
	printf("%s: checksum %" PRIu64 "\n", op->name, b->checksum);
}

static void print_table(struct span_bench *b, const struct row *r, int runs, double min_ms,
			double timer_ns, bool tsv)
{
	double store = r[OP_STORE].f.median, hdr = r[OP_HDR].f.median;
	printf("# ring capacity %u events, batch %d events, timer pair %.1f ns subtracted per "
	       "batch, %d runs per operation, each >= %g ms\n",
	       b->ring_capacity, SPAN_BATCH, timer_ns, runs, min_ms);
	if (tsv)
		printf("op\tmedian_ns\tmin_ns\tmax_ns\tx_store\tx_hdr\tevents_per_run\tdrops\t"
		       "cpu_wait_pct\n");
	else
		printf("%-14s %10s %10s %10s %8s %8s %12s %10s %9s\n", "operation", "median ns",
		       "min ns", "max ns", "x store", "x hdr", "events/run", "drops", "cpu wait");
	for (size_t i = 0; i < N_OPS; i++) {
		const char *fmt = tsv ? "%s\t%.3f\t%.3f\t%.3f\t%.2f\t%.2f\t%" PRIu64 "\t%" PRIu64
					"\t%.1f\n"
				      : "%-14s %10.3f %10.3f %10.3f %8.2f %8.2f %12" PRIu64 " %10" PRIu64
					" %8.1f%%\n";
		printf(fmt, ops[i].name, r[i].f.median, r[i].f.min, r[i].f.max, r[i].f.median / store,
		       r[i].f.median / hdr, r[i].events, r[i].drops, r[i].cpu_wait);
	}
}

int main(int argc, char **argv)
{
	struct bench_args a = {.runs = SPAN_RUNS_DEFAULT, .min_ms = SPAN_MIN_MS_DEFAULT};
	if (bench_args_parse(&a, argc, argv, "--percall", op_index) < 0)
		return usage(argv[0]);
	const struct op *only = a.op ? &ops[a.op_index] : NULL;

	static struct span_bench b; /* static: the input arrays are 96 KiB */
	const char *why = "unknown error";
	if (bench_setup(&b, &why) < 0) {
		fprintf(stderr, "%s: set-up failed: %s\n", argv[0], why);
		bench_teardown(&b);
		return 1;
	}
	if (only) {
		run_only(&b, only, a.iters);
		bench_teardown(&b);
		return 0;
	}
	double timer_ns = timer_cost_ns();
	struct row r[N_OPS];
	for (size_t i = 0; i < N_OPS; i++)
		r[i] = measure(&b, &ops[i], a.runs, a.min_ms * BENCH_NS_PER_MS, timer_ns);
	print_table(&b, r, a.runs, a.min_ms, timer_ns, a.tsv);
	int status = 0;
	for (size_t i = 0; i < N_OPS; i++) {
		if (strcmp(ops[i].name, "span_full") != 0 && r[i].drops) {
			fprintf(stderr, "%s: %s dropped %" PRIu64 " events: its figure is not the "
				"common path\n", argv[0], ops[i].name, r[i].drops);
			status = 1;
		}
	}
	if (a.own_switch && print_percall(&b, a.tsv) < 0) {
		fprintf(stderr, "%s: out of memory for --percall\n", argv[0]);
		status = 1;
	}
	if (!a.tsv)
		printf("(checksum %" PRIu64 ")\n", b.checksum);
	bench_teardown(&b);
	return status;
}
