/* collector_fixture.c - the fixture of the collector's in-process unit
 * tests (collector_fixture.h): its collector and producer, and reading back
 * its log and health sidecar.
 *
 * Invariant: nothing here drains, closes or housekeeps on its own, except
 * open_fixture's one housekeeping, which makes the producer's ring followed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_fixture.h"

int open_fixture(void **state, uint32_t live_intervals, uint64_t live_heap_bytes)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	collector_scratch_make(f->seg_dir, f->log_dir, "collector");
	tb_collector_config cfg;
	collector_scratch_config(&cfg, BUS, f->seg_dir, f->log_dir, 2);
	if (live_intervals)
		cfg.seg.live_intervals = live_intervals;
	if (live_heap_bytes)
		cfg.seg.live_heap_bytes = live_heap_bytes;
	collector_open_or_fail(&f->c, &cfg);
	f->opened = true;
	f->p = tb_attach(BUS, "test-thread");
	assert_non_null(f->p);
	const char *why = NULL;
	if (tb_producer_error(f->p, &why) != 0)
		fail_msg("tb_attach gave a no-op handle: %s", why);
	for (int k = 0; k < METRICS; k++) {
		char name[16];
		snprintf(name, sizeof(name), "m%d", k);
		f->m[k] = tb_metric(f->p, name);
		assert_int_not_equal(tb_metric_id(f->m[k]), TB_METRIC_NONE_ID);
	}
	housekeep(f);
	*state = f;
	return 0;
}

int setup(void **state)
{
	return open_fixture(state, 0, 0);
}

int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->p)
		tb_detach(f->p);
	if (f->opened)
		tb_collector_close(&f->c);
	collector_scratch_remove(f->seg_dir, f->log_dir, BUS);
	free(f);
	return 0;
}

void fixture_stop(struct fixture *f, tb_collector_config *cfg)
{
	*cfg = f->c.cfg;
	tb_collector_close(&f->c);
	f->opened = false;
}

void fixture_restart(struct fixture *f, tb_collector_config *cfg)
{
	cfg->fresh = false;
	const char *why = NULL;
	int rc = tb_collector_open(&f->c, cfg, &why);
	if (rc < 0)
		fail_msg("reopen: %s (%s)", why ? why : "?", strerror(-rc));
	f->opened = true;
}

uint64_t at(struct fixture *f, int64_t offset_ns)
{
	if (f->opened) /* while none is (a restart), the last collector's */
		f->start_mono = f->c.drainers[0].interval_start_ns - f->c.clock_offset_ns;
	return (uint64_t)(f->start_mono + offset_ns);
}

void spans(struct fixture *f, int metric, int n, uint64_t done, uint64_t latency)
{
	for (int k = 0; k < n; k++)
		tb_span(f->p, f->m[metric], done - latency, done);
}

int64_t series_total(const struct fixture *f, int bank, int metric)
{
	int64_t total = 0;
	for (uint32_t k = 0; k < f->c.nseries; k++) {
		if (f->c.series[k].metric == tb_metric_id(f->m[metric]))
			total += tb_hist_total(&f->c.series[k].hist[bank]);
	}
	return total;
}

void housekeep(struct fixture *f)
{
	tb_collector_housekeep(&f->c, mono_ns());
}

uint64_t events_of(struct fixture *f, int metric)
{
	uint32_t id = tb_metric_id(f->m[metric]);
	tb_collector_flush_fast(&f->c); /* housekeeping drains without folding */
	return f->c.drainers[0].counts[0][id].events + f->c.drainers[0].counts[1][id].events;
}

uint64_t ring_bad(const tb_slot_follow *f)
{
	return f->tally[0].bad_events + f->tally[1].bad_events;
}

void logged_totals(struct fixture *f, int64_t start_ns, int64_t *totals)
{
	collector_log_totals(&f->c, f->log_dir, start_ns, totals, METRICS);
}

/* ---- the health sidecar ---- */

const char *csv_field(const char *line, int k)
{
	while (k-- > 0 && line)
		if ((line = strchr(line, ',')))
			line++;
	return line;
}

FILE *sidecar_open(struct fixture *f)
{
	assert_int_equal(tb_writer_flush(f->c.writer), 0);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "cat '%s'/*.health.csv", f->log_dir);
	FILE *csv = popen(cmd, "r");
	assert_non_null(csv);
	return csv;
}

long long sidecar_sum(struct fixture *f, int64_t start_ns, const char *scope, const char *name,
		      int col)
{
	FILE *csv = sidecar_open(f);
	char line[512];
	long long sum = 0;
	while (fgets(line, sizeof(line), csv)) {
		double start;
		char sc[24], nm[96];
		if (sscanf(line, "%lf,%23[^,],%95[^,],", &start, sc, nm) != 3 ||
		    llround(start * 1e3) != start_ns / 1000000 || strcmp(sc, scope) != 0 ||
		    (name && strcmp(nm, name) != 0))
			continue;
		const char *v = csv_field(line, col);
		assert_non_null(v);
		sum += atoll(v);
	}
	assert_int_equal(pclose(csv), 0);
	return sum;
}

void sidecar_events(struct fixture *f, int64_t start_ns, int64_t *events)
{
	for (int k = 0; k < METRICS; k++) {
		char name[8];
		snprintf(name, sizeof(name), "m%d", k);
		events[k] = sidecar_sum(f, start_ns, "metric", name, 3);
	}
}
