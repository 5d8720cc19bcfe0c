/* writer.c - tailbusd's log files, written off the drain loop: the API of
 * writer.h (appends, intervals, rotation, open and close), which drives the
 * backends and the file pieces described in writer_impl.h.
 *
 * The idea: the collector hands each interval's bytes to an append call that
 * copies them into one of `queue_depth` fixed buffers and returns; the write
 * itself happens in the kernel (io_uring, writer_uring.c) or on a writer
 * thread (pwrite, writer_pwrite.c), so the drain loop waits on the disk only
 * when every buffer is still in flight.
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
 * short write is continued for the remainder) or its write fails. What a
 * failed write leaves, and how it is reported, is writer_losses.c's.
 *
 * Invariants.
 * - A file is closed only after every write to it has completed and it has
 *   been fsynced (tb_writer_flush), so no buffer ever refers to a closed fd.
 * - Errors are sticky: the first one is kept with a sentence and returned by
 *   poll, flush and close; whether anything was lost is the loss count's to
 *   say (tb_writer_stats.lost_appends).
 * - Durability is fdatasync (IORING_OP_FSYNC with IORING_FSYNC_DATASYNC, or
 *   fdatasync on the thread): the files only grow, and fdatasync flushes the
 *   size along with the data.
 */
#include "writer_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tailbus/log.h"

/* A typical interval's lines; a larger append grows its buffer (realloc). */
#define BUF_INITIAL_CAP (64u * 1024u)
/* room left for extra header lines beside the five standard ones */
#define EXTRA_HEADER_MAX (HEADER_MAX - 1024)
#define SIDECAR_TITLE "# tailbus health sidecar for "

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
	int rc = w->uring ? wr_uring_acquire(w, &b) : wr_thread_acquire(w, &b);
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
		wr_thread_enqueue(w, (struct job){.kind = JOB_WRITE, .buf = (int)(b - w->bufs)});
		return 0;
	}
	f->queue[(f->qhead + f->qcount++) % w->nbufs] = (int)(b - w->bufs);
	wr_uring_reap(w, false); /* writes that finished make room for the next: no system call */
	wr_uring_kick(w, which, false);
	rc = wr_uring_submit(w);
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
			 wr_base_name(files[FILE_LOG].path));
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
			wr_uring_kick(w, i, true);
		int rc = wr_uring_submit(w);
		if (rc < 0)
			note_error(w, rc, "io_uring refused to submit or complete the log writes");
		return 0;
	}
	wr_thread_kick_preambles(w);
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

static void rotate(tb_writer *w, int64_t start_ns)
{
	struct wfile next[FILE_COUNT];
	const char *why;
	/* open the new pair first: if that fails, keep writing the old one */
	int rc = wr_make_dirs(w->dir, &why);
	if (rc == 0)
		rc = wr_open_pair(w, start_ns, next, &why);
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
	wr_apply_retention(w);
}

double tb_writer_begin_interval(tb_writer *w, int64_t interval_start_ns)
{
	w->interval_ns = interval_start_ns;
	if (wr_rotation_due(w, interval_start_ns))
		rotate(w, interval_start_ns);
	return seconds(w->file_start_ns);
}

int tb_writer_end_interval(tb_writer *w)
{
	if (w->cfg.fsync_every <= 0 || ++w->intervals_since_fsync < w->cfg.fsync_every)
		return 0;
	w->intervals_since_fsync = 0;
	if (!w->uring) {
		wr_thread_fsync(w);
		return 0;
	}
	for (int i = 0; i < FILE_COUNT; i++)
		if (w->files[i].fd >= 0)
			wr_uring_prep_fsync(w, w->files[i].fd, true);
	int rc = wr_uring_submit(w);
	if (rc < 0)
		note_error(w, rc, "io_uring refused to submit or complete the log writes");
	return rc;
}

int tb_writer_poll(tb_writer *w)
{
	/* a preamble due (space may have come back): tried on its own */
	if (w->uring) {
		wr_uring_progress(w, false);
		for (int i = 0; i < FILE_COUNT; i++)
			wr_uring_kick(w, i, true);
		wr_uring_progress(w, false);
	} else {
		wr_thread_kick_preambles(w);
	}
	return tb_writer_error(w, NULL);
}

int tb_writer_settle(tb_writer *w)
{
	if (w->uring)
		wr_uring_settle(w);
	else
		wr_thread_settle(w);
	return tb_writer_error(w, NULL);
}

int tb_writer_flush(tb_writer *w)
{
	if (w->uring)
		wr_uring_flush(w);
	else
		wr_thread_flush(w);
	w->intervals_since_fsync = 0;
	return tb_writer_error(w, NULL);
}

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
		wr_thread_stop(w);
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
		int rc = wr_uring_start(w);
		if (rc == 0) {
			snprintf(w->backend, sizeof(w->backend), "io_uring");
			return 0;
		}
		snprintf(w->backend, sizeof(w->backend), "pwrite thread (io_uring: %s)",
			 strerror(-rc));
	}
	int rc = wr_thread_start(w);
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
		rc = wr_make_dirs(w->dir, why);
	if (rc == 0)
		rc = start_backend(w, why);
	if (rc == 0)
		rc = wr_open_pair(w, start_ns, first, why);
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
	wr_apply_retention(w);
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
