/* collector_scratch.h - a collector of the tests' own, on scratch
 * directories: for the in-process collector tests (collector_fixture.h,
 * test_drain_threads) and the test programs that fill a bus (tb_heap_fill).
 *
 * A private segment directory and log directory, a collector configuration
 * on them, the log's counts per metric read back, and everything removed
 * afterwards. Failures are cmocka assertions (collector_scratch.c); the
 * inline functions need no cmocka.
 */
#ifndef TAILBUS_TESTS_COLLECTOR_SCRATCH_H
#define TAILBUS_TESTS_COLLECTOR_SCRATCH_H

#include <stdint.h>

#include "collector.h"

/* The events of a scratch bus's ring. */
#define COLLECTOR_SCRATCH_RING 4096

/* The producers' monotonic clock, in ns. */
int64_t mono_ns(void);

/* Makes /tmp/tb-test-<name>-seg.XXXXXX and -log.XXXXXX into seg_dir and
 * log_dir (64 bytes each), and points $TAILBUS_DIR at the first. */
void collector_scratch_make(char *seg_dir, char *log_dir, const char *name);
/* Removes bus `bus`'s segment and both directories; unsets $TAILBUS_DIR. */
void collector_scratch_remove(const char *seg_dir, const char *log_dir, const char *bus);
/* The defaults, for a fresh bus `bus` of `slots` rings of
 * COLLECTOR_SCRATCH_RING events in seg_dir, logging into log_dir. */
void collector_scratch_config(tb_collector_config *cfg, const char *bus, const char *seg_dir,
			      const char *log_dir, uint32_t slots);
/* tb_collector_open, failing the test with the reason if it refuses. */
void collector_open_or_fail(tb_collector *c, const tb_collector_config *cfg);
/* Flushes the writer and adds up, per metric "m<k>" (k < nmetrics), the
 * counts of every log line in log_dir of the interval that starts at
 * start_ns (wall clock; a negative start_ns: every interval). */
void collector_log_totals(tb_collector *c, const char *log_dir, int64_t start_ns, int64_t *totals,
			  int nmetrics);

/* Latencies log-spread over 1 ns .. 2^40 ns (18 minutes), from a seeded
 * sequence (splitmix64): thousands of distinct buckets an interval. */
static inline uint64_t wide_latency(uint64_t *z)
{
	uint64_t x = (*z += 0x9e3779b97f4a7c15ULL);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return 1 + ((x >> 8) & ((UINT64_C(1) << (x % 40 + 1)) - 1));
}

#endif
