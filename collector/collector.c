/* collector.c - setting tailbusd up, its main loop, and a clean stop.
 *
 * Set-up allocates everything the loop will need: the series pool (one
 * anonymous mapping, committed only as histograms are touched), the join
 * table, the per-metric counters, the encoding scratch. One collector per
 * bus: an exclusive flock on "<segment>.lock" keeps a second one out.
 *
 * The loop: drain a batch from every ring; when the wall clock passes the end
 * of the current interval plus a grace period, drain everything and close the
 * interval; every 100 ms, housekeeping (slot states, join expiry, heartbeat)
 * and reaping finished writes. On stop: drain, close the partial interval
 * (its true length), flush and fsync.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
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
	c->join_capacity = TB_JOIN_DEFAULT_CAPACITY;
	c->join_timeout_ns = TB_JOIN_DEFAULT_TIMEOUT_NS;
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

static int take_lock(tb_collector *c, const char **why)
{
	char path[PATH_MAX + 8];
	snprintf(path, sizeof(path), "%s.lock", c->seg.path);
	c->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (c->lock_fd < 0)
		return fail(why, "cannot open the collector lock file", -errno);
	if (flock(c->lock_fd, LOCK_EX | LOCK_NB) < 0)
		return fail(why, "another tailbusd is collecting this bus", -EBUSY);
	return 0;
}

/* The counts of one series half (the default layout). */
static int32_t series_counts_len(void)
{
	return tb_hist_counts_len(TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
				  TB_HIST_DEFAULT_SIG_DIGITS);
}

/* The bytes of one series half in the pool: its fast record, then its
 * counts (tb_fast_counts). */
static size_t series_half_bytes(void)
{
	return sizeof(tb_series_fast) + (size_t)series_counts_len() * sizeof(int64_t);
}

/* The pool's mapping: the "none" record, then max_series x 2 halves. */
static size_t pool_bytes_for(uint32_t max_series)
{
	return sizeof(tb_series_fast) + 2 * (size_t)max_series * series_half_bytes();
}

static int alloc_series(tb_collector *c)
{
	int32_t len = series_counts_len();
	size_t per = series_half_bytes();
	c->series_pool_bytes = pool_bytes_for(c->cfg.max_series);
	c->series_pool = mmap(NULL, c->series_pool_bytes, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->series_pool == MAP_FAILED) {
		c->series_pool = NULL;
		return -ENOMEM;
	}
	/* first the fast path's "none" record (zeroed: limit 0) */
	c->fast_none = c->series_pool;
	c->series = calloc(c->cfg.max_series, sizeof(*c->series));
	if (!c->series)
		return -ENOMEM;
	for (uint32_t k = 0; k < c->cfg.max_series; k++) {
		for (int half = 0; half < 2; half++) {
			tb_series_fast *fast =
				(tb_series_fast *)(c->series_pool + sizeof(tb_series_fast) +
						   ((size_t)k * 2 + (size_t)half) * per);
			c->series[k].fast[half] = fast;
			tb_hist_init_zeroed(&c->series[k].hist[half], TB_HIST_DEFAULT_LOWEST,
					    TB_HIST_DEFAULT_HIGHEST, TB_HIST_DEFAULT_SIG_DIGITS,
					    tb_fast_counts(fast), (size_t)len);
		}
	}
	return 0;
}

static int alloc_state(tb_collector *c)
{
	uint32_t slots = c->seg.layout.slot_count, metrics = c->seg.layout.metric_capacity;
	c->slots = calloc(slots, sizeof(*c->slots));
	c->counts[0] = calloc(metrics, sizeof(tb_metric_counts));
	c->counts[1] = calloc(metrics, sizeof(tb_metric_counts));
	c->metric_ready = calloc(TB_MAX_METRICS, 1); /* indexed by any event's metric id */
	if (!c->slots || !c->counts[0] || !c->counts[1] || !c->metric_ready)
		return -ENOMEM;
	for (uint32_t i = 0; i < slots; i++) {
		c->slots[i].t.series_of = calloc(TB_MAX_METRICS, sizeof(tb_series *));
		c->slots[i].t.fast_of[0] = calloc(TB_FAST_ENTRIES, sizeof(uint32_t));
		c->slots[i].t.fast_of[1] = calloc(TB_FAST_ENTRIES, sizeof(uint32_t));
		if (!c->slots[i].t.series_of || !c->slots[i].t.fast_of[0] || !c->slots[i].t.fast_of[1])
			return -ENOMEM;
	}
	int rc = tb_hist_init(&c->merged, TB_HIST_DEFAULT_LOWEST, TB_HIST_DEFAULT_HIGHEST,
			      TB_HIST_DEFAULT_SIG_DIGITS);
	if (rc < 0)
		return rc;
	c->scratch_cap = tb_v2_inner_bound(&c->merged) + tb_v2_frame_bound(&c->merged);
	c->scratch = malloc(c->scratch_cap);
	if (!c->scratch)
		return -ENOMEM;
	rc = tb_join_init(&c->join, c->cfg.join_capacity, c->cfg.join_timeout_ns);
	if (rc == 0)
		rc = tb_collector_folds_init(c);
	return rc < 0 ? rc : alloc_series(c);
}

int tb_collector_open(tb_collector *c, const tb_collector_config *cfg, const char **why)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->lock_fd = -1;
	c->evict = cfg->evict_lines ? tb_evict_method() : TB_EVICT_NONE;
	if (pool_bytes_for(cfg->max_series) > (size_t)UINT32_MAX * TB_FAST_OFFSET_UNIT)
		return fail(why, "max_series: more series than the drain's fast path can address", -EINVAL);
	if (cfg->fresh)
		tb_seg_unlink(cfg->dir, cfg->bus);
	int rc = tb_seg_open(&c->seg, cfg->dir, cfg->bus, &cfg->seg, TB_SEG_CREATE, why);
	if (rc < 0)
		return rc;
	if ((rc = take_lock(c, why)) < 0)
		return rc;
	if ((rc = alloc_state(c)) < 0)
		return fail(why, "out of memory", rc);
	/* the drain's fast path has the series layout built in */
	if (c->merged.unit_magnitude != TB_SERIES_UNIT_MAG ||
	    c->merged.sub_bucket_half_count_mag != TB_SERIES_HALF_MAG ||
	    c->merged.sub_bucket_mask != TB_SERIES_SUB_MASK || c->merged.highest != TB_HIST_DEFAULT_HIGHEST)
		return fail(why, "the series histogram layout is not the one the drain has built in", -EINVAL);
	c->clock_offset_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	int64_t now = clock_ns(CLOCK_MONOTONIC) + c->clock_offset_ns;
	c->interval_start_ns = now / cfg->interval_ns * cfg->interval_ns;
	tb_collector_set_closing(c, false);
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
	if ((rc = tb_writer_open(&c->writer, &wc, c->interval_start_ns, why)) < 0)
		return rc;
	tb_seg_header *h = (tb_seg_header *)c->seg.base;
	h->collector_pid = getpid();
	h->collector_interval_ns = cfg->interval_ns;
	__atomic_add_fetch(&h->collector_generation, 1, __ATOMIC_ACQ_REL);
	/* follow whatever is already live: a restart loses nothing still in the rings */
	tb_collector_housekeep(c, clock_ns(CLOCK_MONOTONIC));
	c->next_housekeep_ns = clock_ns(CLOCK_MONOTONIC) + TB_COLLECTOR_HOUSEKEEP_NS;
	return 0;
}

static bool half_has_data(tb_collector *c, int half)
{
	tb_collector_fold_events(c);
	tb_collector_take_folds(c, half); /* what was folded may be all it has */
	for (uint32_t m = 0; m < c->seg.layout.metric_capacity; m++) {
		const tb_metric_counts *mc = &c->counts[half][m];
		if (mc->events || mc->unmatched_start || mc->unmatched_end || mc->late)
			return true;
	}
	return false;
}

/* Close every interval whose end (plus grace) has passed. */
static int close_due(tb_collector *c, int64_t now)
{
	int rc = 0;
	if (now < c->interval_start_ns + c->cfg.interval_ns + c->cfg.grace_ns)
		return 0;
	tb_collector_drain_all(c);
	while (rc == 0 && now >= c->interval_start_ns + c->cfg.interval_ns + c->cfg.grace_ns)
		rc = tb_collector_close_interval(c, c->cfg.interval_ns);
	return rc;
}

static int finish(tb_collector *c)
{
	int64_t mono = clock_ns(CLOCK_MONOTONIC);
	tb_collector_housekeep(c, mono); /* pick up rings detached just now */
	tb_collector_drain_all(c);
	tb_collector_expire_all(c); /* this join table ends here: its halves never match */
	c->stopping = true;
	int64_t now = mono + c->clock_offset_ns;
	int rc = 0;
	while (rc == 0 && now >= c->interval_start_ns + c->cfg.interval_ns)
		rc = tb_collector_close_interval(c, c->cfg.interval_ns);
	/* the partial interval, with its true length */
	if (rc == 0 && half_has_data(c, c->cur))
		rc = tb_collector_close_interval(c, now - c->interval_start_ns);
	/* events stamped after now by a producer's clock: one more partial */
	if (rc == 0 && half_has_data(c, c->cur))
		rc = tb_collector_close_interval(c, c->cfg.interval_ns);
	int frc = tb_writer_flush(c->writer);
	return rc ? rc : frc;
}

/* A failed write loses log output, not the bus: report each new error once
 * and keep draining, so producers never see a full ring because of a disk. */
static void report_io_error(tb_collector *c, int rc)
{
	if (rc == 0 || rc == c->last_io_error)
		return;
	const char *why = NULL;
	tb_writer_error(c->writer, &why);
	fprintf(stderr, "tailbusd: log output failing: %s (%s); still collecting\n",
		why ? why : "write error", strerror(-rc));
	c->last_io_error = rc;
}

/* Caught up: spin on our own clock until `until`, touching no line a
 * producer writes (TB_COLLECTOR_DEFAULT_BACKOFF_NS). */
static void back_off(int64_t until, volatile sig_atomic_t *stop)
{
	while (!*stop && clock_ns(CLOCK_MONOTONIC) < until) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
}

int tb_collector_run(tb_collector *c, volatile sig_atomic_t *stop)
{
	struct timespec idle = {(time_t)(c->cfg.idle_ns / NS_PER_SEC),
				(long)(c->cfg.idle_ns % NS_PER_SEC)};
	while (!*stop) {
		/* --idle-us sleeps after a pass that took nothing, so every pass
		 * there reads what there is: one that left a short ring alone
		 * would read as quiet and sleep while that ring fills */
		uint64_t n = c->cfg.idle_ns > 0 ? tb_collector_drain_pass(c) : tb_collector_poll_pass(c);
		bool full = c->last_pass_full; /* this pass's: a close below drains too */
		int64_t mono = clock_ns(CLOCK_MONOTONIC);
		report_io_error(c, close_due(c, mono + c->clock_offset_ns));
		if (mono >= c->next_housekeep_ns) {
			tb_collector_housekeep(c, mono);
			c->next_housekeep_ns = mono + TB_COLLECTOR_HOUSEKEEP_NS;
			report_io_error(c, tb_writer_poll(c->writer));
		}
		if (n == 0 && c->cfg.idle_ns > 0)
			nanosleep(&idle, NULL);
		else if (!full && c->cfg.backoff_ns > 0)
			back_off(mono + c->cfg.backoff_ns, stop);
	}
	return finish(c);
}

void tb_collector_close(tb_collector *c)
{
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
	free(c->counts[0]);
	free(c->counts[1]);
	free(c->metric_ready);
	free(c->fold_value);
	free(c->fold_grew);
	free(c->series);
	if (c->series_pool)
		munmap(c->series_pool, c->series_pool_bytes);
	tb_hist_free(&c->merged);
	free(c->scratch);
	free(c->log.p);
	free(c->side.p);
	if (c->join.entries)
		tb_join_free(&c->join);
	if (c->seg.base) {
		tb_seg_header *h = (tb_seg_header *)c->seg.base;
		h->collector_pid = 0;
	}
	tb_seg_close(&c->seg);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
}
