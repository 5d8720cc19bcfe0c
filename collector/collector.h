/* collector.h - tailbusd's state: what it follows, records and writes.
 *
 * The collector owns one bus. Its drain loop visits every followed slot in
 * turn, takes a bounded batch of events with its own consumer index, and
 * records each into the histogram of its (slot, metric) series for the
 * interval of the event's completion time. Each series holds two histograms,
 * the current interval's and the next one's, so an event that completes just
 * after a boundary is never put in the interval before it. An interval is
 * closed `grace` after its end: the series of each metric are merged, the
 * result is published to the live area and written as one log line per
 * metric, with the health counters in the sidecar.
 *
 * Everything is allocated at start-up (series come from a fixed pool); the
 * drain loop neither allocates nor makes system calls apart from the clock
 * read and the optional idle sleep.
 */
#ifndef TAILBUS_COLLECTOR_H
#define TAILBUS_COLLECTOR_H

#include <signal.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "evict.h"
#include "join.h"
#include "tailbus/hist.h"
#include "tailbus/segment.h"
#include "writer.h"

#define TB_COLLECTOR_BATCH 256                 /* events taken from one ring per visit */
/* tb_collector_poll_pass reads a ring short of a whole batch at most this
 * often: reading up to where the producer writes takes that line from it,
 * and the lines after it that the reads' prefetching fetched. */
#define TB_COLLECTOR_PARTIAL_NS 1000000LL
/* After a pass in which no ring had a whole batch waiting, the collector has
 * caught up: polling again at once would pull the event line each producer
 * is writing to this core on every pass, slowing a producer at full rate
 * many times over on this VM (bench/README.md). It waits this
 * long on its own clock instead, a fraction of what a ring holds. */
#define TB_COLLECTOR_DEFAULT_BACKOFF_NS 2000
#define TB_COLLECTOR_DEFAULT_SERIES 1024       /* (slot, metric) pairs with a histogram */
/* The bucket layout of every series histogram, TB_HIST_DEFAULT_* (1 ns to
 * an hour at 3 digits), as constants for the drain's fast path to fold into
 * its code; the collector refuses to open if tb_hist_init gives another. */
#define TB_SERIES_UNIT_MAG 0    /* floor(log2 1) */
#define TB_SERIES_HALF_MAG 10   /* 2048 sub-buckets for 3 digits, half of them */
#define TB_SERIES_SUB_MASK 2047 /* (2048 - 1) << unit magnitude */
#define TB_COLLECTOR_HOUSEKEEP_NS 100000000LL  /* slot states, heartbeat: every 100 ms */
#define TB_COLLECTOR_DEFAULT_GRACE_NS 20000000LL /* close an interval 20 ms after its end */

#if defined(__GNUC__)
#define TB_LIKELY(x) __builtin_expect(!!(x), 1)
#ifndef TB_UNLIKELY
#define TB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif
#else
#define TB_LIKELY(x) (x)
#ifndef TB_UNLIKELY
#define TB_UNLIKELY(x) (x)
#endif
#endif

/* Counters kept per metric and interval (all reach the sidecar). */
typedef struct tb_metric_counts {
	uint64_t events, negative, late, clamped, unmatched_start, unmatched_end;
	uint64_t folded; /* of events: taken from fold lanes (folds.c) */
} tb_metric_counts;

typedef struct tb_growbuf {
	char *p;
	size_t len, cap;
} tb_growbuf;

/* What the drain's fast path records into a series half besides its
 * counts: less than tb_hist_record_in_range would write, on one line, the
 * line just before the half's counts in the pool (tb_fast_counts), so that
 * the drain reaches a count from the record without loading a pointer.
 * tb_collector_fold_events adds the events to the histogram's total and
 * the per-metric count. The least and greatest value are not kept per
 * event: only which power-of-two buckets were written to, a byte each,
 * from which tb_collector_settle_bounds finds them in the counts when the
 * half closes, at the precision HdrHistogram reports them (its minimum and
 * maximum are a bucket's lowest and highest equivalent values, as
 * tb_hist_min and tb_hist_max are). */
#define TB_SERIES_BUCKETS 43 /* e - TB_SERIES_HALF_MAG for values below 2^53 */
typedef struct tb_series_fast {
	alignas(64) uint64_t events; /* recorded since the last fold */
	uint64_t limit; /* H + 1; 0 in the record that stands for "none" */
	/* [e - TB_SERIES_HALF_MAG] is 1 once a value whose top bit (with the
	 * sub-bucket mask's, TB_SERIES_SUB_MASK) is e was recorded since the
	 * last settle: one store of a constant an event */
	uint8_t seen[TB_SERIES_BUCKETS];
} tb_series_fast;
_Static_assert(sizeof(tb_series_fast) == 64, "a fast record is the line before its counts");

/* The counts of a series half, right after its fast record. */
static inline int64_t *tb_fast_counts(tb_series_fast *f)
{
	return (int64_t *)(f + 1);
}

/* The fast path looks an event up by the low bits of its first word as
 * they are: metric id, lap bit and kind (seg_abi.h). An entry is the
 * offset of a series half's fast record from c->fast_none in units of
 * TB_FAST_OFFSET_UNIT bytes (the pool's first record), a record whose
 * limit no duration is below, so that entry 0 (what calloc gives) means
 * "not the fast path's" with no test of its own. Only a SPAN written with
 * lap bit 1 has an entry other than 0, at tb_fast_entry(metric). So one
 * load checks that an event is written in the pass the drain expects, that
 * it is a SPAN and that its metric has a series on the ring. For a pass
 * that expects lap bit 0 the drain reads the table from TB_LAP_BIT entries
 * on: a SPAN of that pass then finds its metric's entry, and any other word
 * (an event from the pass before included) lands on an entry that is 0,
 * which is why the table has TB_LAP_BIT entries more than the index
 * reaches. Each id's entry has 32 bytes to itself, so a ring that records
 * many ids spread over the id space touches more lines and pages of the
 * table than entries side by side would. */
#define TB_FAST_INDEX_MASK ((TB_MAX_METRICS << TB_METRIC_SHIFT) - 1)
#define TB_FAST_ENTRIES (TB_FAST_INDEX_MASK + 1 + TB_LAP_BIT)
static inline size_t tb_fast_entry(uint16_t metric)
{
	return ((size_t)metric << TB_METRIC_SHIFT) | TB_LAP_BIT | TB_EV_SPAN;
}

typedef struct tb_series {
	uint32_t slot;
	uint16_t metric;
	tb_hist hist[2]; /* [cur], [cur ^ 1] */
	tb_series_fast *fast[2]; /* the lines before hist[h].counts */
} tb_series;
/* Every fast record lies within UINT32_MAX units of c->fast_none
 * (tb_collector_open refuses a pool of series larger): 32 GiB, some 46,000
 * series of the default layout. */
#define TB_FAST_OFFSET_UNIT 8

typedef struct tb_slot_follow {
	bool followed;
	bool quarantined;
	uint32_t generation;
	uint32_t cons; /* our consumer index: the authoritative one */
	int32_t pid;
	uint64_t pid_start_time;
	uint32_t owner_looks;   /* owner_alive() calls: each tenth reads the start time */
	uint64_t dropped_seen;  /* slot->dropped when last read */
	uint64_t pending_drops; /* drops of an owner that left before the interval closed */
	uint64_t interval_events;
	uint64_t interval_folded; /* taken from its fold lanes this interval */
	bool folds_unsure;      /* followed since its lanes were last read: read them all */
	uint64_t bad_events;    /* unregistered metric or unknown kind; a fold lane's impossible counts */
	uint32_t high_water;    /* most events waiting, this interval */
	int64_t partial_after_ns; /* monotonic: tb_collector_poll_pass reads short again from then */
	char reason[96];        /* why it was quarantined */
	/* metric id -> its series on this ring, or NULL; and for the fast
	 * path, an event's first word -> its series' record of each half
	 * (TB_FAST_ENTRIES, above). Every 14-bit id has an entry, so the drain
	 * looks up any event without a range check: 128 KiB for series_of and
	 * 512 KiB for each fast_of a slot, of which only the pages of ids seen
	 * are touched. Allocated at open for the collector's life: whatever
	 * resets the rest of this struct keeps them. */
	struct tb_slot_tables {
		tb_series **series_of;
		uint32_t *fast_of[2]; /* offsets from c->fast_none */
	} t;
} tb_slot_follow;

typedef struct tb_collector_config {
	const char *bus;
	const char *dir;     /* segment directory, NULL: default search */
	tb_writer_config writer;
	int64_t interval_ns;
	int64_t grace_ns;
	int64_t idle_ns;     /* sleep when a pass finds nothing; 0 = busy-poll */
	int64_t backoff_ns;  /* spin after a pass no ring filled a batch in; 0 = none */
	uint32_t max_series;
	uint32_t join_capacity;
	int64_t join_timeout_ns;
	tb_seg_config seg;   /* used when tailbusd creates the segment */
	bool fresh;          /* remove an existing segment first */
	bool evict_lines;    /* flush each event line read (see tb_collector.evict) */
} tb_collector_config;

typedef struct tb_collector {
	tb_collector_config cfg;
	tb_seg seg;
	tb_writer *writer;
	tb_join join;
	tb_slot_follow *slots;
	tb_series *series;      /* the pool: max_series */
	uint32_t nseries;
	const char *fast_none;  /* the fast record no event is recorded into */
	char *series_pool;    /* that record, then each series half's fast record and counts */
	size_t series_pool_bytes;
	tb_hist merged;         /* scratch for one metric's interval; the layout of every series */
	int64_t *fold_value;    /* per fold lane count index: the value its events are recorded at */
	uint64_t *fold_grew;    /* scratch: how much each count of the lane being read grew */
	uint8_t *scratch;       /* V2 encoding scratch */
	size_t scratch_cap;
	tb_growbuf log;         /* one interval's log lines */
	tb_growbuf side;        /* ... and sidecar rows */
	tb_metric_counts *counts[2]; /* per metric, [cur] and [cur ^ 1] */
	uint8_t *metric_ready;  /* per metric id (TB_MAX_METRICS): 1 once seen READY */
	int cur;                /* which half of every series is the current interval */
	/* Events completed before late_before_ns are late and go to open_half:
	 * normally the current interval's start and half; while the current
	 * half is being closed (and the drain goes on between its metrics),
	 * that interval's end and the next half, so nothing is written into the
	 * half being closed and what is drained then counts as it would after. */
	int open_half;
	int64_t late_before_ns;
	/* Set by the final closes at shutdown, which must not drain: what they
	 * took would go to a half never closed. Left in the rings instead, it
	 * is the next collector's. */
	bool stopping;
	int64_t clock_offset_ns; /* realtime - monotonic, measured at start */
	int64_t interval_start_ns; /* wall clock start of the current interval */
	int64_t next_housekeep_ns;
	bool last_pass_full;    /* the last drain pass took a whole batch from some ring */
	/* The start of the last drain pass, and the longest time between the
	 * starts of two passes (monotonic ns) since the last close, or the one
	 * before when the last wrote no ring rows: how long the rings went
	 * unread, for our own work or because the host took our CPU. In each
	 * ring's sidecar row, so that a drop can be put beside the stall that
	 * caused it. */
	int64_t last_pass_ns, longest_gap_ns;
	bool gap_kept; /* longest_gap_ns was kept over a close that wrote no ring rows */
	/* Bus drops of the last close, if it published no metric: shown with
	 * the next close's metrics instead (once), since the live area shows a
	 * bus's drops only beside a metric's interval. A ring's events drained
	 * in the close that reads its drops may belong to the next interval. */
	uint64_t drops_carried;
	/* What the drain does with each event line it has read to its end
	 * (drain.c): TB_EVICT_NONE (the default: leave it), or flush it from
	 * every cache. A line left in our cache must be taken back from it
	 * when its producer next writes there, a ring later: a cross-core
	 * invalidation for every 4 events. Flushed, the line is written from
	 * memory without asking this core. Which costs the producer less
	 * depends on where the two cores are: on this VM's two vCPUs a
	 * producer at full speed attempted 1.5-4.4 times as many events with
	 * it, and the flushes took about a tenth of the drain's rate in its
	 * own cache (bench/README.md); on cores that share a cache it can
	 * only cost. */
	int evict;
	/* Tests only: every event through decode(), none through the drain's
	 * fast path, to check the two record alike. */
	bool decode_only;
	uint64_t late_total, series_exhausted;
	int lock_fd;
	int last_io_error;
	char extra_header[4096 + 128]; /* open-loop mark and environment lines for the log */      /* the last log error reported, to report each once */
	volatile sig_atomic_t *stop;
} tb_collector;

void tb_collector_config_default(tb_collector_config *c);
/* Attach or create the segment, take the bus lock, allocate everything,
 * open the log. Returns 0 or a negative errno with *why set. */
int tb_collector_open(tb_collector *c, const tb_collector_config *cfg, const char **why);
/* Run until *stop becomes non-zero; then drain, close the partial interval,
 * flush. Returns 0 or a negative errno. */
int tb_collector_run(tb_collector *c, volatile sig_atomic_t *stop);
void tb_collector_close(tb_collector *c);

/* drain.c */
int64_t tb_collector_now(const tb_collector *c); /* wall clock ns via the monotonic clock */
/* Where drained events go (open_half, late_before_ns): derived from cur
 * and interval_start_ns, kept as fields for the drain loop; set again
 * whenever those change or a close begins or ends. */
static inline void tb_collector_set_closing(tb_collector *c, bool closing)
{
	c->open_half = c->cur ^ (int)closing;
	c->late_before_ns = c->interval_start_ns + (closing ? c->cfg.interval_ns : 0);
}
uint64_t tb_collector_drain_pass(tb_collector *c);
/* The busy-polling run loop's pass: as tb_collector_drain_pass, but a ring
 * that does not hold a whole batch is read only every TB_COLLECTOR_PARTIAL_NS,
 * so that a caught-up collector does not read the lines its producers are
 * writing on every pass. What waits is read by the next such read, or by the
 * tb_collector_drain_all of the interval's close. (With --idle-us the loop
 * uses tb_collector_drain_pass: it sleeps after a pass that took nothing.) */
uint64_t tb_collector_poll_pass(tb_collector *c);
void tb_collector_housekeep(tb_collector *c, int64_t now_mono_ns);
/* Drain until the rings are empty, or for as many passes as empty full
 * rings twice over: a producer that writes as fast as the drain must not
 * hold up the caller (an interval's close, the shutdown) for ever. Returns
 * the events taken. */
uint64_t tb_collector_drain_all(tb_collector *c);
/* Between the metrics of a close: drain passes while some ring still gives
 * a whole batch (bounded as tb_collector_drain_all), so that each metric a
 * close handles (a few hundred microseconds) leaves a ring at full rate no
 * fuller than that metric's share. One pass a metric took a batch from each
 * ring and let a close fill it (bench/README.md). Returns the events taken. */
uint64_t tb_collector_catch_up(tb_collector *c);
/* Add what the fast path recorded per series (both halves) to the series'
 * histograms' totals and to the per-metric counts; drain_all, the interval
 * close and whatever reads either call it first. */
void tb_collector_fold_events(tb_collector *c);
/* Bring every series' half `half` minimum and maximum (min_raw, max_raw)
 * up to what the fast path recorded into it, from its counts and the
 * buckets it wrote to: the lowest value of the lowest non-zero count above
 * 0, and the highest equivalent value (at most H) of the highest. Before
 * anything moves, resets or reads a series half's bounds: the close, once
 * the fast path has stopped recording into it. */
void tb_collector_settle_bounds(tb_collector *c, int half);
/* At stop: every parked START/END half is reported unmatched. */
void tb_collector_expire_all(tb_collector *c);

/* The series of (slot, metric), taken from the pool if it has none yet;
 * NULL once the pool is spent (counted in series_exhausted). */
tb_series *tb_collector_series(tb_collector *c, uint32_t slot, uint16_t metric);
/* Whether metric id `metric` is registered (remembered once seen). */
bool tb_collector_metric_ready(tb_collector *c, uint16_t metric);

/* folds.c */
/* The values fold lane counts are recorded at (c->fold_value). */
int tb_collector_folds_init(tb_collector *c);
/* Record what the producer of slot i folded into its lanes since they were
 * last read into the series histograms' half `half`, with the per-metric
 * counts; the lanes marked dirty only, or all of them. */
void tb_collector_take_slot_folds(tb_collector *c, uint32_t i, int half, bool all);
/* The same for every followed ring (the close, before it merges `half`). */
void tb_collector_take_folds(tb_collector *c, int half);

/* interval.c */
/* Drops on ring i since they were last read. */
uint64_t tb_collector_slot_drops(tb_collector *c, uint32_t i);
int tb_collector_close_interval(tb_collector *c, int64_t length_ns);

#endif
