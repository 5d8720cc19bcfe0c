/* accounts.c - what the collector took from the rings and fold lanes,
 * against what reached the log, kept in the segment so that a collector
 * started after one was killed counts exactly what the dead one lost.
 *
 * A killed collector takes with it the intervals it had not yet written:
 * the events it had drained into its series banks (its consumer index,
 * c_head, already past them, so no one reads them again) and the fold lane
 * events it had taken. Both are counted here in the units the producers
 * count them in: ring entries (tb_producer_stats.written) and folded
 * events (.folded).
 *
 * The accounts, per slot (tb_slot, the collector's fields):
 * - logged_head: a ring index such that c_head - logged_head is the number
 *   of entries taken from the ring whose interval is not known written;
 * - folds_taken, folds_logged: fold lane events taken, and of them those
 *   whose interval is known written;
 * - logged_head_next, folds_logged_next: the same once the interval being
 *   written (the header's pending_start_ns) is.
 *
 * The protocol. The holder of a ring counts every entry it takes into the
 * bank of the interval that accounts for it (tb_slot_follow.into: the
 * interval the event was recorded, late, bad or unmatched in). When the
 * closer closes an interval S it takes each ring's count of that bank and
 * the folds the bank holds (tb_accounts_take). Before it queues S's lines
 * it stores the *_next fields, then pending_start_ns = S and how many log
 * lines S has (tb_accounts_writing). Once the writer has written them whole
 * or lost them (tb_writer_settle), it copies *_next into the accounts,
 * stores logged_start_ns = S and clears pending_start_ns
 * (tb_accounts_publish).
 *
 * A collector started after one that did not stop cleanly (the header
 * still names its pid: a clean stop clears it) takes, per slot, the
 * accounts before or after S: after when S was published (logged_start_ns
 * = S), or when the newest log of the bus ends with all of S's lines (the
 * header's pending_lines: the write completed but the kill came before the
 * publication); before otherwise. A kill amid that write can leave a part
 * of S's lines, the last cut short: the log is then cut back to where S
 * begins, so that it holds whole intervals and S is counted lost whole,
 * not in part twice. It reports the sum over the slots of
 * c_head - logged_head and folds_taken - folds_logged, with the header's
 * parked_logged (below), as lost, and starts the accounts afresh. So the count is exact, but for a kill while the
 * closer is taking a slot's lanes, between the lanes' `taken` and
 * folds_taken (a few microseconds a close), which loses what it took from
 * them uncounted. An interval the writer lost (a full disk) is reported
 * as lost intervals by the writer, not here.
 *
 * START and END events. One that waits in the join table is taken but
 * accounted nowhere until it leaves (matched: with its partner's event;
 * expired: with the interval that counts it unmatched), so each drain
 * thread counts per bank the events that left less those that went in
 * (tb_drainer.join_adj); the closer adds the closing bank's to
 * `parked_logged` in the header (pending: parked_logged_next), the events
 * the slots' logged_head count though they wait in the table. What a
 * killed collector held there is lost with it and counted so. Counts are
 * in ring entries: a pair is two entries and one event in the log.
 *
 * Invariant, per slot, under slot_lock: head + into[0] + into[1] +
 * pend_ring == our consumer index (tb_accounts_moved keeps it when a
 * ring's indexes are set without reading what lay between).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"

/* How much of the newest log's end is read for the lines of the interval
 * a killed collector was writing (an interval's lines, 64 metrics of a
 * few KiB each, and far more, fit), and of its start for BaseTime. */
#define TAIL_MAX (1u << 24)
#define HEAD_MAX 8192

static tb_seg_header *header(tb_collector *c)
{
	return (tb_seg_header *)c->seg.base;
}

int tb_accounts_init(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	uint32_t n = c->seg.layout.slot_count;
	a->head = calloc(n, sizeof(*a->head));
	a->pend_ring = calloc(n, sizeof(*a->pend_ring));
	a->folds_taken = calloc(n, sizeof(*a->folds_taken));
	a->folds_logged = calloc(n, sizeof(*a->folds_logged));
	a->pend_folds = calloc(n, sizeof(*a->pend_folds));
	if (!a->head || !a->pend_ring || !a->folds_taken || !a->folds_logged || !a->pend_folds)
		return -ENOMEM;
	return 0;
}

void tb_accounts_free(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	free(a->head);
	free(a->pend_ring);
	free(a->folds_taken);
	free(a->folds_logged);
	free(a->pend_folds);
}

/* Slot i's accounts, from the collector's copy into the segment: what
 * is known written, and what will be once the pending interval is. */
static void store_slot(tb_collector *c, uint32_t i)
{
	struct tb_accounts *a = &c->accounts;
	tb_slot *s = tb_seg_slot(&c->seg, i);
	__atomic_store_n(&s->logged_head, a->head[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->logged_head_next, a->head[i] + a->pend_ring[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->folds_taken, a->folds_taken[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->folds_logged, a->folds_logged[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->folds_logged_next, a->folds_logged[i] + a->pend_folds[i], __ATOMIC_RELAXED);
}

/* BaseTime of the log whose first bytes are `p`, or NAN. */
static double base_time(const char *p)
{
	const char *b = strstr(p, "#[BaseTime: ");
	return b ? strtod(b + strlen("#[BaseTime: "), NULL) : NAN;
}

/* What the end of the newest log holds of interval `start`: its whole
 * data lines there, counted back from the last whole line (log notes after
 * them passed over) to the first line of another interval or a header
 * line. `from` is where the first of them begins, known unless that lies
 * before the bytes read; `whole_end` is where the last whole line ends
 * (past it: a line a kill cut short). A line that holds a NUL (never
 * written whole) is taken as part of the run without counting. Offsets in
 * the file. */
typedef struct tail_scan {
	uint32_t lines;
	bool from_known;
	off_t from;
	off_t whole_end;
} tail_scan;

enum line_kind { LINE_NOTE, LINE_OF_START, LINE_CUT, LINE_OTHER };

static enum line_kind line_kind(const char *line, size_t len, double base, double start)
{
	if (len == 0 || *line == '#' || *line == '"')
		return LINE_NOTE;
	if (memchr(line, '\0', len))
		return LINE_CUT;
	const char *end = line + len;
	if (len > 4 && strncmp(line, "Tag=", 4) == 0) {
		line = memchr(line, ',', len);
		if (!line)
			return LINE_OTHER;
		line++;
	}
	char *stop;
	double at = strtod(line, &stop); /* the buffer ends in a NUL */
	if (stop == line || stop > end)
		return LINE_OTHER;
	return fabs(base + at - start) < 0.0005 ? LINE_OF_START : LINE_OTHER;
}

/* `buf` holds n bytes (a NUL after them) read at file offset `at`. */
static void scan_tail(const char *buf, size_t n, off_t at, double base, double start, tail_scan *t)
{
	size_t end = n;
	while (end > 0 && buf[end - 1] != '\n')
		end--;
	t->whole_end = at + (off_t)end;
	t->lines = 0;
	t->from = t->whole_end;
	t->from_known = false;
	bool in_run = false;
	while (end > 0) {
		/* the line [b, end - 1), its newline at end - 1 */
		const char *nl = end > 1 ? memrchr(buf, '\n', end - 1) : NULL;
		size_t b = nl ? (size_t)(nl - buf) + 1 : 0;
		if (!nl && at > 0)
			return; /* it may begin before the bytes read */
		enum line_kind kind = line_kind(buf + b, end - 1 - b, base, start);
		if (kind == LINE_NOTE && !in_run) {
			end = b;
			continue;
		}
		if (kind == LINE_NOTE || kind == LINE_OTHER) {
			t->from_known = true;
			return;
		}
		in_run = true;
		t->lines += kind == LINE_OF_START;
		t->from = at + (off_t)b;
		end = b;
	}
	t->from_known = at == 0; /* the file's start (else no line end was read) */
}

/* Cut the log at `path` back to `keep` bytes, noted for the report; a log
 * that cannot be written (its mode changed by a log shipper) is left as
 * it is, and the report says that too. */
static void cut_log(struct tb_accounts *a, const char *path, off_t keep, uint64_t bytes)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	a->cut_failed = fd < 0 || ftruncate(fd, keep) < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	snprintf(a->cut_path, sizeof(a->cut_path), "%s", path);
	a->cut_bytes = bytes;
}

/* Whether the newest log of the bus holds all `lines` lines of interval
 * `start_ns` (the write a killed collector was making completed). When it
 * holds a part, that part is cut off (the interval is counted lost whole),
 * and so is a line cut short at its end: the log reads as whole intervals
 * again. (A part whose start lies before the TAIL_MAX bytes read keeps its
 * whole lines, counted lost as well.) What was cut is noted in c->accounts
 * for the report. */
static bool newest_log_has(tb_collector *c, int64_t start_ns, uint32_t lines)
{
	struct tb_accounts *a = &c->accounts;
	char path[4096];
	if (!c->cfg.writer.dir ||
	    tb_writer_newest_log(c->cfg.writer.dir, c->cfg.bus, path, sizeof(path)) < 0)
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	struct stat st;
	char *buf = malloc(TAIL_MAX + 1);
	bool whole = false;
	ssize_t got;
	if (buf && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (got = pread(fd, buf, HEAD_MAX, 0)) > 0) {
		buf[got] = '\0';
		double base = base_time(buf);
		off_t from = st.st_size > (off_t)TAIL_MAX ? st.st_size - (off_t)TAIL_MAX : 0;
		got = pread(fd, buf, TAIL_MAX, from);
		if (got > 0 && !isnan(base)) {
			buf[got] = '\0';
			tail_scan t;
			scan_tail(buf, (size_t)got, from, base, (double)start_ns / 1e9, &t);
			whole = t.lines >= lines;
			/* where the lines begin lies before the bytes read: the
			 * line cut short goes, the whole ones stay (counted lost);
			 * no line end at all in what was read: nothing is cut */
			off_t keep = !whole && t.from_known ? t.from : t.whole_end;
			a->cut_to_start = !whole && t.from_known;
			if (keep < st.st_size && (keep > from || from == 0))
				cut_log(a, path, keep, (uint64_t)(st.st_size - keep));
		}
	}
	free(buf);
	close(fd);
	return whole;
}

void tb_accounts_adopt(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	tb_seg_header *h = header(c);
	/* a collector that stops cleanly clears its pid: one still named was
	 * killed (the bus lock says it is not running) */
	int32_t pid = __atomic_load_n(&h->collector_pid, __ATOMIC_ACQUIRE);
	a->inherited = __atomic_load_n(&h->collector_accounts, __ATOMIC_ACQUIRE) && pid != 0;
	a->dead_pid = pid;
	int64_t pending = __atomic_load_n(&h->pending_start_ns, __ATOMIC_ACQUIRE);
	a->logged_start_ns = __atomic_load_n(&h->logged_start_ns, __ATOMIC_ACQUIRE);
	uint32_t lines = __atomic_load_n(&h->pending_lines, __ATOMIC_RELAXED);
	bool after = a->inherited && pending &&
		     (pending == a->logged_start_ns || (lines && newest_log_has(c, pending, lines)));
	if (after)
		a->logged_start_ns = pending;
	a->dead_from_ns = a->logged_start_ns ? a->logged_start_ns + h->collector_interval_ns : 0;
	/* banks the slots count as logged though they waited in the dead
	 * collector's join table */
	int64_t ring = __atomic_load_n(after ? &h->parked_logged_next : &h->parked_logged,
				       __ATOMIC_RELAXED);
	int64_t folds = 0;
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot *s = tb_seg_slot(&c->seg, i);
		uint32_t head = __atomic_load_n(&tb_seg_ring(&c->seg, i)->c_head, __ATOMIC_ACQUIRE);
		uint32_t logged = __atomic_load_n(after ? &s->logged_head_next : &s->logged_head,
						  __ATOMIC_RELAXED);
		uint64_t taken = __atomic_load_n(&s->folds_taken, __ATOMIC_RELAXED);
		uint64_t folds_logged = __atomic_load_n(after ? &s->folds_logged_next : &s->folds_logged,
							__ATOMIC_RELAXED);
		/* signed: a matched START/END pair may account for its other
		 * bank on the ring of the bank that completed it */
		ring += (int32_t)(head - logged);
		folds += (int64_t)(taken - folds_logged);
		a->head[i] = head;
		a->folds_taken[i] = a->folds_logged[i] = taken;
	}
	a->lost_ring = a->inherited && ring > 0 ? (uint64_t)ring : 0;
	a->lost_folds = a->inherited && folds > 0 ? (uint64_t)folds : 0;
}

/* What the collector before this one lost, on stderr, in the log and the
 * sidecar. */
static void report(tb_collector *c)
{
	struct tb_accounts *a = &c->accounts;
	unsigned long long lost = a->lost_ring + a->lost_folds, folds = a->lost_folds;
	double from = (double)(a->dead_from_ns ? a->dead_from_ns : c->closer.start_ns) / 1e9;
	fprintf(stderr,
		"tailbusd: the collector before this one (pid %d) was killed: %llu events it had taken "
		"(%llu of them from fold lanes) never reached the log; counted lost\n",
		(int)a->dead_pid, lost, folds);
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "# tailbus: %llu events lost: the collector before this one (pid %d) was killed "
			 "after taking them, before the intervals from %.3f were logged\n",
			 lost, (int)a->dead_pid, from);
	if (n > 0 && (size_t)n < sizeof(line))
		tb_writer_append_log(c->writer, line, (size_t)n);
	if (a->cut_bytes && !a->cut_failed)
		fprintf(stderr,
			"tailbusd: %s: cut back by %llu bytes, %s (the kill came while the interval at "
			"%.3f was being written; it is counted lost)\n",
			a->cut_path, (unsigned long long)a->cut_bytes,
			a->cut_to_start ? "to where that interval begins" : "a line cut short", from);
	else if (a->cut_bytes)
		fprintf(stderr,
			"tailbusd: %s: its last %llu bytes are a part of the interval at %.3f, which the kill "
			"cut short (counted lost), and cannot be cut off: %s\n",
			a->cut_path, (unsigned long long)a->cut_bytes, from, strerror(a->cut_failed));
	n = snprintf(line, sizeof(line), "%.3f,collector-lost,collector:%d,%llu,,,,,,,,,%llu,,,,,\n", from,
		     (int)a->dead_pid, lost, folds);
	if (n > 0 && (size_t)n < sizeof(line))
		tb_writer_append_sidecar(c->writer, line, (size_t)n);
}

void tb_accounts_start(tb_collector *c)
{
	if (c->accounts.inherited)
		report(c);
	tb_accounts_restore(c);
}

void tb_accounts_take(tb_collector *c, int bank)
{
	struct tb_accounts *a = &c->accounts;
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		tb_slot_follow *f = &c->slots[i];
		a->pend_ring[i] += f->into[bank];
		f->into[bank] = 0;
		a->pend_folds[i] += f->tally[bank].folded;
	}
	pthread_mutex_unlock(&c->slot_lock);
	/* START/END events: each drain thread's for the bank, and those the
	 * closer expired since the last close (counted unmatched in this one) */
	for (uint32_t k = 0; k < c->ndrainers; k++) {
		a->pend_parked -= c->drainers[k].join_adj[bank];
		c->drainers[k].join_adj[bank] = 0;
	}
	a->pend_parked -= a->join_left;
	a->join_left = 0;
}

void tb_accounts_writing(tb_collector *c, int64_t start_ns, uint32_t lines)
{
	struct tb_accounts *a = &c->accounts;
	tb_seg_header *h = header(c);
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++)
		if (a->pend_ring[i] || a->pend_folds[i])
			store_slot(c, i);
	pthread_mutex_unlock(&c->slot_lock);
	__atomic_store_n(&h->parked_logged_next, a->parked + a->pend_parked, __ATOMIC_RELAXED);
	__atomic_store_n(&h->pending_lines, lines, __ATOMIC_RELAXED);
	/* release: the *_next fields before the interval they belong to */
	__atomic_store_n(&h->pending_start_ns, start_ns, __ATOMIC_RELEASE);
}

void tb_accounts_publish(tb_collector *c, int64_t start_ns)
{
	struct tb_accounts *a = &c->accounts;
	tb_seg_header *h = header(c);
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++) {
		if (!a->pend_ring[i] && !a->pend_folds[i])
			continue;
		a->head[i] += a->pend_ring[i];
		a->folds_logged[i] += a->pend_folds[i];
		a->pend_ring[i] = 0;
		a->pend_folds[i] = 0;
		store_slot(c, i);
	}
	pthread_mutex_unlock(&c->slot_lock);
	a->parked += a->pend_parked;
	a->pend_parked = 0;
	__atomic_store_n(&h->parked_logged, a->parked, __ATOMIC_RELAXED);
	__atomic_store_n(&h->parked_logged_next, a->parked, __ATOMIC_RELAXED);
	a->logged_start_ns = start_ns;
	__atomic_store_n(&h->logged_start_ns, start_ns, __ATOMIC_RELEASE);
	__atomic_store_n(&h->pending_start_ns, 0, __ATOMIC_RELEASE);
}

void tb_accounts_folds_taken(tb_collector *c, uint32_t i, uint64_t n)
{
	c->accounts.folds_taken[i] += n;
	__atomic_store_n(&tb_seg_slot(&c->seg, i)->folds_taken, c->accounts.folds_taken[i],
			 __ATOMIC_RELAXED);
}

void tb_accounts_moved(tb_collector *c, uint32_t i, uint32_t index)
{
	struct tb_accounts *a = &c->accounts;
	const tb_slot_follow *f = &c->slots[i];
	a->head[i] = index - (f->into[0] + f->into[1] + a->pend_ring[i]);
	store_slot(c, i);
}

void tb_accounts_restore(tb_collector *c)
{
	tb_seg_header *h = header(c);
	pthread_mutex_lock(&c->slot_lock);
	for (uint32_t i = 0; i < c->seg.layout.slot_count; i++)
		store_slot(c, i);
	pthread_mutex_unlock(&c->slot_lock);
	__atomic_store_n(&h->logged_start_ns, c->accounts.logged_start_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&h->pending_start_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->parked_logged, c->accounts.parked, __ATOMIC_RELAXED);
	__atomic_store_n(&h->parked_logged_next, c->accounts.parked, __ATOMIC_RELAXED);
	__atomic_store_n(&h->collector_accounts, 1, __ATOMIC_RELEASE);
}
