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
 * for the collector: when the ring is full the event is dropped and counted
 * exactly (tb_producer_stats, and the collector's health log).
 *
 * Attaching never aborts the engine: if the bus cannot be reached, tb_attach
 * still returns a handle whose recording is a counted no-op (its limit is
 * always reached and it has no ring), and tb_producer_error() says why.
 *
 * The ring is a Concurrency Kit SPSC ring (ck_ring_t), written here without
 * calling ck: the handle keeps the producer index and a limit up to which it
 * may write without reading the collector's index, so the common path reads
 * nothing outside this handle and touches no line the collector writes.
 * Memory ordering: the event is written into its slot, then the producer
 * index is published with release ordering (a plain store on x86); the
 * collector loads that index with acquire ordering before it reads the slot
 * and publishes its own consumer index with release ordering after. Only on
 * reaching the limit does the producer read the consumer index again; a
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

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t tb_metric_t;
/* Returned by tb_metric() when no id could be had; its events are dropped
 * by the collector and counted as unregistered. Never handed to a name. */
#define TB_METRIC_NONE ((tb_metric_t)(TB_MAX_METRICS - 1))

typedef struct tb_producer_stats {
	uint64_t attempted; /* events the caller tried to record */
	uint64_t written;   /* events that went into the ring */
	uint64_t dropped;   /* events lost because the ring was full (or no bus) */
} tb_producer_stats;

/* The handle. The first fields are the hot path's and only this thread
 * touches them; treat all as private. `head` is the ring's producer index;
 * the ring may be written without looking at the collector's index until
 * head reaches `limit`, the last consumer index seen plus the ring's usable
 * capacity. */
typedef struct tb_producer {
	uint32_t head;
	uint32_t limit;
	uint32_t mask;    /* slots - 1 */
	uint32_t head_seen; /* head when tb__full last ran (at most `mask` events ago) */
	tb_event *events; /* the ring's slots, in shared memory */
	/* cold */
	ck_ring_t *ring;          /* the ring's header, just before `events` */
	uint64_t written;         /* events written up to head_seen */
	uint64_t dropped;
	uint64_t *shared_dropped; /* the slot's counter, or &dropped for a no-op handle */
	void *seg;     /* tb_seg *, NULL for a no-op handle */
	int32_t slot;  /* -1 for a no-op handle */
	int error;     /* why the handle is a no-op (negative errno), 0 if live */
	const char *why;
} tb_producer;

/* Claim a ring on bus `bus` (NULL: $TAILBUS_BUS, else "default") for the
 * calling thread, creating the segment if no one has. `thread_name` may be
 * NULL. Returns a handle (live, or a counted no-op: see tb_producer_error),
 * or NULL with errno ENOMEM when not even that could be allocated. */
tb_producer *tb_attach(const char *bus, const char *thread_name);
/* Give the ring back; the collector drains what is left in it. */
void tb_detach(tb_producer *p);
/* Register (or find) a metric by name: 1..47 bytes of [A-Za-z0-9_.:-]. */
tb_metric_t tb_metric(tb_producer *p, const char *name);
void tb_producer_stats_get(const tb_producer *p, tb_producer_stats *st);
/* 0 when the handle records into a bus, else a negative errno; *why (if
 * given) gets a sentence. */
int tb_producer_error(const tb_producer *p, const char **why);

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

/* Cold: head reached limit. Reads the collector's index again and writes
 * the event if there is room after all; else drops it and counts the drop.
 * Always the case for a no-op handle (limit == head, no ring). */
void tb__full(tb_producer *p, uint64_t w0, uint64_t w1);

/* The ring's producer index sits at a fixed distance before its slots. */
#define TB__P_TAIL_FROM_EVENTS \
	((ptrdiff_t)offsetof(ck_ring_t, p_tail) - (ptrdiff_t)TB_RING_HEADER_SIZE)

static inline void tb__emit(tb_producer *p, uint64_t w0, uint64_t w1)
{
	uint32_t h = p->head;
	if (TB_UNLIKELY(h == p->limit)) {
		tb__full(p, w0, w1);
		return;
	}
	tb_event *events = p->events; /* read once: the stores below may alias */
	tb_event *e = &events[h & p->mask];
	/* two plain 8-byte stores: relaxed atomics keep the compiler from
	 * packing the words into one vector store, which costs two more
	 * instructions to build than it saves */
	__atomic_store_n(&e->w0, w0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->w1, w1, __ATOMIC_RELAXED);
	h++;
	p->head = h;
	/* release: the slot's two words are visible before the index that
	 * hands them to the collector (on x86 a plain store) */
	__atomic_store_n((uint32_t *)((char *)events + TB__P_TAIL_FROM_EVENTS), h, __ATOMIC_RELEASE);
}

/* The metric id is masked to its 14 bits although tb_metric() only gives
 * ids in range: one instruction, so that a caller's bad id can never turn
 * a SPAN into a START or END whose "sequence" is a latency (a made-up match). */
static inline uint64_t tb__word0(enum tb_event_kind kind, tb_metric_t m, uint64_t field)
{
	return ((uint64_t)kind << TB_KIND_SHIFT) |
	       ((uint64_t)(m & (TB_MAX_METRICS - 1)) << TB_METRIC_SHIFT) | (field & TB_FIELD_MASK);
}

/* One request: due at `intended`, finished at `done`. A `done` before
 * `intended` (or 2^48 ns, 78 hours, or more after it) is invalid: the
 * collector records it as 0 and counts it as negative. */
static inline void tb_span(tb_producer *p, tb_metric_t m, uint64_t intended, uint64_t done)
{
	uint64_t d = done - intended; /* a negative difference wraps to a huge one */
	d = d > TB_FIELD_INVALID ? TB_FIELD_INVALID : d;
	tb__emit(p, tb__word0(TB_EV_SPAN, m, d), intended);
}

/* The first half of a request seen on two threads (or processes): it entered
 * at `intended`. The collector joins it with the tb_end of the same
 * (metric, seq); seq is taken modulo 2^48. */
static inline void tb_start(tb_producer *p, tb_metric_t m, uint64_t seq, uint64_t intended)
{
	tb__emit(p, tb__word0(TB_EV_START, m, seq), intended);
}

/* The second half: request `seq` of metric m completed at `done`. */
static inline void tb_end(tb_producer *p, tb_metric_t m, uint64_t seq, uint64_t done)
{
	tb__emit(p, tb__word0(TB_EV_END, m, seq), done);
}

#ifdef __cplusplus
}
#endif
#endif
