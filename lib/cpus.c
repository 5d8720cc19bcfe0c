/* cpus.c - CPU sets as tailbus keeps them (tailbus/cpus.h): the CPUs a
 * collector's drain threads are pinned to, read from /proc (for a bus: its
 * serving collector's), and a process's threads kept off them with
 * sched_setaffinity. Not in the producer library: engines never call it. */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tailbus/bus.h"
#include "tailbus/cpus.h"

void tb_cpus_add(tb_cpus *s, int cpu)
{
	if (cpu >= 0 && cpu < TB_CPUS_MAX)
		s->bits[cpu / 64] |= (uint64_t)1 << (cpu % 64);
}

int tb_cpus_has(const tb_cpus *s, int cpu)
{
	return cpu >= 0 && cpu < TB_CPUS_MAX && (s->bits[cpu / 64] >> (cpu % 64) & 1);
}

int tb_cpus_count(const tb_cpus *s)
{
	int n = 0;
	for (size_t w = 0; w < TB_CPUS_MAX / 64; w++)
		n += __builtin_popcountll(s->bits[w]);
	return n;
}

char *tb_cpus_format(const tb_cpus *s, char *buf, size_t size)
{
	size_t at = 0;
	if (!size)
		return buf;
	buf[0] = '\0';
	for (int lo = 0; lo < TB_CPUS_MAX; lo++) {
		if (!tb_cpus_has(s, lo))
			continue;
		int hi = lo;
		while (hi + 1 < TB_CPUS_MAX && tb_cpus_has(s, hi + 1))
			hi++;
		int n = hi > lo ? snprintf(buf + at, size - at, "%s%d-%d", at ? "," : "", lo, hi) :
				  snprintf(buf + at, size - at, "%s%d", at ? "," : "", lo);
		if (n < 0 || (size_t)n >= size - at) {
			buf[at] = '\0'; /* cut at the last whole entry */
			break;
		}
		at += (size_t)n;
		lo = hi;
	}
	return buf;
}

/* Add the CPUs of *set to *out. */
static void add_cpu_set(const cpu_set_t *set, tb_cpus *out)
{
	for (int k = 0; k < TB_CPUS_MAX && k < CPU_SETSIZE; k++)
		if (CPU_ISSET(k, set))
			tb_cpus_add(out, k);
}

int tb_cpus_allowed(tb_cpus *out)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return -errno;
	memset(out, 0, sizeof(*out));
	add_cpu_set(&set, out);
	return 0;
}

/* The thread's name from /proc/PID/task/TID/comm, without its newline. */
static int read_comm(int32_t pid, const char *tid, char *name, size_t size)
{
	char path[300]; /* a directory entry's name is at most 255 bytes */
	snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *got = fgets(name, (int)size, f);
	fclose(f);
	if (!got)
		return -EIO;
	name[strcspn(name, "\n")] = '\0';
	return 0;
}

int tb_cpus_of_drain_threads(int32_t pid, tb_cpus *out)
{
	if (pid <= 0)
		return -ESRCH;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char name[32];
		if (e->d_name[0] == '.' || read_comm(pid, e->d_name, name, sizeof(name)) < 0 ||
		    strncmp(name, "tb-drain", 8) != 0)
			continue; /* a thread that ended meanwhile, or not a drain thread */
		cpu_set_t set;
		if (sched_getaffinity((pid_t)atoi(e->d_name), sizeof(set), &set) < 0 || CPU_COUNT(&set) != 1)
			continue;
		add_cpu_set(&set, out);
		found++;
	}
	closedir(d);
	return found;
}

int tb_bus_drain_cpus(const tb_seg *s, int64_t now_mono_ns, tb_cpus *out, int32_t *pid)
{
	const tb_seg_header *h = (const tb_seg_header *)s->base;
	int32_t who = __atomic_load_n(&h->collector_pid, __ATOMIC_ACQUIRE);
	if (pid)
		*pid = who;
	if (tb_bus_collector_state(h, now_mono_ns, NULL) != TB_COLLECTOR_SERVING)
		return 0;
	return tb_cpus_of_drain_threads(who, out);
}

int tb_cpus_keep_off(const tb_cpus *from, const tb_cpus *off)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	int n = 0;
	for (int k = 0; k < TB_CPUS_MAX && k < CPU_SETSIZE; k++) {
		if (tb_cpus_has(from, k) && !tb_cpus_has(off, k)) {
			CPU_SET(k, &set);
			n++;
		}
	}
	if (n == 0)
		return 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	int rc = 1;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (sched_setaffinity((pid_t)atoi(e->d_name), sizeof(set), &set) < 0 && errno != ESRCH &&
		    rc == 1)
			rc = -errno;
	}
	closedir(d);
	return rc;
}
