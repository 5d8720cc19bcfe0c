/* bench_scrape.c - what one scrape of `tailbus export` costs at 64 metrics.
 *
 *   bench_scrape [--runs N]
 *
 * Builds 64 cumulative histograms of the collector's layout (1 ns .. 1 h, 3
 * digits) for two shapes, renders the exposition the exporter serves
 * (tb_prom_pb_family: native and classic buckets; tb_prom_text_family:
 * classic) and reports the median CPU time of N renders (CLOCK_THREAD_CPUTIME_ID,
 * so a loaded machine's waits are not counted). The baseline, measured in the
 * same run, is one pass summing the same 64 counts arrays: the memory walk
 * no mapping can avoid. Target (issue 20): under 10 ms a scrape.
 *
 * Shapes: "typical", each metric over three decades (10 us .. 10 ms, about
 * 2,000 HDR buckets filled); "wide", seven decades (100 ns .. 1 s, about
 * 20,000 filled: the worst a 3-digit histogram gets in practice).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tailbus/prom.h"

#define METRICS 64
#define SAMPLES 200000
#define DEFAULT_RUNS 21
#define TARGET_MS 10.0

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void fill(tb_hist *h, uint64_t seed, double low_ns, double high_ns)
{
	if (tb_hist_init(h, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST, TB_HIST_DEFAULT_SIG_DIGITS))
		exit(1);
	double span = log2(high_ns / low_ns);
	for (int i = 0; i < SAMPLES; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		double u = (double)(seed >> 11) / 9007199254740992.0;
		tb_hist_record(h, (int64_t)(low_ns * exp2(u * span)));
	}
}

/* 0: baseline (sum the counts), 1: text, 2: protobuf. Returns the median ms. */
static double measure(int what, const tb_prom_family *f, tb_hist *h, int runs, size_t *bytes)
{
	double *t = calloc((size_t)runs, sizeof(*t));
	int64_t sink = 0;
	for (int r = 0; r < runs; r++) {
		tb_prom_buf b = {0};
		double t0 = cpu_ms();
		if (what == 0) {
			int64_t s = 0;
			for (int m = 0; m < METRICS; m++)
				for (int32_t i = 0; i < h[m].counts_len; i++)
					s += h[m].counts[i];
			sink += s;
			__asm__ volatile("" : : "r"(sink)); /* keep the sum */
		} else if (what == 1) {
			tb_prom_text_family(&b, f);
		} else {
			tb_prom_pb_family(&b, f, TB_PROM_SCHEMA_DEFAULT);
		}
		t[r] = cpu_ms() - t0;
		*bytes = b.len;
		tb_prom_buf_free(&b);
	}
	qsort(t, (size_t)runs, sizeof(*t), by_value);
	double median = t[runs / 2];
	free(t);
	return median;
}

int main(int argc, char **argv)
{
	int runs = argc == 3 && !strcmp(argv[1], "--runs") ? atoi(argv[2]) : DEFAULT_RUNS;
	if (runs < 1) {
		fprintf(stderr, "usage: bench_scrape [--runs N]\n");
		return 2;
	}
	static const struct { const char *name; double low, high; } shapes[] = {
		{"typical (10us..10ms)", 1e4, 1e7}, {"wide (100ns..1s)", 1e2, 1e9}};
	static tb_hist h[METRICS];
	const tb_hist *hp[METRICS];
	tb_prom_labels labels[METRICS];
	char names[METRICS][16];
	printf("| shape | exposition | median ms (CPU) | bytes | baseline: sum the counts, ms | ratio | target | verdict |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (int m = 0; m < METRICS; m++) {
			fill(&h[m], (uint64_t)m + 1, shapes[s].low, shapes[s].high);
			hp[m] = &h[m];
			snprintf(names[m], sizeof(names[m]), "m%d", m);
			labels[m] = (tb_prom_labels){"bus", names[m], "host"};
		}
		tb_prom_family f = {.name = "tailbus_latency_seconds", .help = "latency",
				    .type = TB_PROM_HISTOGRAM, .n = METRICS, .labels = labels, .hists = hp};
		size_t bytes = 0;
		double base = measure(0, &f, h, runs, &bytes);
		for (int what = 1; what <= 2; what++) {
			double ms = measure(what, &f, h, runs, &bytes);
			printf("| %s | %s | %.2f | %zu | %.2f | %.1f | < %.0f ms | %s |\n", shapes[s].name,
			       what == 1 ? "text 0.0.4" : "protobuf", ms, bytes, base, ms / base, TARGET_MS,
			       ms < TARGET_MS ? "met" : "missed");
		}
		for (int m = 0; m < METRICS; m++)
			tb_hist_free(&h[m]);
	}
	return 0;
}
