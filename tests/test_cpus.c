/* test_cpus.c - CPU sets: adding, counting and listing; the CPUs a
 * process's pinned drain threads hold, read from /proc for this very
 * process (a thread named tb-drain0 pinned to one CPU, another to none);
 * and every thread of the process (this one and another) kept off a set,
 * or left alone when nothing would be left.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tailbus/cpus.h"

static void sets_count_and_list(void **state)
{
	(void)state;
	tb_cpus s;
	memset(&s, 0, sizeof(s));
	char buf[64];
	assert_string_equal(tb_cpus_format(&s, buf, sizeof(buf)), "");
	int cpus[] = {1, 3, 4, 5, 64, 1023, -1, 1024};
	for (size_t k = 0; k < sizeof(cpus) / sizeof(cpus[0]); k++)
		tb_cpus_add(&s, cpus[k]);
	assert_int_equal(tb_cpus_count(&s), 6); /* -1 and 1024 are outside */
	assert_true(tb_cpus_has(&s, 64));
	assert_false(tb_cpus_has(&s, 2));
	assert_false(tb_cpus_has(&s, 1024));
	assert_string_equal(tb_cpus_format(&s, buf, sizeof(buf)), "1,3-5,64,1023");
	/* cut at the last whole entry */
	assert_string_equal(tb_cpus_format(&s, buf, 8), "1,3-5");
}

struct pinned {
	const char *name;
	int cpu; /* -1: not pinned */
	pthread_barrier_t *ready, *done;
};

static void *named_thread(void *arg)
{
	struct pinned *p = arg;
	pthread_setname_np(pthread_self(), p->name);
	if (p->cpu >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(p->cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	pthread_barrier_wait(p->ready);
	pthread_barrier_wait(p->done);
	return NULL;
}

static void pinned_drain_threads_are_found(void **state)
{
	(void)state;
	tb_cpus allowed;
	assert_int_equal(tb_cpus_allowed(&allowed), 0);
	int first = -1;
	for (int k = 0; k < TB_CPUS_MAX && first < 0; k++)
		if (tb_cpus_has(&allowed, k))
			first = k;
	assert_true(first >= 0);
	pthread_barrier_t ready, done;
	pthread_barrier_init(&ready, NULL, 4);
	pthread_barrier_init(&done, NULL, 4);
	/* a pinned drain thread, an unpinned one, and a pinned thread of another name */
	struct pinned ts[3] = {{"tb-drain0", first, &ready, &done},
			       {"tb-drain1", -1, &ready, &done},
			       {"tb-close", first, &ready, &done}};
	pthread_t th[3];
	for (int k = 0; k < 3; k++)
		assert_int_equal(pthread_create(&th[k], NULL, named_thread, &ts[k]), 0);
	pthread_barrier_wait(&ready);
	tb_cpus got;
	memset(&got, 0, sizeof(got));
	int n = tb_cpus_of_drain_threads((int32_t)getpid(), &got);
	pthread_barrier_wait(&done);
	for (int k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	if (tb_cpus_count(&allowed) == 1) {
		/* one CPU: the unpinned drain thread is pinned to it too */
		assert_int_equal(n, 2);
	} else {
		assert_int_equal(n, 1);
	}
	assert_int_equal(tb_cpus_count(&got), 1);
	assert_true(tb_cpus_has(&got, first));
	/* no such process */
	memset(&got, 0, sizeof(got));
	assert_int_equal(tb_cpus_of_drain_threads(0, &got), -ESRCH);
	assert_int_equal(tb_cpus_of_drain_threads(0x7ffffff0, &got), -ESRCH);
	assert_int_equal(tb_cpus_count(&got), 0);
}

static void threads_keep_off_a_set(void **state)
{
	(void)state;
	tb_cpus allowed, off, now;
	assert_int_equal(tb_cpus_allowed(&allowed), 0);
	/* taking every CPU off leaves nothing: nothing changes */
	assert_int_equal(tb_cpus_keep_off(&allowed, &allowed), 0);
	assert_int_equal(tb_cpus_allowed(&now), 0);
	assert_memory_equal(&now, &allowed, sizeof(now));
	if (tb_cpus_count(&allowed) < 2)
		skip();
	int last = -1;
	for (int k = 0; k < TB_CPUS_MAX; k++)
		if (tb_cpus_has(&allowed, k))
			last = k;
	/* another thread, running before the call: it is moved too */
	pthread_barrier_t ready, done;
	pthread_barrier_init(&ready, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	struct pinned other = {"other", -1, &ready, &done};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, named_thread, &other), 0);
	pthread_barrier_wait(&ready);
	memset(&off, 0, sizeof(off));
	tb_cpus_add(&off, last);
	assert_int_equal(tb_cpus_keep_off(&allowed, &off), 1);
	cpu_set_t theirs;
	assert_int_equal(pthread_getaffinity_np(th, sizeof(theirs), &theirs), 0);
	pthread_barrier_wait(&done);
	pthread_join(th, NULL);
	assert_false(CPU_ISSET(last, &theirs));
	assert_int_equal(CPU_COUNT(&theirs), tb_cpus_count(&allowed) - 1);
	assert_int_equal(tb_cpus_allowed(&now), 0);
	assert_false(tb_cpus_has(&now, last));
	assert_int_equal(tb_cpus_count(&now), tb_cpus_count(&allowed) - 1);
	/* and back: nothing off */
	memset(&off, 0, sizeof(off));
	assert_int_equal(tb_cpus_keep_off(&allowed, &off), 1);
	assert_int_equal(tb_cpus_allowed(&now), 0);
	assert_memory_equal(&now, &allowed, sizeof(now));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sets_count_and_list),
		cmocka_unit_test(pinned_drain_threads_are_found),
		cmocka_unit_test(threads_keep_off_a_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
