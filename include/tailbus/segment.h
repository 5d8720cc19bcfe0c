/* tailbus/segment.h - finding, creating, attaching and validating a bus segment.
 *
 * A bus is one file named after it, in the first of: the caller's directory,
 * $TAILBUS_DIR, the first hugetlbfs mount in /proc/mounts, /dev/shm. An
 * existing segment is attached wherever it is found in that order; a new one
 * is created in the first place that works (hugetlbfs needs free huge pages;
 * when it has none the segment goes to /dev/shm and `fallback_reason` says
 * why, for the tool to print).
 *
 * Start order does not matter: the creator opens the file exclusively, sizes
 * and initialises it, and stores the magic word last (release); an attacher
 * waits, up to a timeout, for the magic, then validates the header against
 * the file size before trusting any offset. Files are created 0600 (0660 with
 * a group), with O_NOFOLLOW, and an attacher refuses a file owned by another
 * user unless it shares the group and the group bits are set.
 */
#ifndef TAILBUS_SEGMENT_H
#define TAILBUS_SEGMENT_H

#include <limits.h> /* PATH_MAX, which some includers take from here */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tailbus/seg_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_BUS_NAME_MAX 64
#define TB_SEG_DEFAULT_SLOTS 16
#define TB_SEG_DEFAULT_RING_EVENTS 65536 /* 1 MiB of events per thread */
#define TB_SEG_DEFAULT_METRICS 256
#define TB_SEG_DEFAULT_LIVE_INTERVALS 64 /* more than a minute of 1 s intervals */
/* The live heap (seg_abi.h): 32 MiB, of which 28 MiB is sure to be in use,
 * keeps the 64 intervals of 22 metrics whose frames are 20 KiB (a 3-digit
 * histogram of millions of events spread over 100 ns to 100 ms), or of 256
 * metrics whose frames are under 1.75 KiB (docs/design.md, The live area). */
#define TB_SEG_DEFAULT_LIVE_HEAP_BYTES (UINT64_C(32) << 20)
#define TB_SEG_DEFAULT_WAIT_MS 2000
#define TB_SEG_FALLBACK_DIR "/dev/shm"
#define TB_SEG_SUFFIX ".tailbus"
/* Room for a segment's path: Linux's PATH_MAX, spelled out because strict
 * C (-std=c11) does not define PATH_MAX in <limits.h>. */
#define TB_SEG_PATH_MAX 4096

typedef struct tb_seg_config {
	uint32_t slot_count;
	uint32_t ring_capacity; /* events; rounded up to a power of two */
	uint32_t metric_capacity;
	uint32_t live_intervals;
	gid_t group;     /* (gid_t)-1: private 0600; else 0660 with this group */
	int wait_ms;     /* how long an attacher waits for the creator */
	uint32_t fold_lanes; /* per slot, <= TB_FOLD_LANES_MAX (seg_abi.h); 0: none */
	/* TB_LIVE_HEAP_MIN..TB_LIVE_HEAP_MAX (seg_abi.h); rounded up to 64 */
	uint64_t live_heap_bytes;
} tb_seg_config;

enum tb_seg_flags {
	TB_SEG_CREATE = 1 << 0,   /* create the segment if it does not exist */
	TB_SEG_READONLY = 1 << 1, /* map PROT_READ (tools) */
};

typedef struct tb_seg {
	uint8_t *base;
	size_t size;
	int fd;
	int flags;
	bool created;   /* this call created and initialised it */
	bool hugepages; /* backed by hugetlbfs */
	char path[TB_SEG_PATH_MAX];
	char fallback_reason[256]; /* why a new segment is not on hugetlbfs, or "" */
	tb_seg_header layout;      /* private copy of the validated header */
} tb_seg;

void tb_seg_config_default(tb_seg_config *c);
/* Segment size for a configuration, before rounding to the page size. */
size_t tb_seg_size(const tb_seg_config *c);
/* Fill a header's layout fields from a configuration (no magic). Returns
 * 0, -EINVAL for a capacity out of range, or -EOVERFLOW for a segment too
 * large for 64-bit offsets. */
int tb_seg_layout(const tb_seg_config *c, tb_seg_header *h);

/* Room for a new segment (seg_room.c). A new segment is faulted in whole
 * when it is created, so its creator first checks that it fits where it
 * would live: the least of the free, unreserved huge pages of its size (on
 * hugetlbfs) or MemAvailable (elsewhere), and the file system's free space
 * when it has a limit. */
/* The bytes a new segment of configuration c takes in a directory whose
 * huge page size is `page` (0: ordinary pages), whole pages; UINT64_MAX
 * when it overflows 64 bits, 0 when the configuration is refused anyway. */
uint64_t tb_seg_need(const tb_seg_config *c, size_t page);
/* The room in directory `dir` of that page size, in bytes (UINT64_MAX when
 * no bound could be read). */
uint64_t tb_seg_room(const char *dir, size_t page);
/* Whether a new segment of configuration c fits one of the directories a
 * bus is created in (tb_seg_dirs): 0 if it does, -ENOMEM if it fits none;
 * *need and *room are those of the directory that fits, else of the one
 * with the most room. */
int tb_seg_fits(const char *dir, const tb_seg_config *c, uint64_t *need, uint64_t *room);

/* The first hugetlbfs mount point in /proc/mounts and its page size.
 * Returns 0, or -ENOENT when none is mounted. */
int tb_seg_hugetlbfs_mount(char *dir, size_t cap, size_t *page_size);

/* The directories a bus is looked for in, in order: `dir`, else
 * $TAILBUS_DIR, else the first hugetlbfs mount (if any) and then /dev/shm.
 * Fills dirs and their page sizes (0: not hugetlbfs) and returns how many. */
#define TB_SEG_DIRS_MAX 2
int tb_seg_dirs(const char *dir, char dirs[TB_SEG_DIRS_MAX][TB_SEG_PATH_MAX],
		size_t pages[TB_SEG_DIRS_MAX]);

/* Open the bus `bus` (letters, digits, '-', '_', '.'; no '/'). `dir` may be
 * NULL for the default search. Returns 0 or a negative errno; on failure
 * *why (if given) holds a static sentence. */
int tb_seg_open(tb_seg *s, const char *dir, const char *bus, const tb_seg_config *cfg,
		int flags, const char **why);
void tb_seg_close(tb_seg *s);
/* Remove the segment file (tests, `tailbusd --fresh`). */
int tb_seg_unlink(const char *dir, const char *bus);
/* Whether a file of the bus's name is in one of its directories (then
 * tb_seg_open attaches to it, or refuses it, and creates nothing). */
bool tb_seg_exists(const char *dir, const char *bus);

/* Whether the segment file is still as large as the mapping: 0 if it is,
 * 1 if it was shrunk (truncated by someone who may write it), with the
 * size found in *file_size, or a negative errno. One fstat. */
int tb_seg_size_check(const tb_seg *s, uint64_t *file_size);
/* Bring a shrunk segment file back to the mapping's size (ftruncate), so
 * that the mapping's pages past the cut exist again: they read as zeros,
 * whatever was there before is lost. Returns 0 or a negative errno
 * (-EROFS on a read-only mapping). Async-signal-safe. */
int tb_seg_restore_size(const tb_seg *s);

/* Check a header read from a segment of `size` bytes: magic, version,
 * capacities and that every region lies inside the file. 0 or -EINVAL/-EPROTO. */
int tb_seg_validate(const tb_seg_header *h, size_t size, const char **why);

/* Region accessors over the private layout copy (never the shared header). */
static inline tb_slot *tb_seg_slot(const tb_seg *s, uint32_t i)
{
	return (tb_slot *)(s->base + s->layout.slots_off) + i;
}
static inline tb_metric_entry *tb_seg_metric(const tb_seg *s, uint32_t id)
{
	return (tb_metric_entry *)(s->base + s->layout.metrics_off) + id;
}
static inline tb_ring_header *tb_seg_ring(const tb_seg *s, uint32_t i)
{
	return (tb_ring_header *)(s->base + s->layout.rings_off + (uint64_t)i * s->layout.ring_stride);
}
static inline tb_event *tb_seg_events(const tb_seg *s, uint32_t i)
{
	return (tb_event *)((uint8_t *)tb_seg_ring(s, i) + TB_RING_HEADER_SIZE);
}
/* log2 of the ring capacity (a power of two), for tb_lap_bit. */
static inline unsigned tb_seg_ring_log2(const tb_seg *s)
{
	return (unsigned)__builtin_ctz(s->layout.ring_capacity);
}

/* Start ring i afresh at index `index`, with nothing in it: both indices
 * set to it, and every slot marked as not yet written for the pass that
 * begins there. Only while neither a producer nor a collector uses it (a
 * slot the collector frees, tests); a new segment's zeroed rings are already
 * so at index 0. */
void tb_seg_ring_reset(tb_seg *s, uint32_t i, uint32_t index);

/* Lane k (< layout.fold_lanes) of slot i. */
static inline tb_fold_lane *tb_seg_fold_lane(const tb_seg *s, uint32_t i, uint32_t k)
{
	return (tb_fold_lane *)(s->base + s->layout.folds_off + (uint64_t)i * s->layout.fold_stride) + k;
}
/* Every lane of slot i free and empty, as in a new segment: only while
 * neither a producer nor a collector uses it (a slot the collector frees). */
void tb_seg_folds_reset(tb_seg *s, uint32_t i);

static inline tb_live_metric *tb_seg_live(const tb_seg *s, uint32_t id)
{
	return (tb_live_metric *)(s->base + s->layout.live_off + (uint64_t)id * s->layout.live_stride);
}
static inline tb_live_interval *tb_seg_live_interval(const tb_seg *s, uint32_t id, uint32_t k)
{
	return (tb_live_interval *)((uint8_t *)tb_seg_live(s, id) + sizeof(tb_live_metric)) + k;
}
static inline tb_live_heap *tb_seg_live_heap(const tb_seg *s)
{
	return (tb_live_heap *)(s->base + s->layout.live_heap_off);
}
/* The heap's live_heap_bytes bytes, after its header. */
static inline uint8_t *tb_seg_live_heap_bytes(const tb_seg *s)
{
	return (uint8_t *)(tb_seg_live_heap(s) + 1);
}

/* Metric registry: find or add `name` (1..47 bytes of [A-Za-z0-9_.:-]).
 * Returns the id (>= 0), -EINVAL for a bad name, -ENOSPC when the table is
 * full, or -EROFS on a read-only mapping. */
int tb_seg_metric_register(tb_seg *s, const char *name);
/* Find only. Returns the id or -ENOENT. */
int tb_seg_metric_find(const tb_seg *s, const char *name);
bool tb_seg_metric_name_valid(const char *name);
/* Metric `id`'s name as tools and logs show it, read defensively (producers
 * write the table): the name, or "metric#<id>" when it is not a valid one
 * (no valid name holds "#", so it is never a real metric's) or a lookup
 * of the name would not end at `id`: another READY entry of the name lies
 * before it on the name's probe sequence (a registrant that stalled
 * mid-registration while another registered the name again further on),
 * or an empty one does (a copy scribbled off the sequence). So two series
 * never share a name, in a log, top or Prometheus.
 * `id` must be below the layout's metric_capacity. */
void tb_seg_metric_shown_name(const tb_seg *s, uint32_t id, char *out, size_t cap);
/* "metric#<id>": what a metric is shown as when its name cannot be. */
void tb_seg_metric_id_name(uint32_t id, char *out, size_t cap);

/* The page that a fault in a mapping of file `fd` falls in: the file
 * system's huge page on hugetlbfs, else the system's page. From the file
 * system, never from the segment's header, which anyone who may write the
 * file may have changed (the SIGBUS guards map a private page over it). */
size_t tb_seg_fault_page(int fd);

#ifdef __cplusplus
}
#endif
#endif
