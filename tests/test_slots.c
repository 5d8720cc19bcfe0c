/* test_slots.c - the collector's slots, in process: who owns a ring, and
 * when a slot is handed back FREE (its owner gone, its pid reused, a ring
 * quarantined before this collector started), and that the next owner's
 * ring is read in full. A real collector and producer (collector_fixture.h),
 * housekept by hand.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_fixture.h"

/* A thread that writes exactly a ring and leaves; the next one to take its
 * slot is read as any other: its position hint starts where it starts, not
 * a ring behind, and its ring holds nothing of the last owner's. */
static void the_next_owner_of_a_slot_is_read_in_full(void **state)
{
	struct fixture *f = *state;
	uint32_t cap = f->c.seg.layout.ring_capacity;
	int64_t len = f->c.cfg.interval_ns;
	spans(f, 0, (int)cap, at(f, len / 2), 1000);
	tb_detach(f->p);
	f->p = NULL;
	housekeep(f); /* DETACHED: drained, handed back FREE */
	assert_int_equal(tb_seg_slot(&f->c.seg, 0)->state, TB_SLOT_FREE);
	assert_int_equal(events_of(f, 0), cap);
	f->p = tb_attach(BUS, "next-owner");
	assert_int_equal(tb_producer_error(f->p, NULL), 0);
	assert_int_equal(f->p->slot, 0);
	f->m[0] = tb_metric(f->p, "m0");
	spans(f, 0, 3, at(f, len / 2), 1000);
	tb_collector_drain_all(&f->c);
	tb_collector_drain_all(&f->c);
	assert_false(f->c.slots[0].quarantined);
	assert_int_equal(events_of(f, 0), cap + 3);
	assert_int_equal(ring_bad(&f->c.slots[0]), 0);
}

/* A ring quarantined before this collector started is handed back once its
 * owner is gone, and kept while the owner runs. */
static void a_ring_quarantined_before_start_is_freed_when_its_owner_is_gone(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	s->pid = getpid();
	s->pid_start_time = tb_proc_start_time(getpid());
	__atomic_store_n(&s->state, TB_SLOT_QUARANTINED, __ATOMIC_RELEASE);
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_QUARANTINED); /* its owner runs */
	f->c.slots[1].pid = 0; /* as a collector that never saw it */
	s->pid = child;
	s->pid_start_time = 12345;
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_FREE);
}

/* A live ring's owner is looked at every housekeeping: a pid that is gone
 * frees the slot at the next look, and a pid now another process's (its
 * start time differs; only every tenth look reads it) within ten looks. */
static void a_gone_or_reused_owner_frees_its_slot(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_slot_follow *fo = &f->c.slots[1];
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	uint64_t mine = tb_proc_start_time(getpid());
	assert_true(mine != 0);

	/* owned by this process: followed, and kept for many looks */
	s->pid = getpid();
	s->pid_start_time = mine;
	__atomic_store_n(&s->state, TB_SLOT_LIVE, __ATOMIC_RELEASE);
	for (int k = 0; k < 25; k++)
		housekeep(f);
	assert_int_equal(s->state, TB_SLOT_LIVE);
	assert_true(fo->followed);

	/* the owner is gone, between two reads of the start time */
	fo->pid = child;
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_FREE);

	/* owned again; then its pid belongs to a process started at another
	 * time (this one, as a reused pid would): freed within ten looks */
	s->pid = getpid();
	s->pid_start_time = mine;
	__atomic_store_n(&s->state, TB_SLOT_LIVE, __ATOMIC_RELEASE);
	housekeep(f);
	housekeep(f);
	assert_int_equal(s->state, TB_SLOT_LIVE);
	fo->pid_start_time = mine + 1;
	int looks = 0;
	while (s->state == TB_SLOT_LIVE && looks < 10) {
		housekeep(f);
		looks++;
	}
	assert_int_equal(s->state, TB_SLOT_FREE);
}

/* A claim in progress: a producer that has won FREE -> CLAIMED has not
 * written its pid yet. A slot freed by the collector carries no attach
 * time, so housekeeping does not judge such a claim by a pid that is not
 * there (it used to free it once the last owner's attach time was a
 * second old, and two producers could then publish one ring); and a
 * claim taken back under its claimer is not published by it. */
static void a_claim_in_progress_is_left_to_its_claimer(void **state)
{
	struct fixture *f = *state;
	tb_producer *prev = tb_attach(BUS, "previous");
	assert_int_equal(tb_producer_error(prev, NULL), 0);
	assert_int_equal(prev->slot, 1);
	tb_detach(prev);
	housekeep(f);
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	assert_int_equal(s->attached_ns, 0);
	struct timespec ts = {1, 200000000}; /* the last owner left a while ago */
	nanosleep(&ts, NULL);
	uint32_t expect = TB_SLOT_FREE;
	assert_true(__atomic_compare_exchange_n(&s->state, &expect, TB_SLOT_CLAIMED, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_CLAIMED);
	/* another attach does not get it (the fixture's two rings are taken) */
	tb_producer *other = tb_attach(BUS, "other");
	assert_int_equal(tb_producer_error(other, NULL), -EBUSY);
	tb_detach(other);
	__atomic_store_n(&s->state, TB_SLOT_FREE, __ATOMIC_RELEASE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_next_owner_of_a_slot_is_read_in_full,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_gone_or_reused_owner_frees_its_slot,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_ring_quarantined_before_start_is_freed_when_its_owner_is_gone,
			setup, teardown),
		cmocka_unit_test_setup_teardown(a_claim_in_progress_is_left_to_its_claimer,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
