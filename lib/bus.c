/* bus.c - who uses a bus: the collector rule, a read-only status, the
 * counts of a segment kept mapped, the scan of a directory and the removal
 * of a stale segment (see tailbus/bus.h).
 *
 * Reading: open(O_RDONLY|O_NOFOLLOW), map the header page PROT_READ, check
 * the magic once (a creator still at work is reported, not waited for),
 * validate the header against the file size as an attacher does, then map
 * the slot and metric tables read-only. Everything read from them is
 * untrusted: indices are bounded by the validated header's capacities, and a
 * pid is believed to be a slot's owner only when that process's start time
 * matches the one in the slot (a reused pid is not the owner).
 *
 * The monotonic times in the segment (heartbeat, attach, a ring's newest
 * event) are converted to
 * wall-clock time with one pair of clock readings, so that a tool can print
 * an age and compare it with a segment's creation time.
 *
 * Removal holds the collector's lock (the flock tailbusd takes on
 * "<segment>.lock") while it reads the segment again and unlinks it, so a
 * tailbusd cannot start on a segment being removed. A producer does not take
 * the lock: one that attaches in the instant between the second reading and
 * the unlink keeps recording into the removed file. That is why only a
 * segment unused for a stated time is removed, and only on request.
 */
#include "tailbus/bus.h"
#include "tailbus/owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_SEC INT64_C(1000000000)
#define LOCK_SUFFIX ".lock" /* the collector's lock file: "<segment>.lock" (collector.c) */

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* How old a heartbeat from the header is: subtracted as unsigned, so any
 * value a writer of the segment left there is defined (negative: from the
 * future, which no collector writes). */
static int64_t heartbeat_age(int64_t now_mono_ns, int64_t beat)
{
	return (int64_t)((uint64_t)now_mono_ns - (uint64_t)beat);
}

int tb_bus_collector_state(const tb_seg_header *shared, int64_t now_mono_ns, const char **why)
{
	uint32_t starts = __atomic_load_n(&shared->collector_generation, __ATOMIC_ACQUIRE);
	int32_t pid = __atomic_load_n(&shared->collector_pid, __ATOMIC_ACQUIRE);
	int64_t beat = __atomic_load_n(&shared->collector_heartbeat_ns, __ATOMIC_ACQUIRE);
	int state;
	const char *sentence;
	if (starts == 0 && pid == 0) {
		state = TB_COLLECTOR_NONE;
		sentence = "no collector has this bus yet: its events wait in the ring until "
			   "tailbusd serves it (is the bus name right?)";
	} else if (pid == 0) {
		state = TB_COLLECTOR_STOPPED;
		sentence = "the bus's collector has stopped: its events wait in the ring until "
			   "tailbusd serves it again";
	} else if ((uint64_t)heartbeat_age(now_mono_ns, beat) > (uint64_t)TB_COLLECTOR_SILENT_NS) {
		/* as unsigned, an age from the future (negative) is past any limit */
		state = TB_COLLECTOR_SILENT;
		sentence = "the bus's collector has not been heard from for 2 s or more "
			   "(stopped by a signal, stuck or killed)";
	} else {
		state = TB_COLLECTOR_SERVING;
		sentence = NULL;
	}
	if (why)
		*why = sentence;
	return state;
}

const char *tb_bus_collector_name(int state)
{
	switch (state) {
	case TB_COLLECTOR_SERVING: return "serving";
	case TB_COLLECTOR_NONE: return "none";
	case TB_COLLECTOR_STOPPED: return "stopped";
	case TB_COLLECTOR_SILENT: return "silent";
	}
	return "unknown";
}

bool tb_bus_heartbeat_age(const tb_seg *s, int64_t now_mono_ns, int64_t *age_ns)
{
	const tb_seg_header *h = (const tb_seg_header *)s->base;
	int64_t beat = __atomic_load_n(&h->collector_heartbeat_ns, __ATOMIC_ACQUIRE);
	if (beat == 0)
		return false;
	*age_ns = heartbeat_age(now_mono_ns, beat);
	return *age_ns >= 0; /* one from the future was not written by a collector */
}

void tb_bus_counts_read(const tb_seg *s, int64_t now_mono_ns, tb_bus_counts *c)
{
	const tb_seg_header *h = (const tb_seg_header *)s->base;
	memset(c, 0, sizeof(*c));
	c->collector = tb_bus_collector_state(h, now_mono_ns, NULL);
	c->collector_pid = __atomic_load_n(&h->collector_pid, __ATOMIC_ACQUIRE);
	if (!tb_bus_heartbeat_age(s, now_mono_ns, &c->heartbeat_age_ns))
		c->heartbeat_age_ns = -1;
	c->drain_threads = __atomic_load_n(&h->drain_threads, __ATOMIC_RELAXED);
	c->drain_longest_pass_us = __atomic_load_n(&h->drain_longest_pass_us, __ATOMIC_RELAXED);
	c->drain_self_pause_us = __atomic_load_n(&h->drain_self_pause_us, __ATOMIC_RELAXED);
	c->closes_behind = __atomic_load_n(&h->closes_behind, __ATOMIC_RELAXED);
	c->series_waits = __atomic_load_n(&h->series_waits, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < s->layout.slot_count; i++) {
		const tb_slot *slot = tb_seg_slot(s, i);
		uint32_t state = __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE);
		if (state == TB_SLOT_LIVE)
			c->rings_live++;
		if (state == TB_SLOT_LIVE || state == TB_SLOT_DETACHED) {
			c->ring_dropped += __atomic_load_n(&slot->dropped, __ATOMIC_RELAXED);
			c->ring_folded += __atomic_load_n(&slot->folded, __ATOMIC_RELAXED);
		}
	}
}

int64_t tb_bus_interval_ns(const tb_seg *s)
{
	return __atomic_load_n(&((const tb_seg_header *)s->base)->collector_interval_ns,
			       __ATOMIC_RELAXED);
}

uint64_t tb_bus_intervals_published(const tb_seg *s)
{
	return __atomic_load_n(&((const tb_seg_header *)s->base)->intervals_published,
			       __ATOMIC_ACQUIRE);
}

static int fail(tb_bus_status *st, int rc, const char *sentence)
{
	st->error = rc;
	st->why = sentence;
	return rc;
}

/* "<bus>.tailbus" -> bus; false for any other name. */
static bool bus_of(const char *file, char *bus, size_t cap)
{
	size_t n = strlen(file), suffix = strlen(TB_SEG_SUFFIX);
	if (n <= suffix || strcmp(file + n - suffix, TB_SEG_SUFFIX) || n - suffix >= cap)
		return false;
	memcpy(bus, file, n - suffix);
	bus[n - suffix] = '\0';
	return bus[0] != '.';
}


/* The time of the newest event in ring i, if it is plausibly the bus clock's
 * (CLOCK_MONOTONIC, from the slot's attach up to now), else 0. The producer
 * stores its exact position into p_tail when it detaches, and a hint at most
 * a ring behind while it records; a caller may time events by its own clock,
 * hence the check. */
static int64_t newest_event(const uint8_t *base, const tb_seg_header *h, uint32_t i,
			    int64_t attached, int64_t now_mono)
{
	const uint8_t *ring = base + h->rings_off + (uint64_t)i * h->ring_stride;
	uint32_t tail = __atomic_load_n(&((const tb_ring_header *)ring)->p_tail, __ATOMIC_ACQUIRE);
	const tb_event *events = (const tb_event *)(ring + TB_RING_HEADER_SIZE);
	int64_t t = (int64_t)__atomic_load_n(&events[(tail - 1) & (h->ring_capacity - 1)].w1,
					     __ATOMIC_RELAXED);
	return t >= attached && t <= now_mono ? t : 0;
}

/* The slots' owners and the metric names, from the validated layout h. A
 * slot's attach time and its newest event count as uses of the bus. */
static void read_tables(const uint8_t *base, int fd, const tb_seg_header *h, int64_t now_mono,
			int64_t mono_to_real, tb_bus_status *st)
{
	const tb_slot *slots = (const tb_slot *)(base + h->slots_off);
	uint64_t own_ns = tb_pid_namespace();
	st->slots = h->slot_count;
	for (uint32_t i = 0; i < h->slot_count; i++) {
		const tb_slot *s = &slots[i];
		uint32_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (state == TB_SLOT_FREE)
			continue;
		int64_t attached = (int64_t)__atomic_load_n(&s->attached_ns, __ATOMIC_RELAXED);
		if (attached > 0) {
			int64_t newest = newest_event(base, h, i, attached, now_mono);
			int64_t used = (newest > attached ? newest : attached) + mono_to_real;
			if (used > st->last_use_ns)
				st->last_use_ns = used;
		}
		/* the collector's rule (tailbus/owner.h), the start time always */
		tb_owner owner = {__atomic_load_n(&s->pid, __ATOMIC_RELAXED),
				  __atomic_load_n(&s->pid_start_time, __ATOMIC_RELAXED),
				  __atomic_load_n(&s->pid_ns, __ATOMIC_RELAXED)};
		bool owner_runs = tb_owner_check(&owner, own_ns, fd, i, true) == TB_OWNER_RUNS;
		if ((state == TB_SLOT_LIVE || state == TB_SLOT_CLAIMED) && owner_runs)
			st->producers++;
		else if (state != TB_SLOT_QUARANTINED)
			st->producers_gone++;
	}
	const tb_metric_entry *metrics = (const tb_metric_entry *)(base + h->metrics_off);
	for (uint32_t i = 0; i < h->metric_capacity; i++) {
		if (__atomic_load_n(&metrics[i].state, __ATOMIC_ACQUIRE) == TB_METRIC_READY)
			st->metrics++;
	}
}

/* The header's copy, once, without waiting: -EAGAIN while its creator works. */
static int read_header(int fd, uint64_t size, tb_seg_header *h, tb_bus_status *st)
{
	if (size < TB_HEADER_SIZE)
		return fail(st, -EAGAIN, "the segment was never initialised (too short): its creator "
					 "is at work or died");
	void *p = mmap(NULL, TB_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail(st, -errno, "cannot map the segment header");
	uint64_t magic = __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE);
	memcpy(h, p, sizeof(*h));
	munmap(p, TB_HEADER_SIZE);
	if (magic == 0)
		return fail(st, -EAGAIN, "the segment was never initialised: its creator is at work "
					 "or died");
	h->magic = magic;
	const char *why = NULL;
	int rc = tb_seg_validate(h, (size_t)size, &why);
	return rc < 0 ? fail(st, rc, why) : 0;
}

int tb_bus_status_read(const char *path, tb_bus_status *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->path, sizeof(st->path), "%s", path);
	const char *slash = strrchr(path, '/');
	if (!bus_of(slash ? slash + 1 : path, st->bus, sizeof(st->bus)))
		return fail(st, -EINVAL, "not a segment file name (<bus>" TB_SEG_SUFFIX ")");
	/* the file's own fields first, so that one that cannot be opened (another
	 * user's) still shows its owner, size and age */
	struct stat sb;
	if (lstat(path, &sb) < 0)
		return fail(st, -errno, "cannot stat the segment file");
	st->owner = sb.st_uid;
	st->size = (uint64_t)sb.st_size;
	st->created_ns = (int64_t)sb.st_ctim.tv_sec * NS_PER_SEC + sb.st_ctim.tv_nsec;
	st->last_use_ns = st->created_ns;
	if (!S_ISREG(sb.st_mode))
		return fail(st, -EINVAL, "the segment path is not a regular file");
	/* O_NONBLOCK: a FIFO put there since the lstat must not hang the reader */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fail(st, -errno, errno == EACCES ? "another user's segment, not readable by this one"
							: "cannot open the segment file");
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) { /* replaced since the lstat */
		close(fd);
		return fail(st, -EINVAL, "the segment file changed while it was read");
	}
	tb_seg_header h;
	int rc = read_header(fd, st->size, &h, st);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	st->initialised = true;
	size_t len = (size_t)h.total_size; /* read lazily: only the pages touched fault in */
	const uint8_t *base = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return fail(st, rc, "cannot map the segment's tables");
	}
	int64_t real = clock_ns(CLOCK_REALTIME), mono = clock_ns(CLOCK_MONOTONIC);
	const tb_seg_header *shared = (const tb_seg_header *)base;
	st->page_size = h.page_size;
	st->created_ns = h.created_realtime_ns;
	st->last_use_ns = h.created_realtime_ns;
	st->collector = tb_bus_collector_state(shared, mono, &st->collector_why);
	st->collector_pid = __atomic_load_n(&shared->collector_pid, __ATOMIC_ACQUIRE);
	st->collector_runs = tb_proc_exists(st->collector_pid);
	st->heartbeat_ns = __atomic_load_n(&shared->collector_heartbeat_ns, __ATOMIC_ACQUIRE);
	st->intervals = __atomic_load_n(&shared->intervals_published, __ATOMIC_RELAXED);
	if (st->heartbeat_ns > 0) {
		st->heartbeat_ns += real - mono;
		if (st->heartbeat_ns > st->last_use_ns)
			st->last_use_ns = st->heartbeat_ns;
	}
	read_tables(base, fd, &h, mono, real - mono, st); /* fd: the owner locks */
	munmap((void *)base, len);
	close(fd);
	return 0;
}

int tb_bus_scan(const char *dir, int (*each)(const tb_bus_status *st, void *arg), void *arg)
{
	char dirs[TB_SEG_DIRS_MAX][TB_SEG_PATH_MAX], path[TB_SEG_PATH_MAX];
	size_t pages[TB_SEG_DIRS_MAX];
	int n = tb_seg_dirs(dir, dirs, pages);
	bool named = dir || (getenv("TAILBUS_DIR") && *getenv("TAILBUS_DIR"));
	for (int i = 0; i < n; i++) {
		DIR *d = opendir(dirs[i]);
		if (!d) {
			if (named)
				return -errno;
			continue; /* a default place that is not there holds no bus */
		}
		struct dirent *e;
		int rc = 0;
		while (rc == 0 && (e = readdir(d))) {
			char bus[TB_BUS_NAME_MAX + 1];
			if (!bus_of(e->d_name, bus, sizeof(bus)) ||
			    snprintf(path, sizeof(path), "%s/%s", dirs[i], e->d_name) >= (int)sizeof(path))
				continue;
			tb_bus_status st;
			tb_bus_status_read(path, &st);
			rc = each(&st, arg);
		}
		closedir(d);
		if (rc)
			return rc;
	}
	return 0;
}

bool tb_bus_unused(const tb_bus_status *st)
{
	return st->error == 0 && st->collector != TB_COLLECTOR_SERVING && !st->collector_runs &&
	       st->producers == 0;
}

bool tb_bus_stale(const tb_bus_status *st, int64_t idle_ns, int64_t now_ns)
{
	return tb_bus_unused(st) && now_ns - st->last_use_ns >= idle_ns;
}

int tb_bus_remove_stale(tb_bus_status *st, int64_t idle_ns)
{
	char lock[TB_SEG_PATH_MAX + sizeof(LOCK_SUFFIX)], path[TB_SEG_PATH_MAX];
	snprintf(path, sizeof(path), "%s", st->path);
	snprintf(lock, sizeof(lock), "%s" LOCK_SUFFIX, path);
	/* a lock file this call creates goes again whatever happens; unlinking
	 * it while holding the lock is safe: a tailbusd that opened it meanwhile
	 * finds it locked (it never waits) and stops */
	bool created = true;
	int fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		created = false;
		fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return rc;
	}
	int rc = tb_bus_status_read(path, st);
	if (rc == 0 && !tb_bus_stale(st, idle_ns, clock_ns(CLOCK_REALTIME)))
		rc = st->collector == TB_COLLECTOR_SERVING || st->collector_runs || st->producers
			     ? -EBUSY : -EAGAIN;
	if (rc == 0 && unlink(path) < 0)
		rc = -errno;
	if (rc == 0 || created)
		unlink(lock);
	close(fd);
	return rc;
}
