/* writer_losses.c - a log file's bytes written whole, what was lost from
 * it, and the preamble each file owes before its next bytes. Both backends
 * report every finished write here, under the writer's lock.
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
 * Invariants: `good` only grows, by whole writes; a note leaves a file's
 * list only once the preamble holding it was written whole; at most
 * LOSSES_MAX losses wait for the collector, more are counted only.
 */
#include "writer_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(((tb_writer_loss *)0)->file) == PATH_MAX, "a loss holds a file's path");

static const char *file_word(int which)
{
	return which == FILE_LOG ? "log" : "sidecar";
}

/* Whether a loss of file `which` for `err`, with `written` appends of it
 * written whole, continues run n. */
static bool continues(const struct note *n, int which, int err, uint64_t written)
{
	return n->file == which && n->err == err && n->written_at == written;
}

/* Add interval `at` of file `which`, lost for `err`, to a file's notes: to
 * the run of that file and reason it continues, unless the preamble being
 * written holds that run (it may be on disk already), or file `which` has
 * written an append whole since the run's last loss (`written`, its count
 * of those now; a preamble's notes do not count): a run holds consecutive
 * losses only, never one that spans an interval written. */
static void add_note(struct wfile *f, int which, int64_t at, int err, uint64_t written)
{
	for (int k = f->nnotes - 1; k >= f->pre_notes; k--) {
		struct note *n = &f->notes[k];
		if (!continues(n, which, err, written))
			continue;
		if (at != n->last_ns) {
			n->last_ns = at > n->last_ns ? at : n->last_ns;
			n->intervals++;
		}
		return;
	}
	if (f->nnotes < NOTES_MAX) {
		f->notes[f->nnotes++] = (struct note){at, at, 1, which, err, written};
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
			add_note(&w->files[i], which, at, err, w->files[which].appends_written);
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
		len = snprintf(out, cap, "%.3f,lost,%s:%.3f:%s,%llu,,,,,,,,,,,,,,\n", seconds(n->first_ns),
			       file_word(n->file), seconds(n->last_ns), why,
			       (unsigned long long)n->intervals);
	return len > 0 && (size_t)len < cap ? (size_t)len : 0;
}

bool wr_preamble_due(const struct wfile *f)
{
	return f->header || f->nnotes;
}

/* Under lock: the file's preamble, what is due of it, into f->pre. */
void wr_compose_preamble_locked(struct wfile *f, int which)
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
void wr_cut_back(tb_writer *w, struct wfile *f, size_t written)
{
	if (written && ftruncate(f->fd, (off_t)f->good) < 0)
		note_error(w, -errno, "a failed write left part of a line that could not be cut off");
}

/* A preamble that failed holds its runs no more: a run begun beside one
 * of them while it was in flight (add_note) continues it, and joins it
 * again, so that one run is one row whichever way the writes interleaved. */
static void rejoin_runs(struct wfile *f)
{
	int kept = f->pre_notes;
	for (int k = f->pre_notes; k < f->nnotes; k++) {
		struct note *n = &f->notes[k], *run = NULL;
		for (int j = f->pre_notes - 1; j >= 0 && !run; j--)
			if (continues(&f->notes[j], n->file, n->err, n->written_at))
				run = &f->notes[j];
		if (!run) {
			f->notes[kept++] = *n;
			continue;
		}
		/* an interval at the run's end is one interval, not two */
		run->intervals += n->intervals - (n->first_ns == run->last_ns);
		run->first_ns = n->first_ns < run->first_ns ? n->first_ns : run->first_ns;
		run->last_ns = n->last_ns > run->last_ns ? n->last_ns : run->last_ns;
	}
	f->nnotes = kept;
}

/* Under lock: the preamble was written whole (rc 0) or failed. */
void wr_preamble_done_locked(tb_writer *w, struct wfile *f, int rc)
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
		rejoin_runs(f);
	}
	f->pre_len = f->pre_done = 0;
	f->pre_notes = 0;
}

/* Under lock: buffer b was written whole (rc 0), or failed and is lost. */
void wr_buffer_done_locked(tb_writer *w, struct wbuf *b, int rc)
{
	struct wfile *f = &w->files[b->file];
	if (rc == 0) {
		f->good += b->len;
		f->appends_written++;
	} else {
		note_error_locked(w, rc, "a write to the log files failed");
		f->size -= b->len;
		lose_locked(w, b->file, b->interval_ns, rc);
	}
}
