/* tailbus/cpus.h - the CPUs a collector's drain threads hold, and keeping a
 * process's other threads off them.
 *
 * A drain thread busy-polls its rings on a CPU of its own (tailbusd --cpus).
 * Anything else the scheduler runs there makes it wait: tailbusd's own
 * closer and writer, and tools beside it (`tailbus export`, `tailbus top`).
 * They keep off those CPUs with these calls; what else the host runs there is the
 * host's to keep away (isolcpus, a cpuset).
 */
#ifndef TAILBUS_CPUS_H
#define TAILBUS_CPUS_H

#include <stddef.h>
#include <stdint.h>

#include "tailbus/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_CPUS_MAX 1024

/* A set of CPUs 0 .. TB_CPUS_MAX - 1, one bit each; all zero is empty. */
typedef struct tb_cpus {
	uint64_t bits[TB_CPUS_MAX / 64];
} tb_cpus;

/* Add CPU `cpu` to *s (ignored outside 0 .. TB_CPUS_MAX - 1). */
void tb_cpus_add(tb_cpus *s, int cpu);
/* Whether CPU `cpu` is in *s. */
int tb_cpus_has(const tb_cpus *s, int cpu);
/* How many CPUs *s holds. */
int tb_cpus_count(const tb_cpus *s);
/* *s as a list, "1,3-5" ("" when empty), into buf of `size` bytes (cut
 * short, still terminated, when it does not fit). Returns buf. */
char *tb_cpus_format(const tb_cpus *s, char *buf, size_t size);

/* The CPUs the calling thread may run on, into *out. Returns 0 or -errno
 * (-EINVAL on a machine of more than TB_CPUS_MAX CPUs). */
int tb_cpus_allowed(tb_cpus *out);

/* The CPUs to which the drain threads (named tb-drainN) of process `pid`
 * are each pinned alone, added to *out; a drain thread that may run on more
 * than one CPU holds none. Returns how many pinned drain threads were found,
 * or -errno (-ESRCH: no such process). */
int tb_cpus_of_drain_threads(int32_t pid, tb_cpus *out);

/* The CPUs to which the drain threads of the collector serving s (at
 * now_mono_ns) are each pinned alone, added to *out (tb_cpus_of_drain_threads);
 * *pid (if given) gets that collector's pid. Returns how many such threads,
 * 0 when no collector serves the bus, or -errno when its threads cannot be
 * read (another PID namespace, /proc mounted hidepid). */
int tb_bus_drain_cpus(const tb_seg *s, int64_t now_mono_ns, tb_cpus *out, int32_t *pid);

/* Every thread of this process may run on `from` less `off`, when that
 * leaves at least one CPU; else nothing changes. Returns 1 when the threads
 * were set so, 0 when nothing changed (nothing would be left), or -errno
 * from the first thread that could not be set. */
int tb_cpus_keep_off(const tb_cpus *from, const tb_cpus *off);

#ifdef __cplusplus
}
#endif

#endif
