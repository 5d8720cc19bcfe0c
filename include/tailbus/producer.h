/* tailbus/producer.h - recording latency events from an engine thread.
 *
 *     tb_producer *p = tb_attach("orders", "matcher-0");   // once per thread
 *     tb_metric_t fill = tb_metric(p, "fill");              // cold path
 *     ...
 *     tb_span(p, fill, intended, tb_now(p));                // hot path
 *
 * The hot path is the inline functions in this header and nothing else: one
 * 16-byte event into this thread's single-producer ring in shared memory. It
 * never blocks, never makes a system call, never allocates and never waits
 * for the collector. When the ring is full a SPAN is folded, on the cold
 * path, into a small histogram of the thread's slot (seg_abi.h, fold lanes)
 * that the collector adds to the interval: counted at its value, at 2
 * significant digits, not lost. What cannot be folded (START and END events,
 * a metric past the slot's lanes, a segment without lanes) is dropped and
 * counted exactly (tb_producer_stats, and the collector's health log).
 *
 * Attaching never aborts the engine: if the bus cannot be reached, tb_attach
 * still returns a handle whose recording is a counted no-op (it is always
 * at its stop and has no ring), and tb_producer_error() says why. A bus
 * that no collector serves (not yet, or no longer) is recorded into all the
 * same, the events waiting in the ring; tb_producer_collector() says so.
 *
 * The ring's protocol is in seg_abi.h: each event publishes itself by its
 * first word's lap bit, so the common path writes the event's two words and
 * moves a pointer in this handle, and touches no shared index. The handle
 * keeps a pointer to the next slot and a stop pointer up to which it may
 * write without reading the collector's index: the end of the ring's slot
 * array, or the last consumer index seen plus the ring's capacity, whichever
 * comes first. Memory ordering: the second word is stored first, then the
 * first word with release ordering (both plain stores on x86); the collector
 * loads the first word with acquire ordering before the second, and
 * publishes its consumer index with release ordering after its reads. Only
 * on reaching the stop does the producer read the consumer index again; a
 * stale value can only make the ring look fuller than it is (a drop, never
 * an overwrite).
 *
 * Times are nanoseconds. tb_now() reads the bus clock (CLOCK_MONOTONIC
 * through the vDSO); callers may pass their own timestamps from one clock
 * (a NIC's, an exchange's) as long as intended and done share it.
 */
#ifndef TAILBUS_PRODUCER_H
#define TAILBUS_PRODUCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "tailbus/seg_abi.h"

/* tb_now() reads CLOCK_MONOTONIC, which <time.h> declares only when POSIX
 * is asked for: the gnu* standards (gcc's and clang's default) and C++ do;
 * strict -std=c11 or c17 needs -D_POSIX_C_SOURCE=200809L (or _GNU_SOURCE). */
#ifndef CLOCK_MONOTONIC
#error "tailbus/producer.h needs POSIX clocks: build with -std=gnu11 (or later), or define _POSIX_C_SOURCE=200809L before any #include"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A metric, as tb_metric() gives it: its 14-bit id already in its place in
 * an event's first word, so the hot path only ORs it in. A struct, so that a
 * plain integer (a raw id, a sequence number in the wrong argument) cannot
 * be passed for it by mistake. Only tb_metric() makes one: the hot path does
 * not mask it, and an event that a made-up one spoils is counted as bad by
 * the collector and stepped over. */
typedef struct tb_metric_t {
	uint64_t bits; /* id << TB_METRIC_SHIFT; nothing else */
} tb_metric_t;
/* The id of the metric tb_metric() gives when no id could be had; its events
 * are dropped by the collector and counted as unregistered. Never handed to
 * a name. */
#define TB_METRIC_NONE_ID (TB_MAX_METRICS - 1u)

static inline uint32_t tb_metric_id(tb_metric_t m)
{
	return (uint32_t)(m.bits >> TB_METRIC_SHIFT) & (TB_MAX_METRICS - 1);
}

typedef struct tb_producer_stats {
	uint64_t attempted; /* events the caller tried to record */
	uint64_t written;   /* events that went into the ring */
	uint64_t dropped;   /* events lost because the ring was full (or no bus) */
	uint64_t folded;    /* SPANs that found the ring full, counted in a fold lane */
} tb_producer_stats;

/* The handle. The first fields are the hot path's and only this thread
 * touches them; treat all as private. `cur` is the slot the next event goes
 * to, in shared memory; events may be written up to (not including) `stop`
 * without looking at the collector's index; `lap` is the lap bit of the
 * current pass over the ring (seg_abi.h). */
typedef struct tb_producer {
	tb_event *cur;
	tb_event *stop;
	uint64_t lap;
	/* cold */
	tb_event *events;   /* the ring's slot array, NULL for a no-op handle */
	tb_ring_header *ring;    /* the ring's header, just before `events` */
	uint32_t lap_start; /* ring index of events[0] in the current pass */
	uint32_t mask;      /* slots - 1 */
	unsigned log2;      /* log2(slots) */
	uint32_t head_seen; /* ring index when tb__full last ran (at most one ring ago) */
	uint64_t written;   /* events written up to head_seen */
	uint64_t dropped;
	uint64_t *shared_dropped; /* the slot's counter, or &dropped for a no-op handle */
	void *seg;     /* tb_seg *, NULL for a no-op handle */
	int32_t slot;  /* -1 for a no-op handle */
	int error;     /* why the handle is a no-op (negative errno), 0 if live */
	const char *why;
	/* fold lanes (seg_abi.h): the slot's first, how many, and the metric
	 * each holds as this thread took it (1 + id; 0: free) */
	tb_fold_lane *folds;
	uint32_t fold_lanes;
	uint32_t fold_metric_plus_one[TB_FOLD_LANES_MAX];
	uint64_t folded;
	uint64_t *shared_folded; /* the slot's counter, or &folded for a no-op handle */
	uint32_t generation;     /* the slot's generation as our claim left it */
	int32_t owner_pid;       /* the process that claimed it */
} tb_producer;

/* Claim a ring on bus `bus` (NULL: $TAILBUS_BUS, else "default") for the
 * calling thread, creating the segment if no one has. `thread_name` may be
 * NULL. Returns a handle (live, or a counted no-op: see tb_producer_error),
 * or NULL with errno ENOMEM when not even that could be allocated. The
 * first call registers atfork handlers and keeps /dev/null open: in a
 * fork()ed child, inherited handles record nothing (the child attaches
 * anew, once fork has returned: not from an atfork handler of its own). */
tb_producer *tb_attach(const char *bus, const char *thread_name);
/* Give the ring back; the collector drains what is left in it. */
void tb_detach(tb_producer *p);
/* Register (or find) a metric by name: 1..47 bytes of [A-Za-z0-9_.:-]. */
tb_metric_t tb_metric(tb_producer *p, const char *name);
void tb_producer_stats_get(const tb_producer *p, tb_producer_stats *st);
/* 0 when the handle records into a bus, else a negative errno; *why (if
 * given) gets a sentence. -EPERM in a fork()ed child for a handle its
 * parent attached. Cold path: a system call. */
int tb_producer_error(const tb_producer *p, const char **why);

/* Whether a collector serves the handle's bus, as the segment's header says
 * (the collector's pid, its start count, and a heartbeat it writes every
 * 100 ms). Not an error: start order does not matter, and events recorded
 * before a collector comes wait in the ring (a full ring folds or drops, and
 * counts, as ever). But a bus that no collector has ever served is most
 * often a mistyped name, and an engine should say so. The states (enum
 * tb_collector_state, TB_COLLECTOR_SILENT_NS) are in seg_abi.h; the rule is
 * tb_bus_collector_state (bus.h), which `tailbus ls` applies too.
 * Returns an enum tb_collector_state, with *why (if given) a sentence, NULL
 * when SERVING; or, for a handle that records into no bus, the negative
 * errno and sentence of tb_producer_error(). Cold path: reads the clock. */
int tb_producer_collector(const tb_producer *p, const char **why);

/* A segment file truncated under the engine. Anyone who may write the
 * segment may shrink it, and the next store of a thread into a ring past the
 * cut is then a SIGBUS, whose default action ends the process. The
 * collector gives the file its size back within about a millisecond
 * (docs/design.md, "A segment that shrinks"), but a thread that records in
 * that window is not saved by it. This library never installs a signal
 * handler of its own accord: an engine that wants to survive such a
 * truncation calls tb_guard_segment_faults() once, and from then on a
 * SIGBUS at an address inside a segment this process has attached gives
 * the file its size back (ftruncate) and returns, so the store is retried
 * and lands, its event lost with the rest of the cut ring (the collector
 * quarantines the ring; later events are counted dropped). A page the file
 * system cannot give back (tmpfs or hugetlbfs full), or a file it cannot
 * give its size back, gets a private page mapped over it: the thread goes
 * on and what it writes there is lost. A fault anywhere else goes to the
 * handler that was installed before, or to the
 * default action. Returns 0 or a negative errno (sigaction's). */
/* Handles attached at a time in one process (with the segments tools map,
 * tailbus/read_guard.h); one more is a no-op handle (-ENOSPC). */
#define TB_GUARD_SEGMENTS 1024
int tb_guard_segment_faults(void);
/* How many faults the guard repaired in this process. */
uint64_t tb_guard_repairs(void);

#if defined(__GNUC__)
#define TB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TB_UNLIKELY(x) (x)
#endif

/* The bus clock, in nanoseconds. */
static inline uint64_t tb_now(const tb_producer *p)
{
	(void)p;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Cold: `cur` reached `stop`. Moves to the next pass at the ring's end,
 * publishes the position as a hint (p_tail), reads the collector's index
 * again and writes the event if there is room after all; else folds it (a
 * SPAN with a lane for its metric) or drops it, and counts which. Always
 * the case for a no-op handle (cur == stop == NULL), which drops. `w0`
 * comes without its lap bit. */
void tb__full(tb_producer *p, uint64_t w0, uint64_t w1);

/* The ring index of `cur` (tests, benchmarks, statistics). */
static inline uint32_t tb__head(const tb_producer *p)
{
	return p->lap_start + (uint32_t)(p->cur - p->events);
}

static inline void tb__emit(tb_producer *p, uint64_t w0, uint64_t w1)
{
	tb_event *e = p->cur;
	if (TB_UNLIKELY(e == p->stop)) {
		tb__full(p, w0, w1);
		return;
	}
	/* the second word, then the first, which publishes the event: plain
	 * 8-byte stores (relaxed atomics also keep the compiler from packing
	 * them into one vector store, which costs more to build than it saves) */
	__atomic_store_n(&e->w1, w1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->w0, w0 | p->lap, __ATOMIC_RELEASE);
	p->cur = e + 1;
}

/* A SPAN's duration, done - intended, in its place in w0: a signed field,
 * so a negative duration (a completion before its intended time) goes
 * through as it is and the collector counts it; one that does not fit
 * (19.5 hours or more either way: an unset intended time) becomes
 * TB_FIELD_INVALID, which the collector counts the same way. */
static inline uint64_t tb__span_field(uint64_t intended, uint64_t done)
{
	int64_t d = (int64_t)(done - intended), placed;
#if defined(__GNUC__)
	/* one multiply by 2^17, whose overflow flag is the range check */
	if (TB_UNLIKELY(__builtin_mul_overflow(d, (int64_t)1 << TB_FIELD_SHIFT, &placed)))
		return TB_FIELD_INVALID;
#else
	if (d < -((int64_t)1 << (TB_FIELD_BITS - 1)) || d >= (int64_t)1 << (TB_FIELD_BITS - 1))
		return TB_FIELD_INVALID;
	placed = (int64_t)((uint64_t)d << TB_FIELD_SHIFT);
#endif
	return (uint64_t)placed;
}

/* One request: due at `intended`, finished at `done`. A `done` before
 * `intended` (or 19.5 hours or more after it) is invalid: the collector
 * records it as 0 and counts it as negative. */
static inline void tb_span(tb_producer *p, tb_metric_t m, uint64_t intended, uint64_t done)
{
	tb__emit(p, tb__span_field(intended, done) | m.bits, intended); /* TB_EV_SPAN is 0 */
}

/* The start of a request seen on two threads (or processes): it entered
 * at `intended`. The collector joins it with the tb_end of the same
 * (metric, seq); seq is taken modulo 2^47. */
static inline void tb_start(tb_producer *p, tb_metric_t m, uint64_t seq, uint64_t intended)
{
	tb__emit(p, (seq << TB_FIELD_SHIFT) | m.bits | TB_EV_START, intended);
}

/* Its end: request `seq` of metric m completed at `done`. */
static inline void tb_end(tb_producer *p, tb_metric_t m, uint64_t seq, uint64_t done)
{
	tb__emit(p, (seq << TB_FIELD_SHIFT) | m.bits | TB_EV_END, done);
}

#ifdef __cplusplus
}
#endif
#endif
