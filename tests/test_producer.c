/* test_producer.c - the producer's hot path against the ring it writes.
 *
 * Each test creates a bus with small rings in a private directory, attaches
 * with tb_attach (the real library), and then plays the collector by hand:
 * it reads the events straight out of the ring in the segment, by the lap
 * bit the collector goes by, and moves the ring's consumer index. What is
 * checked is what the collector relies on: the slot, index and lap bit of
 * every event, its two words, that exactly the written events read as
 * written, an exact count of written and dropped events (also across the
 * 32-bit wrap of the ring indices, which a busy thread reaches within
 * minutes), the invalid-span encoding, and the no-op handle when the bus
 * cannot be reached. And that the ring header keeps the byte layout of
 * Concurrency Kit's ck_ring_t that segments have always had.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ck_ring.h>
#include <cmocka.h>

#include "tailbus/hist.h"
#include "tailbus/producer.h"
#include "tailbus/segment.h"

#define RING_EVENTS 64u
#define RING_LOG2 6u
#define BUS "test-producer"

struct fixture {
	char dir[64];
	tb_seg seg; /* the test's own mapping: the collector's view */
	tb_producer *p;
	tb_metric_t m;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/tb-test-producer.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	setenv("TAILBUS_DIR", f->dir, 1);
	tb_seg_config cfg;
	tb_seg_config_default(&cfg);
	cfg.slot_count = 2;
	cfg.ring_capacity = RING_EVENTS;
	const char *why = NULL;
	int rc = tb_seg_open(&f->seg, f->dir, BUS, &cfg, TB_SEG_CREATE, &why);
	if (rc < 0)
		fail_msg("cannot create the bus in %s: %s", f->dir, why ? why : strerror(-rc));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->p)
		tb_detach(f->p);
	tb_seg_close(&f->seg);
	tb_seg_unlink(f->dir, BUS);
	rmdir(f->dir);
	unsetenv("TAILBUS_DIR");
	free(f);
	return 0;
}

static void attach(struct fixture *f)
{
	f->p = tb_attach(BUS, "test-thread");
	assert_non_null(f->p);
	const char *why = NULL;
	if (tb_producer_error(f->p, &why) != 0)
		fail_msg("tb_attach gave a no-op handle: %s", why);
	f->m = tb_metric(f->p, "orders");
	assert_int_not_equal(tb_metric_id(f->m), TB_METRIC_NONE_ID);
}

static tb_ring_header *ring0(struct fixture *f)
{
	return tb_seg_ring(&f->seg, 0);
}

static void expect_stats(tb_producer *p, uint64_t written, uint64_t dropped, uint64_t folded)
{
	tb_producer_stats st;
	tb_producer_stats_get(p, &st);
	assert_int_equal(st.written, written);
	assert_int_equal(st.dropped, dropped);
	assert_int_equal(st.folded, folded);
	assert_int_equal(st.attempted, written + dropped + folded);
}

/* What the collector reads from a SPAN's field (a signed duration). */
#define INVALID_SPAN (-((int64_t)1 << 46))

/* The event at ring index `idx`: a SPAN of metric m with this duration
 * and intended time, and the lap bit that marks it as written there. */
static void expect_span(struct fixture *f, uint32_t idx, int64_t duration, uint64_t intended)
{
	const tb_event *ev = &tb_seg_events(&f->seg, 0)[idx & (RING_EVENTS - 1)];
	assert_int_equal(ev->w0 & TB_KIND_MASK, TB_EV_SPAN);
	assert_int_equal((ev->w0 >> TB_METRIC_SHIFT) & (TB_MAX_METRICS - 1), tb_metric_id(f->m));
	assert_int_equal(ev->w0 & TB_LAP_BIT, tb_lap_bit(idx, RING_LOG2));
	assert_int_equal((int64_t)ev->w0 >> TB_FIELD_SHIFT, duration);
	assert_int_equal(ev->w1, intended);
}

/* How many events read as written from ring index `from` on, going by the
 * lap bit as the collector does (at most a ring's worth). */
static uint32_t readable(struct fixture *f, uint32_t from)
{
	const tb_event *events = tb_seg_events(&f->seg, 0);
	uint32_t n = 0;
	while (n < RING_EVENTS &&
	       !((events[(from + n) & (RING_EVENTS - 1)].w0 ^ tb_lap_bit(from + n, RING_LOG2)) & TB_LAP_BIT))
		n++;
	return n;
}

static uint32_t hint(struct fixture *f)
{
	return __atomic_load_n(&ring0(f)->p_tail, __ATOMIC_ACQUIRE);
}

/* Fill the ring, fold the overflow (the SPANs that do not fit go to a
 * fold lane; nothing is written over), then make room as the collector
 * would: the producer writes again only after reading the new consumer
 * index. */
static void test_fill_drop_refill(void **state)
{
	struct fixture *f = *state;
	attach(f);
	assert_int_equal(readable(f, 0), 0);
	for (uint64_t i = 0; i < RING_EVENTS + 5; i++)
		tb_span(f->p, f->m, 1000 + i, 1000 + i + 10 * i);
	expect_stats(f->p, RING_EVENTS, 0, 5);
	/* exactly the written events read as written, each in its place */
	assert_int_equal(readable(f, 0), RING_EVENTS);
	for (uint32_t i = 0; i < RING_EVENTS; i++)
		expect_span(f, i, 10 * i, 1000 + i);
	/* finding the ring full, the producer published its position */
	assert_int_equal(hint(f), RING_EVENTS);
	/* the slot's shared counters are what the collector reports */
	assert_int_equal(__atomic_load_n(&tb_seg_slot(&f->seg, 0)->folded, __ATOMIC_RELAXED), 5);
	assert_int_equal(__atomic_load_n(&tb_seg_slot(&f->seg, 0)->dropped, __ATOMIC_RELAXED), 0);
	/* a START (or END) cannot be folded: it is dropped */
	tb_start(f->p, f->m, 1, 1);
	expect_stats(f->p, RING_EVENTS, 1, 5);
	assert_int_equal(__atomic_load_n(&tb_seg_slot(&f->seg, 0)->dropped, __ATOMIC_RELAXED), 1);

	/* the collector takes 10 events: exactly 10 more fit, in the next pass */
	__atomic_store_n(&ring0(f)->c_head, 10, __ATOMIC_RELEASE);
	for (uint64_t i = 0; i < 11; i++)
		tb_span(f->p, f->m, 5000 + i, 5000 + i + 7);
	expect_stats(f->p, RING_EVENTS + 10, 1, 6);
	for (uint32_t i = 0; i < 10; i++)
		expect_span(f, RING_EVENTS + i, 7, 5000 + i);
	/* what it did not take is untouched, and the new pass's slots read as
	 * written only as far as they were written */
	expect_span(f, 10, 100, 1010);
	assert_int_equal(readable(f, 10), RING_EVENTS);
	assert_int_equal(readable(f, RING_EVENTS + 10), 0);
}

/* The duration is a signed 47-bit field: a negative one goes through as it
 * is (the collector counts it), and one that does not fit, 2^46 ns or more
 * either way, is sent as the invalid field. */
static void test_invalid_spans(void **state)
{
	struct fixture *f = *state;
	attach(f);
	const uint64_t t = UINT64_C(1) << 60, big = UINT64_C(1) << 46;
	tb_span(f->p, f->m, t, t - 1);           /* negative */
	tb_span(f->p, f->m, t, t + big);         /* 19.5 hours */
	tb_span(f->p, f->m, t, t + big - 1);     /* longest valid */
	tb_span(f->p, f->m, t, t);               /* zero */
	tb_span(f->p, f->m, 0, t);               /* unset intended time */
	tb_span(f->p, f->m, t, t - big - 1);     /* too negative to fit */
	tb_span(f->p, f->m, t, t + 123456789);   /* an ordinary one */
	expect_stats(f->p, 7, 0, 0);
	expect_span(f, 0, -1, t);
	expect_span(f, 1, INVALID_SPAN, t);
	assert_int_equal(tb_seg_events(&f->seg, 0)[1].w0 & ~(UINT64_C(1) << 63),
			 f->m.bits | tb_lap_bit(1, RING_LOG2));
	expect_span(f, 2, (int64_t)big - 1, t);
	expect_span(f, 3, 0, t);
	expect_span(f, 4, INVALID_SPAN, 0);
	expect_span(f, 5, INVALID_SPAN, t);
	expect_span(f, 6, 123456789, t);
}

/* START and END carry the sequence modulo 2^47 and their kind; no sequence
 * reaches the lap bit or the metric's bits. */
static void test_start_end(void **state)
{
	struct fixture *f = *state;
	attach(f);
	tb_start(f->p, f->m, UINT64_MAX, 11);
	tb_end(f->p, f->m, (UINT64_C(1) << 47) + 5, 12);
	const tb_event *ev = tb_seg_events(&f->seg, 0);
	assert_int_equal(ev[0].w0, (TB_FIELD_MASK << TB_FIELD_SHIFT) | f->m.bits |
					   tb_lap_bit(0, RING_LOG2) | TB_EV_START);
	assert_int_equal(ev[0].w1, 11);
	assert_int_equal(ev[1].w0, ((uint64_t)5 << TB_FIELD_SHIFT) | f->m.bits |
					   tb_lap_bit(1, RING_LOG2) | TB_EV_END);
	assert_int_equal(ev[1].w1, 12);
	assert_int_equal(readable(f, 0), 2);
}

/* The ring indices are 32 bits and wrap; the counts and lap bits must not
 * go wrong there. A FREE slot's ring may stand at any index, so start below
 * the wrap, on an odd pass (its lap bit clear), and let the "collector"
 * keep up in steps across both the slot array's end and the wrap. */
static void test_index_wrap(void **state)
{
	struct fixture *f = *state;
	const uint32_t start = UINT32_MAX - 100 - RING_EVENTS;
	assert_int_equal(tb_lap_bit(start, RING_LOG2), 0);
	tb_seg_ring_reset(&f->seg, 0, start);
	assert_int_equal(readable(f, start), 0);
	attach(f);
	uint64_t sent = 0;
	for (int round = 0; round < 10; round++) {
		uint32_t cons = (uint32_t)(start + sent);
		for (int k = 0; k < 40; k++, sent++)
			tb_span(f->p, f->m, sent, sent + 3);
		uint32_t head = tb__head(f->p);
		assert_int_equal(head, (uint32_t)(start + sent));
		assert_int_equal(readable(f, cons), 40);
		expect_span(f, head - 1, 3, sent - 1);
		__atomic_store_n(&ring0(f)->c_head, head, __ATOMIC_RELEASE);
	}
	expect_stats(f->p, 400, 0, 0);
	/* now overflow once past the wrap: a ring's worth fits, the rest are counted */
	for (int k = 0; k < 70; k++)
		tb_span(f->p, f->m, 1, 2);
	expect_stats(f->p, 400 + RING_EVENTS, 0, 70 - RING_EVENTS);
	assert_int_equal(readable(f, (uint32_t)(start + 400)), RING_EVENTS);
}

/* A consumer index the producer cannot have given (more room than the ring
 * has) is read as a full ring: events are dropped, never written over
 * unread ones. */
static void test_bad_consumer_index(void **state)
{
	struct fixture *f = *state;
	attach(f);
	for (int k = 0; k < (int)RING_EVENTS; k++)
		tb_span(f->p, f->m, 1, 2);
	__atomic_store_n(&ring0(f)->c_head, 1000, __ATOMIC_RELEASE); /* ahead of the producer */
	tb_span(f->p, f->m, 1, 2);
	tb_end(f->p, f->m, 1, 2);
	expect_stats(f->p, RING_EVENTS, 1, 1);
	assert_int_equal(tb__head(f->p), RING_EVENTS);
	assert_int_equal(readable(f, 0), RING_EVENTS);
}

/* tb_attach puts its ring into the page tables, writable: the engine's
 * first pass over the ring takes no page fault (one every 4 KiB without,
 * a few microseconds each). The bus lives on /dev/shm as in production. */
static void test_ring_prefaulted(void **state)
{
	(void)state;
	const uint32_t events = 16384; /* 256 KiB: 64 pages */
	char dir[64];
	snprintf(dir, sizeof(dir), "/dev/shm/tb-test-producer.XXXXXX");
	if (!mkdtemp(dir))
		skip();
	setenv("TAILBUS_DIR", dir, 1);
	tb_seg_config cfg;
	tb_seg_config_default(&cfg);
	cfg.slot_count = 1;
	cfg.ring_capacity = events;
	tb_seg seg;
	const char *why = NULL;
	int rc = tb_seg_open(&seg, dir, BUS, &cfg, TB_SEG_CREATE, &why);
	if (rc < 0)
		fail_msg("cannot create the bus in %s: %s", dir, why ? why : strerror(-rc));
	/* a kernel without the advice (before 5.14) cannot do it: nothing to check */
#ifdef MADV_POPULATE_WRITE
	bool can = madvise(seg.base, 4096, MADV_POPULATE_WRITE) == 0;
#else
	bool can = false;
#endif
	tb_producer *p = tb_attach(BUS, "prefault");
	assert_int_equal(tb_producer_error(p, NULL), 0);
	tb_metric_t m = tb_metric(p, "orders");
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	for (uint32_t k = 0; k < events; k++)
		tb_span(p, m, k, k + 5);
	getrusage(RUSAGE_SELF, &after);
	expect_stats(p, events, 0, 0);
	long faults = after.ru_minflt - before.ru_minflt;
	tb_detach(p);
	tb_seg_close(&seg);
	tb_seg_unlink(dir, BUS);
	rmdir(dir);
	unsetenv("TAILBUS_DIR");
	/* under AddressSanitizer each store also touches its shadow, whose
	 * pages (8 for this ring) fault in on first use: not the ring's */
#if defined(__SANITIZE_ADDRESS__)
	can = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	can = false;
#endif
#endif
	if (!can)
		skip();
	if (faults >= 8)
		fail_msg("%ld page faults writing the first pass over a ring of 64 pages", faults);
}

/* tb_fold_index is HdrHistogram's index at 2 digits, lowest 1, highest an
 * hour, for every value up to the highest (here: each value below 2^16,
 * then every bucket's edges and a spread between them). */
static void test_fold_index_is_hdr_2_digits(void **state)
{
	(void)state;
	tb_hist h;
	assert_int_equal(tb_hist_init(&h, 1, TB_FOLD_HIGHEST, 2), 0);
	assert_int_equal(h.counts_len, TB_FOLD_COUNTS);
	for (int64_t v = 0; v < 65536; v++)
		assert_int_equal(tb_fold_index((uint64_t)v), tb_hist_index_of(&h, v));
	for (int e = 16; e < 42; e++) {
		for (int64_t k = -3; k < 2000; k += 7) {
			int64_t v = ((int64_t)1 << e) + k * ((int64_t)1 << (e - 11));
			if (v > TB_FOLD_HIGHEST)
				break;
			assert_int_equal(tb_fold_index((uint64_t)v), tb_hist_index_of(&h, v));
		}
	}
	assert_int_equal(tb_fold_index((uint64_t)TB_FOLD_HIGHEST), tb_hist_index_of(&h, TB_FOLD_HIGHEST));
	assert_true(tb_fold_index((uint64_t)TB_FOLD_HIGHEST) < TB_FOLD_COUNTS);
	tb_hist_free(&h);
}

static const tb_fold_lane *lane_of(struct fixture *f, uint32_t k)
{
	return tb_seg_fold_lane(&f->seg, 0, k);
}

/* With the ring full, a SPAN goes to the lane its metric took (the first
 * free one, in order), counted at its value's 2-digit index: a negative
 * duration at 0 and in `negative`, one past the lanes' highest at it and in
 * `clamped`; each fold sets `dirty`. A metric past the last lane, and a
 * START, are dropped. */
static void test_fold_lanes(void **state)
{
	struct fixture *f = *state;
	attach(f);
	for (uint32_t k = 0; k < RING_EVENTS; k++)
		tb_span(f->p, f->m, 1, 2);
	for (uint32_t k = 0; k < TB_FOLD_DEFAULT_LANES; k++)
		assert_int_equal(lane_of(f, k)->metric_plus_one, 0);
	const uint64_t t = UINT64_C(1) << 50, big = (uint64_t)TB_FOLD_HIGHEST;
	const uint64_t durations[] = {0, 1, 255, 256, 257, 1000, 123456789, big};
	for (size_t k = 0; k < sizeof(durations) / sizeof(durations[0]); k++)
		tb_span(f->p, f->m, t, t + durations[k]);
	tb_span(f->p, f->m, t, t + 1000);      /* again: counts 2 */
	tb_span(f->p, f->m, t, t - 5);         /* negative */
	tb_span(f->p, f->m, 0, t);             /* invalid: negative too */
	tb_span(f->p, f->m, t, t + big + 1);   /* past the highest */
	tb_span(f->p, f->m, t, t + 2 * big);   /* ... */
	const tb_fold_lane *l = lane_of(f, 0);
	assert_int_equal(l->metric_plus_one, tb_metric_id(f->m) + 1);
	assert_int_equal(l->dirty, 1);
	assert_int_equal(l->negative, 2);
	assert_int_equal(l->clamped, 2);
	uint64_t total = 0;
	for (uint32_t i = 0; i < TB_FOLD_COUNTS; i++)
		total += l->counts[i];
	assert_int_equal(total, 13);
	assert_int_equal(l->counts[0], 1 + 2); /* 0, and the two negative ones */
	assert_int_equal(l->counts[1], 1);
	assert_int_equal(l->counts[255], 1);
	assert_int_equal(l->counts[tb_fold_index(256)], 2); /* 256 and 257: one 2-digit count */
	assert_int_equal(l->counts[tb_fold_index(1000)], 2);
	assert_int_equal(l->counts[tb_fold_index(123456789)], 1);
	assert_int_equal(l->counts[tb_fold_index(big)], 3);
	expect_stats(f->p, RING_EVENTS, 0, 13);
	/* every lane taken, one metric each; a further metric is dropped */
	tb_metric_t more[TB_FOLD_DEFAULT_LANES];
	char name[16];
	for (uint32_t k = 0; k < TB_FOLD_DEFAULT_LANES; k++) {
		snprintf(name, sizeof(name), "more%u", k);
		more[k] = tb_metric(f->p, name);
		tb_span(f->p, more[k], t, t + 50 + k);
	}
	for (uint32_t k = 1; k < TB_FOLD_DEFAULT_LANES; k++) {
		assert_int_equal(lane_of(f, k)->metric_plus_one, tb_metric_id(more[k - 1]) + 1);
		assert_int_equal(lane_of(f, k)->counts[50 + k - 1], 1);
	}
	expect_stats(f->p, RING_EVENTS, 1, 13 + TB_FOLD_DEFAULT_LANES - 1);
	tb_start(f->p, f->m, 9, t);
	expect_stats(f->p, RING_EVENTS, 2, 13 + TB_FOLD_DEFAULT_LANES - 1);
	/* nothing was written over in the ring */
	assert_int_equal(readable(f, 0), RING_EVENTS);
	expect_span(f, RING_EVENTS - 1, 1, 1);
}

/* A segment made without lanes drops what does not fit; more lanes than
 * the ABI has room for is no layout. */
static void test_no_fold_lanes(void **state)
{
	(void)state;
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/tb-test-producer.XXXXXX");
	assert_non_null(mkdtemp(dir));
	setenv("TAILBUS_DIR", dir, 1);
	tb_seg_config cfg;
	tb_seg_config_default(&cfg);
	tb_seg_header h;
	cfg.fold_lanes = TB_FOLD_LANES_MAX + 1;
	assert_int_equal(tb_seg_layout(&cfg, &h), -EINVAL);
	cfg.fold_lanes = 0;
	cfg.slot_count = 1;
	cfg.ring_capacity = RING_EVENTS;
	assert_int_equal(tb_seg_layout(&cfg, &h), 0);
	assert_int_equal(h.fold_stride, 0);
	assert_int_equal(h.total_size, h.folds_off);
	tb_seg seg;
	const char *why = NULL;
	assert_int_equal(tb_seg_open(&seg, dir, BUS, &cfg, TB_SEG_CREATE, &why), 0);
	tb_producer *p = tb_attach(BUS, "no-lanes");
	assert_int_equal(tb_producer_error(p, NULL), 0);
	tb_metric_t m = tb_metric(p, "orders");
	for (uint32_t k = 0; k < RING_EVENTS + 3; k++)
		tb_span(p, m, 1, 2);
	expect_stats(p, RING_EVENTS, 3, 0);
	assert_int_equal(tb_seg_slot(&seg, 0)->dropped, 3);
	tb_detach(p);
	tb_seg_close(&seg);
	tb_seg_unlink(dir, BUS);
	rmdir(dir);
	unsetenv("TAILBUS_DIR");
}

/* A segment of an older ABI (3.x, with its fixed 1 KiB live frames) is
 * refused by tools, producers and collectors alike, with a sentence that
 * says what to do; a heap too small for eight of the largest frames is no
 * layout. */
static void test_old_abi_refused(void **state)
{
	(void)state;
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/tb-test-producer.XXXXXX");
	assert_non_null(mkdtemp(dir));
	tb_seg_config cfg;
	tb_seg_config_default(&cfg);
	tb_seg_header h;
	cfg.live_heap_bytes = TB_LIVE_HEAP_MIN - 1;
	assert_int_equal(tb_seg_layout(&cfg, &h), -EINVAL);
	cfg.live_heap_bytes = TB_LIVE_HEAP_MIN;
	cfg.slot_count = 1;
	cfg.ring_capacity = RING_EVENTS;
	tb_seg seg;
	const char *why = NULL;
	assert_int_equal(tb_seg_open(&seg, dir, BUS, &cfg, TB_SEG_CREATE, &why), 0);
	assert_int_equal(seg.layout.abi_major, 4);
	((tb_seg_header *)seg.base)->abi_major = 3;
	tb_seg_close(&seg);
	why = NULL;
	assert_int_equal(tb_seg_open(&seg, dir, BUS, NULL, TB_SEG_READONLY, &why), -EPROTO);
	assert_non_null(why);
	assert_non_null(strstr(why, "another ABI major version"));
	assert_non_null(strstr(why, "tailbusd --fresh"));
	setenv("TAILBUS_DIR", dir, 1);
	tb_producer *p = tb_attach(BUS, "old-abi");
	assert_int_equal(tb_producer_error(p, &why), -EPROTO);
	tb_detach(p);
	unsetenv("TAILBUS_DIR");
	tb_seg_unlink(dir, BUS);
	rmdir(dir);
}

/* No bus: recording is a counted no-op and says why. */
static void test_noop_handle(void **state)
{
	(void)state;
	tb_producer *p = tb_attach("no/such bus", NULL);
	assert_non_null(p);
	const char *why = NULL;
	assert_true(tb_producer_error(p, &why) < 0);
	assert_non_null(why);
	tb_metric_t m = tb_metric(p, "orders");
	assert_int_equal(tb_metric_id(m), TB_METRIC_NONE_ID);
	for (int k = 0; k < 1000; k++)
		tb_span(p, m, 1, 2);
	tb_start(p, m, 7, 1);
	tb_end(p, m, 7, 2);
	expect_stats(p, 0, 1002, 0);
	tb_detach(p);
}

/* What tb_producer_collector says as the collector's fields in the header
 * go through their states, the test writing them as tailbusd does: none
 * yet on a new segment (a mistyped bus name), serving while the heartbeat
 * is fresh, silent once it is older than TB_COLLECTOR_SILENT_NS, stopped
 * when the pid is cleared; and a no-op handle's error. */
static void test_collector_state(void **state)
{
	struct fixture *f = *state;
	attach(f);
	tb_seg_header *h = (tb_seg_header *)f->seg.base;
	const char *why = NULL;
	assert_int_equal(tb_producer_collector(f->p, &why), TB_COLLECTOR_NONE);
	assert_non_null(why);
	assert_non_null(strstr(why, "no collector has this bus yet"));

	int64_t now = (int64_t)tb_now(f->p);
	h->collector_pid = getpid();
	h->collector_generation = 1;
	h->collector_heartbeat_ns = now;
	assert_int_equal(tb_producer_collector(f->p, &why), TB_COLLECTOR_SERVING);
	assert_null(why);
	assert_int_equal(tb_producer_collector(f->p, NULL), TB_COLLECTOR_SERVING);

	h->collector_heartbeat_ns = now - TB_COLLECTOR_SILENT_NS - 100000000;
	assert_int_equal(tb_producer_collector(f->p, &why), TB_COLLECTOR_SILENT);
	assert_non_null(strstr(why, "not been heard from"));

	h->collector_pid = 0;
	assert_int_equal(tb_producer_collector(f->p, &why), TB_COLLECTOR_STOPPED);
	assert_non_null(strstr(why, "has stopped"));

	/* a later collector serves it again */
	h->collector_pid = getpid();
	h->collector_generation = 2;
	h->collector_heartbeat_ns = (int64_t)tb_now(f->p);
	assert_int_equal(tb_producer_collector(f->p, NULL), TB_COLLECTOR_SERVING);

	/* recording went on all along: the state is not an error */
	assert_int_equal(tb_producer_error(f->p, NULL), 0);

	tb_producer *noop = tb_attach("no/such bus", "t"); /* not a bus name */
	assert_non_null(noop);
	int err = tb_producer_error(noop, NULL);
	assert_true(err < 0);
	assert_int_equal(tb_producer_collector(noop, &why), err);
	assert_non_null(why);
	tb_detach(noop);
}

/* tb_ring_header keeps ck_ring_t's byte layout, which segments made before
 * it was named have: the same offsets for every field and the same size, so
 * the events start on the same line. A ring reset by the library reads, to
 * Concurrency Kit, as an empty ring of the segment's capacity. */
static void test_ring_header_has_ck_ring_layout(void **state)
{
	assert_int_equal(sizeof(tb_ring_header), sizeof(ck_ring_t));
	assert_int_equal(offsetof(tb_ring_header, c_head), offsetof(ck_ring_t, c_head));
	assert_int_equal(offsetof(tb_ring_header, p_tail), offsetof(ck_ring_t, p_tail));
	assert_int_equal(offsetof(tb_ring_header, p_head), offsetof(ck_ring_t, p_head));
	assert_int_equal(offsetof(tb_ring_header, size), offsetof(ck_ring_t, size));
	assert_int_equal(offsetof(tb_ring_header, mask), offsetof(ck_ring_t, mask));

	struct fixture *f = *state;
	tb_seg_ring_reset(&f->seg, 1, 1000);
	ck_ring_t *ck = (ck_ring_t *)tb_seg_ring(&f->seg, 1);
	assert_int_equal(ck_ring_capacity(ck), RING_EVENTS);
	assert_int_equal(ck_ring_size(ck), 0);
	assert_int_equal(ck->c_head, 1000);
	assert_int_equal(ck->p_tail, 1000);
	assert_ptr_equal((uint8_t *)ck + TB_RING_HEADER_SIZE, (uint8_t *)tb_seg_events(&f->seg, 1));
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* FNV-1a, as seg_metrics.c hashes names: where a name's probe starts. */
static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;
	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h;
}

/* Entries left RESERVING (their registrant died mid-write, or someone who
 * may write the segment) are waited for at most 10 ms a lookup in all, by
 * the clock (a 1 us sleep takes far longer than 1 us), then passed over. */
static void unfinished_metric_entries_cost_a_lookup_10_ms_at_most(void **state)
{
	struct fixture *f = *state;
	attach(f);
	uint32_t cap = f->seg.layout.metric_capacity, at = name_hash("fill") & (cap - 1);
	for (uint32_t k = 0; k < 4; k++) /* a run of them where "fill" is looked for */
		__atomic_store_n(&tb_seg_metric(&f->seg, (at + k) & (cap - 1))->state, TB_METRIC_RESERVING,
				 __ATOMIC_RELEASE);
	for (int k = 0; k < 2; k++) { /* every call, not only the first */
		double t0 = mono_s();
		tb_metric_t m = tb_metric(f->p, "fill");
		double took = mono_s() - t0;
		assert_int_equal(tb_metric_id(m), (at + 4) & (cap - 1));
		if (took > 0.050)
			fail_msg("tb_metric took %.3f s past 4 unfinished entries", took);
	}
}

/* A child of fork() that detaches the handle it inherited (an atexit
 * handler, a destructor) leaves its parent's ring alone; the handle says,
 * in the child only, that it records nothing there. */
static void a_forked_child_does_not_give_the_parents_ring_away(void **state)
{
	struct fixture *f = *state;
	attach(f);
	int slot = f->p->slot;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *why = NULL;
		if (tb_producer_error(f->p, &why) != -EPERM || !why || !strstr(why, "fork"))
			_exit(1);
		if (tb_producer_collector(f->p, NULL) != -EPERM)
			_exit(2);
		tb_detach(f->p);
		_exit(0);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(tb_producer_error(f->p, NULL), 0);
	assert_int_equal(__atomic_load_n(&tb_seg_slot(&f->seg, (uint32_t)slot)->state, __ATOMIC_ACQUIRE),
			 TB_SLOT_LIVE);
	tb_detach(f->p); /* the parent's own detach still gives it back */
	f->p = NULL;
	assert_int_equal(__atomic_load_n(&tb_seg_slot(&f->seg, (uint32_t)slot)->state, __ATOMIC_ACQUIRE),
			 TB_SLOT_DETACHED);
}

/* The /dev/null the library keeps for fork()ed children (map_guard.c) may
 * have been closed and its number reused (a process that closed what it
 * inherited): a child must not get that file over its bus descriptor. */
static void a_child_never_gets_a_stale_dev_null(void **state)
{
	(void)state;
	pid_t engine = fork();
	assert_true(engine >= 0);
	if (engine == 0) {
		tb_producer *p = tb_attach(BUS, "engine");
		if (!p || tb_producer_error(p, NULL))
			_exit(2);
		int null = -1;
		for (int fd = 3; fd < 1024 && null < 0; fd++) {
			char path[64], link[64];
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			ssize_t n = readlink(path, link, sizeof(link) - 1);
			if (n > 0) {
				link[n] = '\0';
				if (!strcmp(link, "/dev/null"))
					null = fd;
			}
		}
		int pipefd[2];
		if (null < 0 || pipe(pipefd) < 0 || dup2(pipefd[0], null) < 0)
			_exit(3);
		pid_t child = fork();
		if (child == 0) {
			struct stat st;
			int fd = ((tb_seg *)p->seg)->fd;
			_exit(fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) ? 1 : 0);
		}
		int status = 0;
		if (child < 0 || waitpid(child, &status, 0) != child)
			_exit(4);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 5);
	}
	int status = 0;
	assert_int_equal(waitpid(engine, &status, 0), engine);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* 1: the child's bus descriptor was the pipe */
}

/* An attach that waits for a segment whose creator died mid-way (a file
 * the size of a header, never given its magic) waits seconds; a fork() on
 * another thread meanwhile must not wait with it. */
struct waiting_attach {
	const char *bus;
	int started;
	tb_producer *p;
};

static void *attach_never_ready(void *arg)
{
	struct waiting_attach *w = arg;
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	w->p = tb_attach(w->bus, "waiter");
	return NULL;
}

static void a_fork_does_not_wait_for_an_attach_that_waits(void **state)
{
	struct fixture *f = *state;
	char path[128];
	snprintf(path, sizeof(path), "%s/never-ready%s", f->dir, TB_SEG_SUFFIX);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, TB_HEADER_SIZE), 0);
	close(fd);
	struct waiting_attach w = {.bus = "never-ready"};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, attach_never_ready, &w), 0);
	while (!__atomic_load_n(&w.started, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(200 * 1000); /* well inside its wait */
	double t0 = mono_s();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	double took = mono_s() - t0;
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(pthread_join(t, NULL), 0);
	const char *why = NULL;
	assert_int_equal(tb_producer_error(w.p, &why), -ETIMEDOUT);
	tb_detach(w.p);
	unlink(path);
	/* the attach waits TB_SEG_DEFAULT_WAIT_MS (2 s) in all */
	if (took > 1.0)
		fail_msg("fork() took %.3f s: it waited for the attach", took);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fill_drop_refill, setup, teardown),
		cmocka_unit_test_setup_teardown(unfinished_metric_entries_cost_a_lookup_10_ms_at_most, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_child_never_gets_a_stale_dev_null, setup, teardown),
		cmocka_unit_test_setup_teardown(a_fork_does_not_wait_for_an_attach_that_waits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_forked_child_does_not_give_the_parents_ring_away, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_invalid_spans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_consumer_index, setup, teardown),
		cmocka_unit_test(test_ring_prefaulted),
		cmocka_unit_test(test_noop_handle),
		cmocka_unit_test(test_fold_index_is_hdr_2_digits),
		cmocka_unit_test_setup_teardown(test_fold_lanes, setup, teardown),
		cmocka_unit_test(test_no_fold_lanes),
		cmocka_unit_test(test_old_abi_refused),
		cmocka_unit_test_setup_teardown(test_ring_header_has_ck_ring_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collector_state, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
