/* gen_day.c - write a large, deterministic interval log for the replay benchmark.
 *
 *   gen_day OUT.hlog TOTALS.tsv [--seconds N] [--pool P] [--zlevel Z]
 *
 * The log looks like a day of a busy collector: N one-second intervals
 * (default 86,400) of ten tags, one tagged line per tag per interval, every
 * histogram in the collector's layout (1 ns .. 1 h, 3 digits) and compressed
 * at the collector's zlib level (bench/java/run passes TB_LOG_ZLEVEL).
 *
 * Latencies: each tag has a log-normal body (a median of tens of microseconds
 * and its own spread), a sparse tail (about one sample in a thousand, log-uniform
 * from 200 us to 20 ms) and, in about one interval in a hundred, a stall that
 * pushes a slice of the interval's samples to milliseconds. Tags differ in rate,
 * from 20 to 5,000 samples a second, so payloads run from tens of bytes to a few
 * kilobytes, as the metrics of one engine do.
 *
 * Drawing billions of samples would make the benchmark mostly about the
 * generator, so each tag draws a pool of P distinct interval histograms
 * (default 1,024) and every line of the day takes one of them, chosen by the
 * same seeded generator. A reader still inflates and decodes every line: no
 * reader in the comparison caches payloads, so the repetition does not change
 * what is timed.
 *
 * TOTALS.tsv gets, per tag, what a correct replay of the whole log must
 * report: `tag<TAB>intervals<TAB>total count`.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/codec.h"
#include "tailbus/hist.h"
#include "tailbus/log.h"
#include "tailbus/rand.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define NS_PER_US 1000.0
#define SECONDS_PER_DAY 86400
#define DEFAULT_POOL 1024
#define INTERVAL_SEC 1.0
/* Sun Nov 30 00:00:00 UTC 2025: the day the log covers. */
#define START_TIME_SEC 1764460800.0
#define PRNG_SEED 0x62656e63686a6176ULL /* "benchjav" */
#define LOG_COMMENT "Written by tailbus bench/java/gen_day (a synthetic day of 10 tags)"

/* One sample in TAIL_PER of a tag falls in the sparse tail. */
#define TAIL_PER 1000
#define TAIL_LOW_NS 200e3
#define TAIL_HIGH_NS 20e6
/* One interval in STALL_PER has a stall: STALL_SHARE of its samples wait
 * STALL_LOW_NS .. STALL_HIGH_NS more. */
#define STALL_PER 100
#define STALL_SHARE 0.05
#define STALL_LOW_NS 1e6
#define STALL_HIGH_NS 10e6
/* An interval's sample count is the tag's rate times 0.5 .. 1.5. */
#define RATE_SPREAD 0.5

struct tag_spec {
	const char *name;
	int rate;         /* mean samples per interval */
	double median_us; /* of the log-normal body */
	double sigma;     /* of ln(latency) */
};

static const struct tag_spec tags[] = {
	{"md.tick", 5000, 12.0, 0.35},     {"orders.new", 3000, 35.0, 0.45},
	{"orders.fill", 2000, 48.0, 0.50}, {"orders.cancel", 1000, 30.0, 0.40},
	{"risk.check", 1000, 8.0, 0.30},   {"gateway.ack", 500, 65.0, 0.55},
	{"pos.update", 200, 20.0, 0.40},   {"hedge.send", 100, 90.0, 0.60},
	{"ref.reload", 50, 150.0, 0.70},   {"eod.snapshot", 20, 400.0, 0.80},
};

/* One encoded interval of a tag's pool. */
struct variant {
	uint8_t *frame;
	size_t frame_len;
	int64_t max;
	int64_t total;
};

struct options {
	const char *log_path, *totals_path;
	long seconds;
	long pool;
	int zlevel;
};

/* Uniform in (0, 1): never 0, so its logarithm is finite. */
static double next_unit(uint64_t *state)
{
	return ((double)(tb_splitmix64(state) >> 11) + 0.5) / (double)(1ULL << 53);
}

/* Standard normal by Box and Muller (one of the pair is enough here). */
static double next_normal(uint64_t *state)
{
	double r = sqrt(-2.0 * log(next_unit(state)));
	return r * cos(2.0 * M_PI * next_unit(state));
}

static double log_uniform(uint64_t *state, double lo, double hi)
{
	return exp(log(lo) + next_unit(state) * (log(hi) - log(lo)));
}

static int64_t next_latency_ns(uint64_t *state, const struct tag_spec *t, bool stalled)
{
	double ns;
	if (tb_splitmix64(state) % TAIL_PER == 0)
		ns = log_uniform(state, TAIL_LOW_NS, TAIL_HIGH_NS);
	else
		ns = t->median_us * NS_PER_US * exp(t->sigma * next_normal(state));
	if (stalled && next_unit(state) < STALL_SHARE)
		ns += log_uniform(state, STALL_LOW_NS, STALL_HIGH_NS);
	return ns < 1.0 ? 1 : (int64_t)ns;
}

/* Fill h with one interval of tag t. */
static int draw_interval(uint64_t *state, const struct tag_spec *t, tb_hist *h)
{
	double scale = 1.0 - RATE_SPREAD + 2.0 * RATE_SPREAD * next_unit(state);
	long n = lround(t->rate * scale);
	bool stalled = tb_splitmix64(state) % STALL_PER == 0;
	tb_hist_reset(h);
	for (long k = 0; k < n; k++) {
		int rc = tb_hist_record(h, next_latency_ns(state, t, stalled));
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int encode_variant(const tb_hist *h, int zlevel, uint8_t *inner, size_t inner_cap,
			  struct variant *v)
{
	size_t inner_len, cap = tb_v2_frame_bound(h);
	v->frame = malloc(cap);
	if (!v->frame)
		return -ENOMEM;
	int rc = tb_v2_encode_inner(h, inner, inner_cap, &inner_len);
	if (rc == 0)
		rc = tb_v2_compress(inner, inner_len, zlevel, v->frame, cap, &v->frame_len);
	v->max = tb_hist_max(h);
	v->total = tb_hist_total(h);
	return rc;
}

/* pool[t * P + k]: the k-th variant of tag t. */
static int build_pool(const struct options *o, uint64_t *state, struct variant *pool)
{
	tb_hist h = {0};
	int rc = tb_hist_init(&h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
			      TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc < 0)
		return rc;
	size_t inner_cap = tb_v2_inner_bound(&h);
	uint8_t *inner = malloc(inner_cap);
	if (!inner)
		rc = -ENOMEM;
	for (size_t t = 0; t < ARRAY_LEN(tags) && rc == 0; t++) {
		for (long k = 0; k < o->pool && rc == 0; k++) {
			rc = draw_interval(state, &tags[t], &h);
			if (rc == 0)
				rc = encode_variant(&h, o->zlevel, inner, inner_cap,
						    &pool[t * (size_t)o->pool + (size_t)k]);
		}
	}
	free(inner);
	tb_hist_free(&h);
	return rc;
}

static int write_day(const struct options *o, uint64_t *state, const struct variant *pool,
		     FILE *log, int64_t *totals)
{
	char header[1024];
	int n = tb_log_format_header(header, sizeof(header), LOG_COMMENT, START_TIME_SEC,
				     START_TIME_SEC);
	if (n < 0)
		return n;
	if (fputs(header, log) == EOF)
		return -EIO;
	size_t cap = 0;
	for (size_t i = 0; i < ARRAY_LEN(tags) * (size_t)o->pool; i++)
		cap = pool[i].frame_len > cap ? pool[i].frame_len : cap;
	cap = tb_base64_encoded_len(cap) + TB_LOG_TAG_MAX + 256;
	char *line = malloc(cap);
	if (!line)
		return -ENOMEM;
	int rc = 0;
	for (long s = 0; s < o->seconds && rc == 0; s++) {
		for (size_t t = 0; t < ARRAY_LEN(tags) && rc == 0; t++) {
			const struct variant *v =
				&pool[t * (size_t)o->pool + tb_splitmix64(state) % (uint64_t)o->pool];
			n = tb_log_format_line_frame(line, cap, tags[t].name, (double)s * INTERVAL_SEC,
						     INTERVAL_SEC, v->max, v->frame, v->frame_len);
			if (n < 0)
				rc = n;
			else if (fwrite(line, 1, (size_t)n, log) != (size_t)n)
				rc = -EIO;
			totals[t] += v->total;
		}
	}
	free(line);
	return rc;
}

static int generate(const struct options *o, FILE *log, FILE *totals_out)
{
	size_t nvariants = ARRAY_LEN(tags) * (size_t)o->pool;
	struct variant *pool = calloc(nvariants, sizeof(*pool));
	int64_t totals[ARRAY_LEN(tags)] = {0};
	uint64_t state = PRNG_SEED;
	if (!pool)
		return -ENOMEM;
	int rc = build_pool(o, &state, pool);
	if (rc == 0)
		rc = write_day(o, &state, pool, log, totals);
	for (size_t t = 0; t < ARRAY_LEN(tags) && rc == 0; t++)
		fprintf(totals_out, "%s\t%ld\t%" PRId64 "\n", tags[t].name, o->seconds, totals[t]);
	for (size_t i = 0; i < nvariants; i++)
		free(pool[i].frame);
	free(pool);
	return rc;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){.seconds = SECONDS_PER_DAY, .pool = DEFAULT_POOL,
			      .zlevel = TB_V2_DEFAULT_LEVEL};
	int positional = 0;
	for (int i = 1; i < argc; i++) {
		long v;
		bool has_value = i + 1 < argc;
		if (!strcmp(argv[i], "--seconds") && has_value &&
		    parse_long(argv[i + 1], 1, 100L * SECONDS_PER_DAY, &v)) {
			o->seconds = v;
			i++;
		} else if (!strcmp(argv[i], "--pool") && has_value &&
			   parse_long(argv[i + 1], 1, 1L << 20, &v)) {
			o->pool = v;
			i++;
		} else if (!strcmp(argv[i], "--zlevel") && has_value &&
			   parse_long(argv[i + 1], 0, 9, &v)) {
			o->zlevel = (int)v;
			i++;
		} else if (argv[i][0] != '-' && positional < 2) {
			*(positional++ ? &o->totals_path : &o->log_path) = argv[i];
		} else {
			return -EINVAL;
		}
	}
	return positional == 2 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct options o;
	if (parse_options(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: gen_day OUT.hlog TOTALS.tsv [--seconds N] [--pool P] "
				"[--zlevel 0..9]\n");
		return 2;
	}
	FILE *log = fopen(o.log_path, "w");
	FILE *totals = log ? fopen(o.totals_path, "w") : NULL;
	if (!log || !totals) {
		fprintf(stderr, "gen_day: cannot write %s: %s\n", log ? o.totals_path : o.log_path,
			strerror(errno));
		return 1;
	}
	int rc = generate(&o, log, totals);
	if (rc < 0)
		fprintf(stderr, "gen_day: cannot generate %s: %s\n", o.log_path, strerror(-rc));
	if (fclose(log) != 0 || fclose(totals) != 0) {
		fprintf(stderr, "gen_day: cannot write %s: %s\n", o.log_path, strerror(errno));
		rc = -EIO;
	}
	return rc < 0 ? 1 : 0;
}
