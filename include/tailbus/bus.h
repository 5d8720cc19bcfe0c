/* tailbus/bus.h - who uses a bus, as its segment says, read without touching it.
 *
 * A segment records its users: the collector writes its pid, a start count
 * and a heartbeat (CLOCK_MONOTONIC, every 100 ms) into the header; each
 * producer thread owns a slot with its pid, that process's start time and
 * when it attached. From these alone a reader can tell whether a collector
 * serves the bus (tb_bus_collector_state: the one rule, which
 * tb_producer_collector applies to an engine's own bus), whether any producer
 * is still attached, and when the segment was last used.
 *
 * A bus that no collector serves is most often a mistyped name: its events
 * wait in a segment that nothing reads. tb_bus_scan lists every segment in
 * the directories a bus is looked for in, and tb_bus_remove_stale removes one
 * that no collector and no producer has used for a given time, so that such
 * a segment is seen and can be cleaned up, never silently.
 *
 * Reading is read-only: the file is opened O_RDONLY and mapped PROT_READ,
 * nothing in it is written, no lock is taken, and a segment that is not yet
 * initialised is reported as such at once (no waiting for its creator).
 */
#ifndef TAILBUS_BUS_H
#define TAILBUS_BUS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tailbus/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The enum tb_collector_state (seg_abi.h) the collector fields of a segment's shared header say, at
 * now_mono_ns (CLOCK_MONOTONIC); *why (if given) gets a sentence, NULL when
 * SERVING. Reads the fields with acquire loads; never fails. */
int tb_bus_collector_state(const tb_seg_header *shared, int64_t now_mono_ns, const char **why);
/* "serving", "none", "stopped", "silent" (what tools print and JSON holds). */
const char *tb_bus_collector_name(int state);

/* What tb_bus_status_read learns of one segment file. Times are wall-clock
 * nanoseconds since the epoch (monotonic ones converted at reading). */
typedef struct tb_bus_status {
	char bus[TB_BUS_NAME_MAX + 1];
	char path[TB_SEG_PATH_MAX];
	int error;         /* 0, or why the header could not be read (negative errno) */
	const char *why;   /* a sentence when error != 0 */
	bool initialised;  /* the creator finished (magic set); false: error is -EAGAIN */
	uid_t owner;       /* the file's owner */
	uint64_t size;     /* bytes of the file */
	uint64_t page_size; /* of the segment's mapping (the header's) */
	int64_t created_ns;  /* the header's creation time (the file's change time when unreadable) */
	int64_t last_use_ns; /* the latest of creation, any producer's attach or newest
			      * event, the collector's last heartbeat */
	int collector;       /* enum tb_collector_state */
	const char *collector_why;
	pid_t collector_pid; /* the header's, 0 when none is registered */
	bool collector_runs; /* that pid is a running process (a silent one may be) */
	int64_t heartbeat_ns; /* the collector's last heartbeat, 0 if it never beat */
	uint32_t slots;
	uint32_t producers;      /* slots LIVE or CLAIMED whose owner process still runs */
	uint32_t producers_gone; /* slots whose producer detached or died and that no
				  * collector has freed yet */
	uint32_t metrics;        /* registered metric names */
	uint64_t intervals;      /* intervals the collectors published */
} tb_bus_status;

/* What the header and slot table of a segment kept mapped (tailbus top)
 * say now: the collector's fields, its drain figures over its last close,
 * and the rings' counters. */
typedef struct tb_bus_counts {
	int collector;            /* enum tb_collector_state */
	pid_t collector_pid;      /* 0 when none is registered */
	int64_t heartbeat_age_ns; /* at now_mono_ns; negative when it never beat */
	uint32_t drain_threads;
	uint32_t drain_longest_pass_us;
	uint32_t drain_self_pause_us;
	uint32_t closes_behind;
	uint32_t series_waits;    /* over the last closed interval */
	uint32_t rings_live;      /* slots LIVE */
	uint64_t ring_dropped;    /* events the LIVE and DETACHED slots' producers dropped */
	uint64_t ring_folded;     /* SPANs they folded */
} tb_bus_counts;

/* Fill *c from the mapped segment s at now_mono_ns (CLOCK_MONOTONIC), with
 * the loads tb_bus_status_read uses; reads only, never fails. */
void tb_bus_counts_read(const tb_seg *s, int64_t now_mono_ns, tb_bus_counts *c);

/* The age at now_mono_ns (CLOCK_MONOTONIC) of the collector's last
 * heartbeat in s's header: true with *age_ns set, false (*age_ns untouched)
 * when no collector ever beat. */
bool tb_bus_heartbeat_age(const tb_seg *s, int64_t now_mono_ns, int64_t *age_ns);

/* The header fields a tool that keeps s mapped polls between two readings
 * of tb_bus_counts_read, each one load: the collector's interval (0 until a
 * collector wrote it) and how many intervals the collectors published. */
int64_t tb_bus_interval_ns(const tb_seg *s);
uint64_t tb_bus_intervals_published(const tb_seg *s);

/* Read the segment file at `path` (a name ending in ".tailbus"). Returns 0
 * with *st filled; or a negative errno when the file cannot be opened or is
 * not a segment: st->error and st->why say so, and only the file's fields
 * (path, bus, owner, size, created_ns, last_use_ns from the file) are set.
 * A segment whose creator has not finished is -EAGAIN; another user's
 * private one -EACCES. */
int tb_bus_status_read(const char *path, tb_bus_status *st);

/* Call `each` for every "<bus>.tailbus" file in the directories a bus is
 * looked for in (segment.h: dir, else $TAILBUS_DIR, else the hugetlbfs
 * mount and /dev/shm), in directory order, with its status (read as
 * tb_bus_status_read; an unreadable one has st->error set). A non-zero
 * return from `each` stops the scan and is returned. Returns 0, the first
 * directory's opendir error (negative errno) when `dir` or $TAILBUS_DIR
 * names one that cannot be read, or -ENOMEM. */
int tb_bus_scan(const char *dir, int (*each)(const tb_bus_status *st, void *arg), void *arg);

/* Whether a segment is unused: it was read whole, no collector serves it nor
 * runs under its pid, and no producer is attached. Apart from tb_bus_stale
 * because a listing marks an unused bus whatever its idle time, and says why
 * one that --remove-stale kept was not yet idle long enough. */
bool tb_bus_unused(const tb_bus_status *st);

/* Whether a segment may be removed as stale at now_ns (wall clock): it is
 * unused (tb_bus_unused) and has not been used for idle_ns. */
bool tb_bus_stale(const tb_bus_status *st, int64_t idle_ns, int64_t now_ns);

/* Remove the segment at st->path (and its collector lock file) if it is
 * still stale: holding the collector's lock (so that no tailbusd starts on it
 * meanwhile), read it again and apply tb_bus_stale. Returns 0 when removed;
 * -EBUSY when a collector holds the lock or the bus is in use again,
 * -EAGAIN when it was used within idle_ns, or unlink's error. *st is
 * refreshed from the second reading. */
int tb_bus_remove_stale(tb_bus_status *st, int64_t idle_ns);

#ifdef __cplusplus
}
#endif
#endif
