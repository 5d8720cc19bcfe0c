/* guard.h - the producer library's list of its segment mappings, for the
 * opt-in SIGBUS guard (guard.c; tb_guard_segment_faults in producer.h). */
#ifndef TAILBUS_PRODUCER_GUARD_H
#define TAILBUS_PRODUCER_GUARD_H

#include <stddef.h>
#include <stdint.h>

/* A handle's mapping, listed at attach (cold path) and removed at detach
 * before it is unmapped. */
void tb__guard_add(uint8_t *base, size_t size, int fd);
void tb__guard_remove(uint8_t *base);

#endif
