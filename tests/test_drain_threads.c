/* test_drain_threads.c - the collector's threads under load: drain threads
 * switching banks, rings handed between them, a slow closer.
 *
 * A real collector (tb_collector_run on its own thread, with its drain
 * threads) on a scratch bus, and real producers (tb_attach, one per
 * thread) flooding it with SPANs of two metrics over many short intervals.
 * What must hold: the log's counts per metric equal what the producers
 * wrote plus what they folded, exactly - no event lost at a switch or a
 * hand-over, none counted twice.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_scratch.h"
#include "tailbus/producer.h"

#define BUS "drain-threads"
#if defined(__SANITIZE_ADDRESS__)
#define TB_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TB_UNDER_ASAN 1
#endif
#endif
#ifndef TB_UNDER_ASAN
#define TB_UNDER_ASAN 0
#endif
#define PRODUCERS 4
#define METRICS 2
#define INTERVAL_NS 50000000LL /* 50 ms: many switches in a short test */
#define FLOOD_NS 600000000LL

struct fixture {
	char seg_dir[64], log_dir[64];
	tb_collector c;
	volatile sig_atomic_t stop;
	pthread_t run;
	int rc;
	uint64_t sent[METRICS]; /* written + folded, all producers */
	pthread_mutex_t lock;
	volatile int flooding;
};

static void *run_collector(void *arg)
{
	struct fixture *f = arg;
	f->rc = tb_collector_run(&f->c, &f->stop);
	return NULL;
}

/* One producer thread: spans of both metrics, in bursts, for FLOOD_NS. */
static void *produce(void *arg)
{
	struct fixture *f = arg;
	tb_producer *p = tb_attach(BUS, "flood");
	const char *why = NULL;
	if (tb_producer_error(p, &why) != 0) {
		fprintf(stderr, "tb_attach: %s\n", why);
		abort();
	}
	tb_metric_t m[METRICS] = {tb_metric(p, "m0"), tb_metric(p, "m1")};
	uint64_t per[METRICS] = {0}, done = 0;
	int64_t end = mono_ns() + FLOOD_NS;
	while (mono_ns() < end) {
		for (int k = 0; k < 512; k++) {
			uint64_t now = tb_now(p);
			tb_span(p, m[k & 1], now - 1000 - (uint64_t)(k * 37), now);
			per[k & 1]++;
		}
		if (++done % 8 == 0)
			usleep(50);
	}
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	/* only SPANs were sent and fold lanes take them all: nothing dropped */
	if (st.dropped != 0 || st.written + st.folded != per[0] + per[1]) {
		fprintf(stderr, "producer: %llu attempted, %llu written, %llu folded, %llu dropped\n",
			(unsigned long long)st.attempted, (unsigned long long)st.written,
			(unsigned long long)st.folded, (unsigned long long)st.dropped);
		abort();
	}
	tb_detach(p);
	pthread_mutex_lock(&f->lock);
	f->sent[0] += per[0];
	f->sent[1] += per[1];
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void open_collector_with(struct fixture *f, uint32_t drain_threads, int64_t close_delay_ns,
				uint32_t series_reserve, int64_t backoff_busy_ns, int64_t housekeep_ns)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	collector_scratch_make(f->seg_dir, f->log_dir, "drain");
	tb_collector_config cfg;
	collector_scratch_config(&cfg, BUS, f->seg_dir, f->log_dir, 8);
	cfg.interval_ns = INTERVAL_NS;
	cfg.grace_ns = INTERVAL_NS / 5;
	cfg.drain_threads = drain_threads;
	cfg.rebalance = false; /* the tests move rings themselves */
	cfg.test_close_delay_ns = close_delay_ns;
	cfg.series_reserve = series_reserve;
	cfg.test_backoff_busy_ns = backoff_busy_ns;
	cfg.test_housekeep_busy_ns = housekeep_ns;
	collector_open_or_fail(&f->c, &cfg);
	assert_int_equal(pthread_create(&f->run, NULL, run_collector, f), 0);
}

static void open_collector(struct fixture *f, uint32_t drain_threads, int64_t close_delay_ns)
{
	open_collector_with(f, drain_threads, close_delay_ns, TB_SERIES_RESERVE, 0, 0);
}

/* Stop the collector (it drains and closes what is left), then add up
 * the log's counts per metric over every interval. */
static void stop_and_count(struct fixture *f, int64_t *logged)
{
	f->stop = 1;
	assert_int_equal(pthread_join(f->run, NULL), 0);
	assert_int_equal(f->rc, 0);
	collector_log_totals(&f->c, f->log_dir, -1, logged, METRICS);
}

static void close_collector(struct fixture *f)
{
	tb_collector_close(&f->c);
	collector_scratch_remove(f->seg_dir, f->log_dir, BUS);
}

/* Flood with PRODUCERS threads; with `move`, hand every ring to another
 * drain thread every 2 ms meanwhile. */
static void flood(struct fixture *f, bool move)
{
	pthread_t p[PRODUCERS];
	for (int k = 0; k < PRODUCERS; k++)
		assert_int_equal(pthread_create(&p[k], NULL, produce, f), 0);
	uint32_t turn = 0, slots = f->c.seg.layout.slot_count;
	int64_t end = mono_ns() + FLOOD_NS;
	while (move && mono_ns() < end) {
		turn++;
		for (uint32_t i = 0; i < slots; i++)
			tb_collector_assign(&f->c, i, (i + turn) % f->c.ndrainers);
		usleep(2000);
	}
	for (int k = 0; k < PRODUCERS; k++)
		assert_int_equal(pthread_join(p[k], NULL), 0);
}

/* Without moves (no rebalance), ring i stays on drain thread i mod N: the
 * sidecar's ring rows must name that thread in their drain_thread column,
 * and the drain rows their own number. Returns the ring rows seen. */
static int ring_rows_name_their_drain_thread(struct fixture *f)
{
	char cmd[160], line[512];
	snprintf(cmd, sizeof(cmd), "cat '%s'/*.health.csv", f->log_dir);
	FILE *csv = popen(cmd, "r");
	assert_non_null(csv);
	int rings = 0;
	while (fgets(line, sizeof(line), csv)) {
		char scope[24], name[96];
		if (sscanf(line, "%*[^,],%23[^,],%95[^,],", scope, name) != 2)
			continue;
		/* the drain_thread column, the 17th */
		const char *drain = line;
		for (int col = 1; col < 17 && drain; col++)
			if ((drain = strchr(drain, ',')))
				drain++;
		assert_non_null(drain);
		unsigned n;
		if (strcmp(scope, "ring") == 0 && sscanf(name, "ring%u:", &n) == 1) {
			if ((unsigned)atoi(drain) != n % f->c.ndrainers || *drain == ',')
				fail_msg("ring %u's row names drain thread '%.*s'", n, (int)strcspn(drain, ",\n"),
					 drain);
			rings++;
		} else if (strcmp(scope, "drain") == 0 && sscanf(name, "drain%u:", &n) == 1) {
			assert_int_equal(atoi(drain), n);
		}
	}
	assert_int_equal(pclose(csv), 0);
	return rings;
}

static void check_exact(uint32_t drain_threads, bool move)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	open_collector(f, drain_threads, 0);
	flood(f, move);
	int64_t logged[METRICS];
	stop_and_count(f, logged);
	for (int k = 0; k < METRICS; k++) {
		assert_true(f->sent[k] > 0);
		if ((uint64_t)logged[k] != f->sent[k])
			fail_msg("%u drain threads%s: m%d logged %lld, sent %llu", drain_threads,
				 move ? ", rings moving" : "", k, (long long)logged[k],
				 (unsigned long long)f->sent[k]);
	}
	if (move)
		assert_true(f->c.moves > 100);
	else
		assert_true(ring_rows_name_their_drain_thread(f) > 0);
	close_collector(f);
	free(f);
}

static void one_drain_thread_counts_every_event_across_switches(void **state)
{
	(void)state;
	check_exact(1, false);
}

static void two_drain_threads_count_every_event_across_switches(void **state)
{
	(void)state;
	check_exact(2, false);
}

static void four_drain_threads_count_every_event_across_switches(void **state)
{
	(void)state;
	check_exact(4, false);
}

/* Every ring changes drain thread every 2 ms while producers flood: no
 * event lost or counted twice in a hand-over. */
static void rings_moved_between_drain_threads_mid_flood_lose_nothing(void **state)
{
	(void)state;
	check_exact(2, true);
	check_exact(4, true);
}

/* A closer that takes three intervals over each close: the drain threads
 * go on (every event is still counted, exactly), and the closes that fell
 * behind are counted. */
static void a_slow_closer_stalls_no_drain_and_is_reported(void **state)
{
	(void)state;
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	open_collector(f, 2, 3 * INTERVAL_NS);
	flood(f, false);
	int64_t logged[METRICS];
	stop_and_count(f, logged);
	for (int k = 0; k < METRICS; k++)
		assert_int_equal(logged[k], f->sent[k]);
	assert_true(f->c.closer.behind > 0);
	close_collector(f);
	free(f);
}

/* Column `col` (1-based) of the sidecar's drain rows: its largest value
 * and its sum over them; the rows seen. */
static unsigned drain_column(struct fixture *f, int col, unsigned long long *most,
			     unsigned long long *sum)
{
	char cmd[256], line[512];
	snprintf(cmd, sizeof(cmd), "awk -F, '$2 == \"drain\" { print $%d }' '%s'/*.health.csv", col,
		 f->log_dir);
	FILE *out = popen(cmd, "r");
	assert_non_null(out);
	unsigned rows = 0;
	*most = *sum = 0;
	while (fgets(line, sizeof(line), out)) {
		char *end;
		unsigned long long v = strtoull(line, &end, 10);
		if (end == line || *end != '\n')
			fail_msg("drain row column %d: '%s'", col, line);
		rows++;
		*sum += v;
		if (v > *most)
			*most = v;
	}
	assert_int_equal(pclose(out), 0);
	return rows;
}

/* The drain threads' longest self-caused pause (ever, in the closer) and
 * the longest wall gap between passes that the sidecar's drain rows show,
 * us, for a collector idle for six intervals with the test hooks given. */
static void idle_pauses(int64_t backoff_busy_ns, int64_t housekeep_ns, int64_t *self_ns,
			unsigned long long *gap_us)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	open_collector_with(f, 1, 0, TB_SERIES_RESERVE, backoff_busy_ns, housekeep_ns);
	usleep(6 * INTERVAL_NS / 1000);
	int64_t logged[METRICS];
	stop_and_count(f, logged);
	unsigned long long sum;
	assert_true(drain_column(f, 12, gap_us, &sum) > 0); /* longest_gap_us */
	*self_ns = f->c.closer.longest_self_pause_ns;
	close_collector(f);
	free(f);
}

/* The machine taking the CPU while the drain thread backs off (the test
 * hook runs 5 ms between two of the back-off's clock reads, on the CPU, as
 * a host's unreported stop is charged): the drain rows show the gaps, and
 * the drain thread's self-caused pause does not hold them. Its own work
 * between passes does: housekeeping made 5 ms longer is a pause of its. */
#define BUSY_NS 5000000LL
static void the_machines_time_is_not_a_self_caused_pause_housekeeping_is(void **state)
{
	(void)state;
	int64_t self;
	unsigned long long gap_us;
	idle_pauses(BUSY_NS, 0, &self, &gap_us);
	assert_true(gap_us >= BUSY_NS / 1000);
	if (self >= BUSY_NS / 2)
		fail_msg("self-caused pause %lld ns with %lld ns run in the back-off", (long long)self, BUSY_NS);
	idle_pauses(0, BUSY_NS, &self, &gap_us);
	assert_true(gap_us >= BUSY_NS / 1000);
	if (self < BUSY_NS / 10 * 9) /* its 5 ms, less a step short of the machine's */
		fail_msg("self-caused pause %lld ns with housekeeping %lld ns longer", (long long)self, BUSY_NS);
}

/* A gap that lasts until the drain thread ends (the collector kept off
 * its CPU, then stopped) is the last drain row's, beside the drops it
 * caused: housekeeping made 1 s longer, the stop asked 200 ms into it. */
#define UNTIL_END_NS 1000000000LL
static void a_gap_until_the_drain_thread_ends_is_reported(void **state)
{
	(void)state;
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	open_collector_with(f, 1, 0, TB_SERIES_RESERVE, 0, UNTIL_END_NS);
	usleep(UNTIL_END_NS / 5 / 1000);
	int64_t logged[METRICS];
	stop_and_count(f, logged);
	unsigned long long gap_us, sum;
	assert_true(drain_column(f, 12, &gap_us, &sum) > 0); /* longest_gap_us */
	if (gap_us < UNTIL_END_NS / 1000 * 9 / 10)
		fail_msg("longest gap %llu us, the drain thread kept %lld us from its rings until it ended",
			 gap_us, UNTIL_END_NS / 1000);
	close_collector(f);
	free(f);
}

/* The run loop's hold on the rings (a segment repair): once each drain
 * thread has been at the closed gate (tb_rings_gate_close waits for that,
 * up to its bound), no drain thread reads a ring, though the producers go
 * on writing; opened again, they read on, and every event is still
 * counted exactly. */
static void no_drain_thread_reads_while_the_rings_gate_is_closed(void **state)
{
	(void)state;
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	open_collector(f, 2, 0);
	pthread_t p[PRODUCERS];
	for (int k = 0; k < PRODUCERS; k++)
		assert_int_equal(pthread_create(&p[k], NULL, produce, f), 0);
	usleep(100000); /* flooding, both drain threads reading */
	uint64_t taken[2], seen[2];
	for (int round = 0; round < 3; round++) {
		for (uint32_t k = 0; k < 2; k++)
			seen[k] = __atomic_load_n(&f->c.drainers[k].gate_seen, __ATOMIC_ACQUIRE);
		tb_rings_gate_close(&f->c);
		/* it waits 20 ms at most for a thread the host keeps off its CPU:
		 * on a loaded machine, wait here until each has been at the gate */
		for (uint32_t k = 0; k < 2; k++) {
			for (int tries = 0; tries < 2000 && __atomic_load_n(&f->c.drainers[k].gate_seen,
									 __ATOMIC_ACQUIRE) == seen[k]; tries++)
				usleep(1000);
			assert_true(__atomic_load_n(&f->c.drainers[k].gate_seen, __ATOMIC_ACQUIRE) > seen[k]);
			taken[k] = __atomic_load_n(&f->c.drainers[k].events_total, __ATOMIC_ACQUIRE);
		}
		usleep(20000);
		for (uint32_t k = 0; k < 2; k++)
			assert_int_equal(__atomic_load_n(&f->c.drainers[k].events_total, __ATOMIC_ACQUIRE),
					 taken[k]);
		tb_rings_gate_open(&f->c);
		usleep(50000);
	}
	for (int k = 0; k < PRODUCERS; k++)
		assert_int_equal(pthread_join(p[k], NULL), 0);
	int64_t logged[METRICS];
	stop_and_count(f, logged);
	for (int k = 0; k < METRICS; k++)
		assert_int_equal(logged[k], f->sent[k]);
	close_collector(f);
	free(f);
}

/* Series memory and the drain thread: many new (ring, metric) pairs at
 * once, with no series faulted in ahead (--series-reserve 0). */
#define NEW_METRICS 24
#define NEW_EVENTS 3000

struct burst {
	struct fixture *f;
	int first, count; /* metrics m<first>.. */
	uint64_t sent[NEW_METRICS];
};

static void *burst(void *arg)
{
	struct burst *b = arg;
	tb_producer *p = tb_attach(BUS, "burst");
	assert_int_equal(tb_producer_error(p, NULL), 0);
	tb_metric_t m[NEW_METRICS];
	for (int k = 0; k < b->count; k++) {
		char name[16];
		snprintf(name, sizeof(name), "m%d", b->first + k);
		m[k] = tb_metric(p, name);
	}
	for (int e = 0; e < NEW_EVENTS; e++) {
		uint64_t now = tb_now(p);
		tb_span(p, m[e % b->count], now - 700, now);
		b->sent[b->first + e % b->count]++;
	}
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	assert_int_equal(st.written, NEW_EVENTS); /* the ring holds them all */
	tb_detach(p);
	return NULL;
}

/* threads producers, each over `count` metrics from m<first>, all at once */
static void bursts(struct fixture *f, struct burst *b, int threads, int first, int count)
{
	pthread_t t[8];
	for (int k = 0; k < threads; k++) {
		b[k] = (struct burst){.f = f, .first = first, .count = count};
		assert_int_equal(pthread_create(&t[k], NULL, burst, &b[k]), 0);
	}
	for (int k = 0; k < threads; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
}

/* The minor page faults of the thread named `name` in this process so far
 * (/proc/self/task/<tid>/stat, field 10), or -1 if there is none. */
static long thread_faults(const char *name)
{
	char path[96], line[512];
	for (int tid = 1; tid < 4194304; tid++) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		FILE *comm = fopen(path, "r");
		if (!comm)
			continue;
		bool it = fgets(line, sizeof(line), comm) && strncmp(line, name, strlen(name)) == 0 &&
			  line[strlen(name)] == '\n';
		fclose(comm);
		if (!it)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		FILE *stat = fopen(path, "r");
		assert_non_null(stat);
		assert_non_null(fgets(line, sizeof(line), stat));
		fclose(stat);
		long faults = -1;
		const char *after = strrchr(line, ')'); /* the name may hold spaces */
		assert_non_null(after);
		/* fields 3.. after the name: state ppid pgrp session tty tpgid flags minflt */
		assert_int_equal(sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %ld", &faults), 1);
		return faults;
	}
	return -1;
}

/* Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14), with which
 * tailbusd maps the segment writable at start; without it a ring handed
 * back faults on the drain thread as it is reset (docs/design.md). */
static bool kernel_populates_for_write(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	bool has = madvise(p, page, 23 /* MADV_POPULATE_WRITE */) == 0;
	munmap(p, page);
	return has;
}

/* Producers start many metrics at once, beyond every series faulted in:
 * the drain thread takes no page fault for them (the keeper faults each in
 * while its events wait in their ring), and every event is still counted
 * exactly. The first burst warms the drain thread's own stack and code. */
static void new_series_cost_the_drain_thread_no_page_fault(void **state)
{
	(void)state;
	struct fixture *f = calloc(1, sizeof(*f));
	struct burst *b = calloc(8, sizeof(*b));
	assert_non_null(f);
	assert_non_null(b);
	open_collector_with(f, 1, 0, 0, 0, 0);
	bursts(f, b, 2, 0, NEW_METRICS / 2); /* m0..m11 on two rings */
	usleep(200000);
	long before = thread_faults("tb-drain0");
	assert_true(before >= 0);
	bursts(f, b + 2, 4, NEW_METRICS / 2, NEW_METRICS / 2); /* m12..m23 on four rings */
	usleep(200000);
	long after = thread_faults("tb-drain0");
	int64_t logged[NEW_METRICS];
	f->stop = 1;
	assert_int_equal(pthread_join(f->run, NULL), 0);
	assert_int_equal(f->rc, 0);
	collector_log_totals(&f->c, f->log_dir, -1, logged, NEW_METRICS);
	for (int k = 0; k < NEW_METRICS; k++) {
		uint64_t sent = 0;
		for (int t = 0; t < 6; t++)
			sent += b[t].sent[k];
		if ((uint64_t)logged[k] != sent)
			fail_msg("m%d: logged %lld, sent %llu", k, (long long)logged[k], (unsigned long long)sent);
	}
	/* (ASan's shadow of the series memory is its own, faulted in by
	 * whoever checks it first) */
	if (!TB_UNDER_ASAN && kernel_populates_for_write() && after != before)
		fail_msg("the drain thread took %ld page faults while 48 new series started",
			 after - before);
	assert_true(f->c.series_waits > 0); /* the bursts did wait */
	assert_int_equal(f->c.series_unready, 0);
	/* and the sidecar's drain rows said so, interval by interval */
	unsigned long long most, waits;
	assert_true(drain_column(f, 18, &most, &waits) > 0); /* series_waits */
	assert_int_equal(waits, f->c.series_waits);
	close_collector(f);
	free(b);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_drain_thread_counts_every_event_across_switches),
		cmocka_unit_test(two_drain_threads_count_every_event_across_switches),
		cmocka_unit_test(four_drain_threads_count_every_event_across_switches),
		cmocka_unit_test(rings_moved_between_drain_threads_mid_flood_lose_nothing),
		cmocka_unit_test(a_slow_closer_stalls_no_drain_and_is_reported),
		cmocka_unit_test(the_machines_time_is_not_a_self_caused_pause_housekeeping_is),
		cmocka_unit_test(a_gap_until_the_drain_thread_ends_is_reported),
		cmocka_unit_test(no_drain_thread_reads_while_the_rings_gate_is_closed),
		cmocka_unit_test(new_series_cost_the_drain_thread_no_page_fault),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
