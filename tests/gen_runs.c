/* gen_runs.c - write synthetic interval logs for the replay and compare tests.
 *
 *   gen_runs OUT.hlog [--intervals N] [--samples N] [--p50-ns V] [--sigma S]
 *            [--scale F] [--warmup N] [--warmup-factor F] [--ramp F]
 *            [--seed N] [--tag T]... [--open-loop]
 *
 * Each interval (1 s long, back to back from a fixed StartTime) holds, per
 * tag, --samples latencies drawn log-normally: p50-ns * scale * exp(sigma * z)
 * with z standard normal (Box-Muller over a fixed-seed splitmix64), so the
 * p50 of the distribution is p50-ns * scale and p99 is about
 * exp(2.33 * sigma) times that. The first --warmup intervals are
 * --warmup-factor times slower (an obvious warm-up); with --ramp F the
 * latencies grow geometrically from 1 to F times over the run (a run that
 * never settles). Runs written with
 * the same seed draw the same z, so two runs that differ only in --scale have
 * every figure in that ratio (up to the histogram's 3-digit resolution): the
 * compare tests can place runs exactly. --open-loop writes tailbusd's
 * open-loop mark as the header comment. Without --tag the lines are untagged.
 * The file is the same on every machine (fixed seed and zlib level).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/codec.h"
#include "tailbus/hist.h"
#include "tailbus/log.h"
#include "tailbus/rand.h"

/* Sun Nov 30 18:00:00 UTC 2025, the example in docs/formats.md, Interval log. */
#define START_TIME_SEC 1764525600.0
#define INTERVAL_SEC 1.0
#define TAGS_MAX 8
#define COMMENT "Written by tailbus gen_runs for the tools tests"

struct config {
	int intervals, samples;
	double p50_ns, sigma, scale, warmup_factor, ramp;
	int warmup;
	uint64_t seed;
	const char *tags[TAGS_MAX];
	int ntags;
	bool open_loop;
};

/* Uniform in (0, 1]. */
static double next_unit(uint64_t *state)
{
	return ((double)(tb_splitmix64(state) >> 11) + 1.0) / (double)(1ULL << 53);
}

/* Standard normal by Box-Muller (one of the pair; simple and exact enough). */
static double next_normal(uint64_t *state)
{
	double u = next_unit(state), v = next_unit(state);
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static int fill(tb_hist *h, const struct config *c, int interval, uint64_t *state)
{
	double factor = c->scale;
	if (interval < c->warmup)
		factor *= c->warmup_factor;
	if (c->intervals > 1)
		factor *= pow(c->ramp, (double)interval / (c->intervals - 1));
	tb_hist_reset(h);
	for (int k = 0; k < c->samples; k++) {
		double v = c->p50_ns * factor * exp(c->sigma * next_normal(state));
		int rc = tb_hist_record(h, v < 1.0 ? 1 : (int64_t)v);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int generate(FILE *f, const struct config *c)
{
	tb_hist h;
	tb_log_writer w = {0};
	uint64_t state = c->seed;
	int rc = tb_hist_init(&h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
			      TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc < 0)
		return rc;
	/* the writer prints the comment as "#[comment]": the mark without "#[" and "]" */
	static const char full[] = TB_OPEN_LOOP_MARK;
	char mark[sizeof(full)];
	snprintf(mark, sizeof(mark), "%.*s", (int)sizeof(full) - 4, &full[2]);
	rc = tb_log_writer_open(&w, f, c->open_loop ? mark : COMMENT, START_TIME_SEC, START_TIME_SEC,
				TB_V2_DEFAULT_LEVEL);
	for (int i = 0; i < c->intervals && rc == 0; i++) {
		for (int t = 0; t < (c->ntags ? c->ntags : 1) && rc == 0; t++) {
			rc = fill(&h, c, i, &state);
			if (rc == 0)
				rc = tb_log_writer_append(&w, c->ntags ? c->tags[t] : NULL,
							  START_TIME_SEC + i * INTERVAL_SEC, INTERVAL_SEC, &h);
		}
	}
	tb_log_writer_close(&w);
	tb_hist_free(&h);
	return rc;
}

static bool number(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return end != s && !*end && !errno && isfinite(*out);
}

static int parse(int argc, char **argv, struct config *c)
{
	static const struct option longs[] = {
		{"intervals", required_argument, 0, 'n'}, {"samples", required_argument, 0, 'k'},
		{"p50-ns", required_argument, 0, 'p'},    {"sigma", required_argument, 0, 's'},
		{"scale", required_argument, 0, 'x'},     {"warmup", required_argument, 0, 'w'},
		{"warmup-factor", required_argument, 0, 'f'}, {"ramp", required_argument, 0, 'a'},
		{"seed", required_argument, 0, 'r'},      {"tag", required_argument, 0, 't'},
		{"open-loop", no_argument, 0, 'o'},       {0, 0, 0, 0}};
	*c = (struct config){.intervals = 30, .samples = 10000, .p50_ns = 100000.0, .sigma = 0.3,
			     .scale = 1.0, .warmup_factor = 1.0, .ramp = 1.0, .seed = 1};
	int opt;
	double v;
	while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (opt == 'o') {
			c->open_loop = true;
			continue;
		}
		if (opt == 't') {
			if (c->ntags == TAGS_MAX || !tb_log_tag_valid(optarg))
				return -EINVAL;
			c->tags[c->ntags++] = optarg;
			continue;
		}
		if (opt == '?' || !number(optarg, &v) || v < 0)
			return -EINVAL;
		switch (opt) {
		case 'n': c->intervals = (int)v; break;
		case 'k': c->samples = (int)v; break;
		case 'p': c->p50_ns = v; break;
		case 's': c->sigma = v; break;
		case 'x': c->scale = v; break;
		case 'w': c->warmup = (int)v; break;
		case 'f': c->warmup_factor = v; break;
		case 'a': c->ramp = v; break;
		case 'r': c->seed = (uint64_t)v; break;
		}
	}
	return optind == argc - 1 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct config c;
	if (parse(argc, argv, &c) < 0) {
		fprintf(stderr, "usage: gen_runs OUT.hlog [--intervals N] [--samples N] [--p50-ns V] "
				"[--sigma S] [--scale F] [--warmup N] [--warmup-factor F] "
				"[--ramp F] [--seed N] [--tag T]... [--open-loop]\n");
		return 2;
	}
	const char *path = argv[optind];
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "gen_runs: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	int rc = generate(f, &c);
	if (rc < 0)
		fprintf(stderr, "gen_runs: cannot generate %s: %s\n", path, strerror(-rc));
	if (fclose(f) != 0) {
		fprintf(stderr, "gen_runs: cannot write %s: %s\n", path, strerror(errno));
		rc = -EIO;
	}
	return rc < 0 ? 1 : 0;
}
