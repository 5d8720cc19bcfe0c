/* gen_log.c - write a deterministic interval log for the interop tests.
 *
 *   gen_log OUT.hlog [EXPECTED.txt]
 *
 * The log has INTERVALS intervals of INTERVAL_SEC seconds. Each interval has
 * one line per stream: untagged, "alpha" and "beta", all starting at the same
 * time, in that order. Every line is a (1 ns, 1 h, 3 digits) histogram, the
 * collector's default layout, filled with samples drawn log-uniformly over the
 * stream's range by a fixed-seed splitmix64, so the file is the same on every
 * machine and run (the zlib level is fixed too).
 *
 * EXPECTED.txt, when given, gets one line per stream with the figures of all
 * its intervals merged in-process with tb_hist_add (same layout, so the merge
 * is exact):
 *     tag=<tag> intervals=N total=N min=V p50=V p90=V p99=V p99_9=V p99_99=V max=V
 * (an empty tag is the untagged stream). tests/interop_java.sh compares these
 * lines with what tailbus replay and the Java reference make of the log.
 *
 *   gen_log --tags N OUT.hlog
 *
 * writes instead one interval of each of N tags ("t0000000", ...), each a
 * (1 ns, 1 h, 2 digits) histogram of TAG_SAMPLES values below 100 ns:
 * a log of very many small tags, whose declared range is far wider than
 * what they hold (tests/replay_tags.sh).
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

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_SEC 1000000000LL

#define INTERVALS 20
#define INTERVAL_SEC 1.0
/* Sun Nov 30 18:00:00 UTC 2025, the example in docs/formats.md, Interval log. */
#define START_TIME_SEC 1764525600.0
#define PRNG_SEED 0x7461696c62757321ULL /* "tailbus!" */
#define LOG_COMMENT "Written by tailbus gen_log for the interop tests"

struct stream {
	const char *tag; /* "" = untagged */
	int64_t lowest_ns, highest_ns;
	int samples_per_interval;
};

static const struct stream streams[] = {
	{"", 1, 10 * NS_PER_SEC, 5000},
	{"alpha", 1, 10 * NS_PER_SEC, 5000},
	{"beta", 1 * NS_PER_US, 100 * NS_PER_MS, 3000},
};

/* The figures of EXPECTED.txt, in its order (percent). */
static const double levels[] = {50.0, 90.0, 99.0, 99.9, 99.99};
static const char *const level_keys[] = {"p50", "p90", "p99", "p99_9", "p99_99"};

/* Log-uniform in [lo, hi]: equal numbers of samples per decade. */
static int64_t next_value(uint64_t *state, int64_t lo, int64_t hi)
{
	double u = (double)(tb_splitmix64(state) >> 11) / (double)(1ULL << 53);
	double v = exp(log((double)lo) + u * (log((double)hi) - log((double)lo)));
	int64_t n = (int64_t)v;
	return n < lo ? lo : (n > hi ? hi : n);
}

static void write_expected(FILE *f, const struct stream *s, const tb_hist *merged)
{
	fprintf(f, "tag=%s intervals=%d total=%" PRId64 " min=%" PRId64, s->tag, INTERVALS,
		tb_hist_total(merged), tb_hist_min(merged));
	for (size_t i = 0; i < ARRAY_LEN(levels); i++)
		fprintf(f, " %s=%" PRId64, level_keys[i], tb_hist_value_at_percentile(merged, levels[i]));
	fprintf(f, " max=%" PRId64 "\n", tb_hist_max(merged));
}

static int generate(FILE *log, FILE *expected)
{
	tb_hist interval = {0}, merged[ARRAY_LEN(streams)] = {{0}};
	tb_log_writer w = {0};
	uint64_t state = PRNG_SEED;
	int rc = tb_hist_init(&interval, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
			      TB_HIST_DEFAULT_SIG_DIGITS);
	for (size_t s = 0; s < ARRAY_LEN(streams) && rc == 0; s++)
		rc = tb_hist_init_like(&merged[s], &interval);
	if (rc == 0)
		rc = tb_log_writer_open(&w, log, LOG_COMMENT, START_TIME_SEC, START_TIME_SEC,
					TB_V2_DEFAULT_LEVEL);
	for (int i = 0; i < INTERVALS && rc == 0; i++) {
		double start = START_TIME_SEC + i * INTERVAL_SEC;
		for (size_t s = 0; s < ARRAY_LEN(streams) && rc == 0; s++) {
			const struct stream *st = &streams[s];
			tb_hist_reset(&interval);
			for (int k = 0; k < st->samples_per_interval && rc == 0; k++)
				rc = tb_hist_record(&interval,
						    next_value(&state, st->lowest_ns, st->highest_ns));
			if (rc == 0)
				rc = tb_log_writer_append(&w, st->tag, start, INTERVAL_SEC, &interval);
			if (rc == 0)
				rc = tb_hist_add(&merged[s], &interval);
		}
	}
	for (size_t s = 0; s < ARRAY_LEN(streams); s++) {
		if (rc == 0 && expected)
			write_expected(expected, &streams[s], &merged[s]);
		tb_hist_free(&merged[s]);
	}
	tb_log_writer_close(&w);
	tb_hist_free(&interval);
	return rc;
}

/* --tags N: many small tags, one interval each. */
#define TAG_DIGITS 2
#define TAG_SAMPLES 10
#define TAG_VALUE_MAX 100

static int generate_tags(FILE *log, long ntags)
{
	tb_hist h = {0};
	tb_log_writer w = {0};
	char tag[32];
	int rc = tb_hist_init(&h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, TAG_DIGITS);
	if (rc == 0)
		rc = tb_log_writer_open(&w, log, LOG_COMMENT, START_TIME_SEC, START_TIME_SEC,
					TB_V2_DEFAULT_LEVEL);
	for (long t = 0; t < ntags && rc == 0; t++) {
		tb_hist_reset(&h);
		for (int k = 0; k < TAG_SAMPLES && rc == 0; k++)
			rc = tb_hist_record(&h, 1 + (t + k) % TAG_VALUE_MAX);
		snprintf(tag, sizeof(tag), "t%07ld", t);
		if (rc == 0)
			rc = tb_log_writer_append(&w, tag, START_TIME_SEC, INTERVAL_SEC, &h);
	}
	tb_log_writer_close(&w);
	tb_hist_free(&h);
	return rc;
}

static int main_tags(char **argv)
{
	char *end;
	long ntags = strtol(argv[2], &end, 10);
	FILE *log = *end || ntags < 1 ? NULL : fopen(argv[3], "w");
	if (!log) {
		fprintf(stderr, "gen_log: --tags N OUT.hlog: cannot write %s\n", argv[3]);
		return 1;
	}
	int rc = generate_tags(log, ntags);
	if (fclose(log) != 0 && rc == 0)
		rc = -EIO;
	if (rc < 0)
		fprintf(stderr, "gen_log: cannot generate %s: %s\n", argv[3], strerror(-rc));
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--tags"))
		return main_tags(argv);
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: gen_log OUT.hlog [EXPECTED.txt] | gen_log --tags N OUT.hlog\n");
		return 2;
	}
	FILE *log = fopen(argv[1], "w");
	FILE *expected = argc == 3 ? fopen(argv[2], "w") : NULL;
	if (!log || (argc == 3 && !expected)) {
		fprintf(stderr, "gen_log: cannot write %s: %s\n", log ? argv[2] : argv[1],
			strerror(errno));
		return 1;
	}
	int rc = generate(log, expected);
	if (rc < 0)
		fprintf(stderr, "gen_log: cannot generate %s: %s\n", argv[1], strerror(-rc));
	if (fclose(log) != 0 || (expected && fclose(expected) != 0)) {
		fprintf(stderr, "gen_log: cannot write %s: %s\n", argv[1], strerror(errno));
		rc = -EIO;
	}
	return rc < 0 ? 1 : 0;
}
