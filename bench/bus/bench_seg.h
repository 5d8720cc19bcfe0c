/* bench_seg.h - a benchmark's view of the bus segment from the outside: the
 * ring a handle records into and the collector's heartbeat, found through
 * the segment's own layout (tailbus/seg_abi.h, tailbus/segment.h) and never
 * through the tb_producer handle, whose fields are private and change with
 * the producer's hot path.
 *
 * A producer's ring is the one of the LIVE slot that names this process,
 * this thread and the thread name given to tb_attach (tb_attach writes all
 * three into the slot before it goes LIVE).
 */
#ifndef TAILBUS_BENCH_SEG_H
#define TAILBUS_BENCH_SEG_H

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tailbus/segment.h"

/* Map bus `bus` (found as tb_attach finds it: `dir`, else $TAILBUS_DIR, ...)
 * read-write, without creating it. 0 or a negative errno, *why a sentence. */
static inline int bench_seg_open(tb_seg *s, const char *dir, const char *bus, const char **why)
{
	return tb_seg_open(s, dir, bus, NULL, 0, why);
}

/* The slot index of the calling thread's ring named `thread_name`, or
 * -ENOENT. */
static inline int bench_seg_own_slot(const tb_seg *s, const char *thread_name)
{
	int32_t pid = (int32_t)getpid(), tid = (int32_t)syscall(SYS_gettid);
	for (uint32_t i = 0; i < s->layout.slot_count; i++) {
		const tb_slot *sl = tb_seg_slot(s, i);
		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == TB_SLOT_LIVE &&
		    sl->pid == pid && sl->tid == tid &&
		    strncmp(sl->thread_name, thread_name, TB_THREAD_NAME_MAX) == 0)
			return (int)i;
	}
	return -ENOENT;
}

/* The collector's heartbeat (CLOCK_MONOTONIC ns of its last housekeeping). */
static inline int64_t bench_seg_heartbeat(const tb_seg *s)
{
	const tb_seg_header *h = (const tb_seg_header *)s->base;
	return __atomic_load_n(&h->collector_heartbeat_ns, __ATOMIC_ACQUIRE);
}

#endif
