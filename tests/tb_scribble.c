/* tb_scribble.c - a hostile process writing garbage where producers may write.
 *
 *   tb_scribble --bus B --thread NAME --what indices|mask|metrics|header-copy
 *   tb_scribble --bus B --what slots [--round R]
 *   tb_scribble --bus B --what header-magic|header-size|header-layout
 *
 * indices: pushes the producer index of NAME's ring far past its consumer;
 * mask:    overwrites the ring header's size and mask;
 * metrics: fills every metric entry not named "good..." with random bytes
 *          (states, lengths, names without a terminator);
 * slots:   leaves every slot in a state no honest producer leaves it in,
 *          slot i (plus the round) choosing which: a state that is none,
 *          CLAIMED by a running process (pid 1), LIVE or QUARANTINED with
 *          pid 1 and a start time that is not init's, or none at all;
 *          odd rounds name another PID namespace with no owner lock held.
 * header-magic: a magic that is not tailbus's; header-size: a total size
 *          one page larger (no longer the layout's); header-layout: the
 *          header of a valid layout with one slot less, whole.
 * The collector must report and quarantine what it cannot trust, keep
 * serving the other rings, and never read out of bounds.
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailbus/segment.h"

#define KEEP_PREFIX "good" /* entries of well-behaved producers' metrics are spared */

static int find_thread(const tb_seg *s, const char *name)
{
	for (uint32_t i = 0; i < s->layout.slot_count; i++) {
		const tb_slot *slot = tb_seg_slot(s, i);
		if (slot->state == TB_SLOT_LIVE && !strncmp(slot->thread_name, name, TB_THREAD_NAME_MAX))
			return (int)i;
	}
	return -1;
}

#define IMPOSSIBLE_STATE 0xdeadbeefu
#define INIT_PID 1 /* a process that runs, and owns no slot */
#define NOT_INITS_START 999

static void scribble_slots(tb_seg *s, int round)
{
	for (uint32_t i = 0; i < s->layout.slot_count; i++) {
		tb_slot *slot = tb_seg_slot(s, i);
		uint32_t state;
		switch ((i + (uint32_t)round) % 5) {
		case 0: state = IMPOSSIBLE_STATE; break;
		case 1: state = TB_SLOT_CLAIMED; break;
		case 2: state = TB_SLOT_LIVE; break;
		case 3: state = TB_SLOT_QUARANTINED; break;
		default: state = TB_SLOT_LIVE; break;
		}
		slot->pid = INIT_PID;
		slot->pid_start_time = (i + (uint32_t)round) % 5 == 4 ? 0 : NOT_INITS_START;
		/* every other round, from "another PID namespace" whose owner
		 * lock no one holds: a LIVE one is then gone, not an impostor */
		slot->pid_ns = round % 2 ? (uint64_t)rand() + 1 : 0;
		slot->generation = (uint32_t)rand();
		slot->attached_ns = 0;
		__atomic_store_n(&slot->state, state, __ATOMIC_RELEASE);
	}
}

static int scribble_header(tb_seg *s, const char *what)
{
	tb_seg_header *h = (tb_seg_header *)s->base;
	if (!strcmp(what, "magic")) {
		__atomic_store_n(&h->magic, UINT64_C(0x5448475548), __ATOMIC_RELEASE);
	} else if (!strcmp(what, "size")) {
		h->total_size += 4096;
	} else if (!strcmp(what, "layout")) {
		tb_seg_config c = {s->layout.slot_count - 1, s->layout.ring_capacity, s->layout.metric_capacity,
				   s->layout.live_intervals, (gid_t)-1, 0, s->layout.fold_lanes,
				   s->layout.live_heap_bytes};
		tb_seg_header want;
		if (c.slot_count == 0 || tb_seg_layout(&c, &want) < 0)
			return 1;
		want.magic = TB_SEG_MAGIC;
		want.page_size = h->page_size;
		want.creator_pid = h->creator_pid;
		want.created_realtime_ns = h->created_realtime_ns;
		memcpy(h, &want, offsetof(tb_seg_header, collector_heartbeat_ns));
	} else {
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *bus = NULL, *thread = NULL, *what = NULL;
	int round = 0;
	static const struct option longs[] = {
		{"bus", 1, 0, 'b'}, {"thread", 1, 0, 't'}, {"what", 1, 0, 'w'}, {"round", 1, 0, 'r'},
		{0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 'b') bus = optarg;
		else if (c == 't') thread = optarg;
		else if (c == 'w') what = optarg;
		else if (c == 'r') round = atoi(optarg);
		else return 2;
	}
	if (!bus || !what)
		return 2;
	tb_seg s;
	const char *why = NULL;
	if (tb_seg_open(&s, NULL, bus, NULL, 0, &why) < 0) {
		fprintf(stderr, "tb_scribble: %s\n", why);
		return 1;
	}
	srand(12345);
	if (!strcmp(what, "metrics")) {
		for (uint32_t m = 0; m < s.layout.metric_capacity; m++) {
			uint8_t *e = (uint8_t *)tb_seg_metric(&s, m);
			if (!strncmp(tb_seg_metric(&s, m)->name, KEEP_PREFIX, strlen(KEEP_PREFIX)))
				continue;
			for (size_t k = 0; k < sizeof(tb_metric_entry); k++)
				e[k] = (uint8_t)rand();
		}
		tb_seg_close(&s);
		return 0;
	}
	if (!strncmp(what, "header-", 7)) {
		int rc = scribble_header(&s, what + 7);
		tb_seg_close(&s);
		return rc;
	}
	if (!strcmp(what, "slots")) {
		scribble_slots(&s, round);
		tb_seg_close(&s);
		return 0;
	}
	int i = thread ? find_thread(&s, thread) : -1;
	if (i < 0) {
		fprintf(stderr, "tb_scribble: no live ring for thread '%s'\n", thread ? thread : "");
		return 1;
	}
	tb_ring_header *ring = tb_seg_ring(&s, (uint32_t)i);
	if (!strcmp(what, "indices")) {
		__atomic_store_n(&ring->p_tail, ring->c_head + s.layout.ring_capacity * 7 + 3, __ATOMIC_RELEASE);
	} else if (!strcmp(what, "mask")) {
		ring->size = 0xfffffff0u;
		ring->mask = 0xffffffffu;
		__atomic_store_n(&ring->p_tail, ring->c_head - 5, __ATOMIC_RELEASE);
	} else {
		return 2;
	}
	printf("%d\n", i);
	tb_seg_close(&s);
	return 0;
}
