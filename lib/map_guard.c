/* map_guard.c - segment mappings that survive their file being cut
 * (map_guard.h).
 *
 * Anyone who may write a segment file may shrink it, and an access to a
 * mapped page past the new end is a SIGBUS, whose default action ends the
 * process. Mappings are listed in a fixed table, so that the handler finds
 * a faulting address without locks or allocation: an entry is claimed with
 * a marker no address equals, filled, and published by its base address
 * (release); it is cleared first when taken off.
 *
 * At a fault inside a listed mapping the handler, with plain system calls
 * only:
 *  - writable, file shorter than the mapping: gives the file its size back
 *    (ftruncate) and returns, so the store is retried on a page of zeros;
 *  - writable, file whole: the page is one the file system could not give
 *    (tmpfs or hugetlbfs out of memory after a restored cut left a hole, a
 *    sparse file bigger than its file system): allocates it (fallocate) and
 *    retries; with no room, covers it;
 *  - read-only, or a repair that fails: covers the page with a private
 *    anonymous one (zeros), so the access is retried and the thread goes
 *    on; what is written there is lost, and what is read is zeros, which no
 *    reader takes for a published interval.
 * A fault it cannot place goes to the handler that was installed before
 * it, or, if that was the default, restores the default and returns, so
 * the fault recurs and ends the process as it would have.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "map_guard.h"
#include "tailbus/segment.h"

typedef struct listed {
	uint8_t *base; /* NULL: a free entry; 1: being filled */
	size_t size;
	size_t page; /* the file system's page (a huge page on hugetlbfs) */
	int fd;
	bool writable;
	uint32_t covered; /* faults covered by a private page since listed */
} listed;

#define FILLING ((uint8_t *)1)

static listed table[TB_MAP_GUARD_MAPPINGS];
static struct sigaction previous;
static int installed;
static uint64_t repairs;
/* the last page allocated with the file whole, to tell a fault that recurs
 * when the file system cannot say whether it has room */
static uint8_t *last_placed;

int tb__map_guard_add(uint8_t *base, size_t size, int fd, bool writable)
{
	size_t page = tb_seg_fault_page(fd);
	for (int k = 0; k < TB_MAP_GUARD_MAPPINGS; k++) {
		uint8_t *none = NULL;
		if (__atomic_load_n(&table[k].base, __ATOMIC_RELAXED) ||
		    !__atomic_compare_exchange_n(&table[k].base, &none, FILLING, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		table[k].size = size;
		table[k].page = page;
		table[k].fd = fd;
		table[k].writable = writable;
		__atomic_store_n(&table[k].covered, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&table[k].base, base, __ATOMIC_RELEASE);
		return 0;
	}
	return -ENOSPC;
}

static listed *find(const uint8_t *base)
{
	if (!base)
		return NULL;
	for (int k = 0; k < TB_MAP_GUARD_MAPPINGS; k++) {
		if (__atomic_load_n(&table[k].base, __ATOMIC_ACQUIRE) == base)
			return &table[k];
	}
	return NULL;
}

void tb__map_guard_remove(const uint8_t *base)
{
	listed *l = find(base);
	if (l)
		__atomic_store_n(&l->base, NULL, __ATOMIC_RELEASE);
}

uint32_t tb__map_guard_covered(const uint8_t *base)
{
	const listed *l = find(base);
	return l ? __atomic_load_n(&l->covered, __ATOMIC_ACQUIRE) : 0;
}

uint64_t tb__map_guard_repairs(void)
{
	return __atomic_load_n(&repairs, __ATOMIC_RELAXED);
}

static int dev_null = -1;

void tb__map_guard_prepare_forks(void)
{
	dev_null = open("/dev/null", O_RDWR | O_CLOEXEC);
}

/* Whether dev_null is still /dev/null (character device 1:3): a process
 * that closed what it inherited may have its number for something else. */
static bool still_dev_null(void)
{
	struct stat st;
	return dev_null >= 0 && fstat(dev_null, &st) == 0 && S_ISCHR(st.st_mode) &&
	       major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
}

void tb__map_guard_forget_writable(void)
{
	for (int k = 0; k < TB_MAP_GUARD_MAPPINGS; k++) {
		uint8_t *base = __atomic_load_n(&table[k].base, __ATOMIC_ACQUIRE);
		if (base <= FILLING || !table[k].writable)
			continue;
		/* MAP_NORESERVE: no commit charge to be refused for it */
		mmap(base, table[k].size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
		/* the number stays taken, so the handle's close at detach closes
		 * nothing of the child's; without /dev/null, closed */
		if (!still_dev_null() || dup3(dev_null, table[k].fd, O_CLOEXEC) < 0)
			close(table[k].fd);
		table[k].writable = false;
	}
}

/* A private page of zeros over the faulting page of l. */
static bool cover(listed *l, uint8_t *page)
{
	int prot = l->writable ? PROT_READ | PROT_WRITE : PROT_READ;
	if (mmap(page, l->page, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return false;
	__atomic_add_fetch(&l->covered, 1, __ATOMIC_RELEASE);
	if (l->writable)
		__atomic_add_fetch(&repairs, 1, __ATOMIC_RELAXED);
	return true;
}

/* True when the store may be retried on the file's own page. */
static bool repaired(const listed *l, uint8_t *page)
{
	struct stat st;
	if (fstat(l->fd, &st) < 0)
		return false;
	if ((uint64_t)st.st_size < l->size) {
		if (ftruncate(l->fd, (off_t)l->size) < 0)
			return false;
		__atomic_add_fetch(&repairs, 1, __ATOMIC_RELAXED);
		return true;
	}
	/* whole (given back meanwhile?): the page itself is missing */
	off_t off = (off_t)(page - l->base);
	if (fallocate(l->fd, 0, off, (off_t)l->page) == 0)
		return true; /* there now, or was: retry */
	/* no room (ENOSPC), or a file system that cannot say (EOPNOTSUPP):
	 * then the first fault at a page is retried, the second is not */
	return errno != ENOSPC && __atomic_exchange_n(&last_placed, page, __ATOMIC_RELAXED) != page;
}

static bool place(uint8_t *at)
{
	for (int k = 0; k < TB_MAP_GUARD_MAPPINGS; k++) {
		uint8_t *base = __atomic_load_n(&table[k].base, __ATOMIC_ACQUIRE);
		if (base <= FILLING || at < base || at >= base + table[k].size)
			continue;
		listed *l = &table[k];
		uint8_t *page = base + ((size_t)(at - base) & ~(l->page - 1));
		return (l->writable && repaired(l, page)) || cover(l, page);
	}
	return false;
}

/* A fault ours does not place: to the previous handler, or, if that was
 * the default (or ignore, which a fault's SIGBUS cannot be), back to the
 * default action, so that the fault recurs and ends the process. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
		previous.sa_sigaction(sig, si, uc);
	} else if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL &&
		   previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
	} else {
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
	}
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	bool ok = place(si->si_addr);
	errno = saved;
	if (!ok)
		chain(sig, si, uc);
}

int tb__map_guard_install(void)
{
	if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
		return 0;
	struct sigaction sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &previous) < 0) {
		int rc = -errno;
		__atomic_store_n(&installed, 0, __ATOMIC_RELEASE);
		return rc;
	}
	return 0;
}
