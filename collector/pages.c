/* pages.c - memory faulted in before a drain thread needs it.
 *
 * Memory from calloc or an anonymous mapping is committed by the kernel on
 * first touch: a page fault on whichever thread touches it first, a read
 * included (it maps the zero page, and the first write faults again). The
 * collector faults in what its drain threads will touch on the thread that
 * allocates it, or on the series keeper (keeper.c), so that no drain
 * thread stops for the kernel on its way through the rings.
 *
 * The segment too: it is created with its pages in memory, but a shared
 * mapping is populated read-only (nothing to copy on write), so the first
 * write to each page faults again, and a drain thread writes whole rings
 * and fold lanes when it hands a slot back.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* MADV_POPULATE_WRITE over the pages of [p, p + len): each mapped
 * writable, without changing a byte (the parts of its first and last page
 * outside the range as well: they are ours too). */
static int populate(void *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *lo = p, *hi = lo + len;
	char *first = (char *)((uintptr_t)lo & ~(uintptr_t)(page - 1));
	return madvise(first, (size_t)(hi - first), MADV_POPULATE_WRITE);
}

void tb_pages_map_shared(void *p, size_t len)
{
	/* no fallback: a write to a shared page could meet a file cut short
	 * (SIGBUS); MADV_POPULATE_WRITE says EFAULT instead */
	if (p && len)
		(void)populate(p, len);
}

void tb_pages_fault_in(void *p, size_t len)
{
	if (!p || len == 0)
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *lo = p, *hi = lo + len;
	if (populate(p, len) == 0)
		return;
	/* a kernel without it (before 5.14): a write to each page that changes
	 * nothing, as one atomic OR of 0, so that another thread's write to the
	 * same byte meanwhile is never undone (a plain read and write back
	 * could lose it) */
	for (char *at = lo; at < hi; at = (char *)(((uintptr_t)at + page) & ~(uintptr_t)(page - 1)))
		(void)__atomic_fetch_or(at, 0, __ATOMIC_RELAXED);
}
