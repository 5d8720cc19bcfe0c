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
 * store is retried on a page that exists again (as zeros). Only system
 * calls that are async-signal-safe. A fault it cannot repair goes to the
 * handler before it, or, if that was the default, restores the default and
 * returns, so the fault recurs and ends the process as it would have.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guard.h"
#include "tailbus/producer.h"

typedef struct guarded {
	uint8_t *base; /* NULL: a free entry */
	size_t size;
	int fd;
} guarded;

static guarded table[TB_GUARD_SEGMENTS];
static struct sigaction previous;
static int installed;
static uint64_t repairs;

void tb__guard_add(uint8_t *base, size_t size, int fd)
{
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
			return true; /* restored since (by the collector): retry */
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
	if (ok)
		return;
	if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
		previous.sa_sigaction(sig, si, uc);
	} else if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL &&
		   previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
	} else {
		/* the default action when the fault recurs (a SIGBUS from a
		 * fault cannot be ignored either) */
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
	}
}

int tb_guard_segment_faults(void)
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

uint64_t tb_guard_repairs(void)
{
	return __atomic_load_n(&repairs, __ATOMIC_RELAXED);
}
