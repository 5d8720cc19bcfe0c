/* tb_heap_fill.c - a bus whose live heap has let intervals go, for top's tests.
 *
 *   tb_heap_fill --bus B --dir D
 *
 * A real collector, in this process, on a new bus with the smallest live
 * heap, 1024 records per metric and 1 ms intervals; one producer records
 * WIDE_PER_INTERVAL latencies log-spread over 1 ns .. 2^40 ns into metric
 * "wide0" each interval, and the collector closes the interval at once,
 * until the heap has been written one and a bank times over. Then the
 * collector stops and the segment stays, for `tailbus top` to read: a
 * window of 1 s (1000 intervals) reaches back past what the heap kept.
 * Prints the intervals published and the ones the live area kept.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "collector_scratch.h" /* wide_latency */
#include "tailbus/live.h"
#include "tailbus/producer.h"

#define RECORDS 1024
#define INTERVAL_NS 1000000 /* 1 ms: a 1 s window is 1000 intervals */
#define WIDE_BATCHES 4
#define WIDE_SPANS 3000 /* a batch: less than a ring */
#define RING_EVENTS 4096

static int fill(tb_collector *c, tb_producer *p, tb_metric_t m, uint32_t *published)
{
	uint64_t heap = c->seg.layout.live_heap_bytes, z = 7;
	for (*published = 0; c->publisher.head < heap + heap / 2; ++*published) {
		if (*published == RECORDS)
			return -ENOSPC; /* frames too small to fill the heap */
		for (int b = 0; b < WIDE_BATCHES; b++) {
			/* completions inside the collector's current interval */
			uint64_t done = (uint64_t)(c->drainers[0].interval_start_ns - c->clock_offset_ns) + 1000;
			for (int k = 0; k < WIDE_SPANS; k++)
				tb_span(p, m, done - wide_latency(&z), done + (uint64_t)k);
			tb_collector_drain_all(c);
		}
		int rc = tb_collector_close_interval(c, INTERVAL_NS);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *bus = NULL, *dir = NULL;
	static const struct option longs[] = {{"bus", 1, 0, 'b'}, {"dir", 1, 0, 'd'}, {0, 0, 0, 0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (opt == 'b')
			bus = optarg;
		else if (opt == 'd')
			dir = optarg;
	}
	if (!bus || !dir) {
		fprintf(stderr, "usage: tb_heap_fill --bus B --dir D\n");
		return 2;
	}
	tb_collector_config cfg;
	tb_collector_config_default(&cfg);
	cfg.bus = bus;
	cfg.dir = dir;
	cfg.writer.dir = dir;
	cfg.fresh = true;
	cfg.interval_ns = INTERVAL_NS;
	cfg.seg.slot_count = 1;
	cfg.seg.ring_capacity = RING_EVENTS;
	cfg.seg.live_intervals = RECORDS;
	cfg.seg.live_heap_bytes = TB_LIVE_HEAP_MIN;
	tb_collector c;
	const char *why = "?";
	int rc = tb_collector_open(&c, &cfg, &why);
	if (rc < 0) {
		fprintf(stderr, "tb_heap_fill: tb_collector_open: %s (%s)\n", why, strerror(-rc));
		return 1;
	}
	setenv("TAILBUS_DIR", dir, 1);
	tb_producer *p = tb_attach(bus, "heap-fill");
	if (tb_producer_error(p, &why) != 0) {
		fprintf(stderr, "tb_heap_fill: tb_attach: %s\n", why);
		return 1;
	}
	tb_metric_t m = tb_metric(p, "wide0");
	tb_collector_housekeep(&c, tb_collector_now(&c) - c.clock_offset_ns);
	uint32_t published;
	rc = fill(&c, p, m, &published);
	tb_live_snapshot snap = {0};
	if (rc == 0)
		rc = tb_live_read_newest(&c.seg, tb_metric_id(m), &snap);
	tb_detach(p);
	tb_collector_close(&c);
	if (rc < 0) {
		fprintf(stderr, "tb_heap_fill: %s\n", strerror(-rc));
		return 1;
	}
	printf("%u %u\n", published, snap.count);
	return 0;
}
