/* test_join.c - pairing START and END events in the bounded join table.
 *
 * The table is checked from the outside only: an entry is "findable" when its
 * partner matches it with the right latency. Dense tables (7/8 full, the
 * load limit) make every key share one long probe cluster, so deleting any
 * key deletes from the middle of somebody's probe chain. The long random runs
 * compare every result with a plain per-key model and use a fixed-seed
 * generator, so a failure reproduces.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "join.h"
#include "tailbus/rand.h"

#define SEQ_MOD (UINT64_C(1) << 48)
#define TIMEOUT_NS 1000
#define SMALL_CAPACITY 16U
#define SMALL_MAX_USED 14U /* 7/8 of SMALL_CAPACITY */

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return tb_splitmix64(s) % n;
}

/* What tb_join_expire reported, per (metric, kind). */
#define MAX_METRICS 8
typedef struct expired_log {
	uint32_t starts[MAX_METRICS];
	uint32_t ends[MAX_METRICS];
	uint32_t calls;
} expired_log;

static void record_expired(void *ctx, uint16_t metric, bool was_start)
{
	expired_log *log = ctx;
	assert_true(metric < MAX_METRICS);
	if (was_start)
		log->starts[metric]++;
	else
		log->ends[metric]++;
	log->calls++;
}

static tb_join make_join(uint32_t capacity)
{
	tb_join j;
	assert_int_equal(tb_join_init(&j, capacity, TIMEOUT_NS), 0);
	return j;
}

static void start_then_end_matches_with_end_minus_start(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	int64_t lat = -1;
	assert_int_equal(tb_join_start(&j, 3, 42, 1000, 1, &lat), TB_JOIN_PARKED);
	assert_int_equal(j.used, 1);
	assert_int_equal(tb_join_end(&j, 3, 42, 1750, 2, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 750);
	assert_int_equal(j.used, 0);
	tb_join_free(&j);
}

static void end_then_start_matches_with_end_minus_start(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	int64_t lat = -1;
	assert_int_equal(tb_join_end(&j, 3, 42, 1750, 1, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 3, 42, 1000, 2, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 750);
	assert_int_equal(j.used, 0);
	tb_join_free(&j);
}

static void end_before_start_gives_negative_latency_for_the_caller_to_count(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	int64_t lat = 0;
	assert_int_equal(tb_join_start(&j, 0, 1, 5000, 1, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 0, 1, 4000, 2, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, -1000);
	assert_int_equal(tb_join_end(&j, 0, 2, 4000, 3, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 0, 2, 5000, 4, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, -1000);
	tb_join_free(&j);
}

static void same_seq_on_another_metric_does_not_match(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	int64_t lat = 0;
	assert_int_equal(tb_join_start(&j, 1, 7, 100, 1, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 2, 7, 300, 2, &lat), TB_JOIN_PARKED);
	assert_int_equal(j.used, 2);
	assert_int_equal(tb_join_end(&j, 1, 7, 400, 3, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 300);
	assert_int_equal(tb_join_start(&j, 2, 7, 250, 4, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 50);
	assert_int_equal(j.used, 0);
	tb_join_free(&j);
}

static void seq_is_compared_modulo_2_pow_48(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	int64_t lat = 0;
	/* bits above 48 are not part of the sequence ... */
	assert_int_equal(tb_join_start(&j, 1, SEQ_MOD + 5, 100, 1, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 1, 5, 160, 2, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 60);
	/* ... and must not leak into the metric: (0, 2^48 + 9) is (0, 9), not (1, 9) */
	assert_int_equal(tb_join_start(&j, 1, 9, 100, 3, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 0, SEQ_MOD + 9, 170, 4, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 1, 3 * SEQ_MOD + 9, 180, 5, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 80);
	/* the top of the sequence range is a sequence like any other */
	assert_int_equal(tb_join_end(&j, 4, SEQ_MOD - 1, 900, 6, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 4, UINT64_MAX, 800, 7, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 100);
	assert_int_equal(j.used, 1); /* only (0, 9)'s END is left */
	tb_join_free(&j);
}

static void a_repeated_half_replaces_the_parked_one_and_is_counted(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	int64_t lat = 0;
	assert_int_equal(tb_join_start(&j, 1, 7, 100, 1, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 1, 7, 200, 2, &lat), TB_JOIN_REPLACED);
	assert_int_equal(j.duplicates, 1);
	assert_int_equal(j.used, 1);
	assert_int_equal(tb_join_end(&j, 1, 7, 450, 3, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 250); /* against the newer START */

	assert_int_equal(tb_join_end(&j, 1, 8, 500, 4, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 1, 8, 600, 5, &lat), TB_JOIN_REPLACED);
	assert_int_equal(tb_join_end(&j, 1, 8, 700, 6, &lat), TB_JOIN_REPLACED);
	assert_int_equal(j.duplicates, 3);
	assert_int_equal(j.used, 1);
	assert_int_equal(tb_join_start(&j, 1, 8, 300, 7, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 400);
	assert_int_equal(j.used, 0);
	tb_join_free(&j);
}

static void a_replaced_half_is_parked_again_at_the_newer_time(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	expired_log log = {0};
	assert_int_equal(tb_join_start(&j, 1, 7, 100, 0, NULL), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 1, 7, 200, 900, NULL), TB_JOIN_REPLACED);
	assert_int_equal(tb_join_expire(&j, 1500, record_expired, &log), 0);
	assert_int_equal(tb_join_expire(&j, 1901, record_expired, &log), 1);
	assert_int_equal(log.starts[1], 1);
	tb_join_free(&j);
}

/* 10 rounds of 10k keys: 100k START/END pairs, each round's 20k events in a
 * random order, on consecutive sequences (the hash's hard case). */
#define ROUNDS 10
#define ROUND_KEYS 10000
#define ROUND_CAPACITY 16384U /* 7/8 of it holds every key of a round */

typedef struct round_key {
	uint16_t metric;
	uint64_t seq;
	int64_t start_at, end_at;
	int halves_seen;
} round_key;

static void play_half(tb_join *j, round_key *k, bool is_start, int64_t now, uint64_t *matched)
{
	int64_t lat = INT64_MIN;
	int r = is_start ? tb_join_start(j, k->metric, k->seq, k->start_at, now, &lat)
			 : tb_join_end(j, k->metric, k->seq, k->end_at, now, &lat);
	k->halves_seen++;
	if (k->halves_seen == 1) {
		assert_int_equal(r, TB_JOIN_PARKED);
		return;
	}
	assert_int_equal(r, TB_JOIN_MATCHED);
	assert_int_equal(lat, k->end_at - k->start_at);
	(*matched)++;
}

static void random_interleavings_match_every_key_exactly_once(void **state)
{
	(void)state;
	uint64_t seed = 20240601;
	tb_join j = make_join(ROUND_CAPACITY);
	round_key *keys = calloc(ROUND_KEYS, sizeof(*keys));
	uint32_t *order = calloc(2 * ROUND_KEYS, sizeof(*order));
	assert_non_null(keys);
	assert_non_null(order);
	uint64_t matched = 0;
	for (int round = 0; round < ROUNDS; round++) {
		for (uint32_t i = 0; i < ROUND_KEYS; i++) {
			keys[i].metric = (uint16_t)rng_below(&seed, 4);
			keys[i].seq = (uint64_t)round * ROUND_KEYS + i;
			keys[i].start_at = (int64_t)rng_below(&seed, 1000000);
			int64_t took = (int64_t)rng_below(&seed, 100000) - 1000; /* some negative */
			keys[i].end_at = keys[i].start_at + took;
			keys[i].halves_seen = 0;
			order[2 * i] = 2 * i;         /* even: START of key i */
			order[2 * i + 1] = 2 * i + 1; /* odd: END of key i */
		}
		for (uint32_t n = 2 * ROUND_KEYS; n > 1; n--) {
			uint32_t m = (uint32_t)rng_below(&seed, n);
			uint32_t t = order[n - 1];
			order[n - 1] = order[m];
			order[m] = t;
		}
		for (uint32_t n = 0; n < 2 * ROUND_KEYS; n++)
			play_half(&j, &keys[order[n] / 2], order[n] % 2 == 0, round, &matched);
		assert_int_equal(j.used, 0);
	}
	assert_int_equal(matched, (uint64_t)ROUNDS * ROUND_KEYS);
	assert_int_equal(j.duplicates, 0);
	free(order);
	free(keys);
	tb_join_free(&j);
}

static void expire_removes_halves_older_than_the_timeout_and_names_them(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	expired_log log = {0};
	int64_t lat = 0;
	assert_int_equal(tb_join_start(&j, 1, 10, 5, 0, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 2, 20, 7, 100, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 2, 21, 7, 499, &lat), TB_JOIN_PARKED);
	/* parked exactly at the cutoff, now - timeout: not before it, so it stays */
	assert_int_equal(tb_join_start(&j, 3, 30, 9, 500, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 4, 40, 11, 1400, &lat), TB_JOIN_PARKED);

	assert_int_equal(tb_join_expire(&j, 1500, record_expired, &log), 3);
	assert_int_equal(log.calls, 3);
	assert_int_equal(log.starts[1], 1);
	assert_int_equal(log.ends[2], 2);
	assert_int_equal(log.starts[3] + log.ends[3] + log.starts[4] + log.ends[4], 0);
	assert_int_equal(j.used, 2);

	/* the expired events are gone: their partners park */
	assert_int_equal(tb_join_end(&j, 1, 10, 50, 1500, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 2, 20, 1, 1500, &lat), TB_JOIN_PARKED);
	tb_join_free(&j);
}

static void younger_halves_survive_expiry_and_still_match(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	expired_log log = {0};
	int64_t lat = 0;
	assert_int_equal(tb_join_start(&j, 3, 30, 9, 500, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_end(&j, 4, 40, 1411, 1400, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 5, 50, 7, 0, &lat), TB_JOIN_PARKED);
	assert_int_equal(tb_join_expire(&j, 1500, record_expired, &log), 1);
	assert_int_equal(log.starts[5], 1);

	assert_int_equal(tb_join_end(&j, 3, 30, 109, 1600, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 100);
	assert_int_equal(tb_join_start(&j, 4, 40, 1211, 1600, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 200);
	assert_int_equal(j.used, 0);
	assert_int_equal(tb_join_expire(&j, 1000000, record_expired, &log), 0);
	tb_join_free(&j);
}

static void expire_accepts_no_callback_and_extreme_clocks(void **state)
{
	(void)state;
	tb_join j = make_join(64);
	assert_int_equal(tb_join_start(&j, 1, 1, 0, INT64_MIN, NULL), TB_JOIN_PARKED);
	assert_int_equal(tb_join_start(&j, 1, 2, 0, INT64_MAX, NULL), TB_JOIN_PARKED);
	assert_int_equal(tb_join_expire(&j, INT64_MIN, NULL, NULL), 0);
	assert_int_equal(tb_join_expire(&j, INT64_MAX, NULL, NULL), 1);
	assert_int_equal(j.used, 1);
	tb_join_free(&j);
}

/* Key i of metric 1 starts at 10 i and ends 5 ns later. */
static int64_t key_start(uint32_t i)
{
	return 10 * (int64_t)i;
}

static void park_keys(tb_join *j, uint32_t n, int64_t now)
{
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(tb_join_start(j, 1, i, key_start(i), now, NULL), TB_JOIN_PARKED);
}

static void match_key(tb_join *j, uint32_t i, int64_t now)
{
	int64_t lat = INT64_MIN;
	assert_int_equal(tb_join_end(j, 1, i, key_start(i) + 5, now, &lat), TB_JOIN_MATCHED);
	assert_int_equal(lat, 5);
}

static void match_keys(tb_join *j, uint32_t n, int64_t now)
{
	for (uint32_t i = 0; i < n; i++)
		match_key(j, i, now);
}

static void full_table_refuses_new_keys_and_keeps_the_parked_ones(void **state)
{
	(void)state;
	tb_join j = make_join(SMALL_CAPACITY);
	int64_t lat = 0;
	park_keys(&j, SMALL_MAX_USED, 0);
	assert_int_equal(j.used, SMALL_MAX_USED);
	for (uint64_t s = 100; s < 200; s++) {
		assert_int_equal(tb_join_start(&j, 1, s, 0, 0, &lat), TB_JOIN_FULL);
		assert_int_equal(tb_join_end(&j, 2, s, 0, 0, &lat), TB_JOIN_FULL);
	}
	assert_int_equal(j.used, SMALL_MAX_USED);
	/* a full table still takes a repeat of a parked event */
	assert_int_equal(tb_join_start(&j, 1, 0, 0, 0, &lat), TB_JOIN_REPLACED);
	assert_int_equal(j.duplicates, 1);
	match_keys(&j, SMALL_MAX_USED, 0);
	assert_int_equal(j.used, 0);
	tb_join_free(&j);
}

static void expiring_a_full_table_makes_room_again(void **state)
{
	(void)state;
	tb_join j = make_join(SMALL_CAPACITY);
	expired_log log = {0};
	park_keys(&j, SMALL_MAX_USED, 0);
	assert_int_equal(tb_join_start(&j, 1, 500, 0, 0, NULL), TB_JOIN_FULL);
	assert_int_equal(tb_join_expire(&j, TIMEOUT_NS + 1, record_expired, &log), SMALL_MAX_USED);
	assert_int_equal(log.starts[1], SMALL_MAX_USED);
	assert_int_equal(j.used, 0);
	assert_int_equal(tb_join_start(&j, 1, 500, 0, TIMEOUT_NS + 1, NULL), TB_JOIN_PARKED);
	park_keys(&j, SMALL_MAX_USED - 1, TIMEOUT_NS + 1);
	assert_int_equal(tb_join_start(&j, 1, 501, 0, TIMEOUT_NS + 1, NULL), TB_JOIN_FULL);
	match_keys(&j, SMALL_MAX_USED - 1, TIMEOUT_NS + 1);
	tb_join_free(&j);
}

/* A table at the load limit is one or two long clusters, so every key is in
 * the middle of some other key's probe chain. Remove each key in turn from a
 * freshly filled table, then every other key must still be found. */
static void removing_any_key_of_a_dense_cluster_keeps_the_rest_findable(void **state)
{
	(void)state;
	static const uint32_t capacities[] = {SMALL_CAPACITY, 1024};
	for (size_t c = 0; c < sizeof(capacities) / sizeof(capacities[0]); c++) {
		uint32_t n = capacities[c] - capacities[c] / 8;
		for (uint32_t victim = 0; victim < n; victim++) {
			tb_join j = make_join(capacities[c]);
			park_keys(&j, n, 0);
			match_key(&j, victim, 0);
			for (uint32_t i = 0; i < n; i++)
				if (i != victim)
					match_key(&j, i, 0);
			assert_int_equal(j.used, 0);
			tb_join_free(&j);
		}
	}
}

/* A per-key model of the table for long random runs at the load limit. */
#define MODEL_CAPACITY 64U
#define MODEL_MAX_USED 56U
#define MODEL_KEYS 200
#define MODEL_STEPS 200000
#define MODEL_METRICS 3

typedef struct model_key {
	int kind; /* 0: nothing parked, 1: START, 2: END */
	int64_t at, parked;
} model_key;

typedef struct model {
	model_key keys[MODEL_KEYS];
	uint32_t used;
	uint64_t duplicates;
} model;

static uint16_t model_metric(int k)
{
	return (uint16_t)(k % MODEL_METRICS);
}

static uint64_t model_seq(int k)
{
	return (uint64_t)(k / MODEL_METRICS);
}

static void model_half(tb_join *j, model *m, int k, int kind, int64_t at, int64_t now)
{
	model_key *mk = &m->keys[k];
	int64_t lat = INT64_MIN;
	/* what the half would do, asked first: a match exactly when the
	 * model holds the other half */
	assert_int_equal(tb_join_would_match(j, kind == 1, model_metric(k), model_seq(k)),
			 mk->kind != 0 && mk->kind != kind);
	int r = kind == 1 ? tb_join_start(j, model_metric(k), model_seq(k), at, now, &lat)
			  : tb_join_end(j, model_metric(k), model_seq(k), at, now, &lat);
	if (mk->kind == kind) {
		assert_int_equal(r, TB_JOIN_REPLACED);
		m->duplicates++;
		*mk = (model_key){kind, at, now};
	} else if (mk->kind != 0) {
		assert_int_equal(r, TB_JOIN_MATCHED);
		assert_int_equal(lat, kind == 2 ? at - mk->at : mk->at - at);
		mk->kind = 0;
		m->used--;
	} else if (m->used >= MODEL_MAX_USED) {
		assert_int_equal(r, TB_JOIN_FULL);
	} else {
		assert_int_equal(r, TB_JOIN_PARKED);
		*mk = (model_key){kind, at, now};
		m->used++;
	}
}

/* Expiry in chunks of `chunk` entries (0: the whole table at once), as
 * the closer lets go of the table's lock between them: with nothing
 * parked in between, the same entries go as in one pass. */
static uint32_t expire_by_chunks(tb_join *j, int64_t now, uint32_t chunk, expired_log *got)
{
	if (chunk == 0)
		return tb_join_expire(j, now, record_expired, got);
	uint32_t at = 0, total = 0, removed;
	do {
		uint32_t from = at;
		at = tb_join_expire_some(j, now, at, chunk, record_expired, got, &removed);
		assert_true(at == 0 || at == from + chunk);
		total += removed;
	} while (at != 0);
	return total;
}

static void model_expire(tb_join *j, model *m, int64_t now, uint32_t chunk)
{
	expired_log want = {0}, got = {0};
	for (int k = 0; k < MODEL_KEYS; k++) {
		model_key *mk = &m->keys[k];
		if (mk->kind == 0 || mk->parked >= now - TIMEOUT_NS)
			continue;
		record_expired(&want, model_metric(k), mk->kind == 1);
		mk->kind = 0;
		m->used--;
	}
	assert_int_equal(expire_by_chunks(j, now, chunk, &got), want.calls);
	assert_memory_equal(&got, &want, sizeof(want));
}

static void model_drain(tb_join *j, model *m, int64_t now)
{
	for (int k = 0; k < MODEL_KEYS; k++)
		if (m->keys[k].kind != 0)
			model_half(j, m, k, 3 - m->keys[k].kind, 0, now);
	assert_int_equal(m->used, 0);
	assert_int_equal(j->used, 0);
}

static void churn_at_the_load_limit_agrees_with_a_per_key_model(void **state)
{
	(void)state;
	uint64_t seed = 7;
	tb_join j = make_join(MODEL_CAPACITY);
	model *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	int64_t now = 0;
	for (int step = 0; step < MODEL_STEPS; step++) {
		now += (int64_t)rng_below(&seed, 20);
		if (rng_below(&seed, 100) == 0) {
			/* the whole table, or chunks of 1 to 40 entries */
			uint32_t chunk = (uint32_t)rng_below(&seed, 41);
			model_expire(&j, m, now, chunk);
		} else {
			int k = (int)rng_below(&seed, MODEL_KEYS);
			int kind = 1 + (int)rng_below(&seed, 2);
			model_half(&j, m, k, kind, (int64_t)rng_below(&seed, 1000000), now);
		}
		assert_int_equal(j.used, m->used);
	}
	assert_int_equal(j.duplicates, m->duplicates);
	model_drain(&j, m, now);
	free(m);
	tb_join_free(&j);
}

static void init_refuses_bad_capacities_and_timeouts(void **state)
{
	(void)state;
	tb_join j;
	assert_int_equal(tb_join_init(&j, 0, TIMEOUT_NS), -EINVAL);
	assert_int_equal(tb_join_init(&j, 4, TIMEOUT_NS), -EINVAL); /* no room under 7/8 */
	assert_int_equal(tb_join_init(&j, 100, TIMEOUT_NS), -EINVAL);
	assert_int_equal(tb_join_init(&j, UINT32_MAX, TIMEOUT_NS), -EINVAL);
	assert_int_equal(tb_join_init(&j, 64, 0), -EINVAL);
	assert_int_equal(tb_join_init(&j, 64, -1), -EINVAL);
	assert_int_equal(tb_join_init(NULL, 64, TIMEOUT_NS), -EINVAL);
	assert_int_equal(tb_join_init(&j, 8, TIMEOUT_NS), 0);
	assert_int_equal(j.capacity, 8);
	assert_int_equal(j.used, 0);
	assert_int_equal(j.duplicates, 0);
	tb_join_free(&j);
	tb_join_free(&j); /* freeing twice is harmless */
	assert_null(j.entries);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(start_then_end_matches_with_end_minus_start),
		cmocka_unit_test(end_then_start_matches_with_end_minus_start),
		cmocka_unit_test(end_before_start_gives_negative_latency_for_the_caller_to_count),
		cmocka_unit_test(same_seq_on_another_metric_does_not_match),
		cmocka_unit_test(seq_is_compared_modulo_2_pow_48),
		cmocka_unit_test(a_repeated_half_replaces_the_parked_one_and_is_counted),
		cmocka_unit_test(a_replaced_half_is_parked_again_at_the_newer_time),
		cmocka_unit_test(random_interleavings_match_every_key_exactly_once),
		cmocka_unit_test(expire_removes_halves_older_than_the_timeout_and_names_them),
		cmocka_unit_test(younger_halves_survive_expiry_and_still_match),
		cmocka_unit_test(expire_accepts_no_callback_and_extreme_clocks),
		cmocka_unit_test(full_table_refuses_new_keys_and_keeps_the_parked_ones),
		cmocka_unit_test(expiring_a_full_table_makes_room_again),
		cmocka_unit_test(removing_any_key_of_a_dense_cluster_keeps_the_rest_findable),
		cmocka_unit_test(churn_at_the_load_limit_agrees_with_a_per_key_model),
		cmocka_unit_test(init_refuses_bad_capacities_and_timeouts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
