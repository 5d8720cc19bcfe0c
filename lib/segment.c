/* segment.c - creating, attaching and validating a bus segment.
 *
 * Creation: only where the segment fits the memory it would take (seg_room.c,
 * checked before anything is created), open(O_CREAT|O_EXCL|O_NOFOLLOW), fchmod
 * to the intended mode (the umask must not decide who can read latency data),
 * size to whole pages, map, lay out the regions, initialise every ring, then
 * store the magic word with release ordering: an attacher that sees the magic
 * sees everything before it.
 *
 * Attaching: open(O_NOFOLLOW), check the owner, wait (bounded) for the magic
 * (a creator stores it last; a running collector writes back one overwritten),
 * map the header page, validate it against the file size, then map the whole
 * file. The validated header is copied into the process (tb_seg.layout) and
 * every address is computed from that copy, so a later scribble on the shared
 * header cannot move a region under a reader.
 */
#include "tailbus/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#define HUGETLBFS_MAGIC 0x958458f6
#define WAIT_STEP_NS 1000000L /* poll the creator every millisecond */
#define MOUNTS_LINE_MAX 4096

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

void tb_seg_config_default(tb_seg_config *c)
{
	c->slot_count = TB_SEG_DEFAULT_SLOTS;
	c->ring_capacity = TB_SEG_DEFAULT_RING_EVENTS;
	c->metric_capacity = TB_SEG_DEFAULT_METRICS;
	c->live_intervals = TB_SEG_DEFAULT_LIVE_INTERVALS;
	c->live_heap_bytes = TB_SEG_DEFAULT_LIVE_HEAP_BYTES;
	c->group = (gid_t)-1;
	c->wait_ms = TB_SEG_DEFAULT_WAIT_MS;
	c->fold_lanes = TB_FOLD_DEFAULT_LANES;
}

int tb_seg_layout(const tb_seg_config *c, tb_seg_header *h)
{
	if (c->slot_count == 0 || c->ring_capacity < 2 || c->metric_capacity == 0 ||
	    c->metric_capacity > TB_MAX_METRICS || c->live_intervals == 0 ||
	    c->fold_lanes > TB_FOLD_LANES_MAX || c->live_heap_bytes < TB_LIVE_HEAP_MIN ||
	    c->live_heap_bytes > TB_LIVE_HEAP_MAX)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->abi_major = TB_ABI_MAJOR;
	h->abi_minor = TB_ABI_MINOR;
	h->slot_count = c->slot_count;
	h->ring_capacity = pow2_at_least(c->ring_capacity);
	h->metric_capacity = pow2_at_least(c->metric_capacity);
	h->live_intervals = c->live_intervals;
	h->clock_kind = TB_CLOCK_MONOTONIC;
	h->slots_off = TB_HEADER_SIZE;
	h->metrics_off = h->slots_off + (uint64_t)h->slot_count * sizeof(tb_slot);
	h->live_off = h->metrics_off + (uint64_t)h->metric_capacity * sizeof(tb_metric_entry);
	h->live_stride = align_up(sizeof(tb_live_metric) +
					  (uint64_t)h->live_intervals * sizeof(tb_live_interval),
				  TB_CACHELINE);
	h->live_heap_off = h->live_off + h->metric_capacity * h->live_stride;
	h->live_heap_bytes = align_up(c->live_heap_bytes, TB_CACHELINE);
	h->rings_off = align_up(h->live_heap_off + sizeof(tb_live_heap) + h->live_heap_bytes, 4096);
	h->ring_stride = align_up(TB_RING_HEADER_SIZE + (uint64_t)h->ring_capacity * sizeof(tb_event),
				  4096);
	h->fold_lanes = c->fold_lanes;
	h->fold_stride = align_up((uint64_t)h->fold_lanes * sizeof(tb_fold_lane), 4096);
	/* only the rings can outgrow 64 bits: 2^32 slots of 2^31 events */
	uint64_t rings, folds;
	if (__builtin_mul_overflow((uint64_t)h->slot_count, h->ring_stride, &rings) ||
	    __builtin_add_overflow(h->rings_off, rings, &h->folds_off) ||
	    __builtin_mul_overflow((uint64_t)h->slot_count, h->fold_stride, &folds) ||
	    __builtin_add_overflow(h->folds_off, folds, &h->total_size))
		return -EOVERFLOW;
	return 0;
}

size_t tb_seg_size(const tb_seg_config *c)
{
	tb_seg_header h;
	return tb_seg_layout(c, &h) == 0 ? h.total_size : 0;
}

uint64_t tb_seg_need(const tb_seg_config *c, size_t page)
{
	tb_seg_header h;
	int rc = tb_seg_layout(c, &h);
	if (rc == -EOVERFLOW)
		return UINT64_MAX;
	if (rc < 0)
		return 0;
	uint64_t unit = page ? page : (uint64_t)sysconf(_SC_PAGESIZE);
	if (h.total_size > UINT64_MAX - unit)
		return UINT64_MAX;
	return (h.total_size + unit - 1) / unit * unit;
}

int tb_seg_fits(const char *dir, const tb_seg_config *c, uint64_t *need, uint64_t *room)
{
	char dirs[TB_SEG_DIRS_MAX][TB_SEG_PATH_MAX];
	size_t pages[TB_SEG_DIRS_MAX];
	int n = tb_seg_dirs(dir, dirs, pages);
	*need = 0;
	*room = 0;
	for (int i = 0; i < n; i++) {
		uint64_t want = tb_seg_need(c, pages[i]), have = tb_seg_room(dirs[i], pages[i]);
		bool fits = want <= have && want != UINT64_MAX;
		if (i == 0 || fits || have > *room) {
			*need = want;
			*room = have;
		}
		if (fits)
			return 0;
	}
	return -ENOMEM;
}

static int fail(const char **why, const char *sentence, int rc)
{
	if (why)
		*why = sentence;
	return rc;
}

int tb_seg_validate(const tb_seg_header *h, size_t size, const char **why)
{
	if (h->magic != TB_SEG_MAGIC)
		return fail(why, "header: bad magic (not a tailbus segment, or not initialised)", -EINVAL);
	if (h->abi_major != TB_ABI_MAJOR)
		return fail(why, "header: made by a tailbus of another ABI major version (stop "
				 "its collector, then start tailbusd --fresh)",
			    -EPROTO);
	if (h->slot_count == 0 || h->metric_capacity == 0 || h->metric_capacity > TB_MAX_METRICS ||
	    (h->metric_capacity & (h->metric_capacity - 1)) || h->ring_capacity < 2 ||
	    (h->ring_capacity & (h->ring_capacity - 1)) || h->live_intervals == 0 ||
	    h->fold_lanes > TB_FOLD_LANES_MAX || h->live_heap_bytes < TB_LIVE_HEAP_MIN ||
	    h->live_heap_bytes > TB_LIVE_HEAP_MAX || h->live_heap_bytes % TB_CACHELINE)
		return fail(why, "header: capacities out of range", -EINVAL);
	/* recompute the layout from the capacities: offsets must be exactly ours */
	tb_seg_config c = {h->slot_count, h->ring_capacity, h->metric_capacity, h->live_intervals,
			   (gid_t)-1, 0, h->fold_lanes, h->live_heap_bytes};
	tb_seg_header want;
	if (tb_seg_layout(&c, &want) < 0 || want.slots_off != h->slots_off ||
	    want.metrics_off != h->metrics_off || want.live_off != h->live_off ||
	    want.live_stride != h->live_stride || want.rings_off != h->rings_off ||
	    want.ring_stride != h->ring_stride || want.folds_off != h->folds_off ||
	    want.fold_stride != h->fold_stride || want.live_heap_off != h->live_heap_off ||
	    want.total_size != h->total_size)
		return fail(why, "header: region offsets do not match the capacities", -EINVAL);
	if (h->total_size > size)
		return fail(why, "header: total size larger than the file", -EINVAL);
	return 0;
}

int tb_seg_hugetlbfs_mount(char *dir, size_t cap, size_t *page_size)
{
	FILE *f = fopen("/proc/mounts", "re");
	if (!f)
		return -ENOENT;
	char line[MOUNTS_LINE_MAX], mnt[MOUNTS_LINE_MAX], type[64];
	int rc = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %4095s %63s", mnt, type) != 2 || strcmp(type, "hugetlbfs"))
			continue;
		struct statfs st;
		if (statfs(mnt, &st) < 0 || (unsigned long)st.f_type != HUGETLBFS_MAGIC)
			continue;
		if (snprintf(dir, cap, "%s", mnt) >= (int)cap)
			continue;
		*page_size = (size_t)st.f_bsize;
		rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

static bool bus_name_valid(const char *bus)
{
	size_t n = bus ? strlen(bus) : 0;
	if (n == 0 || n > TB_BUS_NAME_MAX || bus[0] == '.')
		return false;
	return strspn(bus, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

int tb_seg_dirs(const char *dir, char dirs[TB_SEG_DIRS_MAX][TB_SEG_PATH_MAX],
		size_t pages[TB_SEG_DIRS_MAX])
{
	const char *env = getenv("TAILBUS_DIR");
	if (!dir && env && *env)
		dir = env;
	if (dir) {
		snprintf(dirs[0], PATH_MAX, "%s", dir);
		struct statfs st;
		pages[0] = statfs(dir, &st) == 0 && (unsigned long)st.f_type == HUGETLBFS_MAGIC
				   ? (size_t)st.f_bsize : 0;
		return 1;
	}
	int n = 0;
	if (tb_seg_hugetlbfs_mount(dirs[n], PATH_MAX, &pages[n]) == 0)
		n++;
	snprintf(dirs[n], PATH_MAX, "%s", TB_SEG_FALLBACK_DIR);
	pages[n++] = 0;
	return n;
}

static int seg_path(char *out, const char *dir, const char *bus)
{
	return snprintf(out, PATH_MAX, "%s/%s%s", dir, bus, TB_SEG_SUFFIX) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int owner_ok(const struct stat *st)
{
	if (st->st_uid == geteuid())
		return 0;
	/* a shared bus: group members may attach when the group bits allow it */
	if ((st->st_mode & 0060) == 0060) {
		gid_t groups[256];
		int n = getgroups(256, groups);
		if (st->st_gid == getegid())
			return 0;
		for (int i = 0; i < n; i++) {
			if (groups[i] == st->st_gid)
				return 0;
		}
	}
	return -EACCES;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

static int map_existing(tb_seg *s, int fd, int wait_ms, const char **why)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return fail(why, "cannot stat the segment file", -errno);
	if (!S_ISREG(st.st_mode))
		return fail(why, "the segment path is not a regular file", -EINVAL);
	if (owner_ok(&st) < 0)
		return fail(why, "the segment file belongs to another user (and no shared group)", -EACCES);
	if (st.st_mode & 0007)
		return fail(why, "the segment file is accessible to other users; refusing it", -EACCES);
	int prot = (s->flags & TB_SEG_READONLY) ? PROT_READ : PROT_READ | PROT_WRITE;
	tb_seg_header h;
	uint64_t magic = 0;
	for (int waited = 0;; waited++) {
		if (fstat(fd, &st) < 0)
			return fail(why, "cannot stat the segment file", -errno);
		if ((size_t)st.st_size >= TB_HEADER_SIZE) {
			void *p = mmap(NULL, TB_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
			if (p == MAP_FAILED)
				return fail(why, "cannot map the segment header", -errno);
			magic = __atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE);
			memcpy(&h, p, sizeof(h));
			h.magic = magic;
			munmap(p, TB_HEADER_SIZE);
			if (magic == TB_SEG_MAGIC)
				break;
		}
		/* a magic not ours may be written back by a running collector
		 * (segguard.c): it is waited for as long as a creator's */
		if (waited >= wait_ms && magic)
			return fail(why, "header: bad magic (not a tailbus segment, or its header was "
					 "overwritten and no collector wrote it back)", -EINVAL);
		if (waited >= wait_ms)
			return fail(why, "the segment was never initialised (its creator may have died); "
					 "remove it or start tailbusd with --fresh", -ETIMEDOUT);
		sleep_ns(WAIT_STEP_NS);
	}
	int rc = tb_seg_validate(&h, (size_t)st.st_size, why);
	if (rc < 0)
		return rc;
	void *base = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return fail(why, "cannot map the segment", -errno);
	s->base = base;
	s->size = (size_t)st.st_size;
	s->layout = h;
	return 0;
}

int tb_seg_size_check(const tb_seg *s, uint64_t *file_size)
{
	struct stat st;
	if (fstat(s->fd, &st) < 0)
		return -errno;
	if (file_size)
		*file_size = (uint64_t)st.st_size;
	return (uint64_t)st.st_size < s->size ? 1 : 0;
}

/* Only system calls here: the collector's SIGBUS handler calls it. */
int tb_seg_restore_size(const tb_seg *s)
{
	if (s->flags & TB_SEG_READONLY)
		return -EROFS;
	struct stat st;
	if (fstat(s->fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size >= s->size)
		return 0;
	return ftruncate(s->fd, (off_t)s->size) < 0 ? -errno : 0;
}

void tb_seg_ring_reset(tb_seg *s, uint32_t i, uint32_t index)
{
	tb_ring_header *ring = tb_seg_ring(s, i);
	tb_event *events = tb_seg_events(s, i);
	uint32_t cap = s->layout.ring_capacity;
	unsigned log2 = tb_seg_ring_log2(s);
	tb_ring_header_init(ring, cap, index);
	for (uint32_t k = 0; k < cap; k++) {
		/* slot k next holds the first index at or after `index` that maps to it;
		 * until then it carries the other lap's bit */
		uint32_t next = index + ((k - index) & (cap - 1));
		events[k].w0 = tb_lap_bit(next, log2) ^ TB_LAP_BIT;
		events[k].w1 = 0;
	}
}

void tb_seg_folds_reset(tb_seg *s, uint32_t i)
{
	if (s->layout.fold_lanes)
		memset(tb_seg_fold_lane(s, i, 0), 0, s->layout.fold_lanes * sizeof(tb_fold_lane));
}

static void init_rings(tb_seg *s)
{
	/* a new file reads as zeros: every slot already carries the lap bit
	 * of "not yet written" for a ring at index 0 (see tb_lap_bit) */
	for (uint32_t i = 0; i < s->layout.slot_count; i++)
		tb_ring_header_init(tb_seg_ring(s, i), s->layout.ring_capacity, 0);
}

static int create_new(tb_seg *s, const char *path, size_t page, const tb_seg_config *cfg,
		      const char **why)
{
	tb_seg_header h;
	if (tb_seg_layout(cfg, &h) < 0)
		return fail(why, "bad segment configuration", -EINVAL);
	mode_t mode = cfg->group == (gid_t)-1 ? 0600 : 0660;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno; /* EEXIST: someone else is creating it */
	int rc = 0;
	if (fchmod(fd, mode) < 0 || (cfg->group != (gid_t)-1 && fchown(fd, (uid_t)-1, cfg->group) < 0))
		rc = fail(why, "cannot set the segment's permissions", -errno);
	size_t size = align_up(h.total_size, page ? page : (size_t)sysconf(_SC_PAGESIZE));
	if (rc == 0 && ftruncate(fd, (off_t)size) < 0)
		rc = fail(why, "cannot size the segment", -errno);
	void *base = MAP_FAILED;
	if (rc == 0) {
		base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
		if (base == MAP_FAILED)
			rc = fail(why, "cannot map the new segment (no free huge pages?)", -errno);
	}
	if (rc < 0) {
		unlink(path);
		close(fd);
		return rc;
	}
	h.page_size = page ? page : (uint64_t)sysconf(_SC_PAGESIZE);
	h.creator_pid = getpid();
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	h.created_realtime_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	s->base = base;
	s->size = size;
	s->fd = fd;
	s->layout = h;
	memcpy(base, &h, sizeof(h)); /* magic is still 0 */
	init_rings(s);
	s->layout.magic = TB_SEG_MAGIC;
	__atomic_store_n((uint64_t *)base, TB_SEG_MAGIC, __ATOMIC_RELEASE);
	s->created = true;
	return 0;
}

int tb_seg_open(tb_seg *s, const char *dir, const char *bus, const tb_seg_config *cfg, int flags,
		const char **why)
{
	tb_seg_config defaults;
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->flags = flags;
	if (!cfg) {
		tb_seg_config_default(&defaults);
		cfg = &defaults;
	}
	if (!bus_name_valid(bus))
		return fail(why, "bad bus name (use letters, digits, '-', '_', '.')", -EINVAL);
	char dirs[2][PATH_MAX], path[PATH_MAX];
	size_t pages[2];
	int n = tb_seg_dirs(dir, dirs, pages);
	/* attach to an existing segment wherever it is */
	for (int i = 0; i < n; i++) {
		if (seg_path(path, dirs[i], bus) < 0)
			return fail(why, "segment path too long", -ENAMETOOLONG);
		/* O_NONBLOCK: a FIFO planted at the path opens at once (a read-only
		 * open would wait for a writer) and is then refused as not a
		 * regular file; on a regular file the flag changes nothing */
		int fd = open(path, ((flags & TB_SEG_READONLY) ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC |
					    O_NONBLOCK);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0)
			return fail(why, "cannot open the segment file", -errno);
		int rc = map_existing(s, fd, cfg->wait_ms, why);
		if (rc < 0) {
			close(fd);
			return rc;
		}
		s->fd = fd;
		s->hugepages = s->layout.page_size > (uint64_t)sysconf(_SC_PAGESIZE);
		snprintf(s->path, sizeof(s->path), "%s", path);
		return 0;
	}
	if (!(flags & TB_SEG_CREATE) || (flags & TB_SEG_READONLY))
		return fail(why, "no such bus (is tailbusd running? check --dir / TAILBUS_DIR)", -ENOENT);
	for (int i = 0; i < n; i++) {
		seg_path(path, dirs[i], bus);
		const char *step_why = NULL;
		int rc = tb_seg_need(cfg, pages[i]) > tb_seg_room(dirs[i], pages[i])
				 ? fail(&step_why, pages[i] ? "not enough free huge pages for the segment"
							    : "the segment would not fit in the memory available",
					-ENOMEM)
				 : create_new(s, path, pages[i], cfg, &step_why);
		if (rc == -EEXIST) /* lost the race: attach to the winner's */
			return tb_seg_open(s, dirs[i], bus, cfg, flags & ~TB_SEG_CREATE, why);
		if (rc == 0) {
			s->hugepages = pages[i] != 0;
			snprintf(s->path, sizeof(s->path), "%s", path);
			if (i > 0)
				snprintf(s->fallback_reason, sizeof(s->fallback_reason),
					 "hugetlbfs at %.40s could not hold it (%.60s); using %.20s with 4 KiB pages",
					 dirs[0], step_why ? step_why : "error", dirs[i]);
			else if (!pages[i])
				snprintf(s->fallback_reason, sizeof(s->fallback_reason),
					 "no hugetlbfs mount; using %.100s with 4 KiB pages", dirs[i]);
			return 0;
		}
		if (i == n - 1)
			return fail(why, step_why ? step_why : "cannot create the segment", rc);
	}
	return fail(why, "cannot create the segment", -EIO);
}

void tb_seg_close(tb_seg *s)
{
	if (s->base)
		munmap(s->base, s->size);
	if (s->fd >= 0)
		close(s->fd);
	s->base = NULL;
	s->fd = -1;
}

bool tb_seg_exists(const char *dir, const char *bus)
{
	char dirs[2][PATH_MAX], path[PATH_MAX];
	size_t pages[2];
	struct stat st;
	int n = tb_seg_dirs(dir, dirs, pages);
	for (int i = 0; bus_name_valid(bus) && i < n; i++) {
		if (seg_path(path, dirs[i], bus) == 0 && lstat(path, &st) == 0)
			return true;
	}
	return false;
}

int tb_seg_unlink(const char *dir, const char *bus)
{
	char dirs[2][PATH_MAX], path[PATH_MAX];
	size_t pages[2];
	int n = tb_seg_dirs(dir, dirs, pages), rc = -ENOENT;
	if (!bus_name_valid(bus))
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (seg_path(path, dirs[i], bus) == 0 && unlink(path) == 0)
			rc = 0;
	}
	return rc;
}

size_t tb_seg_fault_page(int fd)
{
	struct statfs fs;
	long small = sysconf(_SC_PAGESIZE);
	size_t page = small > 0 ? (size_t)small : 4096;
	if (fstatfs(fd, &fs) == 0 && (unsigned long)fs.f_type == HUGETLBFS_MAGIC && fs.f_bsize > 0 &&
	    ((size_t)fs.f_bsize & ((size_t)fs.f_bsize - 1)) == 0)
		page = (size_t)fs.f_bsize;
	return page;
}
