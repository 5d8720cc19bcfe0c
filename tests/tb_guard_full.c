/* tb_guard_full.c - an engine with the SIGBUS guard on, its segment cut
 * and the file system then filled, so that the pages the cut freed cannot
 * be had again.
 *
 *   tb_guard_full DIR [--no-guard]
 *
 * DIR must be a tmpfs with a size limit (it_segment_space.sh mounts one).
 * A child process (the "engine") calls tb_guard_segment_faults(), attaches,
 * and then someone who may write the segment cuts it at the rings and fills
 * the file system. The engine's next store into its ring is a SIGBUS; the
 * guard gives the file its size back (ftruncate needs no pages) and the
 * store faults again, on a hole tmpfs has no page for. The guard must then
 * put a private page there and let the engine go on, not retry for ever.
 * Exit 0 if the engine returned (or, with --no-guard, died of the SIGBUS,
 * the documented unguarded outcome), 1 if it hung, 2 on a set-up failure.
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

#define BUS "guard-full"

static void fill(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/filler", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror("filler");
		exit(2);
	}
	static char buf[1 << 16];
	memset(buf, 0xab, sizeof(buf));
	long total = 0;
	for (;;) {
		ssize_t n = write(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		total += n;
	}
	fsync(fd);
	close(fd);
	fprintf(stderr, "filler took %ld KiB back (the file system is full now)\n", total / 1024);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: tb_guard_full DIR [--no-guard]\n");
		return 2;
	}
	const char *dir = argv[1];
	bool guard = !(argc > 2 && strcmp(argv[2], "--no-guard") == 0);
	setenv("TAILBUS_DIR", dir, 1);
	tb_seg_config cfg;
	tb_seg_config_default(&cfg);
	cfg.slot_count = 1;
	cfg.ring_capacity = 65536;
	cfg.metric_capacity = 16;
	cfg.live_intervals = 1;
	cfg.live_heap_bytes = TB_LIVE_HEAP_MIN;
	tb_seg seg;
	const char *why = NULL;
	int rc = tb_seg_open(&seg, dir, BUS, &cfg, TB_SEG_CREATE, &why);
	if (rc < 0) {
		fprintf(stderr, "cannot create the bus: %s\n", why ? why : strerror(-rc));
		return 2;
	}
	uint64_t cut = seg.layout.rings_off;
	pid_t pid = fork();
	if (pid == 0) {
		if (guard && tb_guard_segment_faults() < 0)
			_exit(2);
		tb_producer *p = tb_attach(BUS, "engine");
		if (!p || tb_producer_error(p, &why)) {
			fprintf(stderr, "no-op handle: %s\n", why);
			_exit(2);
		}
		tb_metric_t m = tb_metric(p, "fill");
		tb_span(p, m, 1, 2);
		/* a writer of the segment cuts it and the space is taken back */
		if (truncate(seg.path, (off_t)cut) < 0)
			_exit(2);
		fill(dir);
		for (uint64_t i = 0; i < 1000; i++)
			tb_span(p, m, i, i + 100);
		tb_producer_stats st;
		tb_producer_stats_get(p, &st);
		fprintf(stderr, "engine: returned; written %llu dropped %llu, guard repairs %llu\n",
			(unsigned long long)st.written, (unsigned long long)st.dropped,
			(unsigned long long)tb_guard_repairs());
		_exit(0);
	}
	int status = 0;
	bool ended = engine_wait(pid, 5, &status);
	tb_seg_close(&seg);
	if (!ended)
		return 1;
	/* guarded, it must have gone on; unguarded, the SIGBUS is the
	 * documented end */
	return guard ? !(WIFEXITED(status) && WEXITSTATUS(status) == 0) : 0;
}
