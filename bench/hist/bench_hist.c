/* bench_hist.c - what the histogram and codec operations cost, in ns and as
 * multiples of a baseline measured in the same run.
 *
 * Operations (all on the collector's default layout, 1 ns .. 1 h at 3
 * significant digits, 33792 counters, docs/formats.md):
 *   baseline    one register increment per iteration, kept by an empty asm
 *               statement the compiler must assume reads and writes it: the
 *               floor any loop here pays (about one cycle);
 *   record      tb_hist_record() of the next of BENCH_VALUES precomputed
 *               latencies (log-uniform over 1 us .. 10 ms);
 *   percentile  tb_hist_value_at_percentile() on a histogram of
 *               BENCH_SAMPLES such latencies, cycling p50, p90, p99, p99.9,
 *               p99.99 (each walks the counts up to its rank);
 *   add         tb_hist_add() of that histogram into another of the same
 *               layout (one pass over all counters);
 *   encode      tb_v2_encode_inner() + tb_v2_compress() of that histogram at
 *               zlib's default level, as the log writer does before base64;
 *   encode_inner  tb_v2_encode_inner() alone, to split encode's cost between
 *               our LEB128 pass and zlib;
 *   decode      tb_v2_decode() of that frame into a reused histogram.
 *
 * Timing mode (default): each operation runs BENCH_RUNS times, each run
 * long enough (>= --min-ms) that the clock's resolution does not matter,
 * after one untimed warm-up run; the table gives the median ns/op with the
 * min and max over runs, and the median as a ratio to the baseline's median.
 *   bench_hist [--runs R] [--min-ms MS] [--tsv]
 * Single-operation mode, for callgrind: set up as above, run one operation
 * exactly N times, print nothing but a checksum. Instructions per operation
 * are the difference between the totals of an N and a 2N run, divided by N
 * (the setup cancels out); bench/run does that.
 *   bench_hist --op NAME --iters N
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tailbus/codec.h"
#include "tailbus/hist.h"
#include "../bench_util.h"

/* Precomputed latencies: a power of two, so the index wraps with a mask, and
 * 32 KiB of int64, so the array stays in L1 and record is not timing misses. */
#define BENCH_VALUES 4096
/* Samples in the histogram the read-side operations work on: enough that
 * every sub-bucket of the 1 us .. 10 ms range holds some. */
#define BENCH_SAMPLES 1000000
#define BENCH_LOW_NS 1000.0     /* 1 us */
#define BENCH_HIGH_NS 10000000.0 /* 10 ms */
#define BENCH_RUNS_DEFAULT 11
#define BENCH_MIN_MS_DEFAULT 50
#define NS_PER_SEC 1000000000.0
#define NS_PER_MS 1000000.0

static const double bench_levels[] = {50.0, 90.0, 99.0, 99.9, 99.99};
#define BENCH_LEVELS (sizeof(bench_levels) / sizeof(bench_levels[0]))

/* Everything the operations touch, built once, deterministically. */
struct bench {
	int64_t values[BENCH_VALUES];
	tb_hist sample;   /* BENCH_SAMPLES latencies: read by percentile/add/encode */
	tb_hist record;   /* written by record */
	tb_hist sum;      /* written by add */
	tb_hist decoded;  /* written by decode */
	uint8_t *inner, *frame;
	size_t inner_cap, frame_cap, frame_len;
	uint64_t checksum; /* folds results in, so no call is dead code */
};

/* xorshift64*: a fixed seed gives the same data every run (and under
 * callgrind, the same instruction counts). */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1du;
}

static int64_t latency_ns(void)
{
	double u = (double)(rng_next() >> 11) / (double)(UINT64_C(1) << 53);
	return (int64_t)exp(log(BENCH_LOW_NS) + u * (log(BENCH_HIGH_NS) - log(BENCH_LOW_NS)));
}

static int init_layout(tb_hist *h)
{
	return tb_hist_init(h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
			    TB_HIST_DEFAULT_SIG_DIGITS);
}

static int bench_setup(struct bench *b)
{
	memset(b, 0, sizeof(*b));
	if (init_layout(&b->sample) || init_layout(&b->record) || init_layout(&b->sum) ||
	    init_layout(&b->decoded))
		return -ENOMEM;
	for (size_t i = 0; i < BENCH_VALUES; i++)
		b->values[i] = latency_ns();
	for (size_t i = 0; i < BENCH_SAMPLES; i++)
		tb_hist_record(&b->sample, latency_ns());
	b->inner_cap = tb_v2_inner_bound(&b->sample);
	b->frame_cap = tb_v2_frame_bound(&b->sample);
	b->inner = malloc(b->inner_cap);
	b->frame = malloc(b->frame_cap);
	if (!b->inner || !b->frame)
		return -ENOMEM;
	size_t inner_len;
	int rc = tb_v2_encode_inner(&b->sample, b->inner, b->inner_cap, &inner_len);
	if (rc == 0)
		rc = tb_v2_compress(b->inner, inner_len, TB_V2_DEFAULT_LEVEL, b->frame, b->frame_cap,
				    &b->frame_len);
	return rc;
}

static void bench_teardown(struct bench *b)
{
	tb_hist_free(&b->sample);
	tb_hist_free(&b->record);
	tb_hist_free(&b->sum);
	tb_hist_free(&b->decoded);
	free(b->inner);
	free(b->frame);
}

/* ---- the operations: each runs `n` times ---- */

static void op_baseline(struct bench *b, uint64_t n)
{
	uint64_t counter = 0;
	for (uint64_t i = 0; i < n; i++) {
		counter++;
		/* the compiler must assume the asm reads and changes counter, so
		 * it can neither drop the increments nor fold them into one add */
		__asm__ volatile("" : "+r"(counter));
	}
	b->checksum += counter;
}

static void op_record(struct bench *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		tb_hist_record(&b->record, b->values[i & (BENCH_VALUES - 1)]);
	b->checksum += (uint64_t)b->record.total;
}

static void op_percentile(struct bench *b, uint64_t n)
{
	uint64_t sum = 0;
	for (uint64_t i = 0; i < n; i++)
		sum += (uint64_t)tb_hist_value_at_percentile(&b->sample, bench_levels[i % BENCH_LEVELS]);
	b->checksum += sum;
}

static void op_add(struct bench *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		tb_hist_add(&b->sum, &b->sample);
	b->checksum += (uint64_t)b->sum.total;
}

static void op_encode(struct bench *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		size_t inner_len, frame_len;
		if (tb_v2_encode_inner(&b->sample, b->inner, b->inner_cap, &inner_len) ||
		    tb_v2_compress(b->inner, inner_len, TB_V2_DEFAULT_LEVEL, b->frame, b->frame_cap,
				   &frame_len)) {
			fprintf(stderr, "bench_hist: encode failed\n");
			exit(1);
		}
		b->checksum += frame_len;
	}
}

static void op_encode_inner(struct bench *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		size_t inner_len;
		if (tb_v2_encode_inner(&b->sample, b->inner, b->inner_cap, &inner_len)) {
			fprintf(stderr, "bench_hist: encode_inner failed\n");
			exit(1);
		}
		b->checksum += inner_len;
	}
}

static void op_decode(struct bench *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		const char *why = NULL;
		if (tb_v2_decode(b->frame, b->frame_len, &b->decoded, &why) < 0) {
			fprintf(stderr, "bench_hist: decode failed: %s\n", why);
			exit(1);
		}
		b->checksum += (uint64_t)b->decoded.total;
	}
}

struct op {
	const char *name;
	void (*run)(struct bench *b, uint64_t n);
};

static const struct op ops[] = {
	{"baseline", op_baseline}, {"record", op_record}, {"percentile", op_percentile},
	{"add", op_add},           {"encode", op_encode}, {"encode_inner", op_encode_inner},
	{"decode", op_decode},
};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

/* ---- timing ---- */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * NS_PER_SEC + (double)ts.tv_nsec;
}

static double time_run(struct bench *b, const struct op *op, uint64_t n)
{
	double t0 = now_ns();
	op->run(b, n);
	return now_ns() - t0;
}

/* Smallest power-of-two count whose run lasts at least min_ns. */
static uint64_t calibrate(struct bench *b, const struct op *op, double min_ns)
{
	uint64_t n = 1;
	while (time_run(b, op, n) < min_ns && n < (UINT64_C(1) << 40))
		n *= 2;
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct figures {
	double median, min, max;
	uint64_t iters;
};

static struct figures measure(struct bench *b, const struct op *op, int runs, double min_ns)
{
	double ns[BENCH_RUNS_MAX];
	struct figures f;
	f.iters = calibrate(b, op, min_ns);
	time_run(b, op, f.iters); /* warm-up at the final count */
	for (int r = 0; r < runs; r++)
		ns[r] = time_run(b, op, f.iters) / (double)f.iters;
	qsort(ns, (size_t)runs, sizeof(ns[0]), cmp_double);
	f.median = ns[runs / 2];
	f.min = ns[0];
	f.max = ns[runs - 1];
	return f;
}

/* The operation's index in ops, or -1. */
static int op_index(const char *name)
{
	for (size_t i = 0; i < N_OPS; i++) {
		if (strcmp(ops[i].name, name) == 0)
			return (int)i;
	}
	return -1;
}

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--runs R] [--min-ms MS] [--tsv]\n"
		"       %s --op NAME --iters N   (NAME: baseline record percentile\n"
		"                                  add encode encode_inner decode)\n",
		argv0, argv0);
	return 2;
}

int main(int argc, char **argv)
{
	struct bench_args a = {.runs = BENCH_RUNS_DEFAULT, .min_ms = BENCH_MIN_MS_DEFAULT};
	if (bench_args_parse(&a, argc, argv, NULL, op_index) < 0)
		return usage(argv[0]);
	const struct op *only = a.op ? &ops[a.op_index] : NULL;

	static struct bench b; /* static: the value array is 32 KiB */
	if (bench_setup(&b) < 0) {
		fprintf(stderr, "%s: setup failed (out of memory or encode error)\n", argv[0]);
		return 1;
	}
	if (only) {
		only->run(&b, a.iters);
		printf("%s x %" PRIu64 ": checksum %" PRIu64 "\n", only->name, a.iters, b.checksum);
		bench_teardown(&b);
		return 0;
	}

	struct figures f[N_OPS];
	for (size_t i = 0; i < N_OPS; i++)
		f[i] = measure(&b, &ops[i], a.runs, a.min_ms * NS_PER_MS);
	double base = f[0].median;
	int32_t used = 0, top = -1;
	for (int32_t i = 0; i < b.sample.counts_len; i++) {
		used += b.sample.counts[i] != 0;
		top = b.sample.counts[i] ? i : top;
	}
	size_t inner_len;
	tb_v2_encode_inner(&b.sample, b.inner, b.inner_cap, &inner_len);
	printf("# sample histogram: %" PRId64 " samples, %d of %d counters non-empty, "
	       "highest non-empty index %d, inner %zu bytes, frame %zu bytes\n",
	       b.sample.total, used, b.sample.counts_len, top, inner_len, b.frame_len);
	if (a.tsv)
		printf("op\tmedian_ns\tmin_ns\tmax_ns\tx_baseline\titers\n");
	else
		printf("%-12s %12s %12s %12s %12s %12s\n", "operation", "median ns", "min ns",
		       "max ns", "x baseline", "iters/run");
	for (size_t i = 0; i < N_OPS; i++) {
		const char *fmt = a.tsv ? "%s\t%.3f\t%.3f\t%.3f\t%.1f\t%" PRIu64 "\n"
					: "%-12s %12.3f %12.3f %12.3f %12.1f %12" PRIu64 "\n";
		printf(fmt, ops[i].name, f[i].median, f[i].min, f[i].max, f[i].median / base,
		       f[i].iters);
	}
	if (!a.tsv)
		printf("(%d runs per operation, each >= %g ms; checksum %" PRIu64 ")\n", a.runs,
		       a.min_ms, b.checksum);
	bench_teardown(&b);
	return 0;
}
