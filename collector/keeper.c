/* keeper.c - the series keeper: series memory faulted in ahead of the
 * drain threads.
 *
 * A series bank is about a quarter of a MiB of counts, committed by the
 * kernel on first touch. No drain thread touches one first: a drain thread
 * takes a new series only from those already faulted in, [0, series_ready)
 * (tb_series_at_hand, series.c). When none is ready it leaves the event in
 * its ring, asks for one and goes on with its other rings; the event is
 * read again on a later pass.
 *
 * The keeper is a thread of its own (tb-series, an ordinary thread on the
 * CPUs the collector was opened with, less the closer's where another is
 * left), not the closer, whose close takes milliseconds. It sleeps on a futex
 * (`keeper_seq`, which every wake-up moves) and faults in, one series at a
 * time so that a waiting drain thread goes on as soon as its own is ready,
 * up to the reserve past those taken (--series-reserve, or half those
 * taken if more) and at least `series_wanted` (the number of series asked
 * for). A drain thread wakes it twice at most per refill: when a series it
 * takes leaves half the reserve or less ready, and when it finds none;
 * never under the pool's lock. The keeper also looks every
 * TB_KEEPER_LOOK_NS, and the run loop keeps the reserve itself (tick)
 * should the keeper not have started.
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "threads.h"

#define TB_KEEPER_LOOK_NS 50000000LL

uint32_t tb_series_target(const tb_collector *c, uint32_t taken)
{
	/* ahead by the reserve, or by half of what is taken when that is
	 * more: rings that start many metrics at once come in bursts */
	uint32_t reserve = c->cfg.series_reserve;
	uint64_t ahead = taken / 2 > reserve ? taken / 2 : reserve;
	uint64_t want = (uint64_t)taken + ahead;
	return want > c->cfg.max_series ? c->cfg.max_series : (uint32_t)want;
}

void tb_series_prefault(tb_collector *c)
{
	pthread_mutex_lock(&c->keeper_lock);
	uint32_t want = tb_series_target(c, __atomic_load_n(&c->nseries, __ATOMIC_ACQUIRE));
	uint32_t wanted = __atomic_load_n(&c->series_wanted, __ATOMIC_ACQUIRE);
	if (want < wanted)
		want = wanted < c->cfg.max_series ? wanted : c->cfg.max_series;
	uint32_t ready = __atomic_load_n(&c->series_ready, __ATOMIC_ACQUIRE);
	for (; ready < want; ready++) {
		/* both banks of series `ready` lie side by side in the pool */
		tb_pages_fault_in(c->series[ready].fast[0], 2 * tb_series_bytes_per_bank());
		/* release: its pages are in before a drain thread takes it */
		__atomic_store_n(&c->series_ready, ready + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&c->keeper_lock);
}

/* Wake the keeper: its futex word moves, so a keeper about to wait on
 * the value it read before does not sleep. */
static void wake_keeper(tb_collector *c)
{
	__atomic_add_fetch(&c->keeper_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &c->keeper_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Raise *word to `to` if it is below; true if this call raised it. */
static bool raise_to(uint32_t *word, uint32_t to)
{
	uint32_t had = __atomic_load_n(word, __ATOMIC_RELAXED);
	do {
		if (had >= to)
			return false;
	} while (!__atomic_compare_exchange_n(word, &had, to, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return true;
}

bool tb_series_ask(tb_collector *c, uint32_t want, bool waiting)
{
	if (want == 0)
		return false;
	/* a wait is counted once per series waited for, asked for already
	 * (a refill on its way) or not */
	bool counted = waiting && raise_to(&c->series_waited_for, want);
	if (counted)
		__atomic_add_fetch(&c->series_waits, 1, __ATOMIC_RELAXED);
	if (raise_to(&c->series_wanted, want) && __atomic_load_n(&c->keeper_running, __ATOMIC_ACQUIRE))
		wake_keeper(c); /* not asked for before */
	return counted;
}

static void *keeper_main(void *arg)
{
	tb_collector *c = arg;
	pthread_setname_np(pthread_self(), "tb-series");
	int64_t every = c->cfg.test_keeper_look_ns > 0 ? c->cfg.test_keeper_look_ns : TB_KEEPER_LOOK_NS;
	struct timespec look = {(time_t)(every / 1000000000), (long)(every % 1000000000)};
	for (;;) {
		uint32_t seen = __atomic_load_n(&c->keeper_seq, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&c->keeper_stop, __ATOMIC_ACQUIRE))
			break;
		tb_series_prefault(c);
		__atomic_add_fetch(&c->keeper_looks, 1, __ATOMIC_RELEASE);
		/* returns at once if a wake-up came after `seen` was read */
		syscall(SYS_futex, &c->keeper_seq, FUTEX_WAIT_PRIVATE, seen, &look, NULL, 0);
	}
	return NULL;
}

int tb_keeper_start(tb_collector *c)
{
	if (c->keeper_started)
		return 0;
	__atomic_store_n(&c->keeper_stop, 0, __ATOMIC_RELAXED);
	/* an ordinary thread (threads.h) on the CPUs the collector was opened
	 * with, less the closer's where another is left: it would otherwise
	 * wait out a close behind the closer */
	cpu_set_t cpus = c->open_cpus;
	int close_cpu = c->cfg.close_cpu;
	if (close_cpu >= 0 && close_cpu < CPU_SETSIZE && CPU_ISSET(close_cpu, &cpus) && CPU_COUNT(&cpus) > 1)
		CPU_CLR(close_cpu, &cpus);
	int rc = tb_thread_start_ordinary(&c->keeper, keeper_main, c, c->open_cpus_known ? &cpus : NULL);
	if (rc != 0)
		return -rc;
	c->keeper_started = true;
	/* from here on a drain thread may wait for series memory */
	__atomic_store_n(&c->keeper_running, 1, __ATOMIC_RELEASE);
	return 0;
}

void tb_keeper_stop(tb_collector *c)
{
	if (!c->keeper_started)
		return;
	__atomic_store_n(&c->keeper_running, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->keeper_stop, 1, __ATOMIC_SEQ_CST);
	wake_keeper(c);
	pthread_join(c->keeper, NULL);
	c->keeper_started = false;
}
