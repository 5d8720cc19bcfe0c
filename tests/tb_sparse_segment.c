/* tb_sparse_segment.c - a bus file whose pages are not all there: a
 * header with capacities that validate over a sparse file larger than its
 * file system can hold (tmpfs lets the size exceed its limit), made by
 * anyone who may write the bus directory before the collector does.
 *
 *   tb_sparse_segment DIR [--guard]
 *
 * DIR must be a tmpfs with a size limit (it_segment_space.sh mounts one).
 * The engine (a child) attaches and records: tb_attach must see that the
 * ring cannot be backed (its prefault fails) and give a handle that records
 * nothing, rather than one whose first store into a hole is a SIGBUS.
 * Exit 0 if the engine returned, 1 if it died or hung, 2 on a set-up
 * failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine_wait.h"
#include "tailbus/producer.h"
#include "tailbus/segment.h"

#define BUS "sparse"

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *dir = argv[1];
	bool guard = argc > 2 && strcmp(argv[2], "--guard") == 0;
	setenv("TAILBUS_DIR", dir, 1);
	tb_seg_config cfg;
	tb_seg_config_default(&cfg);
	cfg.slot_count = 1;
	cfg.ring_capacity = 1u << 31;
	cfg.metric_capacity = 16;
	cfg.live_intervals = 1;
	cfg.live_heap_bytes = TB_LIVE_HEAP_MIN;
	tb_seg_header h;
	if (tb_seg_layout(&cfg, &h) < 0)
		return 2;
	h.page_size = 4096;
	h.magic = TB_SEG_MAGIC;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s.tailbus", dir, BUS);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)h.total_size) < 0 || pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		perror("making the bus file");
		return 2;
	}
	close(fd);
	fprintf(stderr, "bus file: %llu bytes (sparse), ring_capacity %u\n",
		(unsigned long long)h.total_size, h.ring_capacity);
	pid_t pid = fork();
	if (pid == 0) {
		if (guard)
			tb_guard_segment_faults();
		tb_producer *p = tb_attach(BUS, "engine");
		const char *why = NULL;
		if (!p || tb_producer_error(p, &why)) {
			fprintf(stderr, "engine: no-op handle (%s): fine\n", why);
			_exit(0);
		}
		fprintf(stderr, "engine: attached to the sparse bus\n");
		tb_metric_t m = tb_metric(p, "fill");
		for (uint64_t i = 0; i < (UINT64_C(1) << 24); i++)
			tb_span(p, m, i, i + 100);
		fprintf(stderr, "engine: returned\n");
		_exit(0);
	}
	int status = 0;
	return engine_wait(pid, 10, &status) && !WIFSIGNALED(status) ? 0 : 1;
}
