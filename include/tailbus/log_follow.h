/* tailbus/log_follow.h - an interval log followed while it is written.
 *
 * A follower reads a log file as it grows, the way `tail -F` does: each poll
 * takes the complete lines appended since the last one, through the log
 * reader (tailbus/log.h: the same parsing, clock and tags as a log read
 * whole), and keeps the newest `keep` interval lines of each tag.
 *
 * Invariants:
 *  - Whole lines only: a torn last line (a writer mid-append) is left in the
 *    file and read, whole, by a later poll once its end of line is there.
 *  - A file that shrinks (truncated) or whose path names another file
 *    (rotated by rename, or replaced) is read again from its start: every
 *    tag and interval kept from the old one is forgotten. The count of bad
 *    lines and the last error are kept.
 *  - A line longer than any interval line can be (TB_LOG_FOLLOW_LINE_MAX)
 *    is counted bad and skipped up to its end, so input without ends of
 *    line cannot grow memory without bound.
 *  - Histograms are decoded only when read (tb_log_follow_read): following a
 *    long log costs the text of each tag's newest payloads, not histograms.
 *  - A bad line is counted once: a malformed line when it is taken (it is
 *    not kept), a payload that does not decode when it is first read (it
 *    keeps its place among its tag's intervals).
 */
#ifndef TAILBUS_LOG_FOLLOW_H
#define TAILBUS_LOG_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#include "tailbus/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longer than any line a histogram of the default range can need (its V2
 * payload is bounded by its counts); a longer line is skipped as bad. */
#define TB_LOG_FOLLOW_LINE_MAX ((size_t)16 << 20)

typedef struct tb_log_follow tb_log_follow;

/* Follow the log at `path`, keeping at most `keep` (at least 1) intervals
 * per tag; nothing is read before the first poll. Returns 0; -EINVAL (keep
 * 0, or `path` is not a regular file), -EISDIR, open's error, or -ENOMEM. */
int tb_log_follow_open(tb_log_follow **out, const char *path, uint32_t keep);
/* Take the complete lines appended since the last poll; start over first if
 * the file was truncated or replaced. Returns 0, or a negative errno: a read
 * error, the open errors above for a replacing file, -ENOMEM. */
int tb_log_follow_poll(tb_log_follow *f);
void tb_log_follow_close(tb_log_follow *f);

/* Tags in the order they first appeared; "" is the untagged lines'. */
size_t tb_log_follow_tags(const tb_log_follow *f);
const char *tb_log_follow_tag(const tb_log_follow *f, size_t tag);
/* Intervals kept of tag number `tag` (at most keep). */
uint32_t tb_log_follow_count(const tb_log_follow *f, size_t tag);
/* Interval `age` (0 = the newest) of tag number `tag` into *e, its histogram
 * decoded into e->hist (zeroed or from an earlier call; tb_log_entry_free
 * frees it); e->payload points into the follower, valid until its next poll.
 * Returns 0; -ERANGE when age >= count; -EINVAL for a payload that does not
 * decode (counted bad the first time); -ENOMEM. */
int tb_log_follow_read(tb_log_follow *f, size_t tag, uint32_t age, tb_log_entry *e);

typedef struct tb_log_follow_stats {
	size_t intervals;       /* interval lines taken since the file was last started over */
	size_t bad_lines;       /* since the follower was opened */
	const char *last_error; /* "line N: why" of the newest bad line; NULL if none */
} tb_log_follow_stats;

void tb_log_follow_stats_get(const tb_log_follow *f, tb_log_follow_stats *out);

#ifdef __cplusplus
}
#endif
#endif
