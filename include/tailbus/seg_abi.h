/* tailbus/seg_abi.h - the shared segment's binary layout (an ABI, not an API).
 *
 * One segment per bus. Everything in it is addressed by offsets from its base,
 * never by pointers, so every process may map it anywhere:
 *
 *   [header 4 KiB][slot table][metric table][live area][ring 0][ring 1]...
 *   [fold lanes of slot 0][fold lanes of slot 1]...
 *
 * - header: magic (published last), ABI version, sizes and offsets, clock,
 *   creator and collector identity, the collector's heartbeat, and (ABI
 *   4.1) the intervals its accounts have logged and are writing.
 * - slot table: one slot per producer ring (one engine thread): its state,
 *   owner (pid + process start time, so a reused pid is not mistaken for the
 *   owner), thread name, the counters only its producer writes (drops),
 *   and (ABI 4.1) the collector's accounts of what it took from the ring
 *   and lanes against what reached the log.
 * - metric table: open-addressed by name hash; the index is the 14-bit
 *   metric id carried in every event.
 * - live area: per metric, the last `live_intervals` published intervals
 *   under a sequence counter (a seqlock with bounded reader retries), then
 *   the live heap that holds every one of those intervals' histograms
 *   (ABI 4, tb_live_heap below).
 * - rings: single-producer rings of 16-byte events, one per slot, each
 *   after a ring header (tb_ring_header) that holds their indices.
 * - fold lanes (ABI 3): per slot, `fold_lanes` small histograms into which
 *   the producer folds a SPAN that finds its ring full, so that it is
 *   counted at its value instead of lost (tb_fold_lane, below).
 *
 * Producers write their slot's counters, their ring and the metric table.
 * The collector treats all of that as untrusted: it keeps its own copy of the
 * layout from the header it validated, derives every ring address itself, and
 * bounds every index it reads by its private capacity.
 *
 * Event encoding (two 64-bit words, four events per cache line), w0 from
 * its low bits up:
 *   w0 = kind:2 | lap:1 | metric:14 | field:47     w1 = timestamp
 *   SPAN : field = done - intended, a signed 47-bit count of nanoseconds;
 *          a negative one (a completion before its intended time) is sent
 *          as it is, one that does not fit (19.5 hours or more either way:
 *          an unset intended time) as TB_FIELD_INVALID, the most negative
 *          field; the collector counts every negative one as negative;
 *          w1 = intended
 *   START: field = request sequence (modulo 2^47), w1 = intended
 *   END  : field = request sequence (modulo 2^47), w1 = completion
 * The field sits at the top so that the producer puts a duration in place
 * and catches one that does not fit with one instruction (a multiply by
 * 2^17 that sets the overflow flag).
 *
 * Ring protocol (ABI 2). Ring indices are free-running 32-bit counters; the
 * event of index i lives in slot i mod capacity. Each event publishes itself:
 * the producer writes w1, then w0 with release ordering, and w0's lap bit
 * says which pass over the ring wrote it (tb_lap_bit: set on even passes,
 * clear on odd ones; a zeroed ring therefore reads as empty). The collector
 * reads slot after slot while the lap bit is the one its own index expects,
 * and publishes its consumer index (tb_ring_header.c_head) after the reads. So
 * the producer writes no shared index per event: it keeps its position in
 * its handle, and stores it into tb_ring_header.p_tail only on its cold path
 * (once per pass over the ring, whenever it finds the ring full, when it
 * attaches and when it detaches). That p_tail is a hint, at most one ring
 * behind: the collector uses it for the high-water mark, to catch a corrupt
 * ring (a hint more than a ring from its own index), and to step over an
 * event the hint shows written whose lap bit says otherwise (spoiled: by a
 * metric word not from tb_metric(), say; counted as bad, its lap bit mended
 * so that it reads as not written one pass on). The producer may write
 * index i once i - c_head < capacity. A slot handed back FREE has its ring
 * reset: indices where reading stopped, every slot marked not written.
 */
#ifndef TAILBUS_SEG_ABI_H
#define TAILBUS_SEG_ABI_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdalign.h> /* alignas, a keyword in C++ */
#endif

#define TB_SEG_MAGIC UINT64_C(0x3153554249415454) /* "TTAIBUS1" read little-endian */
#define TB_ABI_MAJOR 4u                            /* layout changes: readers refuse */
#define TB_ABI_MINOR 3u                            /* additions: readers tolerate */
#define TB_CACHELINE 64
#define TB_HEADER_SIZE 4096

/* A compile-time check that reads the same in C11 (_Static_assert) and in
 * C++11 and later (static_assert, a keyword there), whatever <assert.h>
 * defines: this header is included from both. */
#ifdef __cplusplus
#define TB_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define TB_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Event kinds (2 bits). */
enum tb_event_kind { TB_EV_SPAN = 0, TB_EV_START = 1, TB_EV_END = 2, TB_EV_MARK = 3 };

#define TB_KIND_MASK 3u
#define TB_LAP_SHIFT 2
#define TB_LAP_BIT (UINT64_C(1) << TB_LAP_SHIFT)
#define TB_METRIC_SHIFT 3
#define TB_METRIC_BITS 14
#define TB_MAX_METRICS (1u << TB_METRIC_BITS)
#define TB_FIELD_SHIFT 17
#define TB_FIELD_BITS 47
#define TB_FIELD_MASK ((UINT64_C(1) << TB_FIELD_BITS) - 1) /* of the field, shifted down */
/* A SPAN's field for a duration that does not fit, 2^46 ns (19.5 hours) or
 * more either way (an unset intended time): the most negative field, w0's
 * top bit alone. A completion before its intended time (clock skew, a
 * caller's mistake) is sent as the negative duration it is. The collector
 * records every negative field as 0 and counts it as negative. Valid
 * durations above the histogram's range (1 hour) are clamped there. */
#define TB_FIELD_INVALID (UINT64_C(1) << 63)

typedef struct tb_event {
	uint64_t w0;
	uint64_t w1;
} tb_event;
TB_STATIC_ASSERT(sizeof(tb_event) == 16, "four events per cache line");
TB_STATIC_ASSERT(TB_METRIC_SHIFT + TB_METRIC_BITS == TB_FIELD_SHIFT &&
			 TB_FIELD_SHIFT + TB_FIELD_BITS == 64,
		 "kind, lap, metric and field fill w0");

/* The lap bit that marks the event of ring index `index` as written, in a
 * ring of 2^capacity_log2 events. Because the capacity divides 2^32 an even
 * number of times, the bit is the same on both sides of the index's wrap. */
static inline uint64_t tb_lap_bit(uint32_t index, unsigned capacity_log2)
{
	return (uint64_t)(~(index >> capacity_log2) & 1u) << TB_LAP_SHIFT;
}

enum tb_slot_state {
	TB_SLOT_FREE = 0,        /* no owner; a producer may claim it with a CAS */
	TB_SLOT_CLAIMED = 1,     /* a producer is setting it up */
	TB_SLOT_LIVE = 2,        /* its producer records into the ring */
	TB_SLOT_DETACHED = 3,    /* its producer is gone (detached or dead): drain, then free */
	TB_SLOT_QUARANTINED = 4, /* the collector found it corrupt and stopped reading it */
};

#define TB_THREAD_NAME_MAX 32
/* Slot i's owner lock is byte TB_OWNER_LOCK_BASE + i of the bus file
 * (tailbus/owner.h), beyond the end of any segment. */
#define TB_OWNER_LOCK_BASE (UINT64_C(1) << 48)
/* A slot's pid_ns when its owner holds the lock but cannot read its own
 * namespace (no /proc): judged by the lock wherever it is read. */
#define TB_PID_NS_UNKNOWN UINT64_MAX
#define TB_METRIC_NAME_MAX 48

typedef struct tb_slot {
	/* line 0: identity, written by the producer while CLAIMED */
	alignas(TB_CACHELINE) uint32_t state; /* enum tb_slot_state, CAS'd */
	uint32_t generation;                  /* +1 on every claim */
	int32_t pid;
	int32_t tid;
	uint64_t pid_start_time; /* /proc/<pid>/stat field 22, clock ticks since boot */
	char thread_name[TB_THREAD_NAME_MAX];
	/* ABI 4.2: the inode of the owner's PID namespace when it holds the
	 * slot's owner lock (TB_OWNER_LOCK_BASE; TB_PID_NS_UNKNOWN when it
	 * cannot read which), else 0 (tailbus/owner.h) */
	uint64_t pid_ns;
	/* line 1: counters only the producer writes (cold path: on a drop) */
	alignas(TB_CACHELINE) uint64_t dropped; /* events lost to a full ring, exactly */
	uint64_t attached_ns;
	/* written by the collector: how many of `dropped` it has reported, so a
	 * restarted collector neither loses nor repeats them */
	uint64_t dropped_reported;
	/* ABI 3, the producer's: SPANs folded into the slot's fold lanes
	 * because the ring was full (counted there at their value; not in
	 * `dropped`), exactly */
	uint64_t folded;
	/* ABI 4.1, the collector's accounts of this ring (valid while the
	 * header's `collector_accounts` is set): the ring index up to which
	 * what it took (c_head) reached a written interval, counted in ring
	 * entries, so that c_head - logged_head is what was taken and not yet
	 * logged; the fold lane events it took and of them those that reached
	 * a written interval; and what logged_head and folds_logged become
	 * once the interval being written (the header's pending_start_ns) is
	 * in the log. A restarted collector reports the differences as lost
	 * (docs/design.md, Restart and failure behaviour). */
	uint32_t logged_head;
	uint32_t logged_head_next;
	uint64_t folds_taken;
	uint64_t folds_logged;
	uint64_t folds_logged_next;
} tb_slot;
TB_STATIC_ASSERT(sizeof(tb_slot) == 2 * TB_CACHELINE, "slot is two cache lines");

enum tb_metric_state { TB_METRIC_EMPTY = 0, TB_METRIC_RESERVING = 1, TB_METRIC_READY = 2 };

typedef struct tb_metric_entry {
	alignas(TB_CACHELINE) uint32_t state; /* enum tb_metric_state, CAS'd */
	uint32_t name_len;
	uint32_t hash;
	uint32_t reserved;
	char name[TB_METRIC_NAME_MAX];
} tb_metric_entry;
TB_STATIC_ASSERT(sizeof(tb_metric_entry) == TB_CACHELINE, "metric entry is one cache line");

/* Summary of one published interval and where its histogram is: a
 * compressed V2 frame (the bytes of its log line's payload, before base64)
 * of `hist_len` bytes at position `frame_pos` of the live heap. */
typedef struct tb_live_interval {
	int64_t start_ns; /* wall clock, ns since the epoch */
	int64_t length_ns;
	int64_t count;
	int64_t min, max;
	int64_t p50, p90, p99, p999, p9999;
	uint64_t dropped;   /* ring drops on the whole bus during the interval (and, when the
			     * close before published no metric, that close's) */
	uint32_t hist_len;  /* bytes of the frame, 1..TB_LIVE_FRAME_MAX */
	/* ABI 2.1: the longest the collector went between two passes over the
	 * rings up to this interval's close, since the close before (or the one
	 * before that, if it wrote no ring rows), microseconds, saturated; 0
	 * from a 2.0 collector */
	uint32_t longest_gap_us;
	/* ABI 3: of `count`, the events that came from fold lanes (counted at
	 * 2 significant digits because their ring was full) */
	uint64_t folded;
	/* ABI 4: the frame's first byte, as a heap position (tb_live_heap) */
	uint64_t frame_pos;
	/* ABI 4: what the sidecar's metric row counts beside `count`: of it,
	 * completions before their intended time (recorded as 0) and events
	 * counted in this interval though they completed in an earlier one;
	 * and START or END events that never met their partner */
	uint64_t negative, late, unmatched_start, unmatched_end;
} tb_live_interval;
TB_STATIC_ASSERT(sizeof(tb_live_interval) == 144, "live interval record size");

typedef struct tb_live_metric {
	alignas(TB_CACHELINE) uint64_t seq; /* odd while the collector writes */
	uint32_t newest;                    /* index of the newest interval */
	uint32_t count;                     /* intervals published, capped at live_intervals,
					     * less those whose frames the heap let go */
	/* ABI 4: the start of the newest interval that left because the heap
	 * needed its frame's bytes (0: none) */
	int64_t let_go_start_ns;
	uint8_t reserved[40];
	/* then live_intervals x tb_live_interval */
} tb_live_metric;

/* The live heap (ABI 4): one byte ring, `live_heap_bytes` long, that holds
 * the frames of every metric's published intervals, newest last. A position
 * counts every byte ever written to it, so it only grows; byte p lives at
 * p mod live_heap_bytes, and a frame may wrap round the end. `head` is the
 * position where the next frame starts. The collector, the only writer,
 * makes room for a frame of L bytes at head h like this:
 *
 *   1. every interval whose frame begins before h + L - live_heap_bytes (it
 *      would be overwritten) leaves its metric's live area: `count` goes
 *      down under the metric's sequence counter. Each metric's frames are in
 *      the heap oldest first, so these are always a metric's oldest;
 *   2. head = h + L (release: after those counts), then a release fence;
 *   3. the frame's bytes; then the interval is published as before.
 *
 * So a reader copies a frame at position p of L bytes, then (acquire fence)
 * loads head: the copy is whole if head - p <= live_heap_bytes. If it is
 * not, step 1 has changed the metric's sequence counter, and the reader
 * tries again. An interval in a metric's live area always has its frame:
 * there is no summary-only interval. How many intervals the heap holds
 * depends on the frames' sizes; TB_LIVE_FRAME_MAX bounds one. */
typedef struct tb_live_heap {
	alignas(TB_CACHELINE) uint64_t head; /* the collector's */
	uint8_t reserved[56];
	/* then live_heap_bytes bytes */
} tb_live_heap;
TB_STATIC_ASSERT(sizeof(tb_live_heap) == TB_CACHELINE, "heap header is one line");

/* The largest frame of the collector's histograms (1 ns to an hour at 3
 * digits: 33,792 counts): the V2 inner buffer's bound, a 40-byte header
 * and 9 bytes (LEB128-64b9B's longest word) a count, 304,168 bytes, grown
 * by zlib's compressBound (+105) and the frame's 8-byte header: 304,281,
 * rounded up to 300 KiB. The collector checks it against tb_v2_frame_bound
 * when it starts. */
#define TB_LIVE_FRAME_MAX (300u * 1024u)
/* The smallest heap: room for 8 of the largest frames, so that the
 * collector, which frees an eighth of the heap at a time, always has room. */
#define TB_LIVE_HEAP_MIN (8u * (uint64_t)TB_LIVE_FRAME_MAX)
#define TB_LIVE_HEAP_MAX (UINT64_C(1) << 32)

enum tb_clock_kind { TB_CLOCK_MONOTONIC = 0, TB_CLOCK_TSC = 1 };

typedef struct tb_seg_header {
	uint64_t magic; /* TB_SEG_MAGIC, stored last with release ordering */
	uint32_t abi_major;
	uint32_t abi_minor;
	uint64_t total_size;
	uint64_t page_size; /* of the mapping actually used (2 MiB on hugetlbfs) */
	uint32_t slot_count;
	uint32_t ring_capacity; /* events per ring, a power of two */
	uint32_t metric_capacity; /* a power of two, <= TB_MAX_METRICS */
	uint32_t live_intervals;
	uint32_t reserved_live; /* 0 (ABI 3's live_hist_bytes) */
	uint32_t clock_kind; /* enum tb_clock_kind */
	uint64_t slots_off;
	uint64_t metrics_off;
	uint64_t live_off;
	uint64_t live_stride; /* bytes per metric in the live area */
	uint64_t rings_off;
	uint64_t ring_stride; /* bytes per ring: tb_ring_header then the events */
	int32_t creator_pid;
	uint32_t fold_lanes; /* per slot, <= TB_FOLD_LANES_MAX; 0: SPANs that find the ring full are dropped */
	int64_t created_realtime_ns;
	uint64_t folds_off;   /* slot i's lanes at folds_off + i * fold_stride */
	uint64_t fold_stride;
	uint64_t live_heap_off;   /* ABI 4: the tb_live_heap, its bytes right after it */
	uint64_t live_heap_bytes; /* TB_LIVE_HEAP_MIN..TB_LIVE_HEAP_MAX, a multiple of 64 */
	/* collector: written by tailbusd only */
	alignas(TB_CACHELINE) int64_t collector_heartbeat_ns; /* CLOCK_MONOTONIC */
	int32_t collector_pid;
	uint32_t collector_generation; /* +1 on every collector start */
	int64_t collector_interval_ns;
	uint64_t intervals_published;
	/* the collector's drain threads over the last closed interval:
	 * their number, the worst one's longest pass and the longest part of a
	 * gap between its passes it caused itself (not the host taking its
	 * CPU), in us; and the closes that began an interval or more late */
	uint32_t drain_threads;
	uint32_t drain_longest_pass_us;
	uint32_t drain_self_pause_us;
	uint32_t closes_behind;
	/* ABI 4.1: the start of the newest interval whose log and sidecar
	 * writes completed and whose accounts (tb_slot.logged_head and
	 * folds_logged) were published after them; and whether the slots'
	 * accounts are kept (0 on a segment no 4.1 collector has served) */
	int64_t logged_start_ns;
	uint32_t collector_accounts;
	uint32_t pending_lines; /* the log lines of the interval being written */
	/* ABI 4.1: the start of the interval the collector is writing, whose
	 * accounts are the slots' *_next fields (0: none); and START or END
	 * events counted in the slots' logged_head while they wait in the
	 * collector's join table (lost with it), now and once that interval is
	 * written */
	alignas(TB_CACHELINE) int64_t pending_start_ns;
	int64_t parked_logged;
	int64_t parked_logged_next;
	/* ABI 4.3: over the last closed interval, the series the drain
	 * threads waited for (a new pair's events left in their ring until
	 * the collector had faulted its histogram's memory in) */
	uint32_t series_waits;
} tb_seg_header;
TB_STATIC_ASSERT(sizeof(tb_seg_header) <= TB_HEADER_SIZE, "header fits its page");

/* What the header's collector fields say (tb_bus_collector_state, bus.h). */
enum tb_collector_state {
	TB_COLLECTOR_SERVING = 0, /* it beat within the last TB_COLLECTOR_SILENT_NS */
	TB_COLLECTOR_NONE = 1,    /* no collector has served this bus yet */
	TB_COLLECTOR_STOPPED = 2, /* the last one stopped (tailbusd exits so) */
	TB_COLLECTOR_SILENT = 3,  /* one is registered but has not beaten for that
				   * long: stopped by a signal, stuck or killed */
};
/* Twenty of the collector's 100 ms heartbeats. */
#define TB_COLLECTOR_SILENT_NS INT64_C(2000000000)

TB_STATIC_ASSERT(offsetof(tb_seg_header, pending_lines) < offsetof(tb_seg_header, collector_heartbeat_ns) + TB_CACHELINE,
		 "the collector's fields share one line");
TB_STATIC_ASSERT(offsetof(tb_seg_header, collector_heartbeat_ns) % TB_CACHELINE == 0,
		 "collector fields on their own line");

/* Ring i: a tb_ring_header at rings_off + i * ring_stride, its events
 * TB_RING_HEADER_SIZE bytes after it. The header's indices are free-running
 * 32-bit ring indices (the protocol above): `c_head`, the collector's
 * consumer index, on a line of its own so that the producer's reads of it
 * do not contend with its stores of `p_tail`, the producer's position hint.
 * `p_head` is set with the others when the ring is reset and otherwise
 * unused. `size` and `mask` are the capacity and capacity - 1, written only
 * when the ring is reset: a collector that finds them changed knows the ring
 * was scribbled on. The layout is that of Concurrency Kit's ck_ring_t with
 * 64-byte lines (the protocol is tailbus's own); the offsets are fixed below
 * so that segments read the same whichever side was built with which. */
typedef struct tb_ring_header {
	uint32_t c_head; /* the collector's */
	uint8_t pad0[TB_CACHELINE - sizeof(uint32_t)];
	uint32_t p_tail; /* the producer's */
	uint32_t p_head;
	uint8_t pad1[TB_CACHELINE - 2 * sizeof(uint32_t)];
	uint32_t size; /* written on reset only */
	uint32_t mask;
} tb_ring_header;
TB_STATIC_ASSERT(offsetof(tb_ring_header, c_head) == 0, "consumer index first");
TB_STATIC_ASSERT(offsetof(tb_ring_header, p_tail) == TB_CACHELINE, "producer hint on the second line");
TB_STATIC_ASSERT(offsetof(tb_ring_header, p_head) == TB_CACHELINE + 4, "p_head after p_tail");
TB_STATIC_ASSERT(offsetof(tb_ring_header, size) == 2 * TB_CACHELINE, "size on the third line");
TB_STATIC_ASSERT(offsetof(tb_ring_header, mask) == 2 * TB_CACHELINE + 4, "mask after size");
TB_STATIC_ASSERT(sizeof(tb_ring_header) == 2 * TB_CACHELINE + 8, "ring header size");

#define TB_RING_HEADER_SIZE \
	((sizeof(tb_ring_header) + TB_CACHELINE - 1) / TB_CACHELINE * TB_CACHELINE)
TB_STATIC_ASSERT(TB_RING_HEADER_SIZE == 3 * TB_CACHELINE, "events start on the fourth line");

/* Set a ring header as a fresh ring of `capacity` events (a power of two)
 * whose indices all stand at `index`. Only while no one else uses it. */
static inline void tb_ring_header_init(tb_ring_header *r, uint32_t capacity, uint32_t index)
{
	r->c_head = r->p_tail = r->p_head = index;
	r->size = capacity;
	r->mask = capacity - 1;
}

/* Fold lanes (ABI 3). A SPAN that finds its ring full is not lost: the
 * producer counts it, on its cold path, in a lane of its slot that it has
 * taken for the event's metric (up to fold_lanes metrics a slot; the events
 * of any further metric are dropped and counted as before). A lane is a
 * histogram of 1 ns to an hour at 2 significant digits, the HdrHistogram
 * layout of lowest 1, highest TB_FOLD_HIGHEST and 2 digits: 256 sub-buckets
 * (TB_FOLD_SUB_MAG is log2 of half of them), 35 buckets, TB_FOLD_COUNTS
 * counts. A negative (or invalid) duration is counted at 0 and in
 * `negative`, one above TB_FOLD_HIGHEST at it and in `clamped`, as the
 * collector records such events from the ring.
 *
 * Only the producer writes `metric_plus_one`, `negative`, `clamped` and `counts`,
 * with plain stores, and they only grow; only the collector writes the
 * `*_taken` fields and `taken`: how much of each it has recorded, kept
 * here so that a collector that restarts neither repeats nor loses what
 * the one before it took. After each fold the producer stores 1 into
 * `dirty`, after the count (x86 keeps stores in order); the collector
 * exchanges it for 0 before it reads the counts, so a fold it does not see
 * leaves `dirty` set for its next look. The collector resets a slot's
 * lanes when it hands the slot back FREE, as it does its ring. Everything
 * here is untrusted to the collector: a count below what it took, or a
 * metric that is not registered, is counted as bad and not recorded. */
#define TB_FOLD_LANES_MAX 8
#define TB_FOLD_DEFAULT_LANES 4
#define TB_FOLD_SUB_MAG 7 /* 2 digits: 256 sub-buckets, half of them 2^7 */
#define TB_FOLD_COUNTS 4608 /* (35 buckets + 1) * 128 */
#define TB_FOLD_HIGHEST INT64_C(3600000000000) /* an hour in ns, as the collector's histograms */

typedef struct tb_fold_lane {
	/* the producer's */
	alignas(TB_CACHELINE) uint32_t metric_plus_one; /* 1 + the metric id; 0 while the lane is free */
	uint32_t reserved;
	uint64_t negative;
	uint64_t clamped;
	/* both sides' */
	alignas(TB_CACHELINE) uint32_t dirty;
	/* the collector's */
	alignas(TB_CACHELINE) uint64_t negative_taken;
	uint64_t clamped_taken;
	alignas(TB_CACHELINE) uint64_t counts[TB_FOLD_COUNTS]; /* the producer's */
	uint64_t taken[TB_FOLD_COUNTS];                        /* the collector's */
} tb_fold_lane;
TB_STATIC_ASSERT(sizeof(tb_fold_lane) % TB_CACHELINE == 0, "lanes are whole lines");

/* The lane's counts index of a duration in [0, TB_FOLD_HIGHEST]: its
 * HdrHistogram index at 2 digits (bucket e - 7 where e is the top bit of
 * v | 255, sub-bucket v >> bucket). */
static inline uint32_t tb_fold_index(uint64_t v)
{
	unsigned e = 63u ^ (unsigned)__builtin_clzll(v | ((UINT64_C(2) << TB_FOLD_SUB_MAG) - 1));
	unsigned b = e - TB_FOLD_SUB_MAG;
	return (uint32_t)(((uint64_t)b << TB_FOLD_SUB_MAG) + (v >> b));
}

#endif
