/* owner.c - whether a slot's owner still runs (tailbus/owner.h).
 *
 * The owner lock is an open file description lock (F_OFD_SETLK) rather than
 * a classic POSIX one: those belong to the process, so two threads of one
 * engine would share a slot's lock and a collector could not see a lock
 * held by a producer in its own process; OFD locks belong to the open, and
 * every tb_attach opens the bus file afresh. The locked byte lies far past
 * any segment's end (locks need not cover data) and no one reads it.
 */
#include "tailbus/owner.h"
#include "tailbus/seg_abi.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

uint64_t tb_pid_namespace(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static struct flock slot_byte(short type, uint32_t slot)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl)); /* l_pid must be 0 for OFD locks */
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)(TB_OWNER_LOCK_BASE + slot);
	fl.l_len = 1;
	return fl;
}

int tb_owner_lock(int fd, uint32_t slot)
{
	struct flock fl = slot_byte(F_WRLCK, slot);
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return errno == EACCES ? -EAGAIN : -errno;
}

void tb_owner_unlock(int fd, uint32_t slot)
{
	struct flock fl = slot_byte(F_UNLCK, slot);
	fcntl(fd, F_OFD_SETLK, &fl);
}

int tb_owner_locked(int fd, uint32_t slot)
{
	struct flock fl = slot_byte(F_WRLCK, slot);
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	return fl.l_type != F_UNLCK;
}

bool tb_owner_elsewhere(const tb_owner *o, uint64_t own_ns)
{
	return o->pid_ns != 0 && o->pid_ns != own_ns;
}

enum tb_owner_state tb_owner_check(const tb_owner *o, uint64_t own_ns, int fd, uint32_t slot,
				   bool check_start)
{
	if (tb_owner_elsewhere(o, own_ns)) {
		/* another PID namespace: its pid names some other process here,
		 * or none. A lock that cannot be tested leaves the slot to it. */
		return tb_owner_locked(fd, slot) == 0 ? TB_OWNER_GONE : TB_OWNER_RUNS;
	}
	if (o->pid <= 0 || !tb_proc_exists(o->pid))
		return TB_OWNER_GONE;
	if (!check_start)
		return TB_OWNER_RUNS;
	/* a claim that took the lock is over once it is let go, whether its
	 * process runs on or not: tb_detach lets go after DETACHED, and also
	 * when it finds its claim no longer there to detach (a cut zeroed the
	 * slot line meanwhile) */
	if (o->pid_ns != 0 && tb_owner_locked(fd, slot) == 0)
		return TB_OWNER_GONE;
	uint64_t start = tb_proc_start_time(o->pid);
	if (start == 0)
		return TB_OWNER_RUNS; /* cannot tell (hidepid): kill() says it runs */
	return start == o->start_time ? TB_OWNER_RUNS : TB_OWNER_IMPOSTOR;
}

bool tb_proc_exists(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

uint64_t tb_proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold spaces and ')': fields restart after the last ')' */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long long start = 0;
	/* after ")": state is field 3; start time is field 22 */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &start) != 1)
		return 0;
	return start;
}
