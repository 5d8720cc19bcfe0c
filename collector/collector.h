/* collector.h - tailbusd's state: what it follows, records and writes.
 *
 * The collector owns one bus. Its work is split by concern, and the data
 * flows one way:
 *
 *   rings -> drain threads -> series banks -> closer -> live area, writer
 *
 * - slots.c: which producer slots are followed, whether their owners still
 *   run, quarantine of hostile rings (the slot life cycle).
 * - drain.c: a drain thread (tb_drainer) reads the rings assigned to it,
 *   each with its own consumer index, and counts every event into the
 *   histogram of its (slot, metric) series for the interval of its
 *   completion time. At an interval's end plus the grace it switches to the
 *   other bank of every series by flipping one index: no walk, no page
 *   touched for the first time. It never merges, encodes or writes.
 * - series.c: the series pool: two banks (histograms) per (slot, metric).
 * - keeper.c: the series keeper, a thread that faults in series memory
 *   ahead of use; a drain thread that finds none ready leaves the event in
 *   its ring until there is (pages.c: the rest of what a drain thread
 *   touches is faulted in at start).
 * - folds.c: what producers folded into their fold lanes while their rings
 *   were full.
 * - close.c: the closer merges the finished bank of every series per
 *   metric, encodes, publishes the live area, hands the lines to the writer
 *   and gives the banks back empty.
 * - accounts.c: what was taken from the rings and lanes against what
 *   reached the log, kept in the segment, so that a collector started after
 *   a kill counts exactly what the dead one lost.
 * - writer.c (writer.h; its pieces in writer_impl.h): the log files.
 * - collector.c: set-up (after a kill: resuming the intervals where the log
 *   stops), the run loop that owns the schedule (closes, housekeeping, the
 *   rings' assignment to drain threads) and a clean stop.
 *
 * The interval protocol between drain threads and the closer, in interval
 * start times (wall clock ns, L the interval length):
 * - a drain thread counts interval S in bank h and, for events completing
 *   after S + L, interval S + L in bank h ^ 1. It publishes `acked_start_ns`
 *   = S: every interval before S is finished for it.
 * - the closer closes interval S once every drain thread's acked_start_ns is
 *   past S, then publishes `freed_start_ns` = S: bank h is empty again.
 * - the bank of interval S + L (h ^ 1) held interval S - L before: a drain
 *   thread records into it, for events completing after S + L, and moves
 *   on to S + L, only once freed_start_ns >= S - L (next_free, drain.c).
 *   So a closer that falls behind holds the drain threads in their
 *   interval: events of the intervals after it are counted there as
 *   `ahead`, and the close that fell behind is counted and reported. It
 *   never stalls a drain.
 *
 * Everything is allocated and faulted in at start-up (series come from a
 * fixed pool, faulted in ahead by the keeper); a drain thread neither
 * allocates nor makes system calls apart from clock reads, the optional
 * idle sleep and, when it runs short of series memory, a wake-up of the
 * keeper.
 */
#ifndef TAILBUS_COLLECTOR_H
#define TAILBUS_COLLECTOR_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "evict.h"
#include "join.h"
#include "tailbus/hist.h"
#include "tailbus/owner.h"
#include "tailbus/segment.h"
#include "writer.h"

#define TB_COLLECTOR_BATCH 256                 /* events taken from one ring per visit */
/* A pass that reads whole batches only reads a ring short of a whole batch
 * at most this often: reading up to where the producer writes takes that
 * line from it, and the lines after it that the reads' prefetching fetched. */
#define TB_COLLECTOR_PARTIAL_NS 1000000LL
/* After a pass in which no ring had a whole batch waiting, the drain thread
 * has caught up: polling again at once would pull the event line each
 * producer is writing on every pass. It waits this long on its own clock
 * instead, a fraction of what a ring holds. */
#define TB_COLLECTOR_DEFAULT_BACKOFF_NS 2000
#define TB_COLLECTOR_DEFAULT_SERIES 1024       /* (slot, metric) pairs with a histogram */
/* Series whose memory the keeper keeps faulted in ahead of the drain
 * threads' needs: new (slot, metric) pairs that start together. */
#define TB_SERIES_RESERVE 16 /* the default series_reserve */
/* The bucket layout of every series histogram, TB_HIST_DEFAULT_* (1 ns to
 * an hour at 3 digits), as constants for the drain's fast path to fold into
 * its code; the collector refuses to open if tb_hist_init gives another. */
#define TB_SERIES_UNIT_MAG 0    /* floor(log2 1) */
#define TB_SERIES_HALF_MAG 10   /* 2048 sub-buckets for 3 digits, bank of them */
#define TB_SERIES_SUB_MASK 2047 /* (2048 - 1) << unit magnitude */
#define TB_COLLECTOR_HOUSEKEEP_NS 100000000LL  /* slot states, heartbeat: every 100 ms */
#define TB_COLLECTOR_DEFAULT_GRACE_NS 20000000LL /* close an interval 20 ms after its end */
#define TB_COLLECTOR_MAX_DRAINERS 64
/* The run loop's looks at the schedule (tb_collector_next_look): at most
 * TICK apart (the segment's size and header watched, series memory faulted
 * in ahead), at least LOOK_MIN apart, and one CLOSE_SLACK after an interval
 * becomes due (its end plus the grace, by when the drain threads switch
 * banks), so a close waits at most LOOK_MIN after they finished it. A
 * change to the segment file by a system call (a truncation) wakes it at
 * once. Each look costs a wake-up: about 20 a second keep the run loop's
 * own cost far below its closes'. */
#define TB_COLLECTOR_TICK_NS 50000000LL
#define TB_COLLECTOR_LOOK_MIN_NS 10000000LL
#define TB_COLLECTOR_CLOSE_SLACK_NS 1000000LL
/* Rebalancing: rings move between drain threads at most this often, and
 * only when the busiest thread carries this much more than its share. */
#define TB_REBALANCE_NS 1000000000LL
#define TB_REBALANCE_SLACK 1.25
#define TB_NO_DRAINER UINT32_MAX

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
	uint64_t ahead;  /* of events: stamped past the next interval while its bank was being closed */
} tb_metric_counts;

typedef struct tb_growbuf {
	char *p;
	size_t len, cap;
} tb_growbuf;

/* What the drain's fast path records into a series bank besides its
 * counts, on one line: the line just before the bank's counts in the pool
 * (tb_fast_counts), so that a count is reached from the record without
 * loading a pointer. The closer adds `events` to the histogram's total and
 * the per-metric count (tb_series_flush_fast). The least and greatest
 * value are not kept per event: only which power-of-two buckets were
 * written to, a byte each, from which tb_series_settle_bounds finds them in
 * the counts when the bank closes, at the precision HdrHistogram reports
 * them (a bucket's lowest and highest equivalent values, as tb_hist_min and
 * tb_hist_max are). */
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

/* The counts of a series bank, right after its fast record. */
static inline int64_t *tb_fast_counts(tb_series_fast *f)
{
	return (int64_t *)(f + 1);
}

/* The fast path looks an event up by the low bits of its first word as
 * they are: metric id, lap bit and kind (seg_abi.h). An entry is the
 * offset of a series bank's fast record from c->fast_discard in units of
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
 * reaches. */
#define TB_FAST_INDEX_MASK ((TB_MAX_METRICS << TB_METRIC_SHIFT) - 1)
#define TB_FAST_ENTRIES (TB_FAST_INDEX_MASK + 1 + TB_LAP_BIT)
static inline size_t tb_fast_entry(uint16_t metric)
{
	return ((size_t)metric << TB_METRIC_SHIFT) | TB_LAP_BIT | TB_EV_SPAN;
}

typedef struct tb_series {
	uint32_t slot;
	uint16_t metric;
	tb_hist hist[2]; /* the two banks: intervals alternate between them */
	tb_series_fast *fast[2]; /* the lines before hist[h].counts */
} tb_series;
/* Every fast record lies within UINT32_MAX units of c->fast_discard
 * (tb_collector_open refuses a pool of series larger): 32 GiB, some 46,000
 * series of the default layout. */
#define TB_FAST_OFFSET_UNIT 8

/* What the run loop asks of a slot's holder (tb_slot_follow.release). */
enum tb_release { TB_RELEASE_NONE = 0, TB_RELEASE_FREE = 1, TB_RELEASE_REFOLLOW = 2 };

/* What the close of an interval reports for one ring, counted by whichever
 * drain thread held it, in the bank of that interval. */
typedef struct tb_ring_tally {
	uint64_t events, folded, bad_events;
	uint32_t high_water; /* most events waiting */
} tb_ring_tally;

/* One slot as the collector follows it. The follow state is read and
 * written only by the drain thread that holds the slot (`holder`); the
 * tallies by that thread for the open banks and by the closer for the
 * closed one; the drop counts and fold lanes under c->slot_lock. */
typedef struct tb_slot_follow {
	bool followed;
	bool quarantined;
	bool folds_unsure;      /* followed since its lanes were last read: read them all */
	uint32_t generation;
	uint32_t generation_seen; /* the slot's highest, as housekeeping saw it (slot_word.h) */
	uint32_t cons; /* our consumer index: the authoritative one */
	tb_owner owner;       /* as the producer wrote it: untrusted */
	uint32_t owner_looks; /* owner_of() calls: each tenth reads the start time */
	int64_t stuck_since_ns; /* housekeeping: since when the slot looks impossible (0: not) */
	uint64_t stuck_word;    /* ... at this state and generation (slot_word.h) */
	int64_t partial_after_ns; /* monotonic: a whole-batch pass reads it short again from then */
	tb_ring_tally tally[2];
	/* Ring entries taken whose outcome is counted in each bank (the
	 * interval their event completed in, or the one they were late, bad or
	 * unmatched in): written by the holder, taken by the closer when the
	 * bank closes (accounts.c). */
	uint32_t into[2];
	char reason[96];        /* why it was quarantined */
	/* Assignment (the run loop writes `want`; the drain threads hand the
	 * slot over through `holder`, see drain.c), and the run loop's request
	 * that the holder hand the slot back to producers (`release`). */
	uint32_t want, holder, release; /* release: enum tb_release */
	uint64_t release_judged; /* the slot word `release` was decided on */
	uint64_t taken_total;   /* events taken, ever: the rebalancer's measure */
	uint64_t taken_seen;    /* ... as the rebalancer last read it */
	/* under slot_lock */
	uint64_t dropped_seen;  /* slot->dropped when last read */
	uint64_t pending_drops; /* drops of an owner that left before the interval closed */
	/* metric id -> its series on this ring, or NULL; and for the fast
	 * path, an event's first word -> its series' record of each bank
	 * (TB_FAST_ENTRIES, above). Every 14-bit id has an entry, so the drain
	 * looks up any event without a range check: 128 KiB for series_of and
	 * 512 KiB for each fast_of a slot, of which only the pages of ids seen
	 * are touched. Allocated at open for the collector's life. Written
	 * under series_lock, read without it (each entry one atomic word). */
	struct tb_slot_tables {
		tb_series **series_of;
		uint32_t *fast_of[2]; /* offsets from c->fast_discard */
	} t;
} tb_slot_follow;

struct tb_collector;

/* How a drain thread spent its time since the close that last took these
 * (each a maximum, or a running total, stored with relaxed atomics by the
 * thread and exchanged for 0 by the closer):
 * - the longest pass over its rings (wall clock);
 * - the longest time between the starts of two passes, or from the last
 *   one to the thread's end (wall clock): how long a ring may wait for
 *   its next visit, put beside its drops;
 * - the longest pause between two passes (the end of one to the start of
 *   the next: switching intervals, housekeeping, backing off) that the
 *   thread itself ran: its wall time less the time that was not the
 *   thread's. Two kinds are not:
 *   - time off its CPU (the kernel ran another thread, or the host
 *     reported the time as stolen), from the thread's CPU time;
 *   - time the machine took while the thread ran and charged to it
 *     (interrupts where the kernel has no IRQ time accounting, the host's
 *     stops that it does not report as stolen). In its own loop, between
 *     passes, the thread reads the clock after each piece of constant
 *     work: the end of a pass and the CPU-time call, the O(1) switch of
 *     halves, each turn of the back-off's spin. Such work takes well under
 *     a microsecond, so a step of TB_DRAIN_MACHINE_STEP_NS or more between
 *     two of those reads is the machine's. Housekeeping, which walks the
 *     slots, is not constant: its step is taken whole, as the thread's; so
 *     is everything between passes made by another caller (own_loop). A
 *     page fault in constant work would be taken as the machine's too;
 *     none happens there (every page it touches is faulted in at start),
 *     and the drain thread's faults are counted apart (bench/bus/pauses).
 *   The larger of the two is taken off the pause: both, where they fell
 *   apart, would be right, so by this rule the figure can read high, not
 *   low. The CPU time costs a system call, read where its cost is hidden:
 *   at the end of a pass that took no whole batch (a back-off or an idle
 *   sleep follows), and at a pass's start only when the pause before it
 *   is TB_DRAIN_PAUSE_READ_NS or longer (a shorter pause is taken whole,
 *   as self-caused; so is one whose last read was another thread's, as
 *   when the run loop drains after the drain threads stopped). The time
 *   off CPU is taken over the window from the last read: a pause after
 *   busy passes holds those passes too, and time off CPU in them is taken
 *   off the pause as well (the figure can then read low).
 * - its waits for series memory (a running total): the series a drain
 *   thread waited for, each counted once, by the thread that counted it
 *   first (tb_series_ask).
 * A pass itself is draining, not a pause: its length is the first figure. */
#define TB_DRAIN_PAUSE_READ_NS 5000LL
#define TB_DRAIN_MACHINE_STEP_NS 10000LL

/* The rings' gate (tb_collector.rings_gate), a set of bits: a cut noted and
 * not yet taken by the run loop, and the run loop repairing the segment
 * (segguard.c). While any is set a drain thread reads no ring and takes no
 * slot; each pass it skips counts in its gate_seen, by which the run loop
 * knows no pass begun before is still reading. */
#define TB_GATE_CUT 1u
#define TB_GATE_REPAIR 2u
/* How long the run loop waits for the drain threads at the gate with short
 * naps, beyond their --idle-us sleep; longer (a drain thread the host keeps
 * off its CPU), it goes on waiting with naps of a millisecond */
#define TB_GATE_WAIT_NS 20000000LL
typedef struct tb_drain_stalls {
	int64_t longest_pass_ns;
	int64_t longest_gap_ns;
	int64_t longest_self_pause_ns;
	int64_t series_waits; /* the waits for series memory it counted (tb_series_ask) */
} tb_drain_stalls;

typedef struct tb_drainer {
	alignas(64) struct tb_collector *c;
	uint32_t id;
	int cpu;                 /* pinned to, or -1 */
	pthread_t thread;
	bool started;
	/* the interval: derived from cur and interval_start_ns, kept as fields
	 * for the drain loop (tb_drainer_set_open) */
	int cur;                 /* the bank of interval_start_ns */
	int open_bank;           /* where late events go: cur */
	int64_t interval_start_ns;
	int64_t late_before_ns;
	tb_metric_counts *counts[2]; /* per metric, by bank */
	/* per bank: START/END events that left the join table (matched or
	 * expired) less those that went into it (accounts.c) */
	int64_t join_adj[2];
	uint64_t *fold_grew;     /* scratch for releasing a slot's lanes */
	bool last_pass_full;     /* the last pass took a whole batch from some ring */
	uint64_t late_total, series_exhausted;
	/* take only series already faulted in (tb_series_at_hand): set while
	 * the thread runs beside the keeper, clear while it hands a slot back */
	bool series_wait;
	bool left_waiting;       /* a drain left an event waiting for series memory */
	int64_t last_pass_ns;              /* the last pass's start */
	int64_t pass_end_ns;               /* its end */
	int64_t cpu_read_ns, cpu_read_wall_ns; /* the last read of the thread's CPU time, and when */
	uint64_t cpu_reader;               /* the thread that read it (a pass's caller; drain.c) */
	int64_t step_from_ns;              /* the last clock read followed by constant work only, or 0 */
	int64_t machine_ns;                /* the machine's steps between those reads since the last pass */
	/* the passes are the drain thread's loop's: only there does constant
	 * work follow a pass's end (passes by hand, or after the thread stopped,
	 * have their caller's work between them: no step of it is measured) */
	bool own_loop;
	int64_t next_housekeep_ns;
	tb_drain_stalls stalls;
	uint64_t events_total;   /* taken, ever (relaxed atomic) */
	uint32_t *held;            /* the slots this thread holds, as its last look found them */
	uint32_t nheld;
	/* set (release) by the run loop when a slot's assignment or request
	 * changed: the next pass looks at every slot, not only its own */
	alignas(64) uint32_t recheck;
	/* published with release: every interval before it is finished here */
	alignas(64) int64_t acked_start_ns;
	/* passes skipped at the rings' gate, published with release (the run
	 * loop waits for it to move: TB_GATE_*) */
	uint64_t gate_seen;
} tb_drainer;

typedef struct tb_collector_config {
	const char *bus;
	const char *dir;     /* segment directory, NULL: default search */
	tb_writer_config writer;
	int64_t interval_ns;
	int64_t grace_ns;
	int64_t idle_ns;     /* sleep when a pass finds nothing; 0 = busy-poll */
	int64_t backoff_ns;  /* spin after a pass no ring filled a batch in; 0 = none */
	uint32_t max_series;
	uint32_t series_reserve; /* series kept faulted in ahead of those taken */
	uint32_t join_capacity;
	int64_t join_timeout_ns;
	tb_seg_config seg;   /* used when tailbusd creates the segment */
	bool fresh;          /* remove an existing segment first */
	bool evict_lines;    /* flush each event line read (see tb_collector.evict) */
	uint32_t drain_threads;           /* 1 by default */
	int drain_cpus[TB_COLLECTOR_MAX_DRAINERS]; /* -1: not pinned */
	int close_cpu;       /* the run loop's and closer's CPU, -1: not pinned */
	bool rebalance;      /* move rings between drain threads by rate (default on) */
	int64_t test_close_delay_ns; /* tests: every close takes this much longer */
	int64_t test_keeper_look_ns; /* tests: the keeper's own looks this far apart (0: 50 ms) */
	int64_t test_backoff_busy_ns; /* tests: each back-off runs this long between two clock reads */
	int64_t test_housekeep_busy_ns; /* tests: a drain thread's housekeeping takes this much longer */
} tb_collector_config;

typedef struct tb_collector {
	tb_collector_config cfg;
	tb_seg seg;
	tb_writer *writer;
	tb_join join;
	pthread_mutex_t join_lock;   /* START/END events from any drain thread */
	pthread_mutex_t slot_lock;   /* drop counts and fold lanes: a holder's release vs the close */
	pthread_mutex_t series_lock; /* taking series from the pool (taken under join_lock, never around it) */
	tb_slot_follow *slots;
	tb_series *series;      /* the pool: max_series */
	uint32_t nseries;       /* taken (atomic: the closer reads it while drains take more) */
	uint32_t series_ready;  /* faulted in: [0, series_ready) (keeper.c) */
	uint32_t series_wanted; /* asked to be faulted in, in all */
	uint32_t series_waited_for; /* the most series a waiting drain thread needed */
	uint64_t series_unready;/* series taken before they were faulted in */
	uint32_t series_faulted_to; /* every series below it taken, ready, or faulted in by the closer before a slot's lock */
	uint64_t series_faulted_on_take; /* faulted in as they were taken, under the taker's locks */
	uint64_t series_waits;  /* series a drain thread waited for (left an event in its ring): once each */
	pthread_mutex_t keeper_lock; /* tb_series_prefault: one at a time */
	pthread_t keeper;
	uint32_t keeper_running, keeper_stop;
	bool keeper_started;    /* its thread is to be joined */
	uint64_t keeper_looks;  /* its looks so far (tests: it is about to sleep) */
	uint32_t keeper_seq;    /* the keeper's futex word: moved by every wake-up */
	cpu_set_t open_cpus;    /* the CPUs the collector was opened on: the keeper's */
	bool open_cpus_known;
	const char *fast_discard;  /* the fast record no event is recorded into */
	char *series_pool;    /* that record, then each series bank's fast record and counts */
	size_t series_pool_bytes;
	tb_drainer *drainers;
	uint32_t ndrainers;
	int64_t *fold_value;    /* per fold lane count index: the value its events are recorded at */
	uint8_t *metric_ready;  /* per metric id (TB_MAX_METRICS): 1 once seen READY */
	int64_t clock_offset_ns; /* realtime - monotonic, measured at start */
	uint64_t pid_ns;         /* our PID namespace (tailbus/owner.h), read at start */
	/* Tests only: every event through record_slow(), none through the drain's
	 * fast path, to check the two record alike. */
	bool decode_only;
	/* What the drain does with each event line it has read to its end
	 * (drain.c): TB_EVICT_NONE (the default: leave it), or flush it from
	 * every cache, so that its producer's next write there need not take
	 * it back from this core. Which costs the producer less depends on
	 * where the cores are (bench/README.md); on cores that share a cache it
	 * can only cost. */
	int evict;
	/* the closer (close.c) */
	struct tb_closer {
		int64_t start_ns;   /* the next interval to close */
		int bank;           /* its bank of every series */
		tb_hist merged;     /* scratch for one metric's interval; the layout of every series */
		tb_metric_counts *sum; /* per metric: the interval's counts, all drain threads */
		tb_metric_counts *expired; /* per metric: banks expired since the last close */
		uint64_t *fold_grew;
		uint8_t *scratch;   /* V2 encoding scratch */
		size_t scratch_cap;
		tb_growbuf log;     /* one interval's log lines */
		tb_growbuf sidecar; /* ... and sidecar rows */
		/* Bus drops of the last close, if it published no metric: shown
		 * with the next close's metrics instead (once). */
		uint64_t drops_carried;
		int64_t gap_carried;    /* ... and its drain gap, for the live area */
		int64_t longest_gap_ns; /* the drain threads' longest wall gap, kept for the next ring rows */
		bool gap_kept;
		uint64_t *drained_seen; /* per drain thread: its events_total at the last close */
		int64_t longest_self_pause_ns; /* the longest self-caused drain gap, ever */
		uint64_t series_exhausted; /* fold lane events with no series left */
		uint64_t behind;    /* closes that began an interval or more after their end */
		int64_t longest_close_ns;
	} closer;
	/* The closer's own copy of the live area's indices (publish.c): per
	 * metric the newest record and how many are valid, and each record's
	 * frame position; the heap's head and a position no valid frame is
	 * below. */
	struct tb_publisher {
		uint32_t *newest, *count;
		uint64_t *frame_pos; /* metric_capacity x live_intervals */
		int64_t *start_ns;   /* ... and each record's interval start */
		uint64_t head, floor;
	} publisher;
	/* What was taken against what reached the log, mirrored into the
	 * segment's slots (accounts.c). Under slot_lock. */
	struct tb_accounts {
		uint32_t *head;            /* per slot: tb_slot.logged_head */
		uint64_t *folds_taken;     /* ... tb_slot.folds_taken */
		uint64_t *folds_logged;    /* ... tb_slot.folds_logged */
		uint32_t *pend_ring;       /* the closing interval's, until published */
		uint64_t *pend_folds;
		int64_t logged_start_ns;   /* tb_seg_header.logged_start_ns */
		int64_t parked;            /* tb_seg_header.parked_logged */
		int64_t pend_parked;       /* the closing interval's change of it */
		int64_t join_left;         /* START/END events the closer expired, for the next close */
		/* what the collector before this one had taken and not logged */
		bool inherited;            /* it was killed while keeping accounts */
		bool resumed;              /* this one starts where its log stops */
		int32_t dead_pid;
		int64_t dead_from_ns;      /* the first interval it had not logged */
		uint64_t lost_ring, lost_folds;
		char cut_path[4096];       /* its newest log, cut back to whole intervals */
		uint64_t cut_bytes;        /* by this many bytes (0: not cut) */
		int cut_failed;            /* errno of a cut that could not be made, else 0 */
		bool cut_to_start;         /* to where the interval begins (else a line cut short) */
	} accounts;
	/* published with release: the last interval whose banks are empty again */
	alignas(64) int64_t freed_start_ns;
	alignas(64) int64_t next_housekeep_ns, next_rebalance_ns;
	uint64_t moves;         /* rings handed from one drain thread to another */
	/* the segment file shrunk under us (segguard.c): the smallest size
	 * found since the run loop last looked (UINT64_MAX: none), the rings'
	 * gate (TB_GATE_*: drain threads skip their passes while it is not 0),
	 * whether the segment could not be restored; written by the SIGBUS
	 * handler too, hence atomics only */
	uint64_t seg_cut_at;
	uint32_t rings_gate, seg_lost;
	uint64_t seg_shrinks;   /* cuts found and recovered from */
	uint64_t seg_header_changes; /* header changes found and written back (segguard.c) */
	uint64_t slots_reclaimed; /* slots found impossible and handed back (slots.c) */
	int seg_watch;          /* inotify on the segment file, or -1 */
	uint32_t generation;    /* this collector's collector_generation in the header */
	tb_metric_entry *metric_copy; /* per metric id seen READY: its entry, to write back after a cut */
	int lock_fd;
	bool pid_published;     /* this collector wrote its pid into the header (serving) */
	char fresh_why[256];    /* why --fresh was refused */
	int last_io_error;      /* the last log error reported, to report each once */
	char extra_header[4096 + 128]; /* open-loop mark and environment lines for the log */
	volatile sig_atomic_t *stop;
} tb_collector;

void tb_collector_config_default(tb_collector_config *c);
/* Attach or create the segment, take the bus lock, allocate everything,
 * open the log. Returns 0 or a negative errno with *why set. Starts no
 * thread: tb_collector_run does. */
int tb_collector_open(tb_collector *c, const tb_collector_config *cfg, const char **why);
/* Start the drain threads, run the schedule until *stop becomes non-zero;
 * then stop them, drain, close the partial interval, flush. Returns 0 or a
 * negative errno. */
int tb_collector_run(tb_collector *c, volatile sig_atomic_t *stop);
/* When, on the monotonic clock, the run loop looks at the schedule next,
 * having looked at `mono` (TB_COLLECTOR_TICK_NS and the rest). */
int64_t tb_collector_next_look(const tb_collector *c, int64_t mono);
void tb_collector_close(tb_collector *c);
int64_t tb_collector_now(const tb_collector *c); /* wall clock ns via the monotonic clock */

/* series.c */
int tb_series_pool_init(tb_collector *c);
void tb_series_pool_free(tb_collector *c);
/* The series of (slot, metric), taken from the pool if it has none yet;
 * NULL once the pool is spent (counted in the caller's series_exhausted). */
tb_series *tb_collector_series(tb_collector *c, uint32_t slot, uint16_t metric, uint64_t *exhausted);
/* The closer, before taking slot i's fold lanes under slot_lock: for each
 * lane that holds a metric the slot has no series of yet, one series past
 * those taken, faulted in now where the keeper has not (series_faulted_to),
 * so that no drain thread waiting for slot_lock waits for the kernel too. */
void tb_series_fault_ahead_for_lanes(tb_collector *c, uint32_t i);
/* Whether a drain thread may record events of (slot, metric) now: it has
 * its series, or takes one already faulted in, or none is left (counted
 * by record). False: none is ready. Either way *need says what to ask the
 * keeper for (tb_series_ask), once the caller's locks are let go. */
typedef struct tb_series_need {
	uint32_t want;  /* series to ask the keeper for, in all (0: none) */
	bool waiting;   /* the event waits for them */
} tb_series_need;
bool tb_series_at_hand(tb_collector *c, uint32_t slot, uint16_t metric, tb_series_need *need);
/* The bytes of one series bank in the pool: its fast record, then its
 * counts (tb_fast_counts). */
size_t tb_series_bytes_per_bank(void);

/* keeper.c: series memory faulted in ahead of the drain threads. */
/* Fault in series up to the reserve past those taken, and at least up to
 * series_wanted. */
void tb_series_prefault(tb_collector *c);
/* How many series the keeper keeps faulted in with `taken` taken. */
uint32_t tb_series_target(const tb_collector *c, uint32_t taken);
/* Ask for `want` series faulted in in all (0: nothing), `waiting`: for an
 * event left in its ring (counted once per series asked for). True if this
 * call counted a wait. */
bool tb_series_ask(tb_collector *c, uint32_t want, bool waiting);
int tb_keeper_start(tb_collector *c);
void tb_keeper_stop(tb_collector *c);

/* pages.c: fault in [p, p + len) on this thread, changing no byte; for
 * private memory. */
void tb_pages_fault_in(void *p, size_t len);
/* The same for a shared mapping of a file, where the kernel can do it
 * (Linux 5.14), else nothing. */
void tb_pages_map_shared(void *p, size_t len);
/* Add what the fast path recorded into bank `bank` of every series to the
 * histograms' totals and to counts[metric].events. */
void tb_series_flush_fast(tb_collector *c, int bank, tb_metric_counts *counts);
/* Bring every series' bank `bank` minimum and maximum up to what the fast
 * path recorded into it (from its counts and the buckets it wrote to), once
 * the fast path has stopped recording into it. */
void tb_series_settle_bounds(tb_collector *c, int bank);
/* Whether metric id `metric` is registered (remembered once seen). */
bool tb_collector_metric_ready(tb_collector *c, uint16_t metric);

/* Tell drain thread d to look at every slot at its next pass. */
static inline void tb_drainer_poke(tb_collector *c, uint32_t d)
{
	if (d < c->ndrainers)
		__atomic_store_n(&c->drainers[d].recheck, 1, __ATOMIC_RELEASE);
}

/* accounts.c: the ring entries and fold lane events taken against those
 * in written intervals, kept in the segment so that a restarted collector
 * counts exactly what a killed one took and never logged. */
int tb_accounts_init(tb_collector *c);
void tb_accounts_free(tb_collector *c);
/* At open, before any slot is followed: the collector before this one's
 * accounts read (what it lost, if it was killed), nothing written yet. */
void tb_accounts_adopt(tb_collector *c);
/* Once the writer is open: what tb_accounts_adopt found lost, on stderr,
 * as a '#' line in the log and a sidecar row; then this collector's
 * accounts are stored, afresh. Until then a start that fails leaves the
 * dead collector's accounts for the next one to report. */
void tb_accounts_start(tb_collector *c);
/* The closer, for the interval of bank `bank` it closes (before its ring
 * rows): what each ring gave it. */
void tb_accounts_take(tb_collector *c, int bank);
/* The closer, before it queues the lines of interval `start_ns` (`lines`
 * of them): what the accounts will be once they are written. */
void tb_accounts_writing(tb_collector *c, int64_t start_ns, uint32_t lines);
/* The closer, once that interval's writes completed: it is logged. */
void tb_accounts_publish(tb_collector *c, int64_t start_ns);
/* Under slot_lock: `n` fold lane events of slot i were taken. */
void tb_accounts_folds_taken(tb_collector *c, uint32_t i, uint64_t n);
/* Under slot_lock: ring i's indexes were set to `index` (a reset, or the
 * consumer index moved to read as full) without taking what lay between. */
void tb_accounts_moved(tb_collector *c, uint32_t i, uint32_t index);
/* The accounts written into the segment from the collector's copy (after
 * a truncation, and when the collector starts). */
void tb_accounts_restore(tb_collector *c);

/* slots.c */
void tb_slots_quarantine(tb_collector *c, uint32_t i, const char *reason);
/* Start following slot i (LIVE, or DETACHED with events left): our own
 * consumer index from its ring, its owner, drops already reported. */
void tb_slots_follow(tb_collector *c, uint32_t i);
/* The producer's position hint against our index (true: in range), with
 * the backlog it shows in *ahead. */
bool tb_slots_hint_in_range(const tb_collector *c, const tb_slot_follow *f, uint32_t i,
			    uint32_t *hint, uint32_t *ahead);
bool tb_slots_header_intact(const tb_collector *c, uint32_t i);
/* The run loop's look at every slot: asks holders to release slots whose
 * owner is gone or that were detached or abandoned while claimed. */
void tb_slots_housekeep(tb_collector *c, int64_t now_mono_ns);
/* Drops on ring i since they were last read (under slot_lock). */
uint64_t tb_slots_drops(tb_collector *c, uint32_t i);

/* segguard.c */
/* Install the process-wide SIGBUS handler that restores a shrunk segment
 * (tailbusd only: a process that is the collector's). 0 or -errno. */
int tb_segguard_install(tb_collector *c);
void tb_segguard_uninstall(tb_collector *c);
/* Watch the segment file for changes made by system calls (inotify): sets
 * c->seg_watch, or returns a negative errno and leaves it -1. */
int tb_segguard_watch(tb_collector *c);
/* The run loop's look at the segment file's size: a shrink found (here or
 * by the handler) is repaired, recovered from and reported. True if one
 * was. Then at its header: a change is reported and written back. */
bool tb_segguard_check(tb_collector *c);
/* The run loop's hold on the rings (TB_GATE_REPAIR): close returns once no
 * drain thread is reading (or TB_GATE_WAIT_NS and --idle-us have passed);
 * open lets them read again. */
void tb_rings_gate_close(tb_collector *c);
void tb_rings_gate_open(tb_collector *c);

/* folds.c */
/* The values fold lane counts are recorded at (c->fold_value). */
int tb_folds_init(tb_collector *c);
/* Record what the producer of slot i folded into its lanes since they were
 * last read into the series' bank `bank`, with counts[metric] and the
 * ring's tally of that bank; the lanes marked dirty only, or all of them.
 * Under slot_lock; `grew` is the caller's scratch (TB_FOLD_COUNTS).
 * `ready_only` (a drain thread's release): a lane takes no series that is
 * not faulted in yet; one that would is counted as a bad event. */
void tb_folds_take_slot(tb_collector *c, uint32_t i, int bank, bool all, tb_metric_counts *counts,
			uint64_t *grew, uint64_t *exhausted, bool ready_only);
/* Before slot i is handed back: whether every fold lane holding a
 * registered metric and counts not yet taken has its series on the ring,
 * taking one already faulted in where not (tb_series_at_hand, whose *need
 * it fills). Under slot_lock. */
bool tb_folds_series_at_hand(tb_collector *c, uint32_t i, tb_series_need *need);

/* drain.c */
int tb_drainer_init(tb_drainer *d, tb_collector *c, uint32_t id, int cpu);
void tb_drainer_free(tb_drainer *d);
/* Where drained events go: set from cur and interval_start_ns. */
void tb_drainer_set_open(tb_drainer *d);
/* One pass over the rings this thread holds, a batch at most from each
 * (whole_only: a ring short of a whole batch only every
 * TB_COLLECTOR_PARTIAL_NS). Returns the events taken. */
uint64_t tb_drainer_pass(tb_drainer *d, bool whole_only);
/* The run loop's requests for the slots this thread holds carried out, and
 * new producers followed, reading no ring. */
void tb_drainer_serve_requests(tb_drainer *d);
/* Move to the next interval if it is due (force: now) and its bank is free:
 * O(1). True if it moved. */
bool tb_drainer_switch(tb_drainer *d, int64_t now_wall_ns, bool force);
/* Drain until this thread's rings are empty, or for as many passes as
 * empty full rings twice over. Returns the events taken. */
uint64_t tb_drainer_drain_all(tb_drainer *d);
/* Read this thread's rings only as far as their events complete before
 * `before_wall_ns`, in ring order (a restarted collector catching up with
 * the intervals its predecessor did not write). Returns the events taken. */
uint64_t tb_drainer_drain_before(tb_drainer *d, int64_t before_wall_ns);
/* What a drain thread checks of its rings at housekeeping (their headers). */
void tb_drainer_housekeep(tb_drainer *d, int64_t now_mono_ns);
/* At stop: every parked START/END event is reported unmatched. */
void tb_drainer_expire_all(tb_drainer *d);
/* The thread's loop, until *c->stop. */
void *tb_drainer_main(void *arg);

/* close.c */
int tb_closer_init(tb_collector *c);
void tb_closer_free(tb_collector *c);

/* publish.c: the live area. tb_publish_init withdraws what an earlier
 * collector published; -EOVERFLOW when the closer's histogram could encode
 * to more than TB_LIVE_FRAME_MAX. */
typedef struct tb_publish_summary {
	int64_t start_ns, length_ns;
	uint64_t bus_drops;
	int64_t gap_ns;
	const tb_metric_counts *counts; /* the metric's, for the interval */
} tb_publish_summary;
int tb_publish_init(tb_collector *c);
void tb_publish_free(tb_collector *c);
/* The start of the newest interval in the live area (0: none). */
int64_t tb_publish_newest_start(const tb_collector *c);
/* Publish closer.merged, the interval `s` of metric m, with its frame (at
 * most TB_LIVE_FRAME_MAX bytes). */
void tb_publish_interval(tb_collector *c, uint16_t m, const tb_publish_summary *s,
			 const uint8_t *frame, size_t frame_len);
/* Close the interval c->closer.start_ns (length_ns long) from the finished
 * banks of every series; every drain thread must have acked past it. */
int tb_closer_close(tb_collector *c, int64_t length_ns);
/* Expire START/END events parked too long (the run loop, every 100 ms):
 * counted unmatched in the next interval closed. */
void tb_closer_expire(tb_collector *c, int64_t now_mono_ns);
/* Whether every drain thread has finished interval c->closer.start_ns. */
bool tb_closer_due(const tb_collector *c);

/* collector.c: synchronous use (tests, benchmarks, the stop), one thread
 * doing what the drain threads and the closer do. */
/* A pass of every drain thread over its rings, each ring read up to a
 * batch: every ring (pass_all), or as the busy-polling loop does, a ring
 * holding less than a batch at most once a millisecond (pass_paced).
 * tb_collector_drain_all also adds what the fast path recorded into drain
 * thread 0's counts (as tb_collector_flush_fast), for what reads them next. */
uint64_t tb_collector_pass_all(tb_collector *c);
uint64_t tb_collector_pass_paced(tb_collector *c);
uint64_t tb_collector_drain_all(tb_collector *c);
/* Every drain thread moves past the closer's interval, which is closed. */
int tb_collector_close_interval(tb_collector *c, int64_t length_ns);
/* Add the fast path's counts of both banks into drain thread 0's counts. */
void tb_collector_flush_fast(tb_collector *c);
void tb_collector_housekeep(tb_collector *c, int64_t now_mono_ns);
/* Assign ring i to drain thread d (the handover happens at d's next pass). */
void tb_collector_assign(tb_collector *c, uint32_t i, uint32_t d);
/* Move rings from the busiest drain threads to the least busy, by the events
 * each ring gave since the last call. Returns the rings moved. */
uint32_t tb_collector_rebalance(tb_collector *c);

#endif
