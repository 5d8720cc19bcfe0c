/* collector_scratch.c - a collector on scratch directories for the tests
 * (collector_scratch.h).
 *
 * Invariant: collector_scratch_remove removes every file and directory
 * collector_scratch_make and the collector made.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_scratch.h"
#include "tailbus/log.h"

int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void collector_scratch_make(char *seg_dir, char *log_dir, const char *name)
{
	snprintf(seg_dir, 64, "/tmp/tb-test-%s-seg.XXXXXX", name);
	snprintf(log_dir, 64, "/tmp/tb-test-%s-log.XXXXXX", name);
	assert_non_null(mkdtemp(seg_dir));
	assert_non_null(mkdtemp(log_dir));
	setenv("TAILBUS_DIR", seg_dir, 1);
}

void collector_scratch_remove(const char *seg_dir, const char *log_dir, const char *bus)
{
	tb_seg_unlink(seg_dir, bus);
	rmdir(seg_dir);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", log_dir);
	assert_int_equal(system(cmd), 0);
	unsetenv("TAILBUS_DIR");
}

void collector_scratch_config(tb_collector_config *cfg, const char *bus, const char *seg_dir,
			      const char *log_dir, uint32_t slots)
{
	tb_collector_config_default(cfg);
	cfg->bus = bus;
	cfg->dir = seg_dir;
	cfg->writer.dir = log_dir;
	cfg->fresh = true;
	cfg->seg.slot_count = slots;
	cfg->seg.ring_capacity = COLLECTOR_SCRATCH_RING;
}

void collector_open_or_fail(tb_collector *c, const tb_collector_config *cfg)
{
	const char *why = NULL;
	int rc = tb_collector_open(c, cfg, &why);
	if (rc < 0)
		fail_msg("tb_collector_open: %s (%s)", why ? why : "?", strerror(-rc));
}

/* Adds one log file's counts to totals. */
static void add_log_totals(const char *path, int64_t start_ns, int64_t *totals, int nmetrics)
{
	char *text;
	size_t len;
	assert_int_equal(tb_read_file(path, &text, &len), 0);
	tb_log_reader r;
	tb_log_reader_init(&r, text, len);
	tb_log_entry e;
	memset(&e, 0, sizeof(e));
	int rc;
	while ((rc = tb_log_reader_next(&r, &e)) != 0) {
		assert_int_equal(rc, 1);
		if (start_ns >= 0 && llround(e.start_abs_sec * 1e3) != start_ns / 1000000)
			continue;
		for (int k = 0; k < nmetrics; k++) {
			char name[16];
			snprintf(name, sizeof(name), "m%d", k);
			if (strcmp(e.tag, name) == 0)
				totals[k] += tb_hist_total(&e.hist);
		}
	}
	tb_log_entry_free(&e);
	free(text);
}

void collector_log_totals(tb_collector *c, const char *log_dir, int64_t start_ns, int64_t *totals,
			  int nmetrics)
{
	assert_int_equal(tb_writer_flush(c->writer), 0);
	memset(totals, 0, (size_t)nmetrics * sizeof(*totals));
	DIR *d = opendir(log_dir);
	assert_non_null(d);
	int logs = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 5 || strcmp(de->d_name + n - 5, ".hlog") != 0)
			continue;
		char path[256];
		snprintf(path, sizeof(path), "%s/%s", log_dir, de->d_name);
		add_log_totals(path, start_ns, totals, nmetrics);
		logs++;
	}
	closedir(d);
	assert_true(logs > 0);
}
