/* writer_impl.h - what the pieces of tailbusd's log writer share: the
 * writer's state, its files and buffers, and the calls one piece makes into
 * another. Only collector/writer*.c and logfiles.c include it; the rest of
 * the collector sees writer.h.
 *
 * The pieces, and the one way calls go between them:
 *   writer.c         the API (writer.h): appends, intervals, rotation, open
 *                    and close; it drives the others
 *   writer_uring.c   the io_uring backend      } both record completions
 *   writer_pwrite.c  the pwrite thread backend } through writer_losses.c
 *   writer_losses.c  a file's bytes written whole, what was lost, and the
 *                    preamble (header, notes of lost intervals) each file
 *                    owes before its next bytes
 *   logfiles.c       log file names, creating a pair, rotation's due time,
 *                    retention
 * The helpers below (locking, errors, the buffer pool) are inline so that
 * every piece can use them without calling back into writer.c.
 *
 * Locking (pwrite thread only): `mu` guards the job queue, `busy` and every
 * buffer's `busy` flag, `err`/`err_why` and `stats.short_writes`. A buffer's
 * contents belong to the main thread until it is queued and to the writer
 * thread until it is released; the mutex hands them over.
 */
#ifndef TAILBUS_COLLECTOR_WRITER_IMPL_H
#define TAILBUS_COLLECTOR_WRITER_IMPL_H

#include "writer.h"

#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tb_log_format_header's five lines, each under HdrHistogram_c's 128 bytes. */
#define HEADER_MAX 8192
#define BACKEND_MAX 96
/* Runs of lost intervals a file keeps to note; more are merged into the
 * last. Losses waiting for the collector to report them on stderr; more
 * are counted only. */
#define NOTES_MAX 32
#define NOTE_LINE_MAX 256
#define PREAMBLE_CAP (HEADER_MAX + NOTES_MAX * NOTE_LINE_MAX)
#define LOSSES_MAX 256

enum { FILE_LOG, FILE_SIDECAR, FILE_COUNT };

/* A run of consecutive lost intervals of one file, for one reason. */
struct note {
	int64_t first_ns, last_ns; /* interval starts */
	uint64_t intervals;
	int file; /* FILE_LOG or FILE_SIDECAR: which one lost them */
	int err;
	uint64_t written_at; /* that file's appends_written at the run's last loss */
};

struct wfile {
	int fd;        /* -1 when closed */
	uint64_t size; /* bytes written or queued (for rotation by size) */
	uint64_t good; /* bytes written whole: where the next write goes */
	uint64_t appends_written; /* buffers of appends written whole (not preambles) */
	char path[PATH_MAX];
	/* the preamble: written before the next append's bytes */
	char *header;  /* until it has been written; NULL after */
	size_t header_len;
	struct note notes[NOTES_MAX];
	int nnotes;
	char *pre;     /* the preamble being written (PREAMBLE_CAP) */
	size_t pre_len, pre_done;
	int pre_notes; /* notes it holds */
	unsigned pre_chunk;
	bool in_flight; /* a write of this file (io_uring) */
	bool pre_queued; /* a JOB_PREAMBLE of this file waits (pwrite thread) */
	int *queue;    /* io_uring: buffers waiting, oldest first (nbufs) */
	int qhead, qcount;
};

struct wbuf {
	char *data;
	size_t cap;
	size_t len;      /* bytes to write */
	size_t done;     /* bytes written so far */
	unsigned chunk;  /* bytes asked for by the write in flight (io_uring) */
	int file;        /* FILE_LOG or FILE_SIDECAR */
	int64_t interval_ns; /* the interval the bytes belong to */
	bool busy;
};

enum job_kind { JOB_WRITE, JOB_FSYNC, JOB_PREAMBLE };

struct job {
	enum job_kind kind;
	int buf;  /* JOB_WRITE */
	int fd;   /* JOB_FSYNC */
	int file; /* JOB_PREAMBLE */
};

struct tb_writer {
	tb_writer_config cfg; /* strings point at the copies below */
	char *dir, *bus, *comment, *extra_header;
	int64_t file_start_ns;
	uint64_t header_len; /* of the current .hlog */
	int intervals_since_fsync;
	struct wfile files[FILE_COUNT];
	struct wbuf *bufs;
	int nbufs;
	int busy; /* buffers in flight */
	int err;
	const char *err_why;
	int64_t interval_ns; /* the interval being written (tb_writer_begin_interval) */
	tb_writer_loss losses[LOSSES_MAX]; /* not yet taken by the collector */
	int losses_head, losses_count;
	uint64_t losses_untold; /* lost past LOSSES_MAX: counted only */
	tb_writer_stats stats;
	char backend[BACKEND_MAX];

	bool uring;
	struct io_uring ring;
	int fsyncs_in_flight;

	bool threaded; /* the pwrite thread runs; `mu` is live */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work; /* a job was queued, or stop */
	pthread_cond_t done; /* a job finished */
	struct job *jobs;    /* FIFO ring of jobs_cap */
	int jobs_cap, jobs_head, jobs_count;
	int pending; /* jobs queued or running */
	bool stop;
};

static inline void lock(const tb_writer *w)
{
	if (w->threaded)
		pthread_mutex_lock((pthread_mutex_t *)&w->mu);
}

static inline void unlock(const tb_writer *w)
{
	if (w->threaded)
		pthread_mutex_unlock((pthread_mutex_t *)&w->mu);
}

static inline void note_error_locked(tb_writer *w, int err, const char *why)
{
	if (!w->err && err < 0) {
		w->err = err;
		w->err_why = why;
	}
}

static inline void note_error(tb_writer *w, int err, const char *why)
{
	lock(w);
	note_error_locked(w, err, why);
	unlock(w);
}

static inline void release_buf(tb_writer *w, struct wbuf *b)
{
	lock(w);
	b->busy = false;
	w->busy--;
	if (w->threaded)
		pthread_cond_broadcast(&w->done);
	unlock(w);
}

static inline struct wbuf *take_free_buf(tb_writer *w)
{
	for (int i = 0; i < w->nbufs; i++) {
		if (!w->bufs[i].busy) {
			w->bufs[i].busy = true;
			w->busy++;
			return &w->bufs[i];
		}
	}
	return NULL;
}

static inline double seconds(int64_t ns)
{
	return (double)ns / 1e9;
}

/* writer_losses.c */
bool wr_preamble_due(const struct wfile *f);
void wr_compose_preamble_locked(struct wfile *f, int which);
void wr_cut_back(tb_writer *w, struct wfile *f, size_t written);
void wr_preamble_done_locked(tb_writer *w, struct wfile *f, int rc);
void wr_buffer_done_locked(tb_writer *w, struct wbuf *b, int rc);

/* writer_uring.c */
int wr_uring_start(tb_writer *w);
void wr_uring_prep_fsync(tb_writer *w, int fd, bool drain);
void wr_uring_kick(tb_writer *w, int which, bool alone);
int wr_uring_reap(tb_writer *w, bool wait);
int wr_uring_submit(tb_writer *w);
int wr_uring_progress(tb_writer *w, bool wait);
int wr_uring_acquire(tb_writer *w, struct wbuf **out);
int wr_uring_settle(tb_writer *w);
int wr_uring_flush(tb_writer *w);

/* writer_pwrite.c */
int wr_thread_start(tb_writer *w);
void wr_thread_stop(tb_writer *w);
int wr_thread_acquire(tb_writer *w, struct wbuf **out);
void wr_thread_enqueue(tb_writer *w, struct job j);
void wr_thread_fsync(tb_writer *w);
void wr_thread_kick_preambles(tb_writer *w);
void wr_thread_settle(tb_writer *w);
void wr_thread_flush(tb_writer *w);

/* logfiles.c */
int wr_make_dirs(const char *dir, const char **why);
const char *wr_base_name(const char *path);
int wr_open_pair(const tb_writer *w, int64_t start_ns, struct wfile out[FILE_COUNT],
		 const char **why);
void wr_apply_retention(tb_writer *w);
bool wr_rotation_due(const tb_writer *w, int64_t interval_start_ns);

#endif
