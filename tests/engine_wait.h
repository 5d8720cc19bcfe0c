/* engine_wait.h - the segment-space test programs' wait for their engine
 * (a forked child that records): tb_guard_full.c, tb_sparse_segment.c. */
#ifndef TB_TEST_ENGINE_WAIT_H
#define TB_TEST_ENGINE_WAIT_H

#include <stdbool.h>
#include <sys/types.h>

/* Wait up to `seconds` for child `pid`, looking every 100 ms. True with
 * *status when it ended (a death by signal is printed); false when it has
 * not, after printing its state and CPU ticks from /proc and killing it. */
bool engine_wait(pid_t pid, int seconds, int *status);

#endif
