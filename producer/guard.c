/* guard.c - surviving a segment truncated under the engine (opt-in).
 *
 * Every attached handle's mapping is listed here, at tb_attach and removed
 * at tb_detach (cold path, whether or not the guard is on), in a fixed
 * table: the handler must find a faulting address without locks or
 * allocation. An entry is published by its base address, stored last with
 * release and cleared first, so the handler never uses a half-written one.
 *
 * The handler (installed only by tb_guard_segment_faults, which the engine
 * calls) repairs a fault inside a listed mapping whose file is shorter than
 * the mapping: ftruncate back to the mapping's size, then return, so the
 * store is retried on a page that exists again (as zeros). A fault in a
 * mapping whose file is whole is a page the file system could not give
 * (tmpfs or hugetlbfs out of memory, after a restored cut left holes, or a
 * sparse file made bigger than its file system): the page is allocated
 * (fallocate) and the store retried, or, when there is no room, a private
 * page is mapped over it, so that the thread goes on and what it writes
 * there is lost (the collector counts the events it never sees as bad),
 * never the engine. Only plain system calls, no locks or allocation. A
 * fault it cannot place goes to the handler before it, or, if that was the
 * default, restores the default and returns, so the fault recurs and ends
 * the process as it would have.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/sigchain.h"
#include "guard.h"
#include "tailbus/producer.h"
#include "tailbus/segment.h"

typedef struct guarded {
	uint8_t *base; /* NULL: a free entry */
	size_t size;
	int fd;
	size_t page; /* the mapping's page size (a huge page on hugetlbfs) */
} guarded;

static guarded table[TB_GUARD_SEGMENTS];
static struct sigaction previous;
static int installed;
static uint64_t repairs;
/* the last page placed with the file whole, to tell a fault that recurs
 * when the file system cannot say whether it has room */
static uint8_t *last_placed;

void tb__guard_add(uint8_t *base, size_t size, int fd)
{
	size_t page = tb_seg_fault_page(fd);
	for (int k = 0; k < TB_GUARD_SEGMENTS; k++) {
		uint8_t *none = NULL;
		if (__atomic_load_n(&table[k].base, __ATOMIC_RELAXED))
			continue;
		/* claim with a marker no fault address can equal, fill, publish */
		if (!__atomic_compare_exchange_n(&table[k].base, &none, (uint8_t *)1, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		table[k].size = size;
		table[k].fd = fd;
		table[k].page = page;
		__atomic_store_n(&table[k].base, base, __ATOMIC_RELEASE);
		return;
	}
	/* full: this handle is not guarded (TB_GUARD_SEGMENTS in producer.h) */
}

void tb__guard_remove(uint8_t *base)
{
	for (int k = 0; k < TB_GUARD_SEGMENTS; k++) {
		if (__atomic_load_n(&table[k].base, __ATOMIC_ACQUIRE) == base) {
			__atomic_store_n(&table[k].base, NULL, __ATOMIC_RELEASE);
			return;
		}
	}
}

/* A fault at `at` in mapping g, whose file is whole: the page allocated
 * in the file and the store retried; with no room, a private page over it. */
static bool place(const guarded *g, uint8_t *at)
{
	size_t off = (size_t)(at - g->base) & ~(g->page - 1);
	uint8_t *page = g->base + off;
	int rc = fallocate(g->fd, 0, (off_t)off, (off_t)g->page);
	if (rc == 0)
		return true; /* there now, or was: restored since, retry */
	/* no room (ENOSPC), or a file system that cannot say (EOPNOTSUPP):
	 * then the first fault at a page is retried, the second is not */
	if (errno != ENOSPC && __atomic_exchange_n(&last_placed, page, __ATOMIC_RELAXED) != page)
		return true;
	void *p = mmap(page, g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0);
	if (p == MAP_FAILED)
		return false;
	__atomic_add_fetch(&repairs, 1, __ATOMIC_RELAXED);
	return true;
}

static bool repair(uint8_t *at)
{
	for (int k = 0; k < TB_GUARD_SEGMENTS; k++) {
		uint8_t *base = __atomic_load_n(&table[k].base, __ATOMIC_ACQUIRE);
		if (base <= (uint8_t *)1 || at < base || at >= base + table[k].size)
			continue;
		struct stat st;
		if (fstat(table[k].fd, &st) < 0)
			return false;
		if ((uint64_t)st.st_size >= table[k].size)
			return place(&table[k], at); /* whole (restored by the collector?) */
		if (ftruncate(table[k].fd, (off_t)table[k].size) < 0)
			return false;
		__atomic_add_fetch(&repairs, 1, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	bool ok = repair(si->si_addr);
	errno = saved;
	if (!ok)
		tb__sigchain(&previous, sig, si, uc);
}

int tb_guard_segment_faults(void)
{
	return tb__sigbus_install(&installed, &previous, on_sigbus);
}

uint64_t tb_guard_repairs(void)
{
	return __atomic_load_n(&repairs, __ATOMIC_RELAXED);
}
