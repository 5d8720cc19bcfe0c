/* collector_fixture.h - the fixture of the collector's in-process unit tests
 * (test_collector, test_drain, test_slots, test_publish, test_folds).
 *
 * setup opens a collector on a new bus of 2 slots of RING events in scratch
 * directories (collector_scratch.h) and attaches one producer handle with
 * METRICS metrics "m0".."m2"; teardown removes it all. Nothing runs on its
 * own: a test drains, closes and housekeeps by hand, so every step is
 * deterministic. Also reading back what the collector wrote: the log's
 * counts and the health sidecar's columns.
 *
 * Failures are cmocka assertions.
 */
#ifndef TAILBUS_TESTS_COLLECTOR_FIXTURE_H
#define TAILBUS_TESTS_COLLECTOR_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "collector.h"
#include "collector_scratch.h"
#include "tailbus/producer.h"

#define BUS "test-collector"
#define METRICS 3
#define RING COLLECTOR_SCRATCH_RING /* the fixture's ring_capacity */

struct fixture {
	char seg_dir[64], log_dir[64];
	tb_collector c;
	bool opened;
	int64_t start_mono; /* the current interval's start on the producers' clock */
	tb_producer *p;
	tb_metric_t m[METRICS];
};

/* The collector with its live area as given (0: the defaults) and the
 * producer, into *state. */
int open_fixture(void **state, uint32_t live_intervals, uint64_t live_heap_bytes);
int setup(void **state);
int teardown(void **state);

/* Stops the collector, keeping its configuration in *cfg; then opens it
 * again on the same bus, as a restarted tailbusd does. */
void fixture_stop(struct fixture *f, tb_collector_config *cfg);
void fixture_restart(struct fixture *f, tb_collector_config *cfg);

/* The producer's monotonic time of `offset_ns` into the collector's
 * current interval (negative: before it). */
uint64_t at(struct fixture *f, int64_t offset_ns);
/* n SPANs of metric `metric` completing at `done`, each `latency` long. */
void spans(struct fixture *f, int metric, int n, uint64_t done, uint64_t latency);
/* What the series of `metric` hold in bank `bank`, every ring. */
int64_t series_total(const struct fixture *f, int bank, int metric);
/* Housekeeping at the current time. */
void housekeep(struct fixture *f);
/* Events of `metric` counted in both banks, the drain's fast path folded in. */
uint64_t events_of(struct fixture *f, int metric);
/* A ring's bad events, both banks: what its next two closes report. */
uint64_t ring_bad(const tb_slot_follow *f);
/* Per metric, the log's counts for the interval that starts at start_ns. */
void logged_totals(struct fixture *f, int64_t start_ns, int64_t *totals);

/* ---- the health sidecar ---- */

#define SIDECAR_GAP_COLUMN 11    /* longest_gap_us */
#define SIDECAR_FOLDED_COLUMN 12 /* folded */

/* The writer flushed, every sidecar's rows as one stream (pclose it). */
FILE *sidecar_open(struct fixture *f);
/* Column k (from 0) of a sidecar row: where it starts, or NULL. */
const char *csv_field(const char *line, int k);
/* The sum of column `col` of the sidecar's rows of `scope` (and `name`
 * unless NULL) for the interval that starts at start_ns. */
long long sidecar_sum(struct fixture *f, int64_t start_ns, const char *scope, const char *name,
		      int col);
/* The sidecar's per-metric event counts for the interval at start_ns. */
void sidecar_events(struct fixture *f, int64_t start_ns, int64_t *events);

#endif
