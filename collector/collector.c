/* collector.c - setting tailbusd up, its main loop, and a clean stop.
 *
 * Set-up allocates everything the threads will need: the series pool (one
 * anonymous mapping, faulted in ahead of use), the join table, each drain
 * thread's per-metric counters, the closer's scratch. One collector per
 * bus: an exclusive flock on "<segment>.lock" keeps a second one out. What
 * can be checked before the segment is created is (the lock's place); a
 * start that fails after creating it removes it again.
 *
 * A collector started after one that was killed reports what that one lost
 * (accounts.c) and resumes the interval clock where its log stops: before
 * the drain threads start, it closes the intervals up to the current one
 * from the rings' backlog (catch_up), each event in its own interval.
 *
 * tb_collector_run starts the drain threads (drain.c) and runs the schedule
 * on its own thread, which is also the closer's: just after each interval's
 * end plus the grace, and otherwise every 50 ms, it closes each interval all
 * drain threads have finished (close.c) and watches the segment
 * (segguard.c); every 100 ms, slot housekeeping
 * (slots.c), the heartbeat and reaping finished writes; every second, the
 * rings' assignment to drain threads (tb_collector_rebalance). Beside it
 * the series keeper (keeper.c) faults in series memory ahead. On stop:
 * the drain threads end, and this thread drains what is left, closes every
 * finished interval and the partial one (its true length), flushes and
 * fsyncs.
 *
 * The same steps can be taken one at a time from a single thread
 * (tb_collector_pass_all, tb_collector_close_interval...), as tests and
 * benchmarks do.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "tailbus/env.h"
#include "tailbus/log.h"
#include "tailbus/codec.h"

#define NS_PER_SEC 1000000000LL

void tb_collector_config_default(tb_collector_config *c)
{
	memset(c, 0, sizeof(*c));
	tb_writer_config_default(&c->writer);
	tb_seg_config_default(&c->seg);
	c->interval_ns = NS_PER_SEC;
	c->grace_ns = TB_COLLECTOR_DEFAULT_GRACE_NS;
	c->backoff_ns = TB_COLLECTOR_DEFAULT_BACKOFF_NS;
	c->max_series = TB_COLLECTOR_DEFAULT_SERIES;
	c->series_reserve = TB_SERIES_RESERVE;
	c->join_capacity = TB_JOIN_DEFAULT_CAPACITY;
	c->join_timeout_ns = TB_JOIN_DEFAULT_TIMEOUT_NS;
	c->drain_threads = 1;
	for (int k = 0; k < TB_COLLECTOR_MAX_DRAINERS; k++)
		c->drain_cpus[k] = -1;
	c->close_cpu = -1;
	c->rebalance = true;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static int fail(const char **why, const char *sentence, int rc)
{
	if (why)
		*why = sentence;
	return rc;
}

/* Producer threads attached to the bus's existing segment, if it has one
 * that is initialised: slots LIVE or CLAIMED by a process that still runs.
 * One of their pids in *pid. */
static int attached_producers(const tb_collector_config *cfg, int32_t *pid, bool *elsewhere)
{
	tb_seg s;
	tb_seg_config look = cfg->seg;
	look.wait_ms = 0; /* a segment never initialised has no producer to orphan */
	if (tb_seg_open(&s, cfg->dir, cfg->bus, &look, TB_SEG_READONLY, NULL) < 0)
		return 0;
	int n = 0;
	uint64_t own_ns = tb_pid_namespace();
	for (uint32_t i = 0; i < s.layout.slot_count; i++) {
		const tb_slot *slot = tb_seg_slot(&s, i);
		uint32_t state = __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE);
		tb_owner owner = {slot->pid, slot->pid_start_time, slot->pid_ns};
		if ((state != TB_SLOT_LIVE && state != TB_SLOT_CLAIMED) ||
		    tb_owner_check(&owner, own_ns, s.fd, i, false) != TB_OWNER_RUNS)
			continue;
		*pid = owner.pid;
		*elsewhere = tb_owner_elsewhere(&owner, own_ns);
		n++;
	}
	tb_seg_close(&s);
	return n;
}

#define LOCK_SUFFIX ".lock"

/* The lock's place may be checked before the segment is made: next to the
 * segment in every directory it may be in. What is there must be nothing
 * or a regular file the collector can open; a symlink (or a FIFO...)
 * planted there is refused before anything is created. */
static int check_lock_paths(const tb_collector_config *cfg, const char **why)
{
	char dirs[TB_SEG_DIRS_MAX][TB_SEG_PATH_MAX], path[TB_SEG_PATH_MAX + 64];
	size_t pages[TB_SEG_DIRS_MAX];
	int n = cfg->bus ? tb_seg_dirs(cfg->dir, dirs, pages) : 0;
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (snprintf(path, sizeof(path), "%s/%s" TB_SEG_SUFFIX LOCK_SUFFIX, dirs[i], cfg->bus) >=
			    (int)sizeof(path) ||
		    lstat(path, &st) < 0)
			continue; /* a path too long is the segment's to refuse */
		if (!S_ISREG(st.st_mode))
			return fail(why, "the collector lock file (<segment>.lock) is a symlink or not a regular "
					 "file; refused before creating the segment", -ELOOP);
		int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return fail(why, "cannot open the collector lock file", -errno);
		close(fd);
	}
	return 0;
}

static int take_lock(tb_collector *c, const char **why)
{
	char path[PATH_MAX + 8];
	snprintf(path, sizeof(path), "%s" LOCK_SUFFIX, c->seg.path);
	c->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (c->lock_fd < 0)
		return fail(why, "cannot open the collector lock file", -errno);
	if (flock(c->lock_fd, LOCK_EX | LOCK_NB) < 0)
		return fail(why, "another tailbusd is collecting this bus", -EBUSY);
	return 0;
}

/* What the drain threads touch besides the series (pages.c): the segment
 * mapped writable, per slot the lookup tables' entries of the segment's
 * metric ids (an event of an id past them is a bad one), per drain thread
 * its counts, and the shared tables they read and write. */
static void fault_in_state(tb_collector *c)
{
	uint32_t metrics = c->seg.layout.metric_capacity;
	tb_pages_map_shared(c->seg.base, c->seg.size); /* rings reset, lanes taken */
	size_t fast_entries = ((size_t)metrics << TB_METRIC_SHIFT) + TB_LAP_BIT;
	tb_pages_fault_in(c->slots, c->seg.layout.slot_count * sizeof(*c->slots));
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		tb_pages_fault_in(f->t.series_of, metrics * sizeof(tb_series *));
		tb_pages_fault_in(f->t.fast_of[0], fast_entries * sizeof(uint32_t));
		tb_pages_fault_in(f->t.fast_of[1], fast_entries * sizeof(uint32_t));
	}
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		tb_drainer *d = &c->drainers[k];
		tb_pages_fault_in(d->counts[0], metrics * sizeof(tb_metric_counts));
		tb_pages_fault_in(d->counts[1], metrics * sizeof(tb_metric_counts));
		tb_pages_fault_in(d->fold_grew, TB_FOLD_COUNTS * sizeof(uint64_t));
		tb_pages_fault_in(d->held, c->seg.layout.slot_count * sizeof(uint32_t));
	}
	tb_pages_fault_in(c->metric_ready, TB_MAX_METRICS);
	tb_pages_fault_in(c->metric_copy, metrics * sizeof(tb_metric_entry));
	tb_pages_fault_in(c->join.entries, tb_join_entries_bytes(&c->join));
	tb_pages_fault_in(c->fold_value, TB_FOLD_COUNTS * sizeof(int64_t));
}

static int alloc_state(tb_collector *c)
{
	uint32_t slots = c->seg.layout.slot_count;
	c->slots = calloc(slots, sizeof(*c->slots));
	c->metric_ready = calloc(TB_MAX_METRICS, 1); /* indexed by any event's metric id */
	c->drainers = calloc(c->cfg.drain_threads, sizeof(*c->drainers));
	c->metric_copy = calloc(c->seg.layout.metric_capacity, sizeof(tb_metric_entry));
	if (!c->slots || !c->metric_ready || !c->drainers || !c->metric_copy)
		return -ENOMEM;
	for (uint32_t i = 0; i < slots; i++) {
		tb_slot_follow *f = &c->slots[i];
		f->t.series_of = calloc(TB_MAX_METRICS, sizeof(tb_series *));
		f->t.fast_of[0] = calloc(TB_FAST_ENTRIES, sizeof(uint32_t));
		f->t.fast_of[1] = calloc(TB_FAST_ENTRIES, sizeof(uint32_t));
		if (!f->t.series_of || !f->t.fast_of[0] || !f->t.fast_of[1])
			return -ENOMEM;
		f->want = i % c->cfg.drain_threads;
		f->holder = TB_NO_DRAINER;
	}
	int rc = 0;
	for (uint32_t k = 0; rc == 0 && k < c->cfg.drain_threads; k++, c->ndrainers++)
		rc = tb_drainer_init(&c->drainers[k], c, k, c->cfg.drain_cpus[k]);
	if (rc == 0)
		rc = tb_closer_init(c);
	if (rc == 0)
		rc = tb_join_init(&c->join, c->cfg.join_capacity, c->cfg.join_timeout_ns);
	if (rc == 0)
		rc = tb_folds_init(c);
	if (rc == 0)
		rc = tb_accounts_init(c);
	if (rc == 0)
		rc = tb_series_pool_init(c);
	if (rc == 0)
		fault_in_state(c);
	return rc;
}

/* A collector started after one that was killed resumes its interval
 * clock where the dead one's log stops, if that is at most this many
 * intervals back: what waited in the rings goes to the intervals it
 * completed in (catch_up), not into the first one as late. */
#define RESUME_MAX_INTERVALS 8

/* The first interval: now's, or where the log of a killed collector stops
 * (and the live area, which it may have published into before it wrote
 * the interval's lines). Never one at or before an interval the last
 * collector logged or published: one that stopped cleanly within now's
 * interval logged it, partial, and readers tell intervals by their start;
 * the first then begins at the next boundary, and what completes before
 * it is counted there as late. */
static int64_t first_interval(tb_collector *c, int64_t now)
{
	struct tb_accounts *a = &c->accounts;
	int64_t len = c->cfg.interval_ns, start = now / len * len;
	const tb_seg_header *h = (const tb_seg_header *)c->seg.base;
	int64_t shown = tb_publish_newest_start(c);
	int64_t last = a->logged_start_ns > shown ? a->logged_start_ns : shown;
	if (last >= start)
		start = (last / len + 1) * len;
	if (!a->inherited || !a->logged_start_ns || h->collector_interval_ns != len)
		return start;
	int64_t next = a->logged_start_ns + len;
	if (shown >= next)
		next = shown + len;
	if (next % len != 0 || next >= start || start - next > RESUME_MAX_INTERVALS * len)
		return start;
	a->resumed = true;
	return next;
}

/* The first interval: every drain thread counts it in bank 0, the closer
 * closes it first, and the bank before it counts as given back. */
static void start_intervals(tb_collector *c, int64_t start)
{
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		tb_drainer *d = &c->drainers[k];
		d->cur = 0;
		d->interval_start_ns = start;
		d->acked_start_ns = start;
		tb_drainer_set_open(d);
	}
	c->closer.start_ns = start;
	c->closer.bank = 0;
	c->freed_start_ns = start - c->cfg.interval_ns;
}

static int open_collector(tb_collector *c, const tb_collector_config *cfg, const char **why)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->lock_fd = -1;
	c->pid_ns = tb_pid_namespace();
	c->seg.fd = -1; /* not opened yet: a refusal before it closes nothing */
	c->seg_cut_at = UINT64_MAX;
	c->seg_watch = -1;
	pthread_mutex_init(&c->join_lock, NULL);
	pthread_mutex_init(&c->slot_lock, NULL);
	pthread_mutex_init(&c->series_lock, NULL);
	pthread_mutex_init(&c->keeper_lock, NULL);
	if (c->cfg.drain_threads == 0)
		c->cfg.drain_threads = 1;
	if (c->cfg.drain_threads > TB_COLLECTOR_MAX_DRAINERS)
		return fail(why, "drain_threads: more drain threads than the collector supports", -EINVAL);
	int rc = check_lock_paths(cfg, why);
	if (rc < 0)
		return rc;
	c->evict = cfg->evict_lines ? tb_evict_method() : TB_EVICT_NONE;
	if (cfg->fresh) {
		/* a new segment would orphan attached producers: their events
		 * would go to a file no collector reads, uncounted */
		int32_t pid = 0;
		bool elsewhere = false;
		int n = attached_producers(cfg, &pid, &elsewhere);
		if (n > 0) {
			snprintf(c->fresh_why, sizeof(c->fresh_why),
				 "--fresh: %d producer thread%s still attached to this bus (pid %d%s%s); stop "
				 "them first, or start without --fresh to serve them",
				 n, n == 1 ? " is" : "s are", (int)pid,
				 elsewhere ? " in another PID namespace" : "", n > 1 ? " and others" : "");
			return fail(why, c->fresh_why, -EBUSY);
		}
		tb_seg_unlink(cfg->dir, cfg->bus);
	}
	rc = tb_seg_open(&c->seg, cfg->dir, cfg->bus, &cfg->seg, TB_SEG_CREATE, why);
	if (rc < 0)
		return rc;
	if ((rc = take_lock(c, why)) < 0)
		return rc;
	/* best effort: without inotify a cut is still found by its size */
	(void)tb_segguard_watch(c);
	if ((rc = alloc_state(c)) == -E2BIG)
		return fail(why, "max_series: more series than the drain's fast path can address", -EINVAL);
	if (rc < 0)
		return fail(why, "out of memory", rc);
	/* the drain's fast path has the series layout built in */
	const tb_hist *layout = &c->closer.merged;
	if (layout->unit_magnitude != TB_SERIES_UNIT_MAG ||
	    layout->sub_bucket_half_count_mag != TB_SERIES_HALF_MAG ||
	    layout->sub_bucket_mask != TB_SERIES_SUB_MASK || layout->highest != TB_HIST_DEFAULT_HIGHEST)
		return fail(why, "the series histogram layout is not the one the drain has built in", -EINVAL);
	c->clock_offset_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	int64_t now = clock_ns(CLOCK_MONOTONIC) + c->clock_offset_ns;
	/* what a killed collector before this one took and never logged:
	 * before its pid is overwritten and any slot is followed */
	tb_accounts_adopt(c);
	start_intervals(c, first_interval(c, now));
	tb_writer_config wc = cfg->writer;
	wc.bus = cfg->bus;
	/* tb_span and tb_end carry the intended time: everything this collector
	 * logs is open-loop data, and replay refuses to "correct" it. Then the
	 * environment the numbers were measured on. */
	if (!wc.extra_header) {
		tb_env env;
		tb_env_collect(&env);
		int n = snprintf(c->extra_header, sizeof(c->extra_header), "%s\n", TB_OPEN_LOOP_MARK);
		if (tb_env_format_header_lines(&env, c->extra_header + n, sizeof(c->extra_header) - (size_t)n) < 0)
			c->extra_header[n] = '\0';
		wc.extra_header = c->extra_header;
	}
	if ((rc = tb_writer_open(&c->writer, &wc, c->closer.start_ns, why)) < 0)
		return rc;
	tb_accounts_start(c);
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	h->collector_pid = getpid();
	c->pid_published = true;
	h->collector_interval_ns = cfg->interval_ns;
	c->generation = __atomic_add_fetch(&h->collector_generation, 1, __ATOMIC_ACQ_REL);
	/* follow whatever is already live: a restart loses nothing still in the rings */
	tb_collector_housekeep(c, clock_ns(CLOCK_MONOTONIC));
	c->next_housekeep_ns = clock_ns(CLOCK_MONOTONIC) + TB_COLLECTOR_HOUSEKEEP_NS;
	return 0;
}

/* A start that failed after it created the segment removes it again (and
 * the lock file, if it holds the lock: another tailbusd's stays), unless a
 * producer attached meanwhile: no segment is left behind that no collector
 * serves. */
static void discard_new_segment(tb_collector *c)
{
	if (!c->seg.created || !c->seg.base)
		return;
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++)
		if (__atomic_load_n(&tb_seg_slot(&c->seg, i)->state, __ATOMIC_ACQUIRE) != TB_SLOT_FREE)
			return;
	unlink(c->seg.path);
	if (c->lock_fd >= 0 && flock(c->lock_fd, LOCK_EX | LOCK_NB) == 0) {
		char path[PATH_MAX + 8];
		snprintf(path, sizeof(path), "%s" LOCK_SUFFIX, c->seg.path);
		unlink(path);
	}
}

int tb_collector_open(tb_collector *c, const tb_collector_config *cfg, const char **why)
{
	int rc = open_collector(c, cfg, why);
	if (rc < 0)
		discard_new_segment(c);
	else /* before tailbusd pins this thread to the closer's CPU */
		c->open_cpus_known = sched_getaffinity(0, sizeof(c->open_cpus), &c->open_cpus) == 0;
	return rc;
}

int64_t tb_collector_now(const tb_collector *c)
{
	return clock_ns(CLOCK_MONOTONIC) + c->clock_offset_ns;
}

/* Synchronous use: one thread does what the drain threads do. */
uint64_t tb_collector_pass_all(tb_collector *c)
{
	uint64_t n = 0;
	for (uint32_t k = 0; k < c->ndrainers; k++)
		n += tb_drainer_pass(&c->drainers[k], false);
	return n;
}

uint64_t tb_collector_pass_paced(tb_collector *c)
{
	uint64_t n = 0;
	for (uint32_t k = 0; k < c->ndrainers; k++)
		n += tb_drainer_pass(&c->drainers[k], true);
	return n;
}

uint64_t tb_collector_drain_all(tb_collector *c)
{
	/* a ring handed over from a thread to one before it in this order is
	 * read in the next round */
	uint64_t total = 0, n;
	for (int round = 0; round < 2; round++) {
		for (uint32_t k = 0; k < c->ndrainers; k++)
			total += (n = tb_drainer_drain_all(&c->drainers[k]));
	}
	tb_collector_flush_fast(c);
	return total;
}

void tb_collector_flush_fast(tb_collector *c)
{
	for (int h = 0; h < 2; h++)
		tb_series_flush_fast(c, h, c->drainers[0].counts[h]);
}

void tb_collector_housekeep(tb_collector *c, int64_t now)
{
	tb_slots_housekeep(c, now);
	tb_closer_expire(c, now);
	for (uint32_t k = 0; k < c->ndrainers; k++)
		tb_drainer_housekeep(&c->drainers[k], now);
	/* the drain threads carry out what housekeeping asked: here at once */
	for (uint32_t k = 0; k < c->ndrainers; k++)
		tb_drainer_serve_requests(&c->drainers[k]);
}

int tb_collector_close_interval(tb_collector *c, int64_t length_ns)
{
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		tb_drainer *d = &c->drainers[k];
		if (d->interval_start_ns <= c->closer.start_ns)
			tb_drainer_switch(d, 0, true);
	}
	return tb_closer_close(c, length_ns);
}

void tb_collector_assign(tb_collector *c, uint32_t i, uint32_t d)
{
	tb_slot_follow *f = &c->slots[i];
	uint32_t was = __atomic_load_n(&f->want, __ATOMIC_RELAXED);
	if (was == d)
		return;
	__atomic_store_n(&f->want, d, __ATOMIC_RELAXED);
	c->moves++;
	tb_drainer_poke(c, was);
	tb_drainer_poke(c, d);
}

/* Rebalancing: each ring's events since the last call is its load; rings
 * are placed heaviest first on the drain thread that carries least so far
 * (a ring stays where it is when that thread is as light as any). Nothing
 * moves unless the busiest thread carries TB_REBALANCE_SLACK times its
 * share: moving a ring costs its new thread the lines of its table. */
uint32_t tb_collector_rebalance(tb_collector *c)
{
	uint32_t slots = c->seg.layout.slot_count, nd = c->ndrainers, moved = 0;
	if (nd < 2)
		return 0;
	uint64_t rate[slots], load[TB_COLLECTOR_MAX_DRAINERS] = {0}, total = 0, most = 0;
	uint32_t order[slots];
	for (uint32_t i = 0; i < slots; i++) {
		tb_slot_follow *f = &c->slots[i];
		uint64_t now = __atomic_load_n(&f->taken_total, __ATOMIC_RELAXED);
		rate[i] = now - f->taken_seen;
		f->taken_seen = now;
		order[i] = i;
		load[__atomic_load_n(&f->want, __ATOMIC_RELAXED)] += rate[i];
		total += rate[i];
	}
	for (uint32_t k = 0; k < nd; k++)
		most = load[k] > most ? load[k] : most;
	if (total == 0 || (double)most < TB_REBALANCE_SLACK * (double)total / nd)
		return 0;
	for (uint32_t a = 1; a < slots; a++) { /* heaviest first: insertion sort, slots are few */
		uint32_t x = order[a], b = a;
		for (; b > 0 && rate[order[b - 1]] < rate[x]; b--)
			order[b] = order[b - 1];
		order[b] = x;
	}
	uint64_t placed[TB_COLLECTOR_MAX_DRAINERS] = {0};
	for (uint32_t a = 0; a < slots; a++) {
		uint32_t i = order[a], here = __atomic_load_n(&c->slots[i].want, __ATOMIC_RELAXED), best = here;
		for (uint32_t k = 0; k < nd; k++)
			if (placed[k] < placed[best])
				best = k;
		placed[best] += rate[i];
		if (best != here && rate[i] > 0) {
			tb_collector_assign(c, i, best);
			moved++;
		}
	}
	return moved;
}

/* Whether the open interval of any drain thread holds anything: its counts,
 * what the fast path recorded, or what producers folded. Folds them in. */
static bool open_has_data(tb_collector *c)
{
	int bank = c->closer.bank;
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++)
		tb_folds_take_slot(c, i, bank, false, c->drainers[0].counts[bank], c->closer.fold_grew,
				   &c->closer.series_exhausted, false);
	pthread_mutex_unlock(&c->slot_lock);
	tb_series_flush_fast(c, bank, c->drainers[0].counts[bank]);
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		for (uint32_t m = 0; m < c->seg.layout.metric_capacity; m++) {
			const tb_metric_counts *mc = &c->drainers[k].counts[bank][m];
			if (mc->events || mc->unmatched_start || mc->unmatched_end || mc->late)
				return true;
		}
	}
	return false;
}

/* A failed write loses log output, not the bus: report each new error once
 * and keep draining, so producers never see a full ring because of a disk.
 * Each interval lost from a file is said once, as the writer reports it. */
static void report_io_error(tb_collector *c, int rc)
{
	tb_writer_loss loss;
	uint64_t untold = 0;
	while (tb_writer_take_loss(c->writer, &loss, &untold))
		fprintf(stderr, "tailbusd: interval %.3f lost from %s: %s (its lines were dropped whole)\n",
			(double)loss.interval_ns / 1e9, loss.file, strerror(-loss.err));
	if (untold)
		fprintf(stderr, "tailbusd: %llu more intervals lost from the log files\n",
			(unsigned long long)untold);
	if (rc == 0 || rc == c->last_io_error)
		return;
	const char *why = NULL;
	tb_writer_error(c->writer, &why);
	fprintf(stderr, "tailbusd: log output failing: %s (%s); still collecting\n",
		why ? why : "write error", strerror(-rc));
	c->last_io_error = rc;
}

/* After the drain threads stopped: everything left is drained here, every
 * interval up to now closed, then the partial one with its true length. */
static int finish(tb_collector *c)
{
	tb_segguard_check(c);
	int64_t mono = clock_ns(CLOCK_MONOTONIC);
	tb_collector_housekeep(c, mono); /* pick up rings detached just now */
	tb_collector_drain_all(c);
	for (uint32_t k = 0; k < c->ndrainers; k++) /* this join table ends here */
		tb_drainer_expire_all(&c->drainers[k]);
	int64_t now = mono + c->clock_offset_ns;
	int rc = 0;
	while (rc == 0 && now >= c->closer.start_ns + c->cfg.interval_ns)
		rc = tb_collector_close_interval(c, c->cfg.interval_ns);
	/* bring every drain thread to the closer's interval */
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		tb_drainer *d = &c->drainers[k];
		if (d->interval_start_ns > c->closer.start_ns)
			continue;
		d->cur = c->closer.bank;
		d->interval_start_ns = c->closer.start_ns;
		tb_drainer_set_open(d);
	}
	/* the partial interval, with its true length */
	if (rc == 0 && open_has_data(c))
		rc = tb_collector_close_interval(c, now - c->closer.start_ns);
	/* events stamped after now by a producer's clock: one more partial */
	if (rc == 0 && open_has_data(c))
		rc = tb_collector_close_interval(c, c->cfg.interval_ns);
	/* whether the log lost anything is the writer's loss count's to say
	 * (tb_collector_run's caller), not whether an error ever happened */
	report_io_error(c, tb_writer_flush(c->writer));
	return rc;
}

/* Resumed where a killed collector's log stops (first_interval): before
 * the drain threads start, each interval up to the current one is closed
 * from what the rings hold, read in ring order only as far as it
 * completes before the interval after it, so that the closer's interval
 * and the next get it; what completed before the first one is late. */
static void catch_up(tb_collector *c)
{
	int64_t len = c->cfg.interval_ns;
	while (c->accounts.resumed && tb_collector_now(c) >= c->closer.start_ns + len + c->cfg.grace_ns) {
		for (uint32_t k = 0; k < c->ndrainers; k++)
			tb_drainer_drain_before(&c->drainers[k], c->closer.start_ns + 2 * len);
		report_io_error(c, tb_collector_close_interval(c, len));
	}
}

static int start_drainers(tb_collector *c)
{
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		tb_drainer *d = &c->drainers[k];
		int rc = pthread_create(&d->thread, NULL, tb_drainer_main, d);
		if (rc != 0)
			return -rc;
		d->started = true;
	}
	return 0;
}

static void stop_drainers(tb_collector *c)
{
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		if (c->drainers[k].started)
			pthread_join(c->drainers[k].thread, NULL);
		c->drainers[k].started = false;
	}
}

/* The run loop's own work on a tick: every interval the drain threads have
 * finished is closed (counted as behind when its close begins an interval
 * or more after its end), series memory kept ahead, housekeeping. */
static void tick(tb_collector *c, int64_t mono)
{
	tb_segguard_check(c);
	while (tb_closer_due(c)) {
		int64_t late = mono + c->clock_offset_ns - (c->closer.start_ns + c->cfg.interval_ns);
		if (late >= c->cfg.interval_ns) {
			c->closer.behind++;
			fprintf(stderr, "tailbusd: the close of interval %.3f began %.3f s after its end\n",
				(double)c->closer.start_ns / 1e9, (double)late / 1e9);
		}
		int64_t t0 = clock_ns(CLOCK_MONOTONIC);
		report_io_error(c, tb_closer_close(c, c->cfg.interval_ns));
		int64_t took = clock_ns(CLOCK_MONOTONIC) - t0;
		if (took > c->closer.longest_close_ns)
			c->closer.longest_close_ns = took;
		mono = clock_ns(CLOCK_MONOTONIC);
	}
	if (!__atomic_load_n(&c->keeper_running, __ATOMIC_ACQUIRE))
		tb_series_prefault(c); /* the keeper's work, should it not have started */
	if (mono >= c->next_housekeep_ns) {
		tb_slots_housekeep(c, mono);
		tb_closer_expire(c, mono);
		c->next_housekeep_ns = mono + TB_COLLECTOR_HOUSEKEEP_NS;
		report_io_error(c, tb_writer_poll(c->writer));
	}
	if (c->cfg.rebalance && mono >= c->next_rebalance_ns) {
		tb_collector_rebalance(c);
		c->next_rebalance_ns = mono + TB_REBALANCE_NS;
	}
}

/* When the run loop looks next (TB_COLLECTOR_TICK_NS and the rest): a
 * tick from now, or sooner just after the interval being closed becomes
 * due, or at the next housekeeping, but never sooner than LOOK_MIN from
 * now (an overdue close that a drain thread has not acked yet is looked at
 * again then). */
int64_t tb_collector_next_look(const tb_collector *c, int64_t mono)
{
	int64_t next = mono + TB_COLLECTOR_TICK_NS;
	int64_t due = c->closer.start_ns + c->cfg.interval_ns + c->cfg.grace_ns - c->clock_offset_ns +
		      TB_COLLECTOR_CLOSE_SLACK_NS;
	if (due < mono + TB_COLLECTOR_LOOK_MIN_NS)
		due = mono + TB_COLLECTOR_LOOK_MIN_NS;
	if (due < next)
		next = due;
	if (c->next_housekeep_ns > mono && c->next_housekeep_ns < next)
		next = c->next_housekeep_ns;
	return next;
}

/* Sleep until `at` (monotonic ns), or until the segment file is changed by
 * a system call (segguard's inotify descriptor becomes readable), or a
 * signal. Without the watch, a cut is found only by looking: then no
 * longer than LOOK_MIN. */
static void wait_until(const tb_collector *c, int64_t at)
{
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	if (c->seg_watch < 0 && at > now + TB_COLLECTOR_LOOK_MIN_NS)
		at = now + TB_COLLECTOR_LOOK_MIN_NS;
	int64_t left = at - now;
	if (left <= 0)
		return;
	struct timespec ts = {(time_t)(left / NS_PER_SEC), (long)(left % NS_PER_SEC)};
	if (c->seg_watch >= 0) {
		struct pollfd watch = {.fd = c->seg_watch, .events = POLLIN};
		ppoll(&watch, 1, &ts, NULL);
	} else {
		nanosleep(&ts, NULL);
	}
}

int tb_collector_run(tb_collector *c, volatile sig_atomic_t *stop)
{
	c->stop = stop;
	catch_up(c);
	int krc = tb_keeper_start(c);
	if (krc < 0) /* the drain threads take series as they are, counted */
		fprintf(stderr, "tailbusd: cannot start the series keeper: %s\n", strerror(-krc));
	int rc = start_drainers(c);
	if (rc < 0) {
		fprintf(stderr, "tailbusd: cannot start the drain threads: %s\n", strerror(-rc));
		*stop = 1;
	}
	c->next_rebalance_ns = clock_ns(CLOCK_MONOTONIC) + TB_REBALANCE_NS;
	while (!*stop) {
		tick(c, clock_ns(CLOCK_MONOTONIC));
		wait_until(c, tb_collector_next_look(c, clock_ns(CLOCK_MONOTONIC)));
	}
	stop_drainers(c);
	tb_keeper_stop(c);
	int frc = finish(c);
	return rc < 0 ? rc : frc;
}

void tb_collector_close(tb_collector *c)
{
	tb_keeper_stop(c); /* run stops it; one started by hand (tests) too */
	if (c->writer)
		tb_writer_close(c->writer);
	if (c->slots) {
		for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
			free(c->slots[i].t.series_of);
			free(c->slots[i].t.fast_of[0]);
			free(c->slots[i].t.fast_of[1]);
		}
	}
	free(c->slots);
	for (uint32_t k = 0; k < c->ndrainers; k++)
		tb_drainer_free(&c->drainers[k]);
	free(c->drainers);
	free(c->metric_ready);
	free(c->metric_copy);
	free(c->fold_value);
	tb_series_pool_free(c);
	tb_closer_free(c);
	tb_accounts_free(c);
	if (c->join.entries)
		tb_join_free(&c->join);
	/* only a collector that served says it stopped: one refused (another
	 * serves the bus) or failed on its way up leaves the pid as it found
	 * it, a running collector's or a killed one's, whose accounts the next
	 * start reports */
	if (c->seg.base && c->pid_published) {
		tb_seg_header *h = (tb_seg_header *)c->seg.base;
		h->collector_pid = 0;
	}
	tb_seg_close(&c->seg);
	if (c->seg_watch >= 0)
		close(c->seg_watch);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
}
