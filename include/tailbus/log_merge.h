/* tailbus/log_merge.h - intervals of interval logs merged per tag.
 *
 * What replay and compare do with a log: every interval of a tag, from one
 * file or several, added into one histogram per tag (merged counts, never
 * averaged percentiles). The merge follows Java's HistogramLogProcessor:
 * the tag's histogram takes the layout (L, S) of its first interval and
 * grows as later intervals need (tb_hist_add_growing), so its figures equal
 * that tool's. With `digits` set it starts instead from a fresh D-digit
 * histogram from 1 up, as a program calling Histogram.add on a
 * `new Histogram(D)` does.
 *
 * Memory follows what a tag holds, not the layout its intervals declare: a
 * tag's histogram is allocated up to the largest value merged into it (an
 * interval's declared H of an hour is typically thousands of times its
 * values), and `layout_highest` keeps the H that Java's merge would have
 * reached, for the one output that shows it (.hgrm's bucket count;
 * tb_log_merge_java_layout). Tags are found by a hash of their names, so
 * a log of a hundred thousand tags reads in time linear in its lines.
 *
 * Invariants: tags keep the order in which they were first met; a tag's
 * histogram has its first interval's L and S (or 1 and `digits`) and
 * counts exactly the intervals merged (`intervals` of them).
 */
#ifndef TAILBUS_LOG_MERGE_H
#define TAILBUS_LOG_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "tailbus/hist.h"
#include "tailbus/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/* digits 0: each tag takes its first interval's layout. */
#define TB_LOG_MERGE_FIRST_LAYOUT 0

typedef struct tb_log_merge_tag {
	char name[TB_LOG_TAG_MAX]; /* "" for untagged lines */
	tb_hist hist;              /* merged, allocated up to the largest value */
	int64_t layout_highest;    /* H of Java's merge histogram */
	size_t intervals;          /* merged into hist */
	double from, to;           /* span of the intervals offered, seconds since the epoch */
} tb_log_merge_tag;

typedef struct tb_log_merge {
	int digits; /* TB_LOG_MERGE_FIRST_LAYOUT, or S of a fresh histogram */
	tb_log_merge_tag *tags;
	size_t ntags, cap;
	/* private: open addressing on the names, tag index + 1 (0: empty) */
	size_t *slots;
	size_t nslots;
} tb_log_merge;

void tb_log_merge_init(tb_log_merge *m, int digits);
void tb_log_merge_free(tb_log_merge *m);

/* The index of `tag`, or -1 when no interval of it was offered. */
long tb_log_merge_find(const tb_log_merge *m, const char *tag);
/* The index of `tag`, created (shaped by `first`, its first interval) when
 * new. Returns the index, -ENOMEM or -EINVAL (a layout tb_hist refuses). */
long tb_log_merge_tag_of(tb_log_merge *m, const char *tag, const tb_hist *first);

/* Merge interval h of tag t, which started at `start` (seconds since the
 * epoch) and lasted `length`. Returns 0, -EOVERFLOW (more than 2^63 samples;
 * nothing merged) or a tb_hist_grow error. */
int tb_log_merge_add(tb_log_merge *m, size_t t, const tb_hist *h, double start, double length);
/* The same for a line's base64 V2 payload, decoded straight into the
 * merge (tb_v2_decode_base64_add): -ERANGE when the payload's L or S differ
 * from the tag's (decode it and call tb_log_merge_add), and that
 * function's errors, with *why for a malformed payload. */
int tb_log_merge_add_payload(tb_log_merge *m, size_t t, const char *payload, size_t n,
			     double start, double length, const char **why);

/* Tag t's histogram in the layout Java's merge would have (H =
 * layout_highest), into *out (initialised here; tb_hist_free it). 0 or
 * -ENOMEM. */
int tb_log_merge_java_layout(const tb_log_merge *m, size_t t, tb_hist *out);

#ifdef __cplusplus
}
#endif
#endif
