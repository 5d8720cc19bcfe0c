/* writer.h - tailbusd's log files, written off the drain loop.
 *
 * The collector formats each interval's lines itself and hands the bytes to
 * the writer, which copies them into one of a few fixed buffers and queues an
 * append: through io_uring (bounded writes in flight, periodic fsync), or,
 * when io_uring is unavailable or the caller forces it, through a writer
 * thread calling pwrite. Both paths produce byte-identical files.
 *
 * Files: <dir>/<bus>.<UTC start, YYYYmmddTHHMMSSZ>[-N].hlog, each opening
 * with the full interval-log header, and beside it the same name with
 * ".health.csv": the sidecar for everything that must not go into the log
 * (drops, late and negative events, unmatched START/END, clamped values).
 * Rotation by time and size happens only at interval boundaries; retention
 * keeps the newest `keep_files` logs of this bus (and their sidecars).
 */
#ifndef TAILBUS_COLLECTOR_WRITER_H
#define TAILBUS_COLLECTOR_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_WRITER_DEFAULT_QUEUE_DEPTH 8
#define TB_WRITER_DEFAULT_FSYNC_EVERY 10 /* intervals */
#define TB_SIDECAR_SUFFIX ".health.csv"
#define TB_SIDECAR_COLUMNS \
	"interval_start,scope,name,events,dropped,negative,late,clamped,unmatched_start,unmatched_end," \
	"high_water,longest_gap_us,folded,ahead,longest_pass_us,self_pause_us,drain_thread,series_waits\n"

typedef struct tb_writer_config {
	const char *dir;        /* where the logs go (created if missing) */
	const char *bus;        /* names the files */
	const char *comment;    /* the log header's first line, e.g. "Logged with tailbus 0.1 ..." */
	const char *extra_header; /* more "#[...]\n" lines (each < 128 bytes) after it, or NULL */
	bool force_fallback;    /* use the pwrite thread even if io_uring works */
	int queue_depth;        /* buffers (and so writes) in flight at most */
	int fsync_every;        /* intervals between fsyncs; 0 = only at rotation and close */
	int64_t rotate_ns;      /* start a new file after this long; 0 = never */
	uint64_t rotate_bytes;  /* ... or once a file is this large; 0 = never */
	int keep_files;         /* newest log files kept; 0 = keep all */
} tb_writer_config;

typedef struct tb_writer tb_writer;

void tb_writer_config_default(tb_writer_config *c);
/* Opens the first file at `start_ns` (wall clock, ns since the epoch).
 * Returns 0 or a negative errno with *why set to a sentence. */
int tb_writer_open(tb_writer **w, const tb_writer_config *c, int64_t start_ns, const char **why);
/* "io_uring" or "pwrite thread (<why io_uring was not used>)" */
const char *tb_writer_backend(const tb_writer *w);
const char *tb_writer_log_path(const tb_writer *w);

/* Called at the start of each interval's output: rotates if due, and returns
 * the BaseTime (seconds since the epoch) the interval's log lines must be
 * written relative to. */
double tb_writer_begin_interval(tb_writer *w, int64_t interval_start_ns);
/* Queue bytes for the current .hlog / sidecar. Copies them; waits only when
 * every buffer is in flight. Returns 0 or a negative errno. */
int tb_writer_append_log(tb_writer *w, const void *buf, size_t len);
int tb_writer_append_sidecar(tb_writer *w, const void *buf, size_t len);
/* Ends the interval: counts it for the fsync cadence. */
int tb_writer_end_interval(tb_writer *w);
/* Reap finished writes without blocking. Returns 0 or the first write error. */
int tb_writer_poll(tb_writer *w);
/* Wait until every append queued so far has been written whole or lost
 * (cut back and reported): its bytes are in the file, or never will be.
 * No fsync, and fsyncs in flight are not waited for. */
int tb_writer_settle(tb_writer *w);
/* Wait for every queued write and fsync both files. */
int tb_writer_flush(tb_writer *w);
/* Flush, close, free. */
int tb_writer_close(tb_writer *w);

/* The first error seen (a write, an fsync, or a rotation that could not open
 * its new files and so kept writing the old ones), with a sentence; 0 and
 * *why = NULL when none. Errors are sticky: poll, flush and close return the
 * same one. */
int tb_writer_error(const tb_writer *w, const char **why);

/* The path of the newest log file of `bus` in `dir` (by the start in its
 * name, then its suffix) into path: 0, or -ENOENT when there is none, or
 * another negative errno. Before tb_writer_open it names the file the
 * bus's last writer wrote. */
int tb_writer_newest_log(const char *dir, const char *bus, char *path, size_t cap);

/* What the writer did, for the collector's own health output. buffer_waits
 * counts appends that found every buffer in flight, i.e. that made the drain
 * loop wait on the disk (however briefly). */
typedef struct tb_writer_stats {
	uint64_t appends;
	uint64_t bytes;        /* queued, headers included */
	uint64_t buffer_waits; /* appends that found no free buffer */
	uint64_t buffer_grows; /* appends larger than their buffer (realloc) */
	uint64_t short_writes; /* writes continued for their remainder */
	uint64_t fsyncs;       /* per file */
	uint64_t rotations;
	uint64_t files_removed; /* by retention, logs only */
	uint64_t lost_appends;  /* appends dropped whole because their write failed */
	uint64_t lost_intervals; /* (file, interval) pairs of which something was dropped */
} tb_writer_stats;

/* One interval of one file lost to a failed write, for the collector to
 * report (the files note it themselves when writing resumes). */
typedef struct tb_writer_loss {
	int64_t interval_ns; /* its start, wall clock ns */
	int which;           /* 0: the log, 1: the sidecar */
	int err;             /* negative errno */
	char file[4096];     /* the file's path */
} tb_writer_loss;

/* Take the oldest loss not yet taken: 1, or 0 when there is none. *untold
 * (if given) gets how many were lost past what the writer keeps (counted
 * only, taken with it). */
int tb_writer_take_loss(tb_writer *w, tb_writer_loss *out, uint64_t *untold);

void tb_writer_get_stats(const tb_writer *w, tb_writer_stats *s);

#endif
