/* writer_uring.c - the writer's io_uring backend: each file's queue of
 * buffers, written one at a time at the file's end, the preamble first when
 * one is due; completions, short writes and fsyncs.
 *
 * Invariants.
 * - At most `queue_depth` writes are in flight, one per busy buffer, plus at
 *   most one fsync per open file per request; the ring has room for all of
 *   them, so io_uring_get_sqe never comes back empty.
 * - A file has at most one write in flight (`in_flight`): the next one is
 *   submitted as the one before completes, so the file's bytes land in the
 *   order of its appends.
 * - The periodic fsync is a drain point (IOSQE_IO_DRAIN), so it covers
 *   every write queued before it.
 * Runs on the collector's closing thread only: no locking.
 */
#include "writer_impl.h"

#include <errno.h>
#include <sched.h>

/* io_uring_prep_write takes an unsigned length: longer appends are written
 * in pieces of this size, continued like short writes. */
#define WRITE_CHUNK_MAX (1u << 30)
/* user_data of an fsync; of a preamble's write, PREAMBLE_TAG + its file;
 * a buffer's write's, the buffer's index. */
#define FSYNC_TAG UINT64_MAX
#define PREAMBLE_TAG (UINT64_MAX - 16)

int wr_uring_start(tb_writer *w)
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
	/* The kernel's workers for this ring (iou-wrk-*, which buffered writes
	 * and fsyncs go to) take their CPUs from the cpuset, not from the
	 * opening thread: give them this thread's, which tailbusd has already
	 * narrowed to keep off the drain threads' CPUs. Kernels before 5.14
	 * refuse; their workers run where the cpuset lets them. */
	cpu_set_t cpus;
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
		io_uring_register_iowq_aff(&w->ring, sizeof(cpus), &cpus);
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

void wr_uring_prep_fsync(tb_writer *w, int fd, bool drain)
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

/* The head buffer of file `which` is done: written (rc 0) or lost. */
static void uring_buffer_end(tb_writer *w, int which, int rc)
{
	struct wfile *f = &w->files[which];
	struct wbuf *b = &w->bufs[f->queue[f->qhead]];
	wr_buffer_done_locked(w, b, rc);
	queue_pop(w, f);
	f->in_flight = false;
	release_buf(w, b);
	wr_uring_kick(w, which, false);
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
			wr_preamble_done_locked(w, f, -EBUSY);
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
void wr_uring_kick(tb_writer *w, int which, bool alone)
{
	struct wfile *f = &w->files[which];
	if (f->fd < 0 || f->in_flight)
		return;
	if (wr_preamble_due(f) && (f->qcount || alone)) {
		wr_compose_preamble_locked(f, which);
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
		wr_preamble_done_locked(w, f, 0);
		f->in_flight = false;
		wr_uring_kick(w, which, false);
		return;
	}
	/* failed: cut back; the append it preceded goes with it */
	wr_cut_back(w, f, f->pre_done);
	wr_preamble_done_locked(w, f, res < 0 ? res : -EIO);
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
		wr_cut_back(w, f, b->done);
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
int wr_uring_reap(tb_writer *w, bool wait)
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

int wr_uring_submit(tb_writer *w)
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
		rc = wr_uring_reap(w, true);
		if (rc < 0)
			return rc;
	}
}

/* Submit what is queued, handle completions (waiting for one if asked),
 * and submit the continuations they made. */
int wr_uring_progress(tb_writer *w, bool wait)
{
	int rc = wr_uring_submit(w);
	if (rc == 0)
		rc = wr_uring_reap(w, wait);
	if (rc == 0)
		rc = wr_uring_submit(w);
	if (rc < 0)
		note_error(w, rc, "io_uring refused to submit or complete the log writes");
	return rc;
}

int wr_uring_acquire(tb_writer *w, struct wbuf **out)
{
	if (w->busy == w->nbufs) {
		w->stats.buffer_waits++;
		int rc = wr_uring_progress(w, false);
		while (rc == 0 && w->busy == w->nbufs)
			rc = wr_uring_progress(w, true);
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
		int rc = wr_uring_progress(w, true);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Every append queued so far written or lost; fsyncs in flight are not
 * waited for. */
int wr_uring_settle(tb_writer *w)
{
	while (w->busy > 0 || uring_writing(w)) {
		int rc = wr_uring_progress(w, true);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int wr_uring_flush(tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++) /* a preamble still due: one more try */
		wr_uring_kick(w, i, true);
	int rc = uring_drain(w);
	if (rc < 0)
		return rc;
	for (int i = 0; i < FILE_COUNT; i++)
		if (w->files[i].fd >= 0)
			wr_uring_prep_fsync(w, w->files[i].fd, false);
	return uring_drain(w);
}
