/* seg_metrics.c - the metric table: names to 14-bit ids, shared by every process.
 *
 * Open addressing with linear probing over metric_capacity entries; the id of
 * a metric is its entry's index. To add a name, a producer CASes an EMPTY
 * entry to RESERVING, writes the name, then stores READY (release). A probe
 * that meets a RESERVING entry waits for it (bounded: a registrant that died
 * mid-write leaves an entry that is skipped after the wait), so two threads
 * registering the same name at once always agree on one id. Entries are never
 * removed while the segment lives.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tailbus/segment.h"

/* A registrant has this long to finish an entry; a lookup waits at most
 * this long in all, however many unfinished entries its probe meets (one
 * left by a registrant that died is passed over after it, every time). */
#define RESERVING_WAIT_NS 10000000LL

bool tb_seg_metric_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n >= TB_METRIC_NAME_MAX)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") == n;
}

/* FNV-1a: short names, no need for more. */
static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;
	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h;
}


static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The entry's state once it is not RESERVING, or RESERVING when the
 * lookup's time (*until, set at the first wait) has run out. */
static uint32_t wait_not_reserving(const tb_metric_entry *e, int64_t *until)
{
	uint32_t state = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
	if (state != TB_METRIC_RESERVING)
		return state;
	if (*until == 0)
		*until = mono_ns() + RESERVING_WAIT_NS;
	while (state == TB_METRIC_RESERVING && mono_ns() < *until) {
		struct timespec ts = {0, 1000};
		nanosleep(&ts, NULL);
		state = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
	}
	return state;
}

static bool entry_is(const tb_metric_entry *e, const char *name, size_t len, uint32_t hash)
{
	return e->hash == hash && e->name_len == len && memcmp(e->name, name, len) == 0;
}

/* Whether a lookup of `name` ends at `id`: on the name's probe sequence, no
 * READY entry of that name before it, and no EMPTY one (where a lookup
 * ends). Entries being registered are passed over, not waited for. */
static bool found_at(const tb_seg *s, uint32_t id, const char *name)
{
	uint32_t cap = s->layout.metric_capacity, hash = name_hash(name);
	size_t len = strlen(name);
	for (uint32_t probe = 0; probe < cap; probe++) {
		uint32_t at = (hash + probe) & (cap - 1);
		if (at == id)
			return true;
		if (at == TB_MAX_METRICS - 1)
			continue;
		const tb_metric_entry *e = tb_seg_metric(s, at);
		uint32_t state = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		if (state == TB_METRIC_EMPTY || (state == TB_METRIC_READY && entry_is(e, name, len, hash)))
			return false;
	}
	return false;
}

void tb_seg_metric_shown_name(const tb_seg *s, uint32_t id, char *out, size_t cap)
{
	char name[TB_METRIC_NAME_MAX];
	memcpy(name, tb_seg_metric(s, id)->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (tb_seg_metric_name_valid(name) && found_at(s, id, name))
		snprintf(out, cap, "%s", name);
	else
		tb_seg_metric_id_name(id, out, cap);
}

void tb_seg_metric_id_name(uint32_t id, char *out, size_t cap)
{
	snprintf(out, cap, "metric#%u", (unsigned)id); /* "#": in no valid name */
}

static int lookup(const tb_seg *s, const char *name, bool add)
{
	if (!tb_seg_metric_name_valid(name))
		return -EINVAL;
	if (add && (s->flags & TB_SEG_READONLY))
		return -EROFS;
	uint32_t cap = s->layout.metric_capacity, hash = name_hash(name);
	size_t len = strlen(name);
	int64_t until = 0; /* the wait for unfinished entries: not begun */
	for (uint32_t probe = 0; probe < cap; probe++) {
		uint32_t id = (hash + probe) & (cap - 1);
		if (id == TB_MAX_METRICS - 1)
			continue; /* reserved: the producer's "no metric" id */
		tb_metric_entry *e = tb_seg_metric(s, id);
		uint32_t state = wait_not_reserving(e, &until);
		if (state == TB_METRIC_READY) {
			if (entry_is(e, name, len, hash))
				return (int)id;
			continue;
		}
		if (state == TB_METRIC_EMPTY && !add)
			return -ENOENT; /* probing never skips an empty entry */
		if (state != TB_METRIC_EMPTY)
			continue; /* a registrant died mid-write: skip its entry */
		uint32_t expect = TB_METRIC_EMPTY;
		if (!__atomic_compare_exchange_n(&e->state, &expect, TB_METRIC_RESERVING, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			probe--; /* someone took it: look at it again */
			continue;
		}
		memcpy(e->name, name, len);
		e->name[len] = '\0';
		e->name_len = (uint32_t)len;
		e->hash = hash;
		__atomic_store_n(&e->state, TB_METRIC_READY, __ATOMIC_RELEASE);
		return (int)id;
	}
	return add ? -ENOSPC : -ENOENT;
}

int tb_seg_metric_register(tb_seg *s, const char *name)
{
	return lookup(s, name, true);
}

int tb_seg_metric_find(const tb_seg *s, const char *name)
{
	return lookup(s, name, false);
}
