/* join.c - the bounded table that pairs START and END events.
 *
 * A request's two events reach the collector from different rings, in either
 * order. The first event to arrive is parked here under its key; the second
 * finds it, removes it and yields latency = end_at - start_at. The key is
 * (metric, seq), packed into one 64-bit word: metric in the top 16 bits,
 * the sequence below (the event's field carries it modulo 2^47: seg_abi.h;
 * the table keeps 48 bits).
 *
 * Layout: one array of `capacity` entries (a power of two), allocated zeroed
 * in tb_join_init and never resized. Each entry holds the packed key, the
 * event's kind (empty, START or END), its timestamp and the collector time at
 * which it was parked. Keys are placed by linear probing from a home slot,
 * hash(key) & (capacity - 1); the hash is a 64-bit multiply-xorshift
 * finalizer, so consecutive sequence numbers land far apart.
 *
 * Invariants:
 * - cluster: every parked entry sits at its home slot or after it, with no
 *   empty slot between the two (cyclically). A lookup may therefore stop at
 *   the first empty slot, and a key appears at most once.
 * - load: used <= capacity - capacity / 8 (7/8 full). Parking beyond that is
 *   refused with TB_JOIN_FULL, which keeps probe sequences short and
 *   guarantees an empty slot, so every probe loop terminates.
 *
 * Deletion uses backward shift (Knuth vol. 3, 6.4, Algorithm R): the hole
 * left by a removed entry is refilled by the next entry in the cluster that
 * may legally move back to it, repeatedly, until an empty slot is reached. No
 * tombstones, so lookups never slow down with churn and nothing needs to be
 * rebuilt.
 *
 * Expiry scans the whole array once (O(capacity)); removing an entry may
 * shift a later one into the current slot, so the scan looks at that slot
 * again before moving on. An entry only ever moves backwards, into a hole at
 * or after the scan position (or, for a cluster that wraps past the end of
 * the array, into a slot already scanned and kept), so each entry is judged
 * at least once and each removal reported exactly once. The callback must
 * therefore not touch the table; it may be NULL (removals are still counted),
 * and so may latency_ns in tb_join_start and tb_join_end.
 */
#include "join.h"

#include <errno.h>
#include <stdlib.h>

/* The table keeps 48 bits of the 47-bit sequence field (docs/design.md, Events). */
#define SEQ_BITS 48
#define SEQ_MASK ((UINT64_C(1) << SEQ_BITS) - 1)

/* Parking stops at 7/8 full: linear probing's expected probe length grows
 * as 1 / (1 - load)^2, about 64 slots at 7/8 in the worst expected case, and
 * the spare eighth guarantees an empty slot to end every probe. */
#define LOAD_FREE_SHIFT 3

/* The smallest table with room for at least one entry under the load limit. */
#define MIN_CAPACITY 8U

/* Murmur3's fmix64 constants (Appleby, public domain). */
#define MIX_MUL1 UINT64_C(0xff51afd7ed558ccd)
#define MIX_MUL2 UINT64_C(0xc4ceb9fe1a85ec53)
#define MIX_SHIFT 33

enum join_kind {
	JOIN_EMPTY = 0, /* zeroed memory is an empty table */
	JOIN_START = 1,
	JOIN_END = 2,
};

struct tb_join_entry {
	uint64_t key;      /* metric << SEQ_BITS | (seq & SEQ_MASK) */
	int64_t at_ns;     /* intended time (START) or completion (END) */
	int64_t parked_ns; /* collector clock when parked, for expiry */
	uint8_t kind;      /* enum join_kind */
};

static uint64_t key_of(uint16_t metric, uint64_t seq)
{
	return (uint64_t)metric << SEQ_BITS | (seq & SEQ_MASK);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> MIX_SHIFT;
	x *= MIX_MUL1;
	x ^= x >> MIX_SHIFT;
	x *= MIX_MUL2;
	x ^= x >> MIX_SHIFT;
	return x;
}

static uint32_t mask_of(const tb_join *j)
{
	return j->capacity - 1;
}

static uint32_t home_of(const tb_join *j, uint64_t key)
{
	return (uint32_t)mix64(key) & mask_of(j);
}

static uint32_t max_used(const tb_join *j)
{
	return j->capacity - (j->capacity >> LOAD_FREE_SHIFT);
}

static bool is_power_of_two(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

int tb_join_init(tb_join *j, uint32_t capacity, int64_t timeout_ns)
{
	if (!j || capacity < MIN_CAPACITY || !is_power_of_two(capacity) || timeout_ns <= 0)
		return -EINVAL;
	j->entries = calloc(capacity, sizeof(*j->entries));
	if (!j->entries)
		return -ENOMEM;
	j->capacity = capacity;
	j->used = 0;
	j->timeout_ns = timeout_ns;
	j->duplicates = 0;
	return 0;
}

size_t tb_join_entries_bytes(const tb_join *j)
{
	return (size_t)j->capacity * sizeof(*j->entries);
}

void tb_join_free(tb_join *j)
{
	if (!j)
		return;
	free(j->entries);
	j->entries = NULL;
	j->capacity = 0;
	j->used = 0;
}

/* The slot holding `key`, or the empty slot that ends its cluster. The load
 * limit guarantees an empty slot, so the loop ends. */
static uint32_t find_slot(const tb_join *j, uint64_t key)
{
	uint32_t i = home_of(j, key);
	while (j->entries[i].kind != JOIN_EMPTY && j->entries[i].key != key)
		i = (i + 1) & mask_of(j);
	return i;
}

/* May the entry at `from` move back into the hole at `hole`? Only if its
 * home slot is not strictly between the hole and `from` (cyclically), i.e.
 * it is at least as far from its home as the hole is from `from`. */
static bool may_fill(const tb_join *j, uint32_t hole, uint32_t from)
{
	uint32_t home = home_of(j, j->entries[from].key);
	uint32_t dist_home = (from - home) & mask_of(j);
	uint32_t dist_hole = (from - hole) & mask_of(j);
	return dist_home >= dist_hole;
}

/* Backward-shift deletion: keeps the cluster invariant without tombstones. */
static void remove_at(tb_join *j, uint32_t hole)
{
	uint32_t i = hole;
	for (;;) {
		i = (i + 1) & mask_of(j);
		if (j->entries[i].kind == JOIN_EMPTY)
			break;
		if (may_fill(j, hole, i)) {
			j->entries[hole] = j->entries[i];
			hole = i;
		}
	}
	j->entries[hole].kind = JOIN_EMPTY;
	j->used--;
}

/* Differences of timestamps taken from shared memory are computed modulo
 * 2^64, so a corrupt timestamp gives a wrong value, never undefined behaviour. */
static int64_t diff_ns(int64_t later, int64_t earlier)
{
	return (int64_t)((uint64_t)later - (uint64_t)earlier);
}

static void park(tb_join_entry *e, uint64_t key, uint8_t kind, int64_t at_ns, int64_t now_ns)
{
	e->key = key;
	e->kind = kind;
	e->at_ns = at_ns;
	e->parked_ns = now_ns;
}

static int join_half(tb_join *j, uint8_t kind, uint16_t metric, uint64_t seq, int64_t at_ns,
		     int64_t now_ns, int64_t *latency_ns)
{
	uint64_t key = key_of(metric, seq);
	uint32_t i = find_slot(j, key);
	tb_join_entry *e = &j->entries[i];

	if (e->kind == kind) {
		j->duplicates++;
		park(e, key, kind, at_ns, now_ns);
		return TB_JOIN_REPLACED;
	}
	if (e->kind != JOIN_EMPTY) {
		int64_t start_at = kind == JOIN_START ? at_ns : e->at_ns;
		int64_t end_at = kind == JOIN_END ? at_ns : e->at_ns;
		int64_t latency = diff_ns(end_at, start_at);
		remove_at(j, i);
		if (latency_ns)
			*latency_ns = latency;
		return TB_JOIN_MATCHED;
	}
	if (j->used >= max_used(j))
		return TB_JOIN_FULL;
	park(e, key, kind, at_ns, now_ns);
	j->used++;
	return TB_JOIN_PARKED;
}

int tb_join_start(tb_join *j, uint16_t metric, uint64_t seq, int64_t at_ns, int64_t now_ns,
		  int64_t *latency_ns)
{
	return join_half(j, JOIN_START, metric, seq, at_ns, now_ns, latency_ns);
}

int tb_join_end(tb_join *j, uint16_t metric, uint64_t seq, int64_t at_ns, int64_t now_ns,
		int64_t *latency_ns)
{
	return join_half(j, JOIN_END, metric, seq, at_ns, now_ns, latency_ns);
}

bool tb_join_would_match(const tb_join *j, bool start, uint16_t metric, uint64_t seq)
{
	uint8_t kind = start ? JOIN_START : JOIN_END;
	const tb_join_entry *e = &j->entries[find_slot(j, key_of(metric, seq))];
	return e->kind != JOIN_EMPTY && e->kind != kind;
}

/* Parked strictly before now_ns - timeout_ns, written so it cannot overflow
 * for any clock value. */
static bool is_expired(const tb_join *j, const tb_join_entry *e, int64_t now_ns)
{
	uint64_t waited = (uint64_t)now_ns - (uint64_t)e->parked_ns;
	return e->parked_ns < now_ns && waited > (uint64_t)j->timeout_ns;
}

uint32_t tb_join_expire_some(tb_join *j, int64_t now_ns, uint32_t from, uint32_t n,
			     tb_join_expired_fn expired, void *ctx, uint32_t *removed)
{
	uint32_t gone = 0, i = from;
	uint32_t end = from < j->capacity && n < j->capacity - from ? from + n : j->capacity;
	/* nothing parked (a bus of SPANs only): no pass over the whole table,
	 * which is megabytes, every housekeeping */
	if (j->used == 0)
		end = j->capacity;
	while (j->used > 0 && i < end) {
		tb_join_entry *e = &j->entries[i];
		if (e->kind == JOIN_EMPTY || !is_expired(j, e, now_ns)) {
			i++;
			continue;
		}
		uint16_t metric = (uint16_t)(e->key >> SEQ_BITS);
		bool was_start = e->kind == JOIN_START;
		remove_at(j, i); /* may shift a later entry into slot i: look again */
		gone++;
		if (expired)
			expired(ctx, metric, was_start);
	}
	if (removed)
		*removed = gone;
	return end < j->capacity ? end : 0;
}

uint32_t tb_join_expire(tb_join *j, int64_t now_ns, tb_join_expired_fn expired, void *ctx)
{
	uint32_t removed = 0;
	tb_join_expire_some(j, now_ns, 0, j->capacity, expired, ctx, &removed);
	return removed;
}
