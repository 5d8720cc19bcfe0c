/* fuzz_collector.h - the real collector that the segment's fuzz targets
 * (fuzz_ring, fuzz_folds) read producers' bytes with.
 *
 * fuzz_collector_config gives a bus named `name` of 2 slots of 64-event
 * rings and 16 metric ids, in private directories under /tmp; a target
 * changes what it needs, then fuzz_collector_open opens it and registers
 * metrics m0..m{n-1}, whose ids it returns (ids are placed by a hash of the
 * name, which inputs cannot know). Either aborts on failure: without its
 * collector a target tests nothing.
 */
#ifndef TAILBUS_FUZZ_COLLECTOR_H
#define TAILBUS_FUZZ_COLLECTOR_H

#include <stdio.h>
#include <stdlib.h>

#include "collector.h"
#include "fuzz_check.h"

static inline void fuzz_collector_config(tb_collector_config *cfg, const char *name)
{
	static char seg_dir[64], log_dir[64];
	snprintf(seg_dir, sizeof(seg_dir), "/tmp/tb-%s-seg.XXXXXX", name);
	snprintf(log_dir, sizeof(log_dir), "/tmp/tb-%s-log.XXXXXX", name);
	if (!mkdtemp(seg_dir) || !mkdtemp(log_dir)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	tb_collector_config_default(cfg);
	cfg->bus = name;
	cfg->dir = seg_dir;
	cfg->writer.dir = log_dir;
	cfg->fresh = true;
	cfg->seg.slot_count = 2;
	cfg->seg.ring_capacity = 64;
	cfg->seg.metric_capacity = 16;
	cfg->max_series = 64;
	cfg->join_capacity = 64;
}

static inline void fuzz_collector_open(tb_collector *c, const tb_collector_config *cfg, int metrics,
				       uint32_t *ids)
{
	const char *why = NULL;
	int rc = tb_collector_open(c, cfg, &why);
	if (rc < 0) {
		fprintf(stderr, "%s: tb_collector_open: %s (%d)\n", cfg->bus, why ? why : "?", rc);
		abort();
	}
	for (int m = 0; m < metrics; m++) {
		char name[8];
		snprintf(name, sizeof(name), "m%d", m);
		int id = tb_seg_metric_register(&c->seg, name);
		FUZZ_CHECK(id >= 0, "metric %s\n", name);
		ids[m] = (uint32_t)id;
	}
}

#endif
