/* join.h - joining START and END events of a request by (metric, sequence).
 *
 * A gateway thread stamps a request's intended time (tb_start) and an engine
 * thread, maybe in another process, its completion (tb_end). The collector
 * drains rings in turn, so either event may arrive first: the first event is
 * parked in a bounded open-addressed table, the second completes it and
 * yields the latency. Halves that wait longer than the timeout are expired
 * and counted per metric (a START without END, an END without START); a
 * full table refuses and the caller counts that too. Nothing is dropped
 * silently, and nothing is allocated after tb_join_init.
 */
#ifndef TAILBUS_COLLECTOR_JOIN_H
#define TAILBUS_COLLECTOR_JOIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define TB_JOIN_DEFAULT_CAPACITY 65536
#define TB_JOIN_DEFAULT_TIMEOUT_NS (10LL * 1000000000LL)
/* Entries an expiry looks at under one hold of the table's lock, which a
 * drain thread meeting a START or END waits for: a few microseconds */
#define TB_JOIN_EXPIRE_CHUNK 2048u

typedef struct tb_join_entry tb_join_entry;

typedef struct tb_join {
	tb_join_entry *entries;
	uint32_t capacity; /* a power of two */
	uint32_t used;
	int64_t timeout_ns;
	uint64_t duplicates; /* an event that replaced a parked event of the same kind and key */
} tb_join;

int tb_join_init(tb_join *j, uint32_t capacity, int64_t timeout_ns);
void tb_join_free(tb_join *j);
/* The bytes of its entries (j->entries), to fault them in ahead. */
size_t tb_join_entries_bytes(const tb_join *j);

enum tb_join_result {
	TB_JOIN_PARKED = 0,  /* waiting for its partner */
	TB_JOIN_MATCHED = 1, /* *latency_ns = completion - intended (may be negative) */
	TB_JOIN_FULL = -1,   /* no room: the caller counts it as unmatched */
	TB_JOIN_REPLACED = 2, /* parked in place of an earlier one of the same kind
			       * and key, which leaves unmatched: the caller counts
			       * that one (a sequence number used twice) */
};

/* `at_ns` is the event's timestamp (intended for START, completion for END);
 * `now_ns` is the collector's clock, used for expiry. */
int tb_join_start(tb_join *j, uint16_t metric, uint64_t seq, int64_t at_ns, int64_t now_ns,
		  int64_t *latency_ns);
int tb_join_end(tb_join *j, uint16_t metric, uint64_t seq, int64_t at_ns, int64_t now_ns,
		int64_t *latency_ns);

/* Whether a START (`start`) or END of (metric, seq) would match a parked
 * partner now, changing nothing. */
bool tb_join_would_match(const tb_join *j, bool start, uint16_t metric, uint64_t seq);

/* Remove events parked since before now_ns - timeout; calls expired(ctx,
 * metric, was_start) for each. Returns how many were removed. */
typedef void (*tb_join_expired_fn)(void *ctx, uint16_t metric, bool was_start);
uint32_t tb_join_expire(tb_join *j, int64_t now_ns, tb_join_expired_fn expired, void *ctx);
/* The same over the entries from index `from`, at most `n` of them, so
 * that a caller under a lock holds it for a bounded time: returns where
 * the next call goes on, or 0 once the table's end is reached (the whole
 * table is then looked at, but an entry that a removal in between shifted
 * back over the cursor waits for the next round). *removed (if given)
 * gets how many were removed. */
uint32_t tb_join_expire_some(tb_join *j, int64_t now_ns, uint32_t from, uint32_t n,
			     tb_join_expired_fn expired, void *ctx, uint32_t *removed);

#endif
