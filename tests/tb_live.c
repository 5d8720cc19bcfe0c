/* tb_live.c - read a bus's live area as a tool would: read-only, lock-free.
 *
 *   tb_live --bus B [--prefix P]
 * For every registered metric whose name starts with P, prints
 *   name intervals total_count hist_total newest_p99 newest_max
 * where total_count adds the summaries of every interval still published and
 * hist_total adds the totals of their decoded histograms (they must agree).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tailbus/live.h"

int main(int argc, char **argv)
{
	const char *bus = NULL, *prefix = "";
	static const struct option longs[] = {{"bus", 1, 0, 'b'}, {"prefix", 1, 0, 'p'}, {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 'b') bus = optarg;
		else if (c == 'p') prefix = optarg;
		else return 2;
	}
	tb_seg s;
	const char *why = NULL;
	if (!bus || tb_seg_open(&s, NULL, bus, NULL, TB_SEG_READONLY, &why) < 0) {
		fprintf(stderr, "tb_live: %s\n", why ? why : "usage: tb_live --bus B");
		return 1;
	}
	tb_hist h;
	memset(&h, 0, sizeof(h));
	for (uint32_t id = 0; id < s.layout.metric_capacity; id++) {
		const tb_metric_entry *e = tb_seg_metric(&s, id);
		if (e->state != TB_METRIC_READY || strncmp(e->name, prefix, strlen(prefix)))
			continue;
		tb_live_snapshot snap;
		int rc = tb_live_read_newest(&s, id, &snap);
		if (rc == -ENOENT)
			continue;
		if (rc < 0) {
			fprintf(stderr, "tb_live: %s: %s\n", e->name, strerror(-rc));
			return 1;
		}
		int64_t total = 0, hist_total = 0;
		for (uint32_t age = 0; age < snap.count; age++) {
			tb_live_interval iv;
			rc = tb_live_read(&s, id, age, &iv, &h);
			if (rc < 0)
				break;
			total += iv.count;
			hist_total += rc == 0 ? tb_hist_total(&h) : iv.count;
		}
		printf("%s %u %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", e->name, snap.count, total,
		       hist_total, snap.newest.p99, snap.newest.max);
	}
	tb_hist_free(&h);
	tb_seg_close(&s);
	return 0;
}
