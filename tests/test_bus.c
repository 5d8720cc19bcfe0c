/* test_bus.c - what a segment says about its users (tailbus/bus.h).
 *
 * The collector rule on header fields set by hand (never served, stopped,
 * silent, serving, at the edge of the silence); a real segment in a private
 * directory read back by tb_bus_status_read with slots claimed by this
 * process (attached), by a pid that is not its owner (gone) and a detached
 * one, and the time of a ring's newest event as its last use; the counts of
 * a segment kept mapped (header fields and rings' counters); the scan of a
 * directory (a lock file and other names skipped); the unused and staleness
 * rules; and a removal that refuses while the collector's lock is held.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tailbus/bus.h"
#include "tailbus/owner.h"
#include "tailbus/segment.h"

#define BUS "test-bus"
#define SECOND INT64_C(1000000000)

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * SECOND + ts.tv_nsec;
}

static void collector_rule_reads_the_header(void **state)
{
	(void)state;
	tb_seg_header h;
	memset(&h, 0, sizeof(h));
	int64_t now = 100 * SECOND;
	const char *why = NULL;
	assert_int_equal(tb_bus_collector_state(&h, now, &why), TB_COLLECTOR_NONE);
	assert_non_null(strstr(why, "is the bus name right?"));
	h.collector_generation = 1;
	assert_int_equal(tb_bus_collector_state(&h, now, NULL), TB_COLLECTOR_STOPPED);
	h.collector_pid = 1234;
	h.collector_heartbeat_ns = now - TB_COLLECTOR_SILENT_NS;
	assert_int_equal(tb_bus_collector_state(&h, now, &why), TB_COLLECTOR_SERVING);
	assert_null(why);
	h.collector_heartbeat_ns = now - TB_COLLECTOR_SILENT_NS - 1;
	assert_int_equal(tb_bus_collector_state(&h, now, &why), TB_COLLECTOR_SILENT);
	/* written by someone else: any value is judged, none is undefined */
	int64_t odd[] = {INT64_MIN, INT64_MIN + 1, now + 1, INT64_MAX, -1};
	for (size_t k = 0; k < sizeof(odd) / sizeof(odd[0]); k++) {
		h.collector_heartbeat_ns = odd[k];
		assert_int_equal(tb_bus_collector_state(&h, now, NULL), TB_COLLECTOR_SILENT);
	}
	assert_string_equal(tb_bus_collector_name(TB_COLLECTOR_SILENT), "silent");
	assert_string_equal(tb_bus_collector_name(TB_COLLECTOR_NONE), "none");
}

struct fixture {
	char dir[64];
	tb_seg seg;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/tb-test-bus.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	tb_seg_config c;
	tb_seg_config_default(&c);
	c.slot_count = 4;
	c.ring_capacity = 64;
	c.metric_capacity = 16;
	if (tb_seg_open(&f->seg, f->dir, BUS, &c, TB_SEG_CREATE, NULL) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	tb_seg_close(&f->seg);
	tb_seg_unlink(f->dir, BUS);
	char lock[128];
	snprintf(lock, sizeof(lock), "%s/%s%s.lock", f->dir, BUS, TB_SEG_SUFFIX);
	unlink(lock);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Slot i as a producer of pid (with start time `start`) leaves it. */
static void claim(tb_seg *s, uint32_t i, uint32_t state, pid_t pid, uint64_t start, int64_t attached)
{
	tb_slot *slot = tb_seg_slot(s, i);
	slot->pid = pid;
	slot->pid_start_time = start;
	slot->attached_ns = (uint64_t)attached;
	slot->state = state;
}

static void status_counts_owners_and_last_use(void **state)
{
	struct fixture *f = *state;
	int64_t mono = clock_ns(CLOCK_MONOTONIC);
	pid_t me = getpid();
	/* made a minute ago: its creation is a use too */
	((tb_seg_header *)f->seg.base)->created_realtime_ns = clock_ns(CLOCK_REALTIME) - 60 * SECOND;
	claim(&f->seg, 0, TB_SLOT_LIVE, me, tb_proc_start_time(me), mono - 50 * SECOND);
	claim(&f->seg, 1, TB_SLOT_LIVE, me, tb_proc_start_time(me) + 1, mono - 40 * SECOND); /* not its owner */
	claim(&f->seg, 2, TB_SLOT_DETACHED, me, tb_proc_start_time(me), mono - 30 * SECOND);
	/* slot 2's newest event, 10 s ago, at the position it detached at */
	tb_ring_header *ring = tb_seg_ring(&f->seg, 2);
	ring->p_tail = 5;
	tb_seg_events(&f->seg, 2)[4].w1 = (uint64_t)(mono - 10 * SECOND);
	assert_true(tb_seg_metric_register(&f->seg, "m1") >= 0);
	tb_bus_status st;
	char path[128];
	snprintf(path, sizeof(path), "%s/%s%s", f->dir, BUS, TB_SEG_SUFFIX);
	assert_int_equal(tb_bus_status_read(path, &st), 0);
	assert_string_equal(st.bus, BUS);
	assert_int_equal(st.collector, TB_COLLECTOR_NONE);
	assert_int_equal(st.producers, 1);
	assert_int_equal(st.producers_gone, 2);
	assert_int_equal(st.metrics, 1);
	assert_int_equal(st.slots, 4);
	int64_t idle = clock_ns(CLOCK_REALTIME) - st.last_use_ns;
	assert_true(idle >= 10 * SECOND && idle < 11 * SECOND);
	/* an event time that is not the bus clock's (before the attach) is not a use */
	tb_seg_events(&f->seg, 2)[4].w1 = 1;
	assert_int_equal(tb_bus_status_read(path, &st), 0);
	idle = clock_ns(CLOCK_REALTIME) - st.last_use_ns;
	assert_true(idle >= 30 * SECOND && idle < 31 * SECOND);
	/* attached: never stale; gone: stale after its last use */
	int64_t now = clock_ns(CLOCK_REALTIME);
	assert_false(tb_bus_unused(&st));
	assert_false(tb_bus_stale(&st, 0, now));
	claim(&f->seg, 0, TB_SLOT_FREE, 0, 0, 0);
	assert_int_equal(tb_bus_status_read(path, &st), 0);
	assert_true(tb_bus_stale(&st, 30 * SECOND, now));
	/* unused whatever the idle time; stale only past it */
	assert_true(tb_bus_unused(&st));
	assert_false(tb_bus_stale(&st, 32 * SECOND, now));
	/* a collector that runs under its pid, or an unread segment: never unused */
	st.collector_runs = true;
	assert_false(tb_bus_unused(&st));
	st.collector_runs = false;
	st.error = -EACCES;
	assert_false(tb_bus_unused(&st));
}

/* A producer in another PID namespace counts by its owner lock (held on an
 * open of the file, as tb_attach takes it), whatever its pid says here. */
static void status_judges_another_namespace_by_the_owner_lock(void **state)
{
	struct fixture *f = *state;
	uint64_t own = tb_pid_namespace();
	assert_true(own != 0);
	int64_t mono = clock_ns(CLOCK_MONOTONIC);
	/* pid 1 started at another time: an impostor by the pid rule */
	claim(&f->seg, 0, TB_SLOT_LIVE, 1, tb_proc_start_time(1) + 1, mono - SECOND);
	claim(&f->seg, 1, TB_SLOT_LIVE, 1, tb_proc_start_time(1) + 1, mono - SECOND);
	tb_seg_slot(&f->seg, 0)->pid_ns = own + 1;
	tb_seg_slot(&f->seg, 1)->pid_ns = own + 1;
	char path[128];
	snprintf(path, sizeof(path), "%s/%s%s", f->dir, BUS, TB_SEG_SUFFIX);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(tb_owner_lock(fd, 0), 0);
	tb_bus_status st;
	assert_int_equal(tb_bus_status_read(path, &st), 0);
	assert_int_equal(st.producers, 1);      /* slot 0: locked */
	assert_int_equal(st.producers_gone, 1); /* slot 1: no lock */
	/* a second open cannot take a held lock; the holder's close drops it */
	int other = open(path, O_RDWR | O_CLOEXEC);
	assert_int_equal(tb_owner_lock(other, 0), -EAGAIN);
	close(fd);
	assert_int_equal(tb_owner_locked(other, 0), 0);
	assert_int_equal(tb_bus_status_read(path, &st), 0);
	assert_int_equal(st.producers, 0);
	assert_int_equal(st.producers_gone, 2);
	close(other);
}

/* A metric entry whose name is not valid is shown under a name that no
 * valid one can take: two series never share a label. */
static void an_invalid_metric_name_is_shown_as_no_valid_one(void **state)
{
	struct fixture *f = *state;
	int id = tb_seg_metric_register(&f->seg, "m1");
	assert_true(id >= 0);
	char shown[64], valid[64];
	tb_seg_metric(&f->seg, (uint32_t)id)->name[0] = ' ';
	tb_seg_metric_shown_name(&f->seg, (uint32_t)id, shown, sizeof(shown));
	assert_false(tb_seg_metric_name_valid(shown));
	snprintf(valid, sizeof(valid), "metric-%d", id);
	assert_string_not_equal(shown, valid);
	assert_non_null(strchr(shown, '0' + id % 10));
}

/* Two READY entries of one name: a registrant that stalled mid-way (its
 * entry RESERVING past the 10 ms a lookup waits) while another registered
 * the name again, further on its probe sequence; or a copy a producer
 * scribbled. The entry a lookup of the name ends at keeps the name, the
 * other is shown as metric#<id>: no two series share a label. */
static void a_name_held_twice_is_shown_once(void **state)
{
	struct fixture *f = *state;
	int first = tb_seg_metric_register(&f->seg, "m1");
	assert_true(first >= 0);
	tb_metric_entry *e = tb_seg_metric(&f->seg, (uint32_t)first);
	e->state = TB_METRIC_RESERVING; /* stalled */
	int again = tb_seg_metric_register(&f->seg, "m1");
	assert_true(again >= 0 && again != first);
	char shown[64], want[64];
	tb_seg_metric_shown_name(&f->seg, (uint32_t)again, shown, sizeof(shown));
	assert_string_equal(shown, "m1"); /* while the first is not READY */
	e->state = TB_METRIC_READY; /* it finishes */
	tb_seg_metric_shown_name(&f->seg, (uint32_t)first, shown, sizeof(shown));
	assert_string_equal(shown, "m1");
	tb_seg_metric_shown_name(&f->seg, (uint32_t)again, shown, sizeof(shown));
	snprintf(want, sizeof(want), "metric#%d", again);
	assert_string_equal(shown, want);
	/* a copy off the name's probe sequence, before it in the table */
	uint32_t copy = 0;
	while (tb_seg_metric(&f->seg, copy)->state != TB_METRIC_EMPTY)
		copy++;
	assert_true(copy < (uint32_t)first);
	memcpy(tb_seg_metric(&f->seg, copy), e, sizeof(*e));
	tb_seg_metric_shown_name(&f->seg, copy, shown, sizeof(shown));
	snprintf(want, sizeof(want), "metric#%u", copy);
	assert_string_equal(shown, want);
	tb_seg_metric_shown_name(&f->seg, (uint32_t)first, shown, sizeof(shown));
	assert_string_equal(shown, "m1");
}

static void counts_of_a_mapped_segment(void **state)
{
	struct fixture *f = *state;
	tb_seg_header *h = (tb_seg_header *)f->seg.base;
	int64_t now = 100 * SECOND;
	tb_bus_counts c;
	tb_bus_counts_read(&f->seg, now, &c);
	assert_int_equal(c.collector, TB_COLLECTOR_NONE);
	assert_int_equal(c.collector_pid, 0);
	assert_true(c.heartbeat_age_ns < 0); /* never beat */
	int64_t age = 42;
	assert_false(tb_bus_heartbeat_age(&f->seg, now, &age));
	assert_int_equal(age, 42);
	assert_int_equal(c.rings_live, 0);
	h->collector_generation = 1;
	h->collector_pid = 1234;
	h->collector_heartbeat_ns = now - SECOND;
	h->drain_threads = 2;
	h->drain_longest_pass_us = 30;
	h->drain_self_pause_us = 40;
	h->closes_behind = 5;
	h->series_waits = 6;
	claim(&f->seg, 0, TB_SLOT_LIVE, 1, 1, 1);
	claim(&f->seg, 1, TB_SLOT_DETACHED, 1, 1, 1);
	claim(&f->seg, 2, TB_SLOT_QUARANTINED, 1, 1, 1);
	for (uint32_t i = 0; i < 3; i++) {
		tb_seg_slot(&f->seg, i)->dropped = 10 + i;
		tb_seg_slot(&f->seg, i)->folded = 100 + i;
	}
	tb_bus_counts_read(&f->seg, now, &c);
	assert_int_equal(c.collector, TB_COLLECTOR_SERVING);
	assert_int_equal(c.collector_pid, 1234);
	assert_int_equal(c.heartbeat_age_ns, SECOND);
	assert_true(tb_bus_heartbeat_age(&f->seg, now, &age));
	assert_int_equal(age, SECOND);
	assert_int_equal(c.drain_threads, 2);
	assert_int_equal(c.drain_longest_pass_us, 30);
	assert_int_equal(c.drain_self_pause_us, 40);
	assert_int_equal(c.closes_behind, 5);
	assert_int_equal(c.series_waits, 6);
	/* live and detached rings count; a quarantined one does not */
	assert_int_equal(c.rings_live, 1);
	assert_int_equal(c.ring_dropped, 10 + 11);
	assert_int_equal(c.ring_folded, 100 + 101);
	assert_int_equal(tb_bus_interval_ns(&f->seg), 0);
	assert_int_equal(tb_bus_intervals_published(&f->seg), 0);
	h->collector_interval_ns = SECOND;
	h->intervals_published = 7;
	assert_int_equal(tb_bus_interval_ns(&f->seg), SECOND);
	assert_int_equal(tb_bus_intervals_published(&f->seg), 7);
}

static int count_each(const tb_bus_status *st, void *arg)
{
	int *n = arg;
	assert_string_equal(st->bus, BUS);
	(*n)++;
	return 0;
}

static void scan_and_remove(void **state)
{
	struct fixture *f = *state;
	char path[128], lock[160], other[128];
	snprintf(path, sizeof(path), "%s/%s%s", f->dir, BUS, TB_SEG_SUFFIX);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	snprintf(other, sizeof(other), "%s/notes.txt", f->dir);
	close(open(other, O_CREAT | O_WRONLY, 0600));
	int lock_fd = open(lock, O_CREAT | O_RDWR, 0600);
	assert_true(lock_fd >= 0);
	int n = 0;
	assert_int_equal(tb_bus_scan(f->dir, count_each, &n), 0);
	assert_int_equal(n, 1); /* neither the lock file nor notes.txt */
	unlink(other);
	/* a collector holds the lock: kept, even though nothing else uses it */
	assert_int_equal(flock(lock_fd, LOCK_EX | LOCK_NB), 0);
	tb_bus_status st;
	assert_int_equal(tb_bus_status_read(path, &st), 0);
	assert_true(tb_bus_stale(&st, 0, clock_ns(CLOCK_REALTIME)));
	assert_int_equal(tb_bus_remove_stale(&st, 0), -EBUSY);
	assert_int_equal(access(path, F_OK), 0);
	close(lock_fd);
	/* used within the hour: kept */
	assert_int_equal(tb_bus_remove_stale(&st, 3600 * SECOND), -EAGAIN);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(tb_bus_remove_stale(&st, 0), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(lock, F_OK), -1);
	n = 0;
	assert_int_equal(tb_bus_scan(f->dir, count_each, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(tb_bus_scan("/nonexistent-tailbus-dir", count_each, &n), -ENOENT);
}

/* A pid's existence, apart from whether its start time can be read (which
 * /proc's hidepid can forbid while the process runs): a slot's owner is
 * gone only when no such process exists. */
static void a_process_exists_until_it_is_reaped(void **state)
{
	(void)state;
	assert_true(tb_proc_exists(getpid()));
	assert_true(tb_proc_exists(1)); /* another user's counts (EPERM) */
	assert_false(tb_proc_exists(0));
	assert_false(tb_proc_exists(-1));
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_false(tb_proc_exists(child));
	assert_int_equal(tb_proc_start_time(child), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(collector_rule_reads_the_header),
		cmocka_unit_test_setup_teardown(status_counts_owners_and_last_use, setup, teardown),
		cmocka_unit_test_setup_teardown(counts_of_a_mapped_segment, setup, teardown),
		cmocka_unit_test_setup_teardown(status_judges_another_namespace_by_the_owner_lock, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_name_held_twice_is_shown_once, setup, teardown),
		cmocka_unit_test_setup_teardown(an_invalid_metric_name_is_shown_as_no_valid_one, setup,
						teardown),
		cmocka_unit_test_setup_teardown(scan_and_remove, setup, teardown),
		cmocka_unit_test(a_process_exists_until_it_is_reaped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
