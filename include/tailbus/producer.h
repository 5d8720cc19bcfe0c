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
 * still returns a handle whose recording is a counted no-op (its ring is a
 * private one that is always full), and tb_producer_error() says why.
 *
 * Memory ordering (x86 and ARM alike, via Concurrency Kit): the event is
 * written into the ring slot, then a store fence, then the producer index is
 * published; the collector loads the index with acquire ordering before it
 * reads the slot. The consumer index is loaded without a fence: a stale value
 * can only make the ring look fuller than it is (a drop, never an overwrite).
 *
 * Times are nanoseconds. tb_now() reads the bus clock (CLOCK_MONOTONIC
 * through the vDSO); callers may pass their own timestamps from one clock
 * (a NIC's, an exchange's) as long as intended and done share it.
 */
#ifndef TAILBUS_PRODUCER_H
#define TAILBUS_PRODUCER_H

#include <stdbool.h>
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

/* The handle. The first fields are the hot path's; treat all as private. */
typedef struct tb_producer {
	ck_ring_t *ring;
	tb_event *events;
	uint64_t attempted;
	uint64_t dropped;
	uint64_t *shared_dropped; /* the slot's counter, or &dropped when detached */
	/* cold */
	void *seg;     /* tb_seg *, NULL for a no-op handle */
	int32_t slot;  /* -1 for a no-op handle */
	int error;     /* why the handle is a no-op (negative errno), 0 if live */
	const char *why;
	struct {
		ck_ring_t ring;
		tb_event events[2];
	} noop; /* a ring that is always full */
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

/* Cold: a full ring. Only this thread writes its slot's counter; a relaxed
 * store is enough for the collector to see it eventually. */
void tb__dropped(tb_producer *p);

static inline void tb__emit(tb_producer *p, uint64_t w0, uint64_t w1)
{
	tb_event ev = {w0, w1};
	p->attempted++;
	if (TB_UNLIKELY(!ck_ring_enqueue_spsc_tb_event(p->ring, p->events, &ev)))
		tb__dropped(p);
}

static inline uint64_t tb__word0(enum tb_event_kind kind, tb_metric_t m, uint64_t field)
{
	return ((uint64_t)kind << TB_KIND_SHIFT) |
	       ((uint64_t)(m & (TB_MAX_METRICS - 1)) << TB_METRIC_SHIFT) | (field & TB_FIELD_MASK);
}

/* One request: due at `intended`, finished at `done`. A `done` before
 * `intended` is recorded as 0 and counted by the collector. */
static inline void tb_span(tb_producer *p, tb_metric_t m, uint64_t intended, uint64_t done)
{
	uint64_t d = done - intended;
	d = d > TB_FIELD_MAX ? TB_FIELD_MAX : d;
	d = done < intended ? TB_FIELD_NEGATIVE : d;
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
