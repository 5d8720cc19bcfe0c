/* tb_emit.c - a minimal engine: T threads record a known set of latencies.
 *
 *   tb_emit --bus B [--threads T] [--count N] [--rate R] [--metrics M]
 *           [--mode span|start|end] [--base-ns X] [--seed S] [--expect FILE]
 *           [--hold-ms H] [--no-detach] [--name THREADPREFIX] [--prefix METRICPREFIX]
 *           [--octaves O]
 *           [--guard]
 *   tb_emit --now        print the bus clock (to pass as --base-ns)
 *
 * Thread t records N events at R per second (0 = as fast as it can), over
 * metrics "<prefix>0".."<prefix>{M-1}" (prefix "m") in turn, as threads
 * named "<name>-<t>" (name "emit"). Event k's latency is a deterministic
 * function of (seed, t, k), so a test can recompute every value: 100 ns
 * plus up to 2^(7+j) ns, j spread evenly over 0..O-1 (O octaves, 1 to 20,
 * default 20: up to ~100 ms; 4: up to ~2 us):
 *   span : tb_span(done - latency, done) with done = tb_now()
 *   start: tb_start(seq, base + seq * 1000)          seq = t * N + k
 *   end  : tb_end(seq, base + seq * 1000 + latency)
 * --expect writes the per-metric figures of the recorded values (from an
 * in-process histogram) as "metric total p50 p90 p99 p99.9 p99.99 max"; the
 * process's own stats go to stdout as "attempted written dropped folded".
 * --guard calls tb_guard_segment_faults() first (a segment truncated under
 * the threads is repaired, not fatal) and appends the repairs to that line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tailbus/hist.h"
#include "tailbus/producer.h"

#define MAX_THREADS 64
#define MAX_METRICS 64
#define START_SPACING_NS 1000

enum mode { MODE_SPAN, MODE_START, MODE_END };

struct opts {
	const char *bus, *expect, *name, *prefix;
	int threads, metrics, hold_ms;
	uint64_t count, rate, seed, base_ns;
	int octaves;
	enum mode mode;
	bool no_detach, guard;
};

struct worker {
	const struct opts *o;
	int index;
	tb_producer_stats stats;
	int error;
	const char *why;
};

#define OCTAVES_MAX 20

/* splitmix64 of (seed, thread, k): latencies from 100 ns to ~100 ms (with
 * OCTAVES_MAX octaves), log-spread */
static uint64_t latency_of(uint64_t seed, int octaves, int t, uint64_t k)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)t * 0xbf58476d1ce4e5b9ULL + k;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	int shift = (int)(z % (uint64_t)octaves);
	return 100 + ((z >> 8) & ((UINT64_C(1) << (shift + 7)) - 1));
}

static void pace(const struct opts *o, uint64_t k, uint64_t t0, const tb_producer *p)
{
	if (!o->rate)
		return;
	uint64_t due = t0 + (uint64_t)((unsigned __int128)k * 1000000000u / o->rate);
	while (tb_now(p) < due) {
		uint64_t left = due - tb_now(p);
		if (left > 200000) {
			struct timespec ts = {0, (long)(left / 2)};
			nanosleep(&ts, NULL);
		}
	}
}

static void *run(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	char name[32];
	snprintf(name, sizeof(name), "%s-%d", o->name, w->index);
	tb_producer *p = tb_attach(o->bus, name);
	if (!p) {
		w->error = -ENOMEM;
		return NULL;
	}
	w->error = tb_producer_error(p, &w->why);
	tb_metric_t ids[MAX_METRICS];
	for (int m = 0; m < o->metrics; m++) {
		snprintf(name, sizeof(name), "%s%d", o->prefix, m);
		ids[m] = tb_metric(p, name);
	}
	uint64_t t0 = tb_now(p);
	for (uint64_t k = 0; k < o->count; k++) {
		pace(o, k, t0, p);
		tb_metric_t id = ids[k % (uint64_t)o->metrics];
		uint64_t lat = latency_of(o->seed, o->octaves, w->index, k);
		uint64_t seq = (uint64_t)w->index * o->count + k;
		uint64_t start = o->base_ns + seq * START_SPACING_NS;
		if (o->mode == MODE_SPAN) {
			uint64_t done = tb_now(p);
			tb_span(p, id, done - lat, done);
		} else if (o->mode == MODE_START) {
			tb_start(p, id, seq, start);
		} else {
			tb_end(p, id, seq, start + lat);
		}
	}
	tb_producer_stats_get(p, &w->stats);
	if (o->hold_ms) {
		struct timespec ts = {o->hold_ms / 1000, (long)(o->hold_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	if (!o->no_detach)
		tb_detach(p);
	return NULL;
}

static int write_expect(const struct opts *o)
{
	FILE *f = fopen(o->expect, "w");
	if (!f)
		return -errno;
	for (int m = 0; m < o->metrics; m++) {
		tb_hist h;
		tb_hist_init(&h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, TB_HIST_DEFAULT_SIG_DIGITS);
		for (int t = 0; t < o->threads; t++) {
			for (uint64_t k = (uint64_t)m; k < o->count; k += (uint64_t)o->metrics)
				tb_hist_record(&h, (int64_t)latency_of(o->seed, o->octaves, t, k));
		}
		fprintf(f, "%s%d %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
			o->prefix, m, tb_hist_total(&h), tb_hist_value_at_percentile(&h, 50),
			tb_hist_value_at_percentile(&h, 90), tb_hist_value_at_percentile(&h, 99),
			tb_hist_value_at_percentile(&h, 99.9), tb_hist_value_at_percentile(&h, 99.99),
			tb_hist_max(&h));
		tb_hist_free(&h);
	}
	return fclose(f) == 0 ? 0 : -errno;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{"bus", 1, 0, 'b'},  {"threads", 1, 0, 't'}, {"count", 1, 0, 'n'}, {"rate", 1, 0, 'r'},
		{"metrics", 1, 0, 'm'}, {"mode", 1, 0, 'M'}, {"base-ns", 1, 0, 'B'}, {"seed", 1, 0, 's'},
		{"expect", 1, 0, 'e'}, {"hold-ms", 1, 0, 'H'}, {"no-detach", 0, 0, 'D'},
		{"now", 0, 0, 'N'}, {"name", 1, 0, 'a'}, {"prefix", 1, 0, 'p'},
		{"octaves", 1, 0, 'O'}, {"guard", 0, 0, 'G'}, {0, 0, 0, 0}};
	*o = (struct opts){.bus = "default", .name = "emit", .prefix = "m", .threads = 1, .metrics = 1, .count = 1000, .seed = 1,
			   .octaves = OCTAVES_MAX};
	int c;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'b': o->bus = optarg; break;
		case 't': o->threads = atoi(optarg); break;
		case 'n': o->count = strtoull(optarg, NULL, 10); break;
		case 'r': o->rate = strtoull(optarg, NULL, 10); break;
		case 'm': o->metrics = atoi(optarg); break;
		case 'M':
			o->mode = !strcmp(optarg, "start") ? MODE_START : !strcmp(optarg, "end") ? MODE_END : MODE_SPAN;
			break;
		case 'B': o->base_ns = strtoull(optarg, NULL, 10); break;
		case 's': o->seed = strtoull(optarg, NULL, 10); break;
		case 'e': o->expect = optarg; break;
		case 'H': o->hold_ms = atoi(optarg); break;
		case 'D': o->no_detach = true; break;
		case 'a': o->name = optarg; break;
		case 'p': o->prefix = optarg; break;
		case 'O':
			o->octaves = atoi(optarg);
			if (o->octaves < 1 || o->octaves > OCTAVES_MAX)
				return -EINVAL;
			break;
		case 'G': o->guard = true; break;
		case 'N': {
			tb_producer fake = {0};
			printf("%" PRIu64 "\n", tb_now(&fake));
			return 1;
		}
		default: return -EINVAL;
		}
	}
	if (o->threads < 1 || o->threads > MAX_THREADS || o->metrics < 1 || o->metrics > MAX_METRICS)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (o.expect && write_expect(&o) < 0) {
		fprintf(stderr, "tb_emit: cannot write %s\n", o.expect);
		return 1;
	}
	if (o.guard && (rc = tb_guard_segment_faults()) < 0) {
		fprintf(stderr, "tb_emit: cannot guard against truncation: %s\n", strerror(-rc));
		return 1;
	}
	pthread_t th[MAX_THREADS];
	struct worker w[MAX_THREADS];
	for (int t = 0; t < o.threads; t++) {
		w[t] = (struct worker){.o = &o, .index = t};
		pthread_create(&th[t], NULL, run, &w[t]);
	}
	tb_producer_stats total = {0};
	int status = 0;
	for (int t = 0; t < o.threads; t++) {
		pthread_join(th[t], NULL);
		if (w[t].error) {
			fprintf(stderr, "tb_emit: thread %d records nothing: %s\n", t, w[t].why ? w[t].why : "?");
			status = 1;
		}
		total.attempted += w[t].stats.attempted;
		total.written += w[t].stats.written;
		total.dropped += w[t].stats.dropped;
		total.folded += w[t].stats.folded;
	}
	printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, total.attempted, total.written,
	       total.dropped, total.folded);
	if (o.guard)
		printf(" %" PRIu64, tb_guard_repairs());
	printf("\n");
	return status;
}
