/* tailbus/live.h - reading the collector's published intervals, lock-free.
 *
 * The collector publishes each metric's last intervals under a sequence
 * counter: odd while it writes, even when stable. A reader copies what it
 * needs between two reads of the counter and keeps the copy only if both
 * reads are the same even value. A collector that died mid-write leaves the
 * counter odd forever, so readers give up after a bounded number of tries
 * (and say so) instead of spinning. No system call is made.
 *
 * Every interval in the live area carries its whole histogram (ABI 4: in
 * the live heap, seg_abi.h): an interval whose frame the heap had to let go
 * leaves the live area with it, so a metric may hold fewer than
 * live_intervals intervals when its frames are large.
 *
 * A window, a metric's newest intervals read one after the other, is read
 * as one consistent walk (tb_live_read_window): a publish in between is
 * noticed and the walk made again.
 */
#ifndef TAILBUS_LIVE_H
#define TAILBUS_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "tailbus/hist.h"
#include "tailbus/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_LIVE_READ_TRIES 1000

typedef struct tb_live_snapshot {
	uint32_t count;          /* intervals available (<= live_intervals) */
	tb_live_interval newest; /* the most recent one */
	/* the start of the newest interval that left the live area because the
	 * heap needed its frame's bytes (0: none): a window reaching back to it
	 * is shorter than asked */
	int64_t let_go_start_ns;
} tb_live_snapshot;

/* The newest published interval of metric `id`. Returns 0, -ENOENT when
 * nothing was published yet, -EAGAIN when no stable copy could be taken in
 * TB_LIVE_READ_TRIES tries, or -EINVAL for a bad id. */
int tb_live_read_newest(const tb_seg *s, uint32_t id, tb_live_snapshot *out);

/* Interval `age` (0 = newest) of metric `id`, with its histogram decoded into
 * `h` (zeroed or from an earlier call; free with tb_hist_free). Returns 0
 * (h's total equals the summary's count), 1 when `h` is NULL (the summary
 * only), the errors above (-ERANGE: age too old, or its frame already let go),
 * -EBADMSG when the frame does not decode to the summary's count or the
 * record's frame cannot be (a scribbled live area; *summary is then the
 * record as read), or -ENOMEM. */
int tb_live_read(const tb_seg *s, uint32_t id, uint32_t age, tb_live_interval *summary, tb_hist *h);

/* How often tb_live_read_window walks a window again when publishes keep
 * moving its intervals (one publish per interval: two in a row are already
 * unlikely). */
#define TB_LIVE_WINDOW_TRIES 8

/* What tb_live_read_window hands its caller. `begin` is called before each
 * walk (the first, and again when a publish moved the intervals under the
 * last one): forget what that walk gave. `interval` is called for each
 * interval, newest first, with its summary and, when the caller gave a
 * `scratch` histogram, that histogram decoded (NULL otherwise); it returns 0
 * to go on, 1 to end the window there, or a negative errno that ends the
 * read and is returned. */
typedef struct tb_live_window_fns {
	void (*begin)(void *arg);
	int (*interval)(void *arg, const tb_live_interval *iv, const tb_hist *h);
} tb_live_window_fns;

/* The newest `n` intervals of metric `id` (fewer when the live area holds
 * fewer), read one by one, each under the metric's sequence counter, as one
 * consistent walk: their start times must fall strictly, else a publish
 * moved the ages meanwhile and the walk begins again, at most
 * TB_LIVE_WINDOW_TRIES times. So no interval is counted twice or skipped.
 * `scratch` (zeroed or from an earlier call; NULL: summaries only) holds
 * each histogram while `interval` looks at it. Returns 0; -ESTALE when every
 * walk was moved; or the errors of tb_live_read other than -ENOENT and
 * -ERANGE (which end the window), or of `interval`. */
int tb_live_read_window(const tb_seg *s, uint32_t id, uint32_t n, tb_hist *scratch,
			const tb_live_window_fns *fns, void *arg);

/* Did the live heap let go intervals that a window of `n` intervals of
 * metric `id` asks for, when a walk read `read` (< n) of them, the newest
 * starting at newest_start_ns and lasting length_ns? Those asked for start
 * from n - 1 intervals before the newest read; the heap lets a metric's
 * oldest go first, so the newest it let go (tb_live_snapshot) tells. False
 * when the walk read none or all n, or the newest cannot be read. */
bool tb_live_let_go(const tb_seg *s, uint32_t id, uint32_t n, uint32_t read,
		    int64_t newest_start_ns, int64_t length_ns);

#ifdef __cplusplus
}
#endif
#endif
