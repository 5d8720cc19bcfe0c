/* threads.c - helper threads started as ordinary threads (threads.h). */
#include "threads.h"

#include <signal.h>

int tb_thread_start_ordinary(pthread_t *thread, void *(*fn)(void *), void *arg, const cpu_set_t *cpus)
{
	pthread_attr_t attr;
	struct sched_param prio = {.sched_priority = 0};
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &prio);
	if (cpus)
		pthread_attr_setaffinity_np(&attr, sizeof(*cpus), cpus);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(thread, &attr, fn, arg);
	if (rc != 0)
		rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc;
}
