/* ls.c - `tailbus ls`: the buses in a directory and who uses each one.
 *
 *   tailbus ls [--dir DIR] [--json] [--remove-stale AGE]
 *
 * Lists every segment ("<bus>.tailbus") where a bus is looked for (--dir,
 * else $TAILBUS_DIR, else the hugetlbfs mount and /dev/shm) with its
 * collector's state, its attached producers, its size, age and the time since
 * it was last used, all as tb_bus_status_read (tailbus/bus.h) reads them. A
 * bus no collector serves gets a line that says so: most often a mistyped
 * name, whose events go nowhere. --remove-stale AGE removes the segments that
 * no collector and no producer has used for AGE (tb_bus_remove_stale), and
 * names each one it removes; nothing is ever removed without it.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "tailbus/bus.h"
#include "tailbus/grow.h"
#include "tailbus/json.h"

#define VERB "ls"
#define NS_PER_SEC 1e9
#define SECONDS_PER_MINUTE 60.0
#define SECONDS_PER_HOUR 3600.0
#define SECONDS_PER_DAY 86400.0
#define BYTES_PER_MIB (1024.0 * 1024.0)

/* --remove-stale: a bare number is seconds; at most a year. */
static const tb_unit_spec stale_spec = {TB_UNIT_DURATION, TB_UNIT_S, 0,
					366 * 24 * TB_UNIT_HOUR};

struct options {
	const char *dir;
	bool json;
	bool remove;
	int64_t stale_ns;
};

/* One listed segment and what --remove-stale did with it. */
struct entry {
	tb_bus_status st;
	bool removed;
	int remove_rc; /* 0, or why it was kept (tb_bus_remove_stale) */
};

struct list {
	struct entry *e;
	size_t n, cap;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tailbus ls [--dir DIR] [--json] [--remove-stale AGE] [--version]\n"
		"Lists the buses (segment files) in DIR, else $TAILBUS_DIR, else the hugetlbfs\n"
		"mount and /dev/shm: each one's collector (serving, none, stopped, silent),\n"
		"attached producers, size, age and time since last use. A bus with no\n"
		"collector is named on a line of its own: its events are read by no one.\n"
		"--remove-stale AGE (30m, 2h; a bare number is seconds) removes each segment\n"
		"that no collector and no producer has used for AGE, and says so.\n");
}

static int collect(const tb_bus_status *st, void *arg)
{
	struct list *l = arg;
	if (tb_grow_n((void **)&l->e, &l->cap, l->n + 1, 16, sizeof(*l->e)) < 0)
		return -ENOMEM;
	l->e[l->n++] = (struct entry){.st = *st};
	return 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->st.path, ((const struct entry *)b)->st.path);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* "42 s", "17 min", "5.2 h", "3.0 d". */
static void fmt_age(char *buf, size_t cap, int64_t ns)
{
	double s = (double)(ns > 0 ? ns : 0) / NS_PER_SEC;
	if (s < SECONDS_PER_MINUTE)
		snprintf(buf, cap, "%.0f s", s);
	else if (s < SECONDS_PER_HOUR)
		snprintf(buf, cap, "%.0f min", s / SECONDS_PER_MINUTE);
	else if (s < 2 * SECONDS_PER_DAY)
		snprintf(buf, cap, "%.1f h", s / SECONDS_PER_HOUR);
	else
		snprintf(buf, cap, "%.1f d", s / SECONDS_PER_DAY);
}

static void remove_stale(struct list *l, int64_t stale_ns, int64_t now)
{
	for (size_t i = 0; i < l->n; i++) {
		struct entry *e = &l->e[i];
		if (!tb_bus_stale(&e->st, stale_ns, now))
			continue;
		e->remove_rc = tb_bus_remove_stale(&e->st, stale_ns);
		e->removed = e->remove_rc == 0;
	}
}

static void print_text(const struct list *l, const struct options *o, int64_t now)
{
	if (l->n == 0) {
		printf("no buses in %s\n", o->dir ? o->dir : "the segment directories");
		return;
	}
	printf("%-20s %-22s %10s %7s %9s %8s %8s  %s\n", "bus", "collector", "producers", "metrics",
	       "size", "age", "idle", "segment");
	for (size_t i = 0; i < l->n; i++) {
		const tb_bus_status *st = &l->e[i].st;
		char collector[48], producers[32], size[24], age[24], idle[24];
		snprintf(size, sizeof(size), "%.1f MiB", (double)st->size / BYTES_PER_MIB);
		fmt_age(age, sizeof(age), now - st->created_ns);
		if (st->error) {
			printf("%-20s %-22s %10s %7s %9s %8s %8s  %s\n", st->bus, "unreadable", "-", "-",
			       size, age, "-", st->path);
			continue;
		}
		if (st->collector_pid && st->collector != TB_COLLECTOR_STOPPED)
			snprintf(collector, sizeof(collector), "%s (pid %d)",
				 tb_bus_collector_name(st->collector), (int)st->collector_pid);
		else
			snprintf(collector, sizeof(collector), "%s", tb_bus_collector_name(st->collector));
		if (st->producers_gone)
			snprintf(producers, sizeof(producers), "%u+%u gone", st->producers,
				 st->producers_gone);
		else
			snprintf(producers, sizeof(producers), "%u", st->producers);
		fmt_age(idle, sizeof(idle), now - st->last_use_ns);
		printf("%-20s %-22s %10s %7u %9s %8s %8s  %s%s\n", st->bus, collector, producers,
		       st->metrics, size, age, idle, st->path, l->e[i].removed ? "  (removed)" : "");
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];
		if (e->st.error == -EACCES)
			printf("%s: %s (uid %u)\n", e->st.path, e->st.why, (unsigned)e->st.owner);
		else if (e->st.error)
			printf("%s: %s (%s)\n", e->st.path, e->st.why, strerror(-e->st.error));
		else if (e->st.collector != TB_COLLECTOR_SERVING && !e->removed)
			printf("bus '%s': %s\n", e->st.bus, e->st.collector_why);
	}
	if (!o->remove)
		return;
	char age[24], idle[24];
	fmt_age(age, sizeof(age), o->stale_ns);
	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];
		fmt_age(idle, sizeof(idle), now - e->st.last_use_ns);
		if (e->removed)
			printf("removed %s: no collector (%s), no producer, unused for %s\n", e->st.path,
			       tb_bus_collector_name(e->st.collector), idle);
		else if (e->remove_rc == -EBUSY || e->remove_rc == -EAGAIN)
			printf("kept %s: in use again while it was being removed\n", e->st.path);
		else if (tb_bus_unused(&e->st) && e->remove_rc == 0)
			printf("kept %s: unused for %s only (--remove-stale %s)\n", e->st.path, idle, age);
	}
}

static void json_seconds(int64_t ns)
{
	printf("%.3f", (double)ns / NS_PER_SEC);
}

static void print_json(const struct list *l, const struct options *o, int64_t now,
		       char dirs[TB_SEG_DIRS_MAX][TB_SEG_PATH_MAX], int ndirs)
{
	printf("{\"time\":%.3f,\"dirs\":[", (double)now / NS_PER_SEC);
	for (int i = 0; i < ndirs; i++) {
		if (i)
			putchar(',');
		tb_json_string(stdout, dirs[i]);
	}
	printf("],\"buses\":[");
	for (size_t i = 0; i < l->n; i++) {
		const tb_bus_status *st = &l->e[i].st;
		printf("%s{\"bus\":", i ? "," : "");
		tb_json_string(stdout, st->bus);
		printf(",\"segment\":");
		tb_json_string(stdout, st->path);
		printf(",\"size\":%" PRIu64, st->size);
		if (st->error) {
			printf(",\"error\":");
			tb_json_string(stdout, st->why);
		} else {
			printf(",\"page_size\":%" PRIu64 ",\"collector\":\"%s\",\"collector_pid\":%d,"
			       "\"heartbeat_age_s\":",
			       st->page_size, tb_bus_collector_name(st->collector), (int)st->collector_pid);
			if (st->heartbeat_ns > 0)
				json_seconds(now - st->heartbeat_ns);
			else
				printf("null");
			printf(",\"producers\":%u,\"producers_gone\":%u,\"metrics_registered\":%u,\"intervals\":%" PRIu64
			       ",\"unused\":%s,\"age_s\":",
			       st->producers, st->producers_gone, st->metrics, st->intervals,
			       tb_bus_unused(st) ? "true" : "false");
			json_seconds(now - st->created_ns);
			printf(",\"idle_s\":");
			json_seconds(now - st->last_use_ns);
		}
		if (o->remove)
			printf(",\"removed\":%s", l->e[i].removed ? "true" : "false");
		putchar('}');
	}
	printf("]}\n");
}

static int parse(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"dir", required_argument, 0, 'd'},
		{"json", no_argument, 0, 'j'},
		{"remove-stale", required_argument, 0, 'r'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0}};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 'j': o->json = true; break;
		case 'r':
			if (!tb_cli_unit(VERB, "remove-stale", optarg, &stale_spec, &o->stale_ns))
				return TB_EXIT_USAGE;
			o->remove = true;
			break;
		case 'h': usage(stdout); return -1;
		case 'V': tb_cli_version(); return -1;
		default:
			tb_cli_bad_option(VERB, c, argv[optind - 1], NULL);
			usage(stderr);
			return TB_EXIT_USAGE;
		}
	}
	if (!tb_cli_no_operands(VERB, argc, argv)) {
		usage(stderr);
		return TB_EXIT_USAGE;
	}
	return 0;
}

int tb_cmd_ls(int argc, char **argv)
{
	struct options o = {0};
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? TB_EXIT_OK : rc;
	char dirs[TB_SEG_DIRS_MAX][TB_SEG_PATH_MAX];
	size_t pages[TB_SEG_DIRS_MAX];
	int ndirs = tb_seg_dirs(o.dir, dirs, pages);
	struct list l = {0};
	rc = tb_bus_scan(o.dir, collect, &l);
	if (rc < 0) {
		if (rc == -ENOMEM)
			tb_cli_error(VERB, "out of memory listing %s", dirs[0]);
		else
			tb_cli_error(VERB, "cannot read %s: %s", dirs[0], strerror(-rc));
		free(l.e);
		return TB_EXIT_INPUT;
	}
	if (l.n > 1) /* qsort takes no NULL array, which an empty directory gives */
		qsort(l.e, l.n, sizeof(*l.e), by_path);
	int64_t now = now_ns();
	if (o.remove)
		remove_stale(&l, o.stale_ns, now);
	if (o.json)
		print_json(&l, &o, now, dirs, ndirs);
	else
		print_text(&l, &o, now);
	int status = TB_EXIT_OK;
	for (size_t i = 0; i < l.n; i++) {
		const struct entry *e = &l.e[i];
		/* a creator at work, another user's private bus: not this user's problem */
		if (e->st.error && e->st.error != -EAGAIN && e->st.error != -EACCES)
			status = TB_EXIT_INPUT;
		if (e->remove_rc && e->remove_rc != -EBUSY && e->remove_rc != -EAGAIN) {
			tb_cli_error(VERB, "cannot remove %s: %s", e->st.path, strerror(-e->remove_rc));
			status = TB_EXIT_INPUT;
		}
	}
	free(l.e);
	if (fflush(stdout) != 0) {
		tb_cli_error(VERB, "cannot write the output: %s", strerror(errno));
		return TB_EXIT_INPUT;
	}
	return status;
}
