/* writer_pwrite.c - the writer's pwrite thread backend, used when
 * io_uring is unavailable or the caller forces it: a FIFO of jobs (a
 * buffer's write, a preamble on its own, an fsync) run in order by one
 * ordinary thread, so a file's bytes land in the order of its appends, as
 * with io_uring.
 *
 * Locking is described in writer_impl.h: `mu` hands jobs and buffers
 * between the collector's thread and this one. Only the writer thread
 * writes the files' offsets and preambles while it runs.
 */
#include "writer_impl.h"
#include "threads.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

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
	bool due = wr_preamble_due(f);
	if (due)
		wr_compose_preamble_locked(f, which);
	pthread_mutex_unlock(&w->mu);
	if (!due)
		return 0;
	int rc = pwrite_all(f->fd, f->pre, f->pre_len, f->good, &f->pre_done, shorts);
	if (rc < 0)
		wr_cut_back(w, f, f->pre_done);
	pthread_mutex_lock(&w->mu);
	wr_preamble_done_locked(w, f, rc);
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
			wr_cut_back(w, f, b->done);
	}
	pthread_mutex_lock(&w->mu);
	wr_buffer_done_locked(w, b, rc);
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

int wr_thread_start(tb_writer *w)
{
	/* every buffer's write, and an fsync per file twice over, fit at once */
	w->jobs_cap = w->nbufs + 2 * FILE_COUNT;
	w->jobs = calloc((size_t)w->jobs_cap, sizeof(*w->jobs));
	if (!w->jobs)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->done, NULL);
	/* an ordinary thread (threads.h), its CPU affinity inherited */
	int rc = tb_thread_start_ordinary(&w->thread, writer_thread, w, NULL);
	if (rc) {
		pthread_cond_destroy(&w->done);
		pthread_cond_destroy(&w->work);
		pthread_mutex_destroy(&w->mu);
		return -rc;
	}
	w->threaded = true;
	return 0;
}

void wr_thread_stop(tb_writer *w)
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

int wr_thread_acquire(tb_writer *w, struct wbuf **out)
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

void wr_thread_enqueue(tb_writer *w, struct job j)
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

void wr_thread_fsync(tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++) {
		if (w->files[i].fd >= 0) {
			wr_thread_enqueue(w, (struct job){.kind = JOB_FSYNC, .fd = w->files[i].fd});
			w->stats.fsyncs++;
		}
	}
}

/* A preamble due with no append to precede it: tried on its own, unless
 * the thread is busy (an append will take it along). */
void wr_thread_kick_preambles(tb_writer *w)
{
	for (int i = 0; i < FILE_COUNT; i++) {
		struct wfile *f = &w->files[i];
		pthread_mutex_lock(&w->mu);
		bool due = f->fd >= 0 && wr_preamble_due(f) && !f->pre_queued;
		f->pre_queued |= due;
		pthread_mutex_unlock(&w->mu);
		if (due)
			wr_thread_enqueue(w, (struct job){.kind = JOB_PREAMBLE, .file = i});
	}
}

/* Every append queued so far written or lost; the fsyncs queued after
 * them are not waited for. */
void wr_thread_settle(tb_writer *w)
{
	pthread_mutex_lock(&w->mu);
	while (w->busy > 0)
		pthread_cond_wait(&w->done, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

void wr_thread_flush(tb_writer *w)
{
	wr_thread_kick_preambles(w);
	wr_thread_fsync(w); /* the queue is FIFO: it runs after every write */
	pthread_mutex_lock(&w->mu);
	while (w->pending > 0)
		pthread_cond_wait(&w->done, &w->mu);
	pthread_mutex_unlock(&w->mu);
}
