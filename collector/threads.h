/* threads.h - starting tailbusd's helper threads (the pwrite writer, the
 * series keeper) as ordinary threads.
 *
 * tailbusd may run SCHED_FIFO (--fifo) and its run loop pinned to one CPU
 * (--close-cpu): a thread started from it would inherit both, and compete
 * with the drain loop or the closer as an equal. A helper thread is
 * SCHED_OTHER instead, on the CPUs given (NULL: as inherited), with every
 * signal blocked (signals are the run loop's).
 */
#ifndef TAILBUS_COLLECTOR_THREADS_H
#define TAILBUS_COLLECTOR_THREADS_H

#include <pthread.h>
#include <sched.h>

/* pthread_create's result: 0, or an error number. Settings refused (a CPU
 * gone from `cpus`, SCHED_IDLE without privilege): started as the caller
 * runs instead. */
int tb_thread_start_ordinary(pthread_t *thread, void *(*fn)(void *), void *arg, const cpu_set_t *cpus);

#endif
