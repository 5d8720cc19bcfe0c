/* map_guard.h - segment mappings that survive their file being cut: the
 * table a SIGBUS handler searches, and the handler (map_guard.c). Compiled
 * into the producer library, behind tb_guard_segment_faults (producer.h),
 * and into the tools' library, behind tailbus/read_guard.h. Private to the
 * libraries. */
#ifndef TAILBUS_MAP_GUARD_H
#define TAILBUS_MAP_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Mappings listed at a time (TB_GUARD_SEGMENTS, TB_READ_GUARD_SEGMENTS). */
#define TB_MAP_GUARD_MAPPINGS 1024

/* List a mapping of file `fd` (kept open while listed) before its first
 * access, whether or not the handler is installed: 0, or -ENOSPC when the
 * table is full (that mapping is not guarded). A writable mapping is
 * repaired where the file can be (its size given back, its page
 * allocated); a read-only one, or one that cannot be repaired, gets a
 * private page over the faulting one. */
int tb__map_guard_add(uint8_t *base, size_t size, int fd, bool writable);
/* Take it off, before it is unmapped. */
void tb__map_guard_remove(const uint8_t *base);
/* Faults in the listed mapping at `base` covered by a private page since
 * it was listed (0 also when it is not listed). */
uint32_t tb__map_guard_covered(const uint8_t *base);
/* In a fork()ed child (an atfork handler: only system calls): every
 * writable mapping becomes private anonymous memory over the same range,
 * and its descriptor /dev/null's, so the child holds no reference to the
 * parent's opens of the bus file (nor their owner locks, owner.h), and
 * what it records through inherited handles lands nowhere, instead of in
 * rings its parent writes. tb__map_guard_prepare_forks, once in the parent
 * before any fork, opens the /dev/null it takes (where there is none, the
 * child closes the descriptor instead). */
void tb__map_guard_prepare_forks(void);
void tb__map_guard_forget_writable(void);
/* Install the SIGBUS handler, once a process: 0 or a negative errno. */
int tb__map_guard_install(void);
/* Faults in writable mappings whose file was given its size back, or
 * whose page was covered, in this process. */
uint64_t tb__map_guard_repairs(void);

#endif
