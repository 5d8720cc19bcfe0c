/* tailbusd.c - the collector daemon's command line.
 *
 *   tailbusd --bus NAME --log-dir D [--dir SEGDIR] [--cpu N] [--interval 1s]
 *            [--drain-threads N] [--cpus LIST] [--close-cpu N] [--no-rebalance]
 *            [--rotate-seconds S] [--rotate-bytes B] [--keep N] [--idle-us U]
 *            [--backoff-ns N] [--evict-lines] [--io-fallback] [--fresh] [--slots N] [--ring-events N]
 *            [--metrics N] [--fold-lanes N] [--group GID] [--mlock] [--fifo PRIO] [--foreground]
 *
 * It says at start-up where the segment is and on which pages, which write
 * path it uses and why, and where the log goes; SIGINT or SIGTERM stops it
 * cleanly (the partial interval is written). Without --foreground it detaches
 * and sends its messages to <log-dir>/tailbusd.out.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"

#define NS_PER_SEC 1000000000LL
#define NS_PER_US 1000LL

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbusd --bus NAME --log-dir DIR [options]\n"
		"  --dir DIR            segment directory (default: $TAILBUS_DIR, hugetlbfs, /dev/shm)\n"
		"  --interval T         interval length: 1s (default), 500ms, 2s\n"
		"  --cpu N              pin the (first) drain thread to CPU N\n"
		"  --drain-threads N    drain threads (default 1; add one when a drain thread's\n"
		"                       CPU is busy all the time: the sidecar's drain rows)\n"
		"  --cpus LIST          the drain threads' CPUs, one each: 2,3,4 or 2-5\n"
		"  --close-cpu N        pin the closer (merge, encode, write) to CPU N\n"
		"  --no-rebalance       keep each ring on the drain thread it was first given\n"
		"  --idle-us U          sleep U us when the bus is quiet (default: busy-poll)\n"
		"  --backoff-ns N       after a pass that found no ring with a whole batch waiting,\n"
		"                       spin N ns (at most 1 ms) before the next (default 2000; 0: none)\n"
		"  --evict-lines        flush each event line it has read from every cache, so that the\n"
		"                       producer's next write there need not ask this core (costs the\n"
		"                       collector; helps where the two cores share no cache: bench it)\n"
		"  --rotate-seconds S   start a new log file every S seconds\n"
		"  --rotate-bytes B     ... or when a log file reaches B bytes\n"
		"  --keep N             keep only the newest N log files\n"
		"  --io-fallback        write with a pwrite thread instead of io_uring\n"
		"  --fresh              remove an existing segment of this bus first\n"
		"  --slots N --ring-events N --metrics N   segment sizes when creating it\n"
		"  --fold-lanes N       ... and the metrics per ring whose SPANs a full ring folds into a\n"
		"                       2-digit histogram instead of dropping (0-8, default 4; 0: drop)\n"
		"  --group GID          create the segment 0660 for this group\n"
		"  --mlock              lock memory (mlockall)\n"
		"  --fifo PRIO          run SCHED_FIFO at PRIO\n"
		"  --foreground         do not detach\n");
}

/* "1s", "250ms", "10us", "2" (seconds) -> ns; 0 on junk. */
static int64_t parse_duration(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v <= 0)
		return 0;
	double scale = !strcmp(end, "") || !strcmp(end, "s") ? 1e9
		       : !strcmp(end, "ms")                  ? 1e6
		       : !strcmp(end, "us")                  ? 1e3
		       : !strcmp(end, "ns")                  ? 1.0
							     : 0.0;
	return (int64_t)(v * scale);
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || *end || errno)
		return false;
	*out = v;
	return true;
}

struct cli {
	tb_collector_config cfg;
	int cpu;
	int fifo;
	uint32_t ncpus; /* given by --cpus */
	bool mlock, foreground;
};

/* "2,3,7" or "2-5" or both: the drain threads' CPUs, in order. */
static bool parse_cpus(const char *s, struct cli *o)
{
	o->ncpus = 0;
	while (*s) {
		char *end;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;
		if (end == s)
			return false;
		if (*end == '-') {
			s = end + 1;
			hi = strtoul(s, &end, 10);
			if (end == s || hi < lo)
				return false;
		}
		for (unsigned long k = lo; k <= hi; k++) {
			if (k >= CPU_SETSIZE || o->ncpus == TB_COLLECTOR_MAX_DRAINERS)
				return false;
			o->cfg.drain_cpus[o->ncpus++] = (int)k;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return false;
		s = end;
	}
	return o->ncpus > 0;
}

static int parse(int argc, char **argv, struct cli *o)
{
	static const struct option longs[] = {
		{"bus", 1, 0, 'b'},        {"dir", 1, 0, 'd'},         {"log-dir", 1, 0, 'l'},
		{"cpu", 1, 0, 'c'},        {"interval", 1, 0, 'i'},    {"rotate-seconds", 1, 0, 'R'},
		{"rotate-bytes", 1, 0, 'B'}, {"keep", 1, 0, 'k'},      {"idle-us", 1, 0, 'u'},
		{"backoff-ns", 1, 0, 'n'}, {"evict-lines", 0, 0, 'E'},
		{"io-fallback", 0, 0, 'F'}, {"fresh", 0, 0, 'f'},      {"slots", 1, 0, 's'},
		{"ring-events", 1, 0, 'r'}, {"metrics", 1, 0, 'm'},    {"group", 1, 0, 'g'},
		{"fold-lanes", 1, 0, 'o'},
		{"mlock", 0, 0, 'L'},      {"fifo", 1, 0, 'P'},        {"foreground", 0, 0, 'G'},
		{"drain-threads", 1, 0, 'D'}, {"cpus", 1, 0, 'C'},    {"close-cpu", 1, 0, 'K'},
		{"no-rebalance", 0, 0, 'N'},
		{"help", 0, 0, 'h'},       {0, 0, 0, 0}};
	tb_collector_config_default(&o->cfg);
	o->cpu = -1;
	int c, idx = 0;
	uint64_t v;
	while ((c = getopt_long(argc, argv, "", longs, &idx)) != -1) {
		bool ok = true;
		switch (c) {
		case 'b': o->cfg.bus = optarg; break;
		case 'd': o->cfg.dir = optarg; break;
		case 'l': o->cfg.writer.dir = optarg; break;
		case 'c': ok = parse_u64(optarg, &v); o->cpu = (int)v; break;
		case 'i': ok = (o->cfg.interval_ns = parse_duration(optarg)) > 0; break;
		case 'R': ok = parse_u64(optarg, &v); o->cfg.writer.rotate_ns = (int64_t)v * NS_PER_SEC; break;
		case 'B': ok = parse_u64(optarg, &o->cfg.writer.rotate_bytes); break;
		case 'k': ok = parse_u64(optarg, &v); o->cfg.writer.keep_files = (int)v; break;
		case 'u': ok = parse_u64(optarg, &v); o->cfg.idle_ns = (int64_t)v * NS_PER_US; break;
		case 'n': ok = parse_u64(optarg, &v) && v <= 1000000u; o->cfg.backoff_ns = (int64_t)v; break;
		case 'E': o->cfg.evict_lines = true; break;
		case 'F': o->cfg.writer.force_fallback = true; break;
		case 'f': o->cfg.fresh = true; break;
		case 's': ok = parse_u64(optarg, &v) && v > 0; o->cfg.seg.slot_count = (uint32_t)v; break;
		case 'r': ok = parse_u64(optarg, &v) && v > 1; o->cfg.seg.ring_capacity = (uint32_t)v; break;
		case 'm': ok = parse_u64(optarg, &v) && v > 0; o->cfg.seg.metric_capacity = (uint32_t)v; break;
		case 'o':
			ok = parse_u64(optarg, &v) && v <= TB_FOLD_LANES_MAX;
			o->cfg.seg.fold_lanes = (uint32_t)v;
			break;
		case 'g': ok = parse_u64(optarg, &v); o->cfg.seg.group = (gid_t)v; break;
		case 'L': o->mlock = true; break;
		case 'P': ok = parse_u64(optarg, &v) && v >= 1 && v <= 99; o->fifo = (int)v; break;
		case 'G': o->foreground = true; break;
		case 'D':
			ok = parse_u64(optarg, &v) && v >= 1 && v <= TB_COLLECTOR_MAX_DRAINERS;
			o->cfg.drain_threads = (uint32_t)v;
			break;
		case 'C': ok = parse_cpus(optarg, o); break;
		case 'K': ok = parse_u64(optarg, &v) && v < CPU_SETSIZE; o->cfg.close_cpu = (int)v; break;
		case 'N': o->cfg.rebalance = false; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
		if (!ok) {
			fprintf(stderr, "tailbusd: bad value '%s' for --%s\n", optarg, longs[idx].name);
			return -EINVAL;
		}
	}
	if (o->ncpus && o->cfg.drain_threads == 1)
		o->cfg.drain_threads = o->ncpus; /* one drain thread a CPU */
	if (o->ncpus && o->ncpus != o->cfg.drain_threads) {
		fprintf(stderr, "tailbusd: --cpus names %u CPUs for %u drain threads\n", o->ncpus,
			o->cfg.drain_threads);
		return -EINVAL;
	}
	if (o->cpu >= 0 && !o->ncpus)
		o->cfg.drain_cpus[0] = o->cpu;
	if (!o->cfg.bus || !o->cfg.writer.dir) {
		fprintf(stderr, "tailbusd: --bus and --log-dir are required\n");
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

static int tune_process(const struct cli *o)
{
	/* the drain threads pin themselves; this thread is the closer's */
	if (o->cfg.close_cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(o->cfg.close_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			fprintf(stderr, "tailbusd: cannot pin the closer to CPU %d: %s\n", o->cfg.close_cpu,
				strerror(errno));
			return -errno;
		}
	}
	if (o->mlock && mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "tailbusd: mlockall failed (%s); going on unlocked\n", strerror(errno));
	if (o->fifo) {
		struct sched_param sp = {.sched_priority = o->fifo};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			fprintf(stderr, "tailbusd: SCHED_FIFO refused (%s); going on\n", strerror(errno));
	}
	return 0;
}

static int detach_to(const char *log_dir)
{
	char path[PATH_MAX];
	mkdir(log_dir, 0750);
	snprintf(path, sizeof(path), "%s/tailbusd.out", log_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (daemon(1, 1) < 0)
		return -errno;
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct cli o;
	memset(&o, 0, sizeof(o));
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (!o.foreground && detach_to(o.cfg.writer.dir) < 0) {
		fprintf(stderr, "tailbusd: cannot detach: %s\n", strerror(errno));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	char comment[128];
	snprintf(comment, sizeof(comment), "Logged with tailbusd 0.1 bus %s", o.cfg.bus);
	o.cfg.writer.comment = comment;
	tb_collector c;
	const char *why = "unknown error";
	rc = tb_collector_open(&c, &o.cfg, &why);
	if (rc < 0) {
		fprintf(stderr, "tailbusd: bus %s: %s (%s)\n", o.cfg.bus, why, strerror(-rc));
		tb_collector_close(&c);
		return 1;
	}
	/* pin after opening: the writer's threads stay off the drain loop's core */
	if (tune_process(&o) < 0) {
		tb_collector_close(&c);
		return 1;
	}
	printf("tailbusd: bus %s: segment %s (%s, %llu-byte pages)\n", o.cfg.bus, c.seg.path,
	       c.seg.created ? "created" : "attached", (unsigned long long)c.seg.layout.page_size);
	if (c.seg.fallback_reason[0])
		printf("tailbusd: warning: %s\n", c.seg.fallback_reason);
	if (o.cfg.evict_lines)
		printf("tailbusd: evicting each event line read, with %s\n", tb_evict_name(c.evict));
	printf("tailbusd: writing %s through %s\n", tb_writer_log_path(c.writer),
	       tb_writer_backend(c.writer));
	printf("tailbusd: %u rings of %u events, %u metrics, %.3f s intervals\n",
	       c.seg.layout.slot_count, c.seg.layout.ring_capacity, c.seg.layout.metric_capacity,
	       (double)o.cfg.interval_ns / 1e9);
	rc = tb_collector_run(&c, &stop_requested);
	if (rc < 0)
		fprintf(stderr, "tailbusd: stopped on an error: %s\n", strerror(-rc));
	uint64_t exhausted = c.closer.series_exhausted;
	for (uint32_t k = 0; k < c.ndrainers; k++)
		exhausted += c.drainers[k].series_exhausted;
	if (exhausted)
		fprintf(stderr, "tailbusd: %llu events had no histogram left (raise the series pool)\n",
			(unsigned long long)exhausted);
	if (c.series_unready)
		fprintf(stderr, "tailbusd: %llu series were faulted in by a drain thread, not ahead of it\n",
			(unsigned long long)c.series_unready);
	if (c.closer.behind)
		fprintf(stderr, "tailbusd: %llu closes fell behind by an interval or more\n",
			(unsigned long long)c.closer.behind);
	printf("tailbusd: stopped; %s complete\n", tb_writer_log_path(c.writer));
	tb_collector_close(&c);
	return rc < 0 ? 1 : 0;
}
