/* bench_util.h - the command line the timing benchmarks share (bench_hist,
 * bench_span, bench_collector), so that bench/hist/run and bench/bus/run call
 * them all the same way and they check their arguments the same way.
 *
 * Two modes:
 *   timing     [--runs R] [--min-ms MS] [--tsv]: R timed runs per operation
 *              after a warm-up, each >= MS ms; a table, or tab-separated
 *              lines for the run scripts;
 *   callgrind  --op NAME --iters N: one operation exactly N times, so that
 *              (total for 2N - total for N) / N is its own instruction count.
 * A benchmark may take one switch of its own (bench_span's --percall).
 * Its operations' names, its usage text and its defaults stay its own.
 *
 * Static inline only, as in bench/bus/bench_bus.h: each benchmark is one
 * translation unit. Included by relative path ("../bench_util.h"), so
 * bench/bus/run's direct gcc build, which has no -I for bench/, finds it too.
 */
#ifndef TAILBUS_BENCH_UTIL_H
#define TAILBUS_BENCH_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most runs per measurement: the benchmarks keep one run's figure per
 * slot of an array this long. bench_bus.h defines the same value; C allows
 * an identical redefinition and rejects a different one, so the two cannot
 * drift apart. */
#define BENCH_RUNS_MAX 101

struct bench_args {
	int runs;        /* --runs: timed runs per operation */
	double min_ms;   /* --min-ms: each run lasts at least this long */
	bool tsv;        /* --tsv: tab-separated output, for the run scripts */
	bool own_switch; /* the benchmark's own switch was given */
	const char *op;  /* --op: the one operation to run, or NULL to time all */
	int op_index;    /* op's index in the benchmark's operations, or -1 */
	uint64_t iters;  /* --iters: how many times to run op */
};

/* Read argv into *a, whose runs and min_ms hold the benchmark's defaults.
 * own_switch names the benchmark's own switch, or is NULL. op_index is the
 * benchmark's own lookup: an operation's index in its table by name, or -1
 * for none (an index, so the caller needs no second lookup). 0 when the
 * arguments are usable; -1 for an unknown argument, an unknown operation or
 * a value out of range (the latter two said on stderr), and the caller then
 * prints its usage. */
static inline int bench_args_parse(struct bench_args *a, int argc, char **argv,
				   const char *own_switch, int (*op_index)(const char *name))
{
	a->tsv = false;
	a->own_switch = false;
	a->op = NULL;
	a->op_index = -1;
	a->iters = 0;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(s, "--tsv") == 0) {
			a->tsv = true;
		} else if (own_switch && strcmp(s, own_switch) == 0) {
			a->own_switch = true;
		} else if (strcmp(s, "--runs") == 0 && v) {
			a->runs = atoi(v), i++;
		} else if (strcmp(s, "--min-ms") == 0 && v) {
			a->min_ms = atof(v), i++;
		} else if (strcmp(s, "--iters") == 0 && v) {
			a->iters = strtoull(v, NULL, 10), i++;
		} else if (strcmp(s, "--op") == 0 && v) {
			a->op_index = op_index(v);
			if (a->op_index < 0) {
				fprintf(stderr, "%s: unknown operation '%s'\n", argv[0], v);
				return -1;
			}
			a->op = v, i++;
		} else {
			return -1;
		}
	}
	if (a->runs < 1 || a->runs > BENCH_RUNS_MAX || a->min_ms <= 0 || (a->op && a->iters == 0)) {
		fprintf(stderr, "%s: --runs must be 1..%d, --min-ms > 0, --op needs --iters N > 0\n",
			argv[0], BENCH_RUNS_MAX);
		return -1;
	}
	return 0;
}

#endif
