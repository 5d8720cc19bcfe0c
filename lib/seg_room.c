/* seg_room.c - whether a new segment fits the memory it would live in.
 *
 * A new segment is mapped with MAP_POPULATE: every page of it is faulted in
 * by one system call, which no signal interrupts. One larger than the memory
 * the machine can give it would hold its creator for minutes before failing
 * (or let the OOM killer choose whom to end), so the size is compared first
 * with the room where it would be created, the least of:
 * - on hugetlbfs: the huge pages of its size that are free and not reserved
 *   (/sys/kernel/mm/hugepages/hugepages-<kB>kB/free_hugepages less
 *   resv_hugepages);
 * - on other file systems (tmpfs, /dev/shm): MemAvailable in /proc/meminfo;
 * - on either: the file system's free space, when it has a limit (statfs
 *   reports blocks; an unlimited tmpfs or hugetlbfs mount reports none).
 * A bound that cannot be read does not count. Nothing here creates or opens
 * anything but those /proc and /sys files, and nothing here knows the
 * segment's layout: segment.c asks (tb_seg_need, tb_seg_fits).
 */
#include "tailbus/segment.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MEMINFO_LINE_MAX 256

static uint64_t least(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* MemAvailable in bytes, or UINT64_MAX when it cannot be read. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return UINT64_MAX;
	char line[MEMINFO_LINE_MAX];
	uint64_t kb, bytes = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1) {
			bytes = kb > UINT64_MAX / 1024 ? UINT64_MAX : kb * 1024;
			break;
		}
	}
	fclose(f);
	return bytes;
}

/* A count from a /sys file, or -1. */
static int64_t sys_count(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int64_t v;
	int n = fscanf(f, "%" SCNd64, &v);
	fclose(f);
	return n == 1 && v >= 0 ? v : -1;
}

/* Free, unreserved huge pages of `page` bytes, in bytes, or UINT64_MAX. */
static uint64_t huge_available(size_t page)
{
	char path[128];
	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%zukB/free_hugepages", page / 1024);
	int64_t free_pages = sys_count(path);
	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%zukB/resv_hugepages", page / 1024);
	int64_t resv = sys_count(path);
	if (free_pages < 0)
		return UINT64_MAX;
	if (resv < 0)
		resv = 0;
	if (resv > free_pages)
		resv = free_pages;
	return (uint64_t)(free_pages - resv) * page;
}

/* The file system's free space when it has a limit, or UINT64_MAX. */
static uint64_t fs_available(const char *dir)
{
	struct statvfs st;
	if (statvfs(dir, &st) < 0 || st.f_blocks == 0 || st.f_blocks == (fsblkcnt_t)-1)
		return UINT64_MAX;
	uint64_t unit = st.f_frsize ? st.f_frsize : st.f_bsize;
	return (uint64_t)st.f_bavail > UINT64_MAX / unit ? UINT64_MAX : (uint64_t)st.f_bavail * unit;
}

uint64_t tb_seg_room(const char *dir, size_t page)
{
	return least(page ? huge_available(page) : mem_available(), fs_available(dir));
}
