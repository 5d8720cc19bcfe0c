/* tailbusd.c - the collector daemon's command line.
 *
 *   tailbusd --bus NAME --log-dir D [--dir SEGDIR] [--cpu N] [--interval 1s]
 *            [--drain-threads N] [--cpus LIST] [--close-cpu N] [--no-rebalance] [--series-reserve N]
 *            [--rotate-seconds S] [--rotate-bytes B] [--keep N] [--idle-us U]
 *            [--backoff-ns N] [--evict-lines] [--io-fallback] [--fresh] [--slots N] [--ring-events N]
 *            [--metrics N] [--fold-lanes N] [--live-heap SIZE] [--group GID] [--mlock] [--fifo PRIO] [--foreground]
 *            [--version]
 *
 * Option values read as every tailbus tool reads them (tailbus/units.h):
 * durations with a unit (a bare number in the option's own unit: seconds
 * for --interval and --rotate-seconds, us for --idle-us, ns for
 * --backoff-ns), sizes with K, M or G, counts as whole numbers, each within
 * its bounds below; a refused value is one sentence naming the option, exit 2.
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
#include "tailbus/cpus.h"
#include "tailbus/env.h"
#include "tailbus/units.h"

#define NS_PER_SEC 1000000000LL

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
		"  --interval T         interval length: 1s (default), 500ms, 2s (1ms to 1h)\n"
		"  --cpu N              pin the (first) drain thread to CPU N\n"
		"  --drain-threads N    drain threads (default 1; add one when a drain thread's\n"
		"                       CPU is busy all the time: the sidecar's drain rows)\n"
		"  --cpus LIST          the drain threads' CPUs, one each: 2,3,4 or 2-5\n"
		"  --close-cpu N        pin the closer (merge, encode, write) to CPU N\n"
		"  --no-rebalance       keep each ring on the drain thread it was first given\n"
		"  --series-reserve N   keep N (ring, metric) histograms' memory faulted in ahead of\n"
		"                       those in use (default 16; about 0.5 MiB each): as many as\n"
		"                       may start at once (past it, a new pair's events wait in\n"
		"                       their ring until one is faulted in)\n"
		"  --idle-us U          sleep U (bare: us; at most 1s) when the bus is quiet\n"
		"                       (default: busy-poll)\n"
		"  --backoff-ns N       after a pass that found no ring with a whole batch waiting,\n"
		"                       spin N (bare: ns; at most 1ms) before the next (default 2000;\n"
		"                       0: none)\n"
		"  --evict-lines        flush each event line it has read from every cache, so that the\n"
		"                       producer's next write there need not ask this core (costs the\n"
		"                       collector; helps where the two cores share no cache: bench it)\n"
		"  --rotate-seconds S   start a new log file every S (bare: seconds; 1m, 1h)\n"
		"  --rotate-bytes B     ... or when a log file reaches B bytes (10M, 1G)\n"
		"  --keep N             keep only the newest N log files\n"
		"  --io-fallback        write with a pwrite thread instead of io_uring\n"
		"  --fresh              remove an existing segment of this bus first\n"
		"  --slots N --ring-events N --metrics N   segment sizes when creating it; the whole\n"
		"                       segment must fit the memory it can have: MemAvailable (the\n"
		"                       free huge pages on hugetlbfs) and its file system's free space\n"
		"  --fold-lanes N       ... and the metrics per ring whose SPANs a full ring folds into a\n"
		"                       2-digit histogram instead of dropping (0-8, default 4; 0: drop)\n"
		"  --live-heap SIZE     ... and the live area's heap for the intervals' histograms that\n"
		"                       tailbus top reads (default 32M; at least 2400K, at most 4G)\n"
		"  --group GID          create the segment 0660 for this group\n"
		"  --mlock              lock memory (mlockall)\n"
		"  --fifo PRIO          run SCHED_FIFO at PRIO\n"
		"  --foreground         do not detach\n"
		"  --version            print the version\n"
		"Durations take ns, us, ms, s, m or h; sizes K, M or G (powers of 1024).\n");
}

/* What each option takes: the bounds the help states, a year of rotation,
 * counts as far as their fields (uint32, int) hold them. */
#define ROTATE_MAX_NS (8760 * TB_UNIT_HOUR) /* a year */
#define GID_MAX 4294967294LL                /* (gid_t)-1 means "no group" to chown */
#define RING_EVENTS_MAX (1LL << 31)         /* the largest power of two a uint32 holds */
#define FIFO_PRIO_MIN 1                     /* SCHED_FIFO's range on Linux */
#define FIFO_PRIO_MAX 99
static const tb_unit_spec interval_spec = {TB_UNIT_DURATION, TB_UNIT_S, TB_UNIT_MS, TB_UNIT_HOUR};
static const tb_unit_spec rotate_spec = {TB_UNIT_DURATION, TB_UNIT_S, 0, ROTATE_MAX_NS};
static const tb_unit_spec rotate_bytes_spec = {TB_UNIT_SIZE, 1, 0, INT64_MAX};
static const tb_unit_spec idle_spec = {TB_UNIT_DURATION, TB_UNIT_US, 0, TB_UNIT_S};
static const tb_unit_spec backoff_spec = {TB_UNIT_DURATION, TB_UNIT_NS, 0, TB_UNIT_MS};
static const tb_unit_spec cpu_spec = {TB_UNIT_COUNT, 1, 0, CPU_SETSIZE - 1};
static const tb_unit_spec keep_spec = {TB_UNIT_COUNT, 1, 0, INT32_MAX};
static const tb_unit_spec slots_spec = {TB_UNIT_COUNT, 1, 1, UINT32_MAX};
static const tb_unit_spec ring_spec = {TB_UNIT_COUNT, 1, 2, RING_EVENTS_MAX}; /* up to 2^k */
static const tb_unit_spec metrics_spec = {TB_UNIT_COUNT, 1, 1, TB_MAX_METRICS};
static const tb_unit_spec lanes_spec = {TB_UNIT_COUNT, 1, 0, TB_FOLD_LANES_MAX};
static const tb_unit_spec heap_spec = {TB_UNIT_SIZE, 1, TB_LIVE_HEAP_MIN, TB_LIVE_HEAP_MAX};
static const tb_unit_spec group_spec = {TB_UNIT_COUNT, 1, 0, GID_MAX};
static const tb_unit_spec fifo_spec = {TB_UNIT_COUNT, 1, FIFO_PRIO_MIN, FIFO_PRIO_MAX};
static const tb_unit_spec drains_spec = {TB_UNIT_COUNT, 1, 1, TB_COLLECTOR_MAX_DRAINERS};
static const tb_unit_spec reserve_spec = {TB_UNIT_COUNT, 1, 0, TB_COLLECTOR_DEFAULT_SERIES};

/* `arg` for option `name` as `spec` says; false after the sentence that
 * names the option and says why. */
static bool value(const char *name, const char *arg, const tb_unit_spec *spec, int64_t *out)
{
	char why[128];
	if (tb_unit_parse_why(arg, spec, out, why, sizeof(why)) == 0)
		return true;
	fprintf(stderr, "tailbusd: bad value '%s' for --%s: %s\n", arg, name, why);
	return false;
}

struct cli {
	tb_collector_config cfg;
	int cpu;
	int fifo;
	uint32_t ncpus; /* given by --cpus */
	bool drains_given; /* --drain-threads */
	bool mlock, foreground;
	const char *slots_arg, *ring_arg; /* as given, to name in a refusal */
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
		{"fold-lanes", 1, 0, 'o'}, {"live-heap", 1, 0, 'H'},
		{"mlock", 0, 0, 'L'},      {"fifo", 1, 0, 'P'},        {"foreground", 0, 0, 'G'},
		{"drain-threads", 1, 0, 'D'}, {"cpus", 1, 0, 'C'},    {"close-cpu", 1, 0, 'K'},
		{"series-reserve", 1, 0, 'S'},
		{"no-rebalance", 0, 0, 'N'},
		{"help", 0, 0, 'h'},       {"version", 0, 0, 'V'},     {0, 0, 0, 0}};
	tb_collector_config_default(&o->cfg);
	o->cpu = -1;
	int c, idx = 0;
	int64_t v = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, &idx)) != -1) {
		const char *name = longs[idx].name;
		bool ok = true;
		switch (c) {
		case 'b': o->cfg.bus = optarg; break;
		case 'd': o->cfg.dir = optarg; break;
		case 'l': o->cfg.writer.dir = optarg; break;
		case 'c': ok = value(name, optarg, &cpu_spec, &v); o->cpu = (int)v; break;
		case 'i': ok = value(name, optarg, &interval_spec, &o->cfg.interval_ns); break;
		case 'R': ok = value(name, optarg, &rotate_spec, &o->cfg.writer.rotate_ns); break;
		case 'B':
			ok = value(name, optarg, &rotate_bytes_spec, &v);
			o->cfg.writer.rotate_bytes = (uint64_t)v;
			break;
		case 'k': ok = value(name, optarg, &keep_spec, &v); o->cfg.writer.keep_files = (int)v; break;
		case 'u': ok = value(name, optarg, &idle_spec, &o->cfg.idle_ns); break;
		case 'n': ok = value(name, optarg, &backoff_spec, &o->cfg.backoff_ns); break;
		case 'E': o->cfg.evict_lines = true; break;
		case 'F': o->cfg.writer.force_fallback = true; break;
		case 'f': o->cfg.fresh = true; break;
		case 's':
			ok = value(name, optarg, &slots_spec, &v);
			o->cfg.seg.slot_count = (uint32_t)v;
			o->slots_arg = optarg;
			break;
		case 'r':
			ok = value(name, optarg, &ring_spec, &v);
			o->cfg.seg.ring_capacity = (uint32_t)v;
			o->ring_arg = optarg;
			break;
		case 'm':
			ok = value(name, optarg, &metrics_spec, &v);
			o->cfg.seg.metric_capacity = (uint32_t)v;
			break;
		case 'o': ok = value(name, optarg, &lanes_spec, &v); o->cfg.seg.fold_lanes = (uint32_t)v; break;
		case 'H': ok = value(name, optarg, &heap_spec, &v); o->cfg.seg.live_heap_bytes = (uint64_t)v; break;
		case 'g': ok = value(name, optarg, &group_spec, &v); o->cfg.seg.group = (gid_t)v; break;
		case 'L': o->mlock = true; break;
		case 'P': ok = value(name, optarg, &fifo_spec, &v); o->fifo = (int)v; break;
		case 'G': o->foreground = true; break;
		case 'D':
			ok = value(name, optarg, &drains_spec, &v);
			o->cfg.drain_threads = (uint32_t)v;
			o->drains_given = true;
			break;
		case 'S': ok = value(name, optarg, &reserve_spec, &v); o->cfg.series_reserve = (uint32_t)v; break;
		case 'C':
			if (!(ok = parse_cpus(optarg, o)))
				fprintf(stderr, "tailbusd: bad value '%s' for --cpus: a list of CPUs, e.g. 2,3 or 2-5, "
					"at most %d\n", optarg, TB_COLLECTOR_MAX_DRAINERS);
			break;
		case 'K': ok = value(name, optarg, &cpu_spec, &v); o->cfg.close_cpu = (int)v; break;
		case 'N': o->cfg.rebalance = false; break;
		case 'h': usage(stdout); return 1;
		case 'V': printf("tailbusd %s\n", tb_version()); return 1;
		case ':':
			fprintf(stderr, "tailbusd: option '%s' needs a value\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "tailbusd: unknown option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return -EINVAL;
		}
		if (!ok)
			return -EINVAL;
	}
	if (o->ncpus && !o->drains_given)
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

/* Bytes as a person reads them: "512.0 GiB", "40.1 MiB". */
static void show_bytes(char *buf, size_t cap, uint64_t b)
{
	if (b == UINT64_MAX)
		snprintf(buf, cap, "more than 16 EiB");
	else if (b >= (UINT64_C(1) << 30))
		snprintf(buf, cap, "%.1f GiB", (double)b / (double)(UINT64_C(1) << 30));
	else
		snprintf(buf, cap, "%.1f MiB", (double)b / (double)(UINT64_C(1) << 20));
}

/* A segment this start would create must fit the memory it can have
 * (tb_seg_fits): refused before anything is created, naming --ring-events
 * or --slots when given, else every size option. An existing segment is
 * attached whatever the sizes say, unless --fresh removes it. */
static bool segment_fits(const struct cli *o)
{
	uint64_t need, room;
	if ((!o->cfg.fresh && tb_seg_exists(o->cfg.dir, o->cfg.bus)) ||
	    tb_seg_fits(o->cfg.dir, &o->cfg.seg, &need, &room) == 0)
		return true;
	char needs[32], has[32], what[160];
	show_bytes(needs, sizeof(needs), need);
	show_bytes(has, sizeof(has), room);
	snprintf(what, sizeof(what), "%u rings (--slots) of %u events (--ring-events)", o->cfg.seg.slot_count,
		 o->cfg.seg.ring_capacity);
	if (o->ring_arg || o->slots_arg)
		fprintf(stderr, "tailbusd: bad value '%s' for --%s: a segment of %s would take %s, "
			"more than the %s of memory it can have\n",
			o->ring_arg ? o->ring_arg : o->slots_arg, o->ring_arg ? "ring-events" : "slots", what,
			needs, has);
	else
		fprintf(stderr, "tailbusd: the segment (%s, --metrics, --live-heap) would take %s, more "
			"than the %s of memory it can have\n", what, needs, has);
	return false;
}

/* Every thread but the drain threads (the closer, the writer, its io_uring
 * workers) keeps off the drain threads' CPUs: before any thread starts,
 * this one may run on the CPUs it could less those, when that leaves one,
 * and every thread it starts inherits that. A drain thread then pins itself
 * to its own CPU (drain.c). */
static void keep_off_drain_cpus(const struct cli *o)
{
	tb_cpus allowed, drains;
	memset(&drains, 0, sizeof(drains));
	if (tb_cpus_allowed(&allowed) < 0)
		return;
	for (uint32_t k = 0; k < o->cfg.drain_threads && k < TB_COLLECTOR_MAX_DRAINERS; k++)
		tb_cpus_add(&drains, o->cfg.drain_cpus[k]);
	tb_cpus_keep_off(&allowed, &drains);
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
	/* never through a symlink, nor held by a FIFO planted there */
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -EINVAL;
	}
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
	if (!segment_fits(&o))
		return 2;
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
	keep_off_drain_cpus(&o);
	tb_collector c;
	const char *why = "unknown error";
	rc = tb_collector_open(&c, &o.cfg, &why);
	if (rc < 0) {
		fprintf(stderr, "tailbusd: bus %s: %s (%s)\n", o.cfg.bus, why, strerror(-rc));
		tb_collector_close(&c);
		return 1;
	}
	/* a segment truncated under us is repaired and reported, not a crash */
	if ((rc = tb_segguard_install(&c)) < 0)
		fprintf(stderr, "tailbusd: cannot guard the segment against truncation (%s); going on\n",
			strerror(-rc));
	/* pin after opening, so that the writer's threads keep the wider mask
	 * (which may include the closer's CPU) rather than the closer's one */
	if (tune_process(&o) < 0) {
		tb_segguard_uninstall(&c);
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
	if (c.series_waits)
		fprintf(stderr, "tailbusd: a drain thread waited for %llu series to be faulted in, their "
			"events left in the ring meanwhile (--series-reserve: as many as start at once)\n",
			(unsigned long long)c.series_waits);
	if (c.series_unready)
		fprintf(stderr, "tailbusd: %llu series were faulted in by the thread that took them, not "
			"ahead by the series keeper\n",
			(unsigned long long)c.series_unready);
	if (c.closer.behind)
		fprintf(stderr, "tailbusd: %llu closes fell behind by an interval or more\n",
			(unsigned long long)c.closer.behind);
	tb_writer_stats ws;
	tb_writer_get_stats(c.writer, &ws);
	if (ws.lost_intervals)
		fprintf(stderr, "tailbusd: %llu intervals were lost from the log files (a write failed); "
			"each is noted in the files and above\n", (unsigned long long)ws.lost_intervals);
	if (c.slots_reclaimed)
		fprintf(stderr, "tailbusd: %llu slots in impossible states were reclaimed\n",
			(unsigned long long)c.slots_reclaimed);
	if (c.seg_shrinks)
		fprintf(stderr, "tailbusd: the segment was truncated under the collector %llu time%s\n",
			(unsigned long long)c.seg_shrinks, c.seg_shrinks == 1 ? "" : "s");
	if (c.seg_header_changes)
		fprintf(stderr, "tailbusd: the segment's header was changed under the collector %llu time%s\n",
			(unsigned long long)c.seg_header_changes, c.seg_header_changes == 1 ? "" : "s");
	printf("tailbusd: stopped; %s complete\n", tb_writer_log_path(c.writer));
	tb_segguard_uninstall(&c);
	tb_collector_close(&c);
	return rc < 0 || ws.lost_intervals ? 1 : 0;
}
