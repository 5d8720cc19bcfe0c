/* tailbus/owner.h - whether the process that owns a slot still runs.
 *
 * A producer writes its identity into the slot it claims (seg_abi.h): pid,
 * start time (field 22 of /proc/<pid>/stat) and the inode of its PID
 * namespace, and it holds the slot's owner lock: a write lock on byte
 * TB_OWNER_LOCK_BASE + slot of the bus file, taken on its own open file
 * description (F_OFD_SETLK). tb_detach lets it go; the kernel drops it when
 * the open's last reference goes (its descriptor and its mapping: at the
 * producer's death, however it comes). A claim finds the lock still held
 * when the slot's last owner has not let go yet, and leaves the slot.
 *
 * Seen from the PID namespace the producer ran in, the pid and start time
 * name it exactly, whoever else holds the open. (A fork()ed child lets go
 * of its parent's opens as it starts, map_guard.h; one made by a raw fork
 * system call, which runs no atfork handler, keeps them, and with them the
 * lock, until it exits.) From another namespace (a producer in a
 * container, the collector outside) the pid means nothing there, so only
 * the lock tells. And in any namespace, a claim whose lock is let go is
 * over, though its process may run on (tb_detach lets go even when it
 * finds no claim of its own left to detach). tb_owner_check applies that
 * rule for the collector and the tools alike.
 */
#ifndef TAILBUS_OWNER_H
#define TAILBUS_OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tb_owner_state {
	TB_OWNER_RUNS,     /* the process that claimed the slot runs (or cannot be told gone) */
	TB_OWNER_GONE,     /* no such process: it detached without saying so, or died */
	TB_OWNER_IMPOSTOR, /* the pid runs, but started at another time than the slot says */
};

typedef struct tb_owner {
	int32_t pid;
	uint64_t start_time; /* /proc/<pid>/stat field 22; 0: never written */
	uint64_t pid_ns;     /* the owner's PID namespace inode, TB_PID_NS_UNKNOWN, or 0: no lock */
} tb_owner;

/* The inode of the calling process's PID namespace (/proc/self/ns/pid), or
 * 0 when it cannot be read. */
uint64_t tb_pid_namespace(void);

/* Take slot `slot`'s owner lock on `fd` (open for writing): 0, -EAGAIN when
 * another open of the file holds it, or another negative errno. */
int tb_owner_lock(int fd, uint32_t slot);
/* Let it go (tb_detach: the slot is DETACHED, whoever else shares the open). */
void tb_owner_unlock(int fd, uint32_t slot);
/* Whether an open of the file other than `fd`'s holds slot `slot`'s owner
 * lock: 1, 0, or a negative errno when it cannot be told. */
int tb_owner_locked(int fd, uint32_t slot);

/* Whether the owner is in another PID namespace than `own_ns` (the
 * caller's tb_pid_namespace()), where its pid names some other process or
 * none: then only its lock tells. */
bool tb_owner_elsewhere(const tb_owner *o, uint64_t own_ns);

/* The rule. `own_ns` is the caller's tb_pid_namespace(); `fd` an open of
 * the bus file (any mode) for the lock; `check_start` compares the start
 * time and tests the lock of an owner in this namespace as well (a /proc
 * read and an fcntl: the collector does it every tenth look). */
enum tb_owner_state tb_owner_check(const tb_owner *o, uint64_t own_ns, int fd, uint32_t slot,
				   bool check_start);

/* /proc/<pid>/stat start time (field 22), or 0 if the process is gone or
 * its stat cannot be read (/proc mounted with hidepid, no descriptor left:
 * tb_proc_exists tells those apart). */
uint64_t tb_proc_start_time(pid_t pid);
/* Whether a process `pid` exists (kill(pid, 0): another user's counts);
 * false for pid <= 0. */
bool tb_proc_exists(pid_t pid);

#ifdef __cplusplus
}
#endif

#endif
