/* prom_emit.c - one engine thread recording a chosen distribution, for prom_e2e.sh.
 *
 *   prom_emit BUS METRIC COUNT LOW_NS HIGH_NS DISTINCT SECONDS
 *
 * Records COUNT spans of METRIC on BUS through the public producer API,
 * spread evenly over SECONDS. Each latency is one of DISTINCT values spaced
 * evenly on a log scale from LOW_NS to HIGH_NS, picked by a fixed
 * pseudo-random sequence (so two hosts given different ranges have plainly
 * different distributions). A few distinct values keep each interval's
 * histogram small. Prints "written W dropped D folded F" and exits 1 when
 * the handle could not record or anything was dropped: the test counts on
 * W events reaching the collector.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tailbus/producer.h"
#include "tailbus/rand.h"

#define NS_PER_S 1000000000ULL

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: prom_emit BUS METRIC COUNT LOW_NS HIGH_NS DISTINCT SECONDS\n");
		return 2;
	}
	uint64_t count = strtoull(argv[3], NULL, 10);
	double low = strtod(argv[4], NULL), high = strtod(argv[5], NULL);
	int distinct = atoi(argv[6]);
	double seconds = strtod(argv[7], NULL);
	if (!count || low < 1 || high < low || distinct < 1 || seconds <= 0) {
		fprintf(stderr, "prom_emit: bad arguments\n");
		return 2;
	}
	tb_producer *p = tb_attach(argv[1], "prom-emit");
	const char *why;
	if (!p || tb_producer_error(p, &why)) {
		fprintf(stderr, "prom_emit: cannot attach to %s: %s\n", argv[1], p ? why : "no memory");
		return 1;
	}
	tb_metric_t m = tb_metric(p, argv[2]);
	uint64_t state = (uint64_t)low, t0 = tb_now(p);
	uint64_t spacing = (uint64_t)(seconds * NS_PER_S) / count;
	for (uint64_t k = 0; k < count; k++) {
		while (tb_now(p) < t0 + k * spacing) {
			struct timespec nap = {0, 200000};
			nanosleep(&nap, NULL);
		}
		int i = (int)(tb_splitmix64(&state) % (uint64_t)distinct);
		double f = distinct > 1 ? (double)i / (distinct - 1) : 0;
		uint64_t latency = (uint64_t)llround(low * pow(high / low, f));
		uint64_t done = tb_now(p);
		tb_span(p, m, done - latency, done);
	}
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	printf("written %llu dropped %llu folded %llu\n", (unsigned long long)st.written,
	       (unsigned long long)st.dropped, (unsigned long long)st.folded);
	tb_detach(p);
	return st.dropped || st.folded || st.written != count ? 1 : 0;
}
