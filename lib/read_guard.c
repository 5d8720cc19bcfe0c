/* read_guard.c - read-only segment mappings surviving a cut file
 * (tailbus/read_guard.h).
 *
 * A fixed table of mappings, so that the handler finds a faulting address
 * without locks or allocation; an entry is published by its base address,
 * stored last with release and cleared first. The handler maps a private
 * anonymous page over the faulting page of a listed mapping (mmap is a
 * plain system call: no lock of ours is taken in the handler) and counts
 * it in the entry; anything else goes where it would have gone.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sigchain.h"
#include "tailbus/read_guard.h"

typedef struct listed {
	uint8_t *base; /* NULL: a free entry; 1: being filled */
	size_t size, page;
	uint32_t covered; /* faults covered since listed */
} listed;

static listed table[TB_READ_GUARD_SEGMENTS];
static struct sigaction previous;
static int installed;

static listed *find(const uint8_t *base)
{
	for (int k = 0; k < TB_READ_GUARD_SEGMENTS; k++) {
		if (__atomic_load_n(&table[k].base, __ATOMIC_ACQUIRE) == base)
			return &table[k];
	}
	return NULL;
}

int tb_read_guard_add(const tb_seg *s)
{
	size_t page = tb_seg_fault_page(s->fd);
	for (int k = 0; k < TB_READ_GUARD_SEGMENTS; k++) {
		uint8_t *none = NULL;
		if (__atomic_load_n(&table[k].base, __ATOMIC_RELAXED) ||
		    !__atomic_compare_exchange_n(&table[k].base, &none, (uint8_t *)1, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		table[k].size = s->size;
		table[k].page = page;
		__atomic_store_n(&table[k].covered, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&table[k].base, s->base, __ATOMIC_RELEASE);
		return 0;
	}
	return -ENOSPC;
}

void tb_read_guard_remove(const tb_seg *s)
{
	listed *l = s->base ? find(s->base) : NULL;
	if (l)
		__atomic_store_n(&l->base, NULL, __ATOMIC_RELEASE);
}

bool tb_read_guard_cut(const tb_seg *s)
{
	const listed *l = s->base ? find(s->base) : NULL;
	return l && __atomic_load_n(&l->covered, __ATOMIC_ACQUIRE) > 0;
}

static bool cover(uint8_t *at)
{
	for (int k = 0; k < TB_READ_GUARD_SEGMENTS; k++) {
		uint8_t *base = __atomic_load_n(&table[k].base, __ATOMIC_ACQUIRE);
		if (base <= (uint8_t *)1 || at < base || at >= base + table[k].size)
			continue;
		uint8_t *page = base + ((size_t)(at - base) & ~(table[k].page - 1));
		void *p = mmap(page, table[k].page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED)
			return false;
		__atomic_add_fetch(&table[k].covered, 1, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	bool ok = cover(si->si_addr);
	errno = saved;
	if (!ok)
		tb__sigchain(&previous, sig, si, uc);
}

int tb_read_guard_install(void)
{
	return tb__sigbus_install(&installed, &previous, on_sigbus);
}
