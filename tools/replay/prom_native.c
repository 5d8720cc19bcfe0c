/* prom_native.c - `tailbus replay --format prom-native [--schema S]`.
 *
 * Each tag's merged histogram as the native Prometheus buckets `tailbus
 * export` would serve for it at schema S (tailbus/prom.h): replay of every
 * host's logs gives the fleet's buckets, to check a Prometheus `sum(...)`
 * against. The bucket bounds are in seconds (a nanosecond log).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../cli.h"
#include "replay.h"
#include "tailbus/log_merge.h"
#include "tailbus/prom.h"

/* --format prom-native: a comment line per tag with its count, zero bucket
 * and sum, then one line per non-empty native bucket. */
int replay_print_prom_native(FILE *out, const struct state *st)
{
	fprintf(out, "# native buckets at schema %d: bucket i holds (2^((i-1)/%d), 2^(i/%d)] "
		"seconds; zero threshold %.17g\n", st->opt.schema, 1 << st->opt.schema,
		1 << st->opt.schema, TB_PROM_ZERO_THRESHOLD);
	for (size_t t = 0; t < st->merge.ntags; t++) {
		const tb_log_merge_tag *m = &st->merge.tags[t];
		tb_prom_native n;
		int rc = tb_prom_native_from_hist(&m->hist, st->opt.schema, &n);
		if (rc < 0) {
			tb_cli_error(VERB, "tag '%s': %s", m->name, strerror(-rc));
			return rc;
		}
		/* an untagged log's lines still have five fields */
		char esc[TAG_ESCAPED_MAX];
		const char *tag = tb_cli_text(esc, sizeof(esc), tag_label(m->name));
		fprintf(out, "# %s count %" PRIu64 " zero_count %" PRIu64 " sum %.9g\n", tag, n.count,
			n.zero_count, n.sum);
		for (uint32_t i = 0; i < n.n; i++) {
			int32_t index = n.first + (int32_t)i;
			if (n.counts[i])
				fprintf(out, "%s %" PRId32 " %.17g %.17g %" PRIu64 "\n", tag,
					index, tb_prom_native_upper(index - 1, n.schema),
					tb_prom_native_upper(index, n.schema), n.counts[i]);
		}
		tb_prom_native_free(&n);
	}
	return 0;
}
