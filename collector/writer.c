/* writer.c - tailbusd's log files, written off the drain loop.
 *
 * The idea: the collector hands each interval's bytes to an append call that
 * copies them into one of `queue_depth` fixed buffers and returns; the write
 * itself happens in the kernel (io_uring) or on a writer thread (pwrite), so
 * the drain loop waits on the disk only when every buffer is still in flight.
 *
 * Data layout. Two open files at a time, the .hlog and its .health.csv
 * sidecar, each with `good`, the bytes written whole so far: where the next
 * write goes. An append takes a free buffer and copies the bytes in (whole
 * lines: one interval's log lines or sidecar rows); the buffers of one file
 * are written one at a time, in order, each at `good` when its turn comes
 * (io_uring: a queue per file, the next write submitted when the one before
 * completes; the pwrite thread: its FIFO of jobs). So the file on disk is
 * the appends that were written, laid end to end, whichever backend wrote
 * them. A buffer is busy from its append until its last byte is written (a
 * short write is continued for the remainder) or its write fails.
 *
 * The log is always a valid log. A write that fails (a full disk, EFBIG,
 * EIO) may have left part of its bytes: the file is cut back to `good`
 * (ftruncate), and the append is dropped whole, never retried, so that a
 * full disk never makes the drain wait. Each dropped append is a lost
 * interval of that file, reported three ways: to the collector, which says
 * it on stderr (tb_writer_take_loss); and in both files, before the next
 * bytes written to each (the file's preamble: a '#' comment line in the
 * log, a `lost` row in the sidecar, one per run of consecutive lost
 * intervals). A file's header is its preamble until it has been written:
 * a header that could not be written goes before the first line that can
 * be. A preamble that fails is cut back like any write, and the append it
 * preceded is lost with it. With no append to precede, the preamble is
 * tried on its own at each poll and flush, so a note is written as soon as
 * space comes back.
 *
 * Invariants.
 * - At most `queue_depth` writes are in flight, one per busy buffer, plus at
 *   most one fsync per open file per request; the ring has room for all of
 *   them, so io_uring_get_sqe never comes back empty.
 * - A file is closed only after every write to it has completed and it has
 *   been fsynced (tb_writer_flush), so no buffer ever refers to a closed fd.
 * - Errors are sticky: the first one is kept with a sentence and returned by
 *   poll, flush and close; whether anything was lost is the loss count's to
 *   say (tb_writer_stats.lost_appends).
 * - Durability is fdatasync (IORING_OP_FSYNC with IORING_FSYNC_DATASYNC, or
 *   fdatasync on the thread): the files only grow, and fdatasync flushes the
 *   size along with the data. The periodic io_uring fsync is a drain point
 *   (IOSQE_IO_DRAIN), so it covers every write queued before it.
 *
 * Locking (pwrite thread only): `mu` guards the job queue, `busy` and every
 * buffer's `busy` flag, `err`/`err_why` and `stats.short_writes`. A buffer's
 * contents belong to the main thread until it is queued and to the writer
 * thread until it is released; the mutex hands them over.
 */
#include "writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tailbus/log.h"

/* A typical interval's lines; a larger append grows its buffer (realloc). */
#define BUF_INITIAL_CAP (64u * 1024u)
/* io_uring_prep_write takes an unsigned length: longer appends are written
 * in pieces of this size, continued like short writes. */
#define WRITE_CHUNK_MAX (1u << 30)
/* tb_log_format_header's five lines, each under HdrHistogram_c's 128 bytes. */
#define HEADER_MAX 8192
/* room left for extra header lines beside the five standard ones */
#define EXTRA_HEADER_MAX (HEADER_MAX - 1024)
/* "-N" suffixes tried for one start second before giving up. */
#define NAME_SUFFIX_MAX 1000
/* UTC start in file names: YYYYmmddTHHMMSSZ */
#define STAMP_FORMAT "%Y%m%dT%H%M%SZ"
#define STAMP_LEN 16
#define LOG_SUFFIX ".hlog"
#define SIDECAR_TITLE "# tailbus health sidecar for "
#define FILE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC)
#define FILE_MODE 0640
#define DIR_MODE 0750
#define NS_PER_SEC 1000000000LL
/* user_data of an fsync; of a preamble's write, PREAMBLE_TAG + its file;
 * a buffer's write's, the buffer's index. */
#define FSYNC_TAG UINT64_MAX
#define PREAMBLE_TAG (UINT64_MAX - 16)
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
};

struct wfile {
	int fd;        /* -1 when closed */
	uint64_t size; /* bytes written or queued (for rotation by size) */
	uint64_t good; /* bytes written whole: where the next write goes */
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

/* ---- errors and locking ---- */

static void lock(const tb_writer *w)
{
	if (w->threaded)
		pthread_mutex_lock((pthread_mutex_t *)&w->mu);
}

static void unlock(const tb_writer *w)
{
	if (w->threaded)
		pthread_mutex_unlock((pthread_mutex_t *)&w->mu);
}

static void note_error_locked(tb_writer *w, int err, const char *why)
{
	if (!w->err && err < 0) {
		w->err = err;
		w->err_why = why;
	}
}

static void note_error(tb_writer *w, int err, const char *why)
{
	lock(w);
	note_error_locked(w, err, why);
	unlock(w);
}

int tb_writer_error(const tb_writer *w, const char **why)
{
	lock(w);
	int err = w->err;
	if (why)
		*why = w->err_why;
	unlock(w);
	return err;
}

void tb_writer_get_stats(const tb_writer *w, tb_writer_stats *s)
{
	lock(w);
	*s = w->stats;
	unlock(w);
}

static void release_buf(tb_writer *w, struct wbuf *b)
{
	lock(w);
	b->busy = false;
	w->busy--;
	if (w->threaded)
		pthread_cond_broadcast(&w->done);
	unlock(w);
}

static struct wbuf *take_free_buf(tb_writer *w)
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

/* ---- losses and preambles ---- */

_Static_assert(sizeof(((tb_writer_loss *)0)->file) == PATH_MAX, "a loss holds a file's path");

static double seconds(int64_t ns)
{
	return (double)ns / 1e9;
}

static const char *file_word(int which)
{
	return which == FILE_LOG ? "log" : "sidecar";
}

/* Add interval `at` of file `which`, lost for `err`, to a file's notes: to
 * the run of that file and reason it continues, unless the preamble being
 * written holds that run (it may be on disk already). */
static void add_note(struct wfile *f, int which, int64_t at, int err)
{
	for (int k = f->nnotes - 1; k >= f->pre_notes; k--) {
		struct note *n = &f->notes[k];
		if (n->file != which || n->err != err)
			continue;
		if (at != n->last_ns) {
			n->last_ns = at > n->last_ns ? at : n->last_ns;
			n->intervals++;
		}
		return;
	}
	if (f->nnotes < NOTES_MAX) {
		f->notes[f->nnotes++] = (struct note){at, at, 1, which, err};
	} else if (f->nnotes > f->pre_notes) { /* full: the last run widens */
		struct note *n = &f->notes[f->nnotes - 1];
		n->last_ns = at > n->last_ns ? at : n->last_ns;
		n->intervals++;
	}
	/* else every note is in the preamble in flight: this loss is still
	 * counted and reported on stderr */
}

/* Under lock: append `b` of interval `at` of file `which` was dropped. */
static void lose_locked(tb_writer *w, int which, int64_t at, int err)
{
	w->stats.lost_appends++;
	for (int i = 0; i < FILE_COUNT; i++)
		if (w->files[i].fd >= 0)
			add_note(&w->files[i], which, at, err);
	if (w->losses_count) {
		tb_writer_loss *last = &w->losses[(w->losses_head + w->losses_count - 1) % LOSSES_MAX];
		if (last->interval_ns == at && last->which == which)
			return;
	}
	w->stats.lost_intervals++;
	if (w->losses_count == LOSSES_MAX) {
		w->losses_untold++;
		return;
	}
	tb_writer_loss *l = &w->losses[(w->losses_head + w->losses_count++) % LOSSES_MAX];
	l->interval_ns = at;
	l->which = which;
	l->err = err;
	memcpy(l->file, w->files[which].path, sizeof(l->file)); /* both PATH_MAX */
}

int tb_writer_take_loss(tb_writer *w, tb_writer_loss *out, uint64_t *untold)
{
	lock(w);
	int got = 0;
	if (w->losses_count) {
		*out = w->losses[w->losses_head];
		w->losses_head = (w->losses_head + 1) % LOSSES_MAX;
		w->losses_count--;
		got = 1;
	}
	if (untold) {
		*untold = w->losses_untold;
		w->losses_untold = 0;
	}
	unlock(w);
	return got;
}

/* One note as a line of the log ('#' comment) or a sidecar row. */
static size_t format_note(char *out, size_t cap, int into, const struct note *n)
{
	char why[96];
	snprintf(why, sizeof(why), "%s", strerror(-n->err));
	for (char *c = why; *c; c++)
		if (*c == ',' || *c == '\n' || *c == '\r')
			*c = ';';
	int len;
	if (into == FILE_LOG)
		len = snprintf(out, cap,
			       "# tailbus: %llu interval%s lost from the %s, %.3f to %.3f: %s\n",
			       (unsigned long long)n->intervals, n->intervals == 1 ? "" : "s",
			       file_word(n->file), seconds(n->first_ns), seconds(n->last_ns), why);
	else
		len = snprintf(out, cap, "%.3f,lost,%s:%.3f:%s,%llu,,,,,,,,,,,,\n", seconds(n->first_ns),
			       file_word(n->file), seconds(n->last_ns), why,
			       (unsigned long long)n->intervals);
	return len > 0 && (size_t)len < cap ? (size_t)len : 0;
}

static bool preamble_due(const struct wfile *f)
{
	return f->header || f->nnotes;
}

/* Under lock: the file's preamble, what is due of it, into f->pre. */
static void compose_preamble_locked(struct wfile *f, int which)
{
	size_t n = 0;
	if (f->header) {
		memcpy(f->pre, f->header, f->header_len);
		n = f->header_len;
	}
	for (int k = 0; k < f->nnotes; k++)
		n += format_note(f->pre + n, PREAMBLE_CAP - n, which, &f->notes[k]);
	f->pre_len = n;
	f->pre_done = 0;
	f->pre_notes = f->nnotes;
}

/* Cut what a failed write left of its bytes: the file ends at its last
 * whole write again. */
static void cut_back(tb_writer *w, struct wfile *f, size_t written)
{
	if (written && ftruncate(f->fd, (off_t)f->good) < 0)
		note_error(w, -errno, "a failed write left part of a line that could not be cut off");
}

/* Under lock: the preamble was written whole (rc 0) or failed. */
static void preamble_done_locked(tb_writer *w, struct wfile *f, int rc)
{
	if (rc == 0) {
		f->good += f->pre_len;
		f->size += f->pre_len - (f->header ? f->header_len : 0);
		free(f->header);
		f->header = NULL;
		memmove(f->notes, f->notes + f->pre_notes, (size_t)(f->nnotes - f->pre_notes) * sizeof(*f->notes));
		f->nnotes -= f->pre_notes;
	} else {
		note_error_locked(w, rc, "a write to the log files failed");
	}
	f->pre_len = f->pre_done = 0;
	f->pre_notes = 0;
}

/* Under lock: buffer b was written whole (rc 0), or failed and is lost. */
static void buffer_done_locked(tb_writer *w, struct wbuf *b, int rc)
{
	struct wfile *f = &w->files[b->file];
	if (rc == 0) {
		f->good += b->len;
	} else {
		note_error_locked(w, rc, "a write to the log files failed");
		f->size -= b->len;
		lose_locked(w, b->file, b->interval_ns, rc);
	}
}

/* ---- io_uring backend ---- */

static int uring_start(tb_writer *w)
{
	/* one write per buffer and one fsync per file can be in flight */
	int rc = io_uring_queue_init((unsigned)w->nbufs + FILE_COUNT, &w->ring, 0);
	if (rc < 0)
		return rc;
	/* IORING_OP_WRITE came in 5.6, with the probe; older rings can't write. */
	struct io_uring_probe *p = io_uring_get_probe_ring(&w->ring);
	bool ok = p && io_uring_opcode_supported(p, IORING_OP_WRITE) &&
		  io_uring_opcode_supported(p, IORING_OP_FSYNC);
	if (p)
		io_uring_free_probe(p);
	if (!ok) {
		io_uring_queue_exit(&w->ring);
		return -EOPNOTSUPP;
	}
	w->uring = true;
	return 0;
}

/* The ring holds every write and fsync that can be in flight, so there is
 * always an entry, unless a submission failed and left its entries queued. */
static struct io_uring_sqe *uring_sqe(tb_writer *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
	if (!sqe)
		note_error(w, -EBUSY, "io_uring refused to submit or complete the log writes");
	return sqe;
}

static void uring_prep_fsync(tb_writer *w, int fd, bool drain)
{
	struct io_uring_sqe *sqe = uring_sqe(w);
	if (!sqe)
		return;
	io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
	if (drain) /* start after every write queued so far, so it covers them */
		sqe->flags |= IOSQE_IO_DRAIN;
	io_uring_sqe_set_data64(sqe, FSYNC_TAG);
	w->fsyncs_in_flight++;
	w->stats.fsyncs++;
}

/* A file's queue holds at most every buffer: nbufs. */
static void queue_pop(const tb_writer *w, struct wfile *f)
{
	f->qhead = (f->qhead + 1) % w->nbufs;
	f->qcount--;
}

static void uring_kick(tb_writer *w, int which, bool alone);

/* The head buffer of file `which` is done: written (rc 0) or lost. */
static void uring_buffer_end(tb_writer *w, int which, int rc)
{
	struct wfile *f = &w->files[which];
	struct wbuf *b = &w->bufs[f->queue[f->qhead]];
	buffer_done_locked(w, b, rc);
	queue_pop(w, f);
	f->in_flight = false;
	release_buf(w, b);
	uring_kick(w, which, false);
}

/* Write the rest of file `which`'s preamble, or of its head buffer, at the
 * file's end. */
static void uring_write_next(tb_writer *w, int which, bool preamble)
{
	struct wfile *f = &w->files[which];
	struct io_uring_sqe *sqe = uring_sqe(w);
	if (!sqe) { /* cannot happen: the ring has room for every write */
		f->in_flight = false;
		if (preamble)
			preamble_done_locked(w, f, -EBUSY);
		else
			uring_buffer_end(w, which, -EBUSY);
		return;
	}
	f->in_flight = true;
	if (preamble) {
		f->pre_chunk = (unsigned)(f->pre_len - f->pre_done);
		io_uring_prep_write(sqe, f->fd, f->pre + f->pre_done, f->pre_chunk, f->good + f->pre_done);
		io_uring_sqe_set_data64(sqe, PREAMBLE_TAG + (uint64_t)which);
		return;
	}
	struct wbuf *b = &w->bufs[f->queue[f->qhead]];
	size_t left = b->len - b->done;
	b->chunk = left > WRITE_CHUNK_MAX ? WRITE_CHUNK_MAX : (unsigned)left;
	io_uring_prep_write(sqe, f->fd, b->data + b->done, b->chunk, f->good + b->done);
	io_uring_sqe_set_data64(sqe, (uint64_t)(b - w->bufs));
}

/* Start file `which`'s next write if none is in flight: its preamble when
 * one is due and an append waits (or `alone`), else its head buffer. */
static void uring_kick(tb_writer *w, int which, bool alone)
{
	struct wfile *f = &w->files[which];
	if (f->fd < 0 || f->in_flight)
		return;
	if (preamble_due(f) && (f->qcount || alone)) {
		compose_preamble_locked(f, which);
		uring_write_next(w, which, true);
	} else if (f->qcount) {
		uring_write_next(w, which, false);
	}
}

static void uring_preamble_complete(tb_writer *w, int which, int res)
{
	struct wfile *f = &w->files[which];
	if (res == -EINTR || res == -EAGAIN) {
		uring_write_next(w, which, true);
		return;
	}
	if (res > 0) {
		f->pre_done += (size_t)res;
		if (f->pre_done < f->pre_len) {
			w->stats.short_writes++;
			uring_write_next(w, which, true);
			return;
		}
		preamble_done_locked(w, f, 0);
		f->in_flight = false;
		uring_kick(w, which, false);
		return;
	}
	/* failed: cut back; the append it preceded goes with it */
	cut_back(w, f, f->pre_done);
	preamble_done_locked(w, f, res < 0 ? res : -EIO);
	f->in_flight = false;
	if (f->qcount) {
		f->in_flight = true;
		uring_buffer_end(w, which, res < 0 ? res : -EIO);
	}
}

static void uring_complete(tb_writer *w, uint64_t data, int res)
{
	if (data == FSYNC_TAG) {
		w->fsyncs_in_flight--;
		if (res < 0)
			note_error(w, res, "an fsync of the log files failed");
		return;
	}
	if (data >= PREAMBLE_TAG) {
		uring_preamble_complete(w, (int)(data - PREAMBLE_TAG), res);
		return;
	}
	struct wbuf *b = &w->bufs[data];
	struct wfile *f = &w->files[b->file];
	if (res == -EINTR || res == -EAGAIN) {
		uring_write_next(w, b->file, false);
		return;
	}
	if (res <= 0) {
		/* 0 for a non-empty write to a regular file: nothing will come of retrying */
		cut_back(w, f, b->done);
		uring_buffer_end(w, b->file, res < 0 ? res : -EIO);
		return;
	}
	b->done += (size_t)res;
	if (b->done < b->len) {
		if ((unsigned)res < b->chunk)
			w->stats.short_writes++;
		uring_write_next(w, b->file, false);
		return;
	}
	uring_buffer_end(w, b->file, 0);
}

/* Handle every completion there is; with `wait`, first wait for one. */
static int uring_reap(tb_writer *w, bool wait)
{
	struct io_uring_cqe *cqe;
	if (wait) {
		int rc;
		do
			rc = io_uring_wait_cqe(&w->ring, &cqe);
		while (rc == -EINTR);
		if (rc < 0)
			return rc;
	}
	unsigned head, seen = 0;
	io_uring_for_each_cqe(&w->ring, head, cqe)
	{
		uring_complete(w, cqe->user_data, cqe->res);
		seen++;
	}
	io_uring_cq_advance(&w->ring, seen);
	return 0;
}

static int uring_submit(tb_writer *w)
{
	for (;;) {
		int rc = io_uring_submit(&w->ring);
		if (rc >= 0)
			return 0;
		if (rc == -EINTR)
			continue;
		if (rc != -EAGAIN && rc != -EBUSY)
			return rc; /* the entries stay queued in the ring */
		/* the kernel is short of room for completions: make some */
		rc = uring_reap(w, true);
		if (rc < 0)
			return rc;
	}
}

/* Submit what is queued, handle completions (waiting for one if asked),
 * and submit the continuations they made. */
static int uring_progress(tb_writer *w, bool wait)
{
	int rc = uring_submit(w);
	if (rc == 0)
		rc = uring_reap(w, wait);
	if (rc == 0)
		rc = uring_submit(w);
	if (rc < 0)
		note_error(w, rc, "io_uring refused to submit or complete the log writes");
	return rc;
}

static int uring_acquire(tb_writer *w, struct wbuf **out)
{
	if (w->busy == w->nbufs) {
		w->stats.buffer_waits++;
		int rc = uring_progress(w, false);
		while (rc == 0 && w->busy == w->nbufs)
			rc = uring_progress(w, true);
		if (rc < 0)
			return rc;
	}
	*out = take_free_buf(w);
	return 0;
}

static bool uring_writing(const tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++)
		if (w->files[i].in_flight)
			return true;
	return false;
}

static int uring_drain(tb_writer *w)
{
	while (w->busy > 0 || w->fsyncs_in_flight > 0 || uring_writing(w)) {
		int rc = uring_progress(w, true);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int uring_flush(tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++) /* a preamble still due: one more try */
		uring_kick(w, i, true);
	int rc = uring_drain(w);
	if (rc < 0)
		return rc;
	for (int i = 0; i < FILE_COUNT; i++)
		if (w->files[i].fd >= 0)
			uring_prep_fsync(w, w->files[i].fd, false);
	return uring_drain(w);
}

/* ---- pwrite thread backend ---- */

static int pwrite_all(int fd, const char *p, size_t len, uint64_t off, size_t *done,
		      uint64_t *shorts)
{
	while (*done < len) {
		ssize_t n = pwrite(fd, p + *done, len - *done, (off_t)(off + *done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		*done += (size_t)n;
		if (*done < len)
			(*shorts)++;
	}
	return 0;
}

/* The writer thread: file `which`'s preamble, if one is due. Only this
 * thread writes the files' offsets and preambles; the lock is for the
 * notes, which the thread adds to and the main thread reads. */
static int thread_preamble(tb_writer *w, int which, uint64_t *shorts)
{
	struct wfile *f = &w->files[which];
	pthread_mutex_lock(&w->mu);
	f->pre_queued = false;
	bool due = preamble_due(f);
	if (due)
		compose_preamble_locked(f, which);
	pthread_mutex_unlock(&w->mu);
	if (!due)
		return 0;
	int rc = pwrite_all(f->fd, f->pre, f->pre_len, f->good, &f->pre_done, shorts);
	if (rc < 0)
		cut_back(w, f, f->pre_done);
	pthread_mutex_lock(&w->mu);
	preamble_done_locked(w, f, rc);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* The writer thread: buffer b at its file's end, after the preamble. */
static void thread_write(tb_writer *w, struct wbuf *b, uint64_t *shorts)
{
	struct wfile *f = &w->files[b->file];
	int rc = thread_preamble(w, b->file, shorts);
	if (rc == 0) {
		rc = pwrite_all(f->fd, b->data, b->len, f->good, &b->done, shorts);
		if (rc < 0)
			cut_back(w, f, b->done);
	}
	pthread_mutex_lock(&w->mu);
	buffer_done_locked(w, b, rc);
	pthread_mutex_unlock(&w->mu);
}

static void *writer_thread(void *arg)
{
	tb_writer *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->jobs_count == 0 && !w->stop)
			pthread_cond_wait(&w->work, &w->mu);
		if (w->jobs_count == 0)
			break; /* stop, with nothing left to do */
		struct job j = w->jobs[w->jobs_head];
		w->jobs_head = (w->jobs_head + 1) % w->jobs_cap;
		w->jobs_count--;
		pthread_mutex_unlock(&w->mu);

		uint64_t shorts = 0;
		int rc = 0;
		if (j.kind == JOB_WRITE)
			thread_write(w, &w->bufs[j.buf], &shorts);
		else if (j.kind == JOB_PREAMBLE)
			thread_preamble(w, j.file, &shorts);
		else
			rc = fdatasync(j.fd) < 0 ? -errno : 0;

		pthread_mutex_lock(&w->mu);
		if (j.kind == JOB_WRITE) {
			w->bufs[j.buf].busy = false;
			w->busy--;
		}
		w->stats.short_writes += shorts;
		note_error_locked(w, rc, "an fsync of the log files failed");
		w->pending--;
		pthread_cond_broadcast(&w->done);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int thread_start(tb_writer *w)
{
	/* every buffer's write, and an fsync per file twice over, fit at once */
	w->jobs_cap = w->nbufs + 2 * FILE_COUNT;
	w->jobs = calloc((size_t)w->jobs_cap, sizeof(*w->jobs));
	if (!w->jobs)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->done, NULL);
	/* The collector may already run SCHED_FIFO: a writer thread inheriting
	 * that would compete with the drain loop as an equal. It runs as an
	 * ordinary thread instead (its CPU affinity is still inherited). */
	pthread_attr_t attr;
	struct sched_param prio = {.sched_priority = 0};
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &prio);
	/* signals are the collector's business: the thread takes none */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&w->thread, &attr, writer_thread, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_cond_destroy(&w->done);
		pthread_cond_destroy(&w->work);
		pthread_mutex_destroy(&w->mu);
		return -rc;
	}
	w->threaded = true;
	return 0;
}

static void thread_stop(tb_writer *w)
{
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	w->threaded = false;
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->work);
	pthread_mutex_destroy(&w->mu);
}

static int thread_acquire(tb_writer *w, struct wbuf **out)
{
	pthread_mutex_lock(&w->mu);
	if (w->busy == w->nbufs) {
		w->stats.buffer_waits++;
		while (w->busy == w->nbufs)
			pthread_cond_wait(&w->done, &w->mu);
	}
	*out = take_free_buf(w);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static void thread_enqueue(tb_writer *w, struct job j)
{
	pthread_mutex_lock(&w->mu);
	while (w->jobs_count == w->jobs_cap)
		pthread_cond_wait(&w->done, &w->mu);
	w->jobs[(w->jobs_head + w->jobs_count) % w->jobs_cap] = j;
	w->jobs_count++;
	w->pending++;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->mu);
}

static void thread_fsync(tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++) {
		if (w->files[i].fd >= 0) {
			thread_enqueue(w, (struct job){.kind = JOB_FSYNC, .fd = w->files[i].fd});
			w->stats.fsyncs++;
		}
	}
}

/* A preamble due with no append to precede it: tried on its own, unless
 * the thread is busy (an append will take it along). */
static void thread_kick_preambles(tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++) {
		struct wfile *f = &w->files[i];
		pthread_mutex_lock(&w->mu);
		bool due = f->fd >= 0 && preamble_due(f) && !f->pre_queued;
		f->pre_queued |= due;
		pthread_mutex_unlock(&w->mu);
		if (due)
			thread_enqueue(w, (struct job){.kind = JOB_PREAMBLE, .file = i});
	}
}

static void thread_flush(tb_writer *w)
{
	thread_kick_preambles(w);
	thread_fsync(w); /* the queue is FIFO: it runs after every write */
	pthread_mutex_lock(&w->mu);
	while (w->pending > 0)
		pthread_cond_wait(&w->done, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

/* ---- appends ---- */

static int append(tb_writer *w, int which, const void *p, size_t len)
{
	if (!w || (!p && len))
		return -EINVAL;
	if (len == 0)
		return 0;
	struct wfile *f = &w->files[which];
	if (f->fd < 0)
		return -EBADF;
	struct wbuf *b;
	int rc = w->uring ? uring_acquire(w, &b) : thread_acquire(w, &b);
	if (rc < 0)
		return rc;
	if (b->cap < len) {
		char *grown = realloc(b->data, len);
		if (!grown) {
			release_buf(w, b);
			return -ENOMEM;
		}
		b->data = grown;
		b->cap = len;
		w->stats.buffer_grows++;
	}
	memcpy(b->data, p, len);
	b->len = len;
	b->done = 0;
	b->file = which;
	b->interval_ns = w->interval_ns;
	lock(w);
	f->size += len;
	w->stats.appends++;
	w->stats.bytes += len;
	unlock(w);
	if (!w->uring) {
		thread_enqueue(w, (struct job){.kind = JOB_WRITE, .buf = (int)(b - w->bufs)});
		return 0;
	}
	f->queue[(f->qhead + f->qcount++) % w->nbufs] = (int)(b - w->bufs);
	uring_reap(w, false); /* writes that finished make room for the next: no system call */
	uring_kick(w, which, false);
	rc = uring_submit(w);
	if (rc < 0)
		note_error(w, rc, "io_uring refused to submit or complete the log writes");
	return rc;
}

int tb_writer_append_log(tb_writer *w, const void *buf, size_t len)
{
	return append(w, FILE_LOG, buf, len);
}

int tb_writer_append_sidecar(tb_writer *w, const void *buf, size_t len)
{
	return append(w, FILE_SIDECAR, buf, len);
}

/* ---- files ---- */

/* mkdir -p, then make sure what is there is a directory. */
static int make_dirs(const char *dir, const char **why)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		*why = "the log directory's path is too long";
		return -ENAMETOOLONG;
	}
	for (char *p = path + 1;; p++) {
		bool end = *p == '\0';
		if (*p != '/' && !end)
			continue;
		*p = '\0';
		struct stat st;
		/* an existing directory may still refuse mkdir (EACCES, EROFS) */
		if (mkdir(path, DIR_MODE) < 0 && errno != EEXIST &&
		    (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))) {
			*why = "cannot create the log directory";
			return -errno;
		}
		if (end)
			break;
		*p = '/';
	}
	struct stat st;
	if (stat(dir, &st) < 0) {
		*why = "cannot create the log directory";
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		*why = "the log directory's path names something that is not a directory";
		return -ENOTDIR;
	}
	return 0;
}

static void format_stamp(int64_t start_ns, char stamp[STAMP_LEN + 1])
{
	int64_t sec = start_ns / NS_PER_SEC;
	if (start_ns % NS_PER_SEC < 0)
		sec--; /* floor, for starts before the epoch */
	time_t t = (time_t)sec;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(stamp, STAMP_LEN + 1, STAMP_FORMAT, &tm);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Create <dir>/<bus>.<stamp>[-N].hlog and its sidecar, both new: the first
 * N (none, 1, 2, ...) for which neither name exists. */
static int open_pair(const tb_writer *w, int64_t start_ns, struct wfile out[FILE_COUNT],
		     const char **why)
{
	char stamp[STAMP_LEN + 1];
	format_stamp(start_ns, stamp);
	for (int n = 0; n < NAME_SUFFIX_MAX; n++) {
		char suffix[16] = "";
		if (n)
			snprintf(suffix, sizeof(suffix), "-%d", n);
		int a = snprintf(out[FILE_LOG].path, PATH_MAX, "%s/%s.%s%s" LOG_SUFFIX, w->dir,
				 w->bus, stamp, suffix);
		int b = snprintf(out[FILE_SIDECAR].path, PATH_MAX, "%s/%s.%s%s" TB_SIDECAR_SUFFIX,
				 w->dir, w->bus, stamp, suffix);
		if (a >= PATH_MAX || b >= PATH_MAX) {
			*why = "the log file's path is too long";
			return -ENAMETOOLONG;
		}
		int log_fd = open(out[FILE_LOG].path, FILE_FLAGS, FILE_MODE);
		if (log_fd < 0) {
			if (errno == EEXIST)
				continue;
			*why = "cannot create the log file";
			return -errno;
		}
		int side_fd = open(out[FILE_SIDECAR].path, FILE_FLAGS, FILE_MODE);
		if (side_fd < 0) {
			int e = errno;
			close(log_fd);
			unlink(out[FILE_LOG].path);
			if (e == EEXIST)
				continue;
			*why = "cannot create the health sidecar";
			return -e;
		}
		out[FILE_LOG].fd = log_fd;
		out[FILE_SIDECAR].fd = side_fd;
		out[FILE_LOG].size = out[FILE_SIDECAR].size = 0;
		return 0;
	}
	*why = "every log file name for this start second is taken";
	return -EEXIST;
}

/* Put the configured extra '#[...]' lines after the header's first line
 * (the comment), so every reader still finds StartTime, BaseTime and the
 * legend where it expects them. */
static int insert_extra_header(const tb_writer *w, char *header, size_t n)
{
	size_t extra = w->extra_header ? strlen(w->extra_header) : 0;
	if (!extra || n + extra >= HEADER_MAX)
		return (int)n; /* sizes checked at open */
	char *nl = memchr(header, '\n', n);
	size_t at = w->comment && nl ? (size_t)(nl - header) + 1 : 0;
	memmove(header + at + extra, header + at, n - at);
	memcpy(header + at, w->extra_header, extra);
	return (int)(n + extra);
}

/* Make `files` current and queue their headers. */
static int install_pair(tb_writer *w, const struct wfile files[FILE_COUNT], int64_t start_ns)
{
	char header[HEADER_MAX];
	char title[sizeof(SIDECAR_TITLE) + NAME_MAX + sizeof(TB_SIDECAR_COLUMNS) + 2];
	w->file_start_ns = start_ns;
	w->intervals_since_fsync = 0;
	int n = tb_log_format_header(header, sizeof(header), w->comment, seconds(start_ns),
				     seconds(start_ns));
	if (n < 0)
		return n; /* checked at open: cannot happen */
	n = insert_extra_header(w, header, (size_t)n);
	w->header_len = (uint64_t)n;
	int t = snprintf(title, sizeof(title), SIDECAR_TITLE "%s\n" TB_SIDECAR_COLUMNS,
			 base_name(files[FILE_LOG].path));
	if (t < 0 || (size_t)t >= sizeof(title))
		return -ENAMETOOLONG; /* a name open() accepted is at most NAME_MAX */
	/* each file's header is its first preamble: written now if it can
	 * be, else before its first line that can (notes not yet written to
	 * the old files go on to the new ones) */
	const char *heads[FILE_COUNT] = {header, title};
	size_t lens[FILE_COUNT] = {(size_t)n, (size_t)t};
	for (int i = 0; i < FILE_COUNT; i++) {
		struct wfile *f = &w->files[i];
		char *copy = malloc(lens[i]);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, heads[i], lens[i]);
		lock(w);
		free(f->header);
		f->header = copy;
		f->header_len = lens[i];
		f->fd = files[i].fd;
		memcpy(f->path, files[i].path, sizeof(f->path));
		f->good = 0;
		f->size = lens[i];
		f->qhead = f->qcount = 0;
		f->in_flight = false;
		w->stats.appends++;
		w->stats.bytes += lens[i];
		unlock(w);
	}
	if (w->uring) {
		for (int i = 0; i < FILE_COUNT; i++)
			uring_kick(w, i, true);
		int rc = uring_submit(w);
		if (rc < 0)
			note_error(w, rc, "io_uring refused to submit or complete the log writes");
		return 0;
	}
	thread_kick_preambles(w);
	return 0;
}

static int close_files(tb_writer *w)
{
	int rc = 0;
	for (int i = 0; i < FILE_COUNT; i++) {
		struct wfile *f = &w->files[i];
		/* not even its header could be written: an empty file is no log */
		if (f->fd >= 0 && f->header && f->good == 0)
			unlink(f->path);
		if (f->fd >= 0 && close(f->fd) < 0 && !rc)
			rc = -errno;
		f->fd = -1;
	}
	if (rc)
		note_error(w, rc, "closing a log file failed");
	return rc;
}

/* ---- retention ---- */

struct log_name {
	char name[NAME_MAX + 1];
	char stamp[STAMP_LEN + 1];
	unsigned long suffix; /* 0: none */
};

/* <bus>.<YYYYmmddTHHMMSSZ>[-N].hlog, nothing else. */
static bool parse_log_name(const char *name, const char *bus, struct log_name *out)
{
	static const char shape[STAMP_LEN + 1] = "ddddddddTddddddZ"; /* d: a digit */
	size_t bl = strlen(bus);
	if (strncmp(name, bus, bl) != 0 || name[bl] != '.')
		return false;
	const char *s = name + bl + 1;
	for (int i = 0; i < STAMP_LEN; i++) {
		char want = shape[i];
		if (want == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != want)
			return false;
	}
	const char *p = s + STAMP_LEN;
	unsigned long n = 0;
	if (*p == '-') {
		p++;
		if (*p < '1' || *p > '9')
			return false;
		for (; *p >= '0' && *p <= '9'; p++)
			n = n * 10 + (unsigned long)(*p - '0');
	}
	if (strcmp(p, LOG_SUFFIX) != 0 || strlen(name) > NAME_MAX)
		return false;
	snprintf(out->name, sizeof(out->name), "%s", name);
	memcpy(out->stamp, s, STAMP_LEN);
	out->stamp[STAMP_LEN] = '\0';
	out->suffix = n;
	return true;
}

/* Oldest first: by start second, then by suffix (-2 before -10). */
static int older_first(const void *a, const void *b)
{
	const struct log_name *x = a, *y = b;
	int c = strcmp(x->stamp, y->stamp);
	if (c)
		return c;
	return (x->suffix > y->suffix) - (x->suffix < y->suffix);
}

static int remove_log(int dfd, const char *name)
{
	char side[NAME_MAX + sizeof(TB_SIDECAR_SUFFIX)];
	size_t stem = strlen(name) - strlen(LOG_SUFFIX);
	snprintf(side, sizeof(side), "%.*s" TB_SIDECAR_SUFFIX, (int)stem, name);
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	if (unlinkat(dfd, side, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int list_logs(DIR *d, const char *bus, struct log_name **out, size_t *count)
{
	size_t cap = 0, n = 0;
	struct log_name *v = NULL, one;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d))) {
		if (!parse_log_name(e->d_name, bus, &one))
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct log_name *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = one;
	}
	*out = v;
	*count = n;
	return 0;
}

/* Keep the newest keep_files logs of this bus, the current one always. */
static void apply_retention(tb_writer *w)
{
	if (w->cfg.keep_files <= 0)
		return;
	DIR *d = opendir(w->dir);
	if (!d) {
		note_error(w, -errno, "cannot list the log directory to remove old logs");
		return;
	}
	struct log_name *v;
	size_t n;
	int rc = list_logs(d, w->bus, &v, &n);
	if (rc < 0) {
		note_error(w, rc, "cannot list the log directory to remove old logs");
		closedir(d);
		return;
	}
	qsort(v, n, sizeof(*v), older_first);
	const char *current = base_name(w->files[FILE_LOG].path);
	size_t keep = (size_t)w->cfg.keep_files;
	size_t excess = n > keep ? n - keep : 0;
	for (size_t i = 0; i < n && excess > 0; i++) {
		if (strcmp(v[i].name, current) == 0)
			continue;
		rc = remove_log(dirfd(d), v[i].name);
		if (rc < 0)
			note_error(w, rc, "cannot remove an old log file");
		else
			w->stats.files_removed++;
		excess--;
	}
	free(v);
	closedir(d);
}

/* ---- rotation and intervals ---- */

static bool rotation_due(const tb_writer *w, int64_t interval_start_ns)
{
	const struct wfile *log = &w->files[FILE_LOG];
	if (w->cfg.rotate_ns > 0 && interval_start_ns - w->file_start_ns >= w->cfg.rotate_ns)
		return true;
	/* a file holding nothing but its header is not rotated for size */
	return w->cfg.rotate_bytes > 0 && log->size >= w->cfg.rotate_bytes &&
	       log->size > w->header_len;
}

static void rotate(tb_writer *w, int64_t start_ns)
{
	struct wfile next[FILE_COUNT];
	const char *why;
	/* open the new pair first: if that fails, keep writing the old one */
	int rc = make_dirs(w->dir, &why);
	if (rc == 0)
		rc = open_pair(w, start_ns, next, &why);
	if (rc < 0) {
		note_error(w, rc,
			   "rotation could not create the next log files; writing on to the current ones");
		return;
	}
	tb_writer_flush(w);
	close_files(w);
	w->stats.rotations++;
	rc = install_pair(w, next, start_ns);
	if (rc < 0)
		note_error(w, rc, "cannot queue the new log file's header");
	apply_retention(w);
}

double tb_writer_begin_interval(tb_writer *w, int64_t interval_start_ns)
{
	w->interval_ns = interval_start_ns;
	if (rotation_due(w, interval_start_ns))
		rotate(w, interval_start_ns);
	return seconds(w->file_start_ns);
}

int tb_writer_end_interval(tb_writer *w)
{
	if (w->cfg.fsync_every <= 0 || ++w->intervals_since_fsync < w->cfg.fsync_every)
		return 0;
	w->intervals_since_fsync = 0;
	if (!w->uring) {
		thread_fsync(w);
		return 0;
	}
	for (int i = 0; i < FILE_COUNT; i++)
		if (w->files[i].fd >= 0)
			uring_prep_fsync(w, w->files[i].fd, true);
	int rc = uring_submit(w);
	if (rc < 0)
		note_error(w, rc, "io_uring refused to submit or complete the log writes");
	return rc;
}

int tb_writer_poll(tb_writer *w)
{
	/* a preamble due (space may have come back): tried on its own */
	if (w->uring) {
		uring_progress(w, false);
		for (int i = 0; i < FILE_COUNT; i++)
			uring_kick(w, i, true);
		uring_progress(w, false);
	} else {
		thread_kick_preambles(w);
	}
	return tb_writer_error(w, NULL);
}

int tb_writer_flush(tb_writer *w)
{
	if (w->uring)
		uring_flush(w);
	else
		thread_flush(w);
	w->intervals_since_fsync = 0;
	return tb_writer_error(w, NULL);
}

/* ---- open and close ---- */

void tb_writer_config_default(tb_writer_config *c)
{
	memset(c, 0, sizeof(*c));
	c->queue_depth = TB_WRITER_DEFAULT_QUEUE_DEPTH;
	c->fsync_every = TB_WRITER_DEFAULT_FSYNC_EVERY;
}

/* Extra header lines: whole "#[...]" lines, each under HdrHistogram_c's
 * 128-byte limit, and not too many. */
static int check_extra_header(const char *extra, const char **why)
{
	if (!extra)
		return 0;
	size_t n = strlen(extra);
	bool ok = n < EXTRA_HEADER_MAX && (n == 0 || extra[n - 1] == '\n');
	for (const char *line = extra; ok && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = (size_t)(nl - line);
		ok = len >= 3 && len < 128 && line[0] == '#' && line[1] == '[' && line[len - 1] == ']';
		line = nl + 1;
	}
	if (!ok)
		*why = "extra header lines must be whole '#[...]' lines of under 128 bytes";
	return ok ? 0 : -EINVAL;
}

static int check_config(const tb_writer_config *c, const char **why)
{
	char header[HEADER_MAX];
	if (!c->dir || !*c->dir) {
		*why = "no log directory was given";
		return -EINVAL;
	}
	if (!c->bus || !*c->bus || strchr(c->bus, '/')) {
		*why = "the bus name is empty or contains '/'";
		return -EINVAL;
	}
	if (c->queue_depth < 1 || c->fsync_every < 0 || c->rotate_ns < 0 || c->keep_files < 0) {
		*why = "queue_depth must be at least 1, and fsync_every, rotate_ns and keep_files not negative";
		return -EINVAL;
	}
	if (tb_log_format_header(header, sizeof(header), c->comment, 0, 0) < 0) {
		*why = "the header comment contains ']' or a newline, or is too long";
		return -EINVAL;
	}
	return check_extra_header(c->extra_header, why);
}

static void destroy(tb_writer *w)
{
	if (w->threaded)
		thread_stop(w);
	if (w->uring)
		io_uring_queue_exit(&w->ring);
	for (int i = 0; i < FILE_COUNT; i++)
		if (w->files[i].fd >= 0)
			close(w->files[i].fd);
	if (w->bufs)
		for (int i = 0; i < w->nbufs; i++)
			free(w->bufs[i].data);
	for (int i = 0; i < FILE_COUNT; i++) {
		free(w->files[i].header);
		free(w->files[i].pre);
		free(w->files[i].queue);
	}
	free(w->bufs);
	free(w->jobs);
	free(w->dir);
	free(w->bus);
	free(w->comment);
	free(w->extra_header);
	free(w);
}

static int alloc_writer(tb_writer **out, const tb_writer_config *c)
{
	tb_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*out = w;
	for (int i = 0; i < FILE_COUNT; i++)
		w->files[i].fd = -1;
	w->cfg = *c;
	w->interval_ns = 0;
	w->dir = strdup(c->dir);
	w->bus = strdup(c->bus);
	w->comment = c->comment ? strdup(c->comment) : NULL;
	w->extra_header = c->extra_header ? strdup(c->extra_header) : NULL;
	w->nbufs = c->queue_depth;
	w->bufs = calloc((size_t)w->nbufs, sizeof(*w->bufs));
	if (!w->dir || !w->bus || (c->comment && !w->comment) || !w->bufs)
		return -ENOMEM;
	for (int i = 0; i < FILE_COUNT; i++) {
		w->files[i].pre = malloc(PREAMBLE_CAP);
		w->files[i].queue = calloc((size_t)c->queue_depth, sizeof(int));
		if (!w->files[i].pre || !w->files[i].queue)
			return -ENOMEM;
	}
	w->cfg.dir = w->dir;
	w->cfg.bus = w->bus;
	w->cfg.comment = w->comment;
	for (int i = 0; i < w->nbufs; i++) {
		w->bufs[i].data = malloc(BUF_INITIAL_CAP);
		if (!w->bufs[i].data)
			return -ENOMEM;
		w->bufs[i].cap = BUF_INITIAL_CAP;
	}
	return 0;
}

static int start_backend(tb_writer *w, const char **why)
{
	if (w->cfg.force_fallback) {
		snprintf(w->backend, sizeof(w->backend), "pwrite thread (forced)");
	} else {
		int rc = uring_start(w);
		if (rc == 0) {
			snprintf(w->backend, sizeof(w->backend), "io_uring");
			return 0;
		}
		snprintf(w->backend, sizeof(w->backend), "pwrite thread (io_uring: %s)",
			 strerror(-rc));
	}
	int rc = thread_start(w);
	if (rc < 0)
		*why = "cannot start the log writer thread";
	return rc;
}

int tb_writer_open(tb_writer **out, const tb_writer_config *c, int64_t start_ns, const char **why)
{
	const char *ignored;
	struct wfile first[FILE_COUNT];
	tb_writer *w = NULL;
	if (!why)
		why = &ignored;
	*why = NULL;
	if (!out || !c) {
		*why = "no writer or configuration was given";
		return -EINVAL;
	}
	*out = NULL;
	int rc = check_config(c, why);
	if (rc == 0) {
		rc = alloc_writer(&w, c);
		if (rc < 0)
			*why = "out of memory for the log writer";
	}
	if (rc == 0)
		rc = make_dirs(w->dir, why);
	if (rc == 0)
		rc = start_backend(w, why);
	if (rc == 0)
		rc = open_pair(w, start_ns, first, why);
	if (rc == 0) {
		rc = install_pair(w, first, start_ns);
		if (rc < 0)
			*why = "cannot queue the log file's header";
	}
	if (rc < 0) {
		if (w)
			destroy(w);
		return rc;
	}
	apply_retention(w);
	*out = w;
	return 0;
}

const char *tb_writer_backend(const tb_writer *w)
{
	return w->backend;
}

const char *tb_writer_log_path(const tb_writer *w)
{
	return w->files[FILE_LOG].path;
}

int tb_writer_close(tb_writer *w)
{
	if (!w)
		return 0;
	tb_writer_flush(w);
	close_files(w);
	int rc = tb_writer_error(w, NULL);
	destroy(w);
	return rc;
}
