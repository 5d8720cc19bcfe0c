/* load.h - `tailbus load`, inside: what its files share (the configuration,
 * the request queue, the generator, the engine, one run's results) and the
 * calls between them. Internal to tools/load/.
 *
 *   tailbus load --bus NAME [--dir SEGDIR] --rate R [--poisson] --duration D [--warmup W]
 *                [--service-ns N] [--stall-every T --stall-ns S] [--closed]
 *                [--sweep R1:R2:STEPS] [--metric NAME] [--seed SEED] [--json]
 *                [--cpu C] [--engine-cpu E] [--late-ns L] [--queue Q] [--drain X]
 *                [--record on|off]
 *
 * The idea. A generator means to send request i at a time computed from i
 * alone (start + floor(i * 1e9 / R) by tb_schedule_at, or, with --poisson,
 * the running sum of exponential gaps in integer ns drawn from a sequence
 * seeded by --seed, so the same seed gives the same schedule). It spins on
 * the bus clock until a request is due and sends it; when it is behind it
 * sends at once and keeps the intended time. It never sleeps and never skips.
 * Requests go through a bounded SPSC queue (a Concurrency Kit ring) to the
 * engine, a FIFO server that spends --service-ns on each, starting at
 * max(arrival, previous completion), and that freezes for S ns every T s when
 * asked. Each completion is recorded with tb_span(intended, done): latency is
 * measured from the intended time, so a stalled engine cannot hide behind a
 * generator that waited for it.
 *
 * --closed runs the classic closed loop for contrast: one request outstanding,
 * sent at max(intended, previous done), and each completion recorded twice:
 * from the actual send as "<metric>.closed" (what closed-loop tools report)
 * and from the intended time as "<metric>" (what users experience). The gap
 * between the two is coordinated omission, in one run.
 *
 * --record off: the engine records nothing into the bus (it never calls
 * tb_attach, tb_metric or tb_span, and no handle is opened) while everything
 * else, the schedule, the queue, the in-process histograms and the report,
 * stays the same, so a run with it on and a run with it off differ only by
 * the recording (bench/observer compares them). --bus is optional then.
 *
 * Warm-up: requests intended before start + W are recorded on the bus as
 * "<metric>.warmup" and left out of the report. A sweep runs each rate in
 * turn and names its metrics "<metric>.r<rate>[.closed|.warmup]".
 *
 * The files, each calling only those below it:
 *   load.c        the verb: options, bus, runs, report, exit status
 *   options.c     the command line into a struct config
 *   bus.c         attaching to the bus, and saying what is wrong with it
 *   run.c         one run per rate: set up, run, collect a struct result
 *   loops.c       the timed loops, on one thread or two
 *   generator.c   the schedule and the sends, and why a send was late
 *   engine.c      the FIFO server, its stalls, and what it records
 *   spin.c        gaps in a spin loop: time its thread was not running
 *   report_text.c report_json.c sweep_plot.c   the report, three ways
 *
 * Invariants:
 *   - intended times never depend on when earlier requests were sent;
 *   - every request intended before start + D is sent and every sent request
 *     is served and recorded, or the report counts it as unsent/unserved
 *     (the run's drain limit, --drain): nothing is left out silently;
 *   - the in-process histogram records exactly the values sent to the bus, in
 *     the collector's layout, so the bus log's figures equal the report's;
 *   - the timed loop does not allocate, print or make a system call other
 *     than clock reads (vDSO).
 */
#ifndef TAILBUS_TOOLS_LOAD_H
#define TAILBUS_TOOLS_LOAD_H

#include <ck_ring.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailbus/hist.h"
#include "tailbus/producer.h"
#include "tailbus/summary.h"
#include "tailbus/sweep.h"

#define VERB "load"
#define DEFAULT_METRIC "load"

/* One microsecond: many clock reads (tb_now is a vDSO call) and several turns
 * of the spin loop, so a send on time is never late. */
#define LATE_NS_DEFAULT 1000
/* 2^16 - 1 requests (a ck ring of 2^16 slots holds one less) of 16 bytes:
 * 1 MiB, like a producer ring. Deep enough that open loop is not held back
 * by a few seconds of overload at tens of thousands of requests a second. */
#define QUEUE_DEFAULT 65535
#define QUEUE_MIN 2
#define QUEUE_MAX (1u << 24)
#define SWEEP_STEPS_MAX 64
/* Indexes into tb_summary.pct (tb_summary_levels: 50, 90, 99, 99.9, 99.99). */
#define P50 0
#define P90 1
#define P99 2
#define P999 3
#define P9999 4
/* Room for "<metric>.r<rate>.closed" before it is checked against the limit. */
#define NAME_BUF (TB_METRIC_NAME_MAX + 32)

/* ---- the request and its queue ---- */

typedef struct tb_load_req {
	int64_t intended;
	int64_t sent;
} tb_load_req;
CK_RING_PROTOTYPE(tb_load_req, tb_load_req)

/* ---- configuration ---- */

struct config {
	const char *bus;
	const char *dir; /* --dir: the segment directory, else $TAILBUS_DIR's search */
	const char *metric;
	uint64_t rate;          /* this run's rate (the sweep sets it per run) */
	int64_t sweep_from, sweep_to, sweep_steps;
	bool poisson, closed, json;
	const char *plot_dir; /* --plot: latency against offered rate, for --sweep */
	uint64_t seed;
	int64_t duration_ns, warmup_ns, service_ns, stall_every_ns, stall_ns, late_ns, drain_ns;
	bool warmup_set, drain_set;
	uint32_t queue;
	int cpu, engine_cpu; /* -1: not pinned / no engine thread */
	bool record;         /* false: --record off, nothing goes to the bus */
};

/* ---- the generator ---- */

/* Gaps in the sending thread's spin loop: time it was not running our code.
 * A gap is either the time between two turns, or a short turn (few actions,
 * well under a microsecond of work) that took longer than the threshold. */
struct spin {
	int64_t last_read;        /* the clock read that ended the previous turn */
	int64_t gap_from, gap_to; /* the latest gap */
	int64_t threshold;        /* max(--late-ns, GAP_MIN_NS) */
	uint64_t gaps;
	int64_t stolen_ns, max_gap_ns;
};

struct gen {
	int64_t start, end, measure_from, late_ns;
	uint64_t rate, i;
	bool poisson, closed, finished;
	uint64_t prng;
	int64_t due;
	int64_t held_at; /* the latest turn at which a due request was held back */
	int64_t ended;   /* when the sending loop stopped */
	/* measured sends (intended at or after measure_from) */
	uint64_t sent, sent_measured, late, late_held, late_descheduled, late_busy;
	int64_t last_send, max_lag_ns;
	struct spin spin;
};

/* ---- the engine ---- */

struct engine {
	bool busy;
	tb_load_req cur;
	int64_t target;   /* when the request in service completes, by the model */
	int64_t free_at;  /* the engine takes no request before this */
	int64_t service_ns, stall_every_ns, stall_ns, next_stall, stall_until_end;
	int64_t measure_from;
	uint64_t stalls;
	bool closed;
	/* recording */
	tb_producer *p;
	tb_metric_t m_main, m_closed, m_warmup;
	tb_hist open, closed_h; /* collector layout: the bus log must agree */
	tb_hist service;        /* done - start of service, measured requests */
	int64_t started;        /* when the request in service started, by the model */
	tb_hist *series;        /* per second of completion, from measure_from */
	size_t nseries;
	int64_t series_ns; /* the length of a row */
	uint64_t measured, warmup;
	int64_t last_done;
	struct spin spin; /* the engine's thread: its gaps stall the engine too */
};

/* What the two roles share, each hot field on its own cache line. */
struct run {
	ck_ring_t ring;
	tb_load_req *buf;
	alignas(TB_CACHELINE) uint64_t completed; /* written by the engine (release) */
	alignas(TB_CACHELINE) int gen_done;       /* written by the generator (release) */
	alignas(TB_CACHELINE) int64_t deadline;   /* set before the run, read-only in it */
	struct gen gen;
	alignas(TB_CACHELINE) struct engine eng;
};

/* ---- one run's results ---- */

struct result {
	uint64_t rate;
	char metric[NAME_BUF], metric_closed[NAME_BUF], metric_warmup[NAME_BUF];
	tb_summary open, closed, service;
	double achieved, send_rate;
	uint64_t warmup, late, late_held, late_descheduled, late_busy, unsent, unserved, stalls;
	uint64_t gaps;
	int64_t stolen_ns, max_gap_ns, max_lag_ns, run_ns;
	int64_t engine_max_gap_ns; /* the longest the engine's thread lost its core */
	size_t nseries;
	int64_t series_ns;
	tb_sweep_row *series;
	bool growing;
};

struct bus_state {
	bool off;          /* --record off: the bus is not used at all */
	const char *error; /* NULL when recording into the bus (or off) */
	uint64_t dropped;
	bool no_collector;
};

/* ---- calls between the files ---- */

/* options.c: 0 to run, 1 when --help or --version was answered, or a
 * negative errno after the sentence saying what is wrong. */
int load_parse(int argc, char **argv, struct config *c);

/* bus.c: the handle to record through, with b->error or b->no_collector set
 * (and said) when it cannot deliver; NULL when out of memory. */
tb_producer *load_attach_bus(const struct config *c, struct bus_state *b);

/* run.c: runs rates[0..n) in turn into res[0..n); `p` records in one-thread
 * mode, and an engine thread's drops are added to *dropped. 0 or a negative
 * errno. */
int load_run_all(struct config *c, tb_producer *p, struct result *res, const uint64_t *rates,
		 size_t n, uint64_t *dropped);

/* loops.c */
int load_pin_to(int cpu);
void load_run_one_thread(struct run *r, const struct config *c, const char *const names[3],
			 tb_producer *p);
int load_run_two_threads(struct run *r, const struct config *c, const char *const names[3],
			 tb_producer *p, uint64_t *dropped);

/* generator.c */
void load_gen_init(struct gen *g, const struct config *c, int64_t start);
int load_gen_poll(struct run *r, int64_t now);
uint64_t load_gen_unsent(struct gen *g);

/* engine.c */
int load_engine_init(struct engine *e, const struct config *c);
void load_engine_free(struct engine *e);
void load_engine_start(struct engine *e, const struct config *c, int64_t start);
void load_engine_attach(struct engine *e, tb_producer *p, const char *const names[3]);
int load_engine_poll(struct run *r, int64_t now);
bool load_engine_idle(struct run *r);

/* spin.c */
void load_spin_gap(struct spin *s, int64_t from, int64_t to, int64_t start);
void load_spin_end(struct spin *s, int64_t now, int actions, int64_t start, tb_producer *p);

/* report_text.c, report_json.c, sweep_plot.c: knee and tail as
 * tb_sweep_knee and tb_sweep_tail found them (-1 and TB_TAIL_NORMAL for one
 * rate). */
void load_report_text(const struct config *c, const struct result *res, size_t n, int knee,
		      int tail, const struct bus_state *b);
void load_report_json(const struct result *res, size_t n, const struct config *c, int knee,
		      int tail, const struct bus_state *b);
int load_plot_sweep(const struct config *c, const struct result *res, size_t n, int knee,
		    int rule);

#endif
