/* test_slots.c - the collector's slots, in process: who owns a ring, and
 * when a slot is handed back FREE (its owner gone, its pid reused, a ring
 * quarantined before this collector started), and that the next owner's
 * ring is read in full. A real collector and producer (collector_fixture.h),
 * housekept by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lib/slot_word.h"
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
	f->c.slots[1].owner.pid = 0; /* as a collector that never saw it */
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
	fo->owner.pid = child;
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
	fo->owner.start_time = mine + 1;
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

/* A producer in another PID namespace (a container, the collector outside)
 * writes a pid that names some other process here, or none: its slot is
 * judged by its owner lock alone, which every claim takes, and freed once
 * the lock is gone (its descriptor closed: detached or dead). */
static void an_owner_in_another_pid_namespace_is_judged_by_its_lock(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_slot_follow *fo = &f->c.slots[1];
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) { /* the producer: attaches, says so, waits to be killed */
		alarm(10); /* gone even if the test fails before it kills it */
		tb_producer *p = tb_attach(BUS, "contained");
		char ok = tb_producer_error(p, NULL) == 0 && p->slot == 1 ? 'y' : 'n';
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char ok = 0;
	assert_int_equal(read(ready[0], &ok, 1), 1);
	assert_int_equal(ok, 'y');
	close(ready[0]);
	close(ready[1]);
	/* every claim takes its slot's owner lock and names its namespace */
	assert_true(f->c.pid_ns != 0);
	assert_true(s->pid_ns == f->c.pid_ns);
	assert_int_equal(tb_owner_locked(f->c.seg.fd, 1), 1);
	housekeep(f);
	assert_true(fo->followed);
	assert_true(fo->owner.pid_ns == f->c.pid_ns);

	/* seen from another namespace, its pid names another process here
	 * (pid 1, started at another time): kept for many looks, start times
	 * read among them */
	fo->owner.pid = 1;
	fo->owner.start_time = tb_proc_start_time(1) + 1;
	fo->owner.pid_ns = f->c.pid_ns + 1;
	for (int k = 0; k < 25; k++)
		housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_LIVE);

	/* killed: the kernel drops its lock, and the slot is freed */
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(tb_owner_locked(f->c.seg.fd, 1), 0);
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	assert_true(s->pid_ns == 0);
}

/* A claimer stopped mid-claim for seconds: the collector takes the slot
 * back and another producer claims it. The first claimer, going on, must
 * not publish the slot over the second's claim (two producers on one ring):
 * each claim moves the generation with the state (slot_word.h). */
static void a_claim_taken_back_and_claimed_again_is_not_published_twice(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_slot_follow *fo = &f->c.slots[1];
	uint64_t first = 0, second = 0;
	assert_true(tb_slot_claim(s, &first));
	assert_false(tb_slot_claim(s, &second)); /* not FREE */
	/* stuck for 2 s by the collector's clock: taken back */
	housekeep(f);
	fo->stuck_since_ns -= 3000000000LL;
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	/* freed with a new generation (held under the next one while the
	 * release reset it): whoever claims it next (a producer, or the
	 * collector mending a cut ring) never recreates the first claim */
	assert_int_equal(s->generation, tb_slot_word_generation(first) + 2);
	assert_true(tb_slot_claim(s, &second));
	assert_false(tb_slot_settle(s, first, TB_SLOT_LIVE)); /* the stopped claimer goes on */
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_CLAIMED);
	assert_true(tb_slot_settle(s, second, TB_SLOT_LIVE));
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_LIVE);
	__atomic_store_n(&s->state, TB_SLOT_FREE, __ATOMIC_RELEASE);
}

/* The owner lock decides who may take a slot: a slot whose lock another
 * open still holds (its last owner not yet let go, a fork()ed child of it)
 * is left FREE by a claim, which goes on to the next. */
static void a_slot_whose_lock_is_held_is_not_claimed(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	int fd = open(f->c.seg.path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(tb_owner_lock(fd, 1), 0);
	tb_producer *p = tb_attach(BUS, "late");
	assert_int_equal(tb_producer_error(p, NULL), -EBUSY); /* slot 0 is the fixture's */
	tb_detach(p);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	close(fd); /* let go */
	p = tb_attach(BUS, "late");
	assert_int_equal(tb_producer_error(p, NULL), 0);
	assert_int_equal(p->slot, 1);
	tb_detach(p);
}

/* tb_detach lets the lock go itself: a child of a raw fork (no atfork
 * handlers run) shares the handle's open and mapping and would otherwise
 * keep it, and no one could claim the slot while the child lives. */
static void detach_lets_the_lock_go_while_a_child_shares_it(void **state)
{
	struct fixture *f = *state;
	tb_producer *p = tb_attach(BUS, "parent");
	assert_int_equal(p->slot, 1);
	pid_t child = (pid_t)syscall(SYS_fork);
	assert_true(child >= 0);
	if (child == 0) {
		alarm(10); /* gone even if the test fails before it kills it */
		pause();
		_exit(0);
	}
	tb_detach(p);
	assert_int_equal(tb_owner_locked(f->c.seg.fd, 1), 0);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	housekeep(f);
}

/* A handle whose slot was taken back (its owner judged gone) and claimed
 * again, here by this very process, detaches nothing of the new claim:
 * the slot is the old handle's only while its generation is. */
static void a_handle_detaches_only_its_own_claim(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_slot_follow *fo = &f->c.slots[1];
	tb_producer *old = tb_attach(BUS, "old");
	assert_int_equal(old->slot, 1);
	housekeep(f);
	assert_true(fo->followed);
	/* judged gone (its pid a child that ended, its lock not held) */
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	tb_owner_unlock(((tb_seg *)old->seg)->fd, 1);
	fo->owner.pid = child;
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	tb_producer *now = tb_attach(BUS, "now");
	assert_int_equal(now->slot, 1);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_LIVE);
	tb_detach(old);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_LIVE);
	assert_int_equal(tb_owner_locked(f->c.seg.fd, 1), 1);
	tb_detach(now);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_DETACHED);
	housekeep(f);
}

/* A fork()ed child of an engine lets go of the engine's rings: when the
 * engine dies, its slot can be claimed again although the child lives on
 * (it shared the open and mapping, and with them the owner lock); and
 * what the child records through an inherited handle lands nowhere. */
static void forked_child(struct fixture *f, bool fds_full)
{
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t engine = fork();
	assert_true(engine >= 0);
	if (engine == 0) {
		tb_producer *p = tb_attach(BUS, "engine");
		if (p->slot != 1)
			_exit(1);
		/* an engine at its descriptor limit: the child can open nothing */
		while (fds_full && open("/dev/null", O_RDONLY) >= 0)
			;
		pid_t child = fork();
		if (child == 0) {
			alarm(10); /* gone even if the test fails before it kills it */
			tb_metric_t m = tb_metric(p, "inherited");
			for (int k = 0; k < 100000; k++)
				tb_span(p, m, 1, 2);
			pid_t me = getpid();
			if (write(ready[1], &me, sizeof(me)) < 0)
				_exit(1);
			for (;;)
				pause();
		}
		_exit(child > 0 ? 0 : 1); /* dies attached */
	}
	int status = 0;
	assert_int_equal(waitpid(engine, &status, 0), engine);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pid_t child = 0;
	assert_int_equal(read(ready[0], &child, sizeof(child)), (ssize_t)sizeof(child));
	assert_true(child > 0);
	close(ready[0]);
	close(ready[1]);
	assert_int_equal(tb_owner_locked(f->c.seg.fd, 1), 0);
	housekeep(f); /* followed */
	housekeep(f); /* the engine is gone: freed */
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	tb_producer *p = tb_attach(BUS, "next");
	assert_int_equal(tb_producer_error(p, NULL), 0);
	assert_int_equal(p->slot, 1);
	assert_int_equal(kill(child, 0), 0); /* recorded, and runs */
	kill(child, SIGKILL); /* not ours to reap: the engine's */
	tb_detach(p);
	housekeep(f);
}

static void a_forked_child_does_not_keep_its_parents_slot(void **state)
{
	forked_child(*state, false);
	forked_child(*state, true);
}

/* A FREE slot's ring mended after a cut over the slot table, which zeroed
 * the generation: a claimer stopped mid-claim of the slot's first claim
 * holds (CLAIMED, 1), which a mend through CLAIMED with a generation one
 * up would recreate and let it publish. */
static void a_mended_slot_is_no_stopped_claim(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	uint64_t stopped = 0, mending = 0, next = 0;
	/* a real cut: the collector mends slot 1 (FREE, its ring cut) past
	 * the stopped claim's generation */
	assert_true(tb_slot_claim(s, &stopped));
	housekeep(f);
	int fd = open(f->c.seg.path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)f->c.seg.layout.slots_off), 0);
	close(fd);
	assert_true(tb_segguard_check(&f->c));
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	assert_true(s->generation - tb_slot_word_generation(stopped) >= TB_SLOT_GENERATION_JUMP);
	assert_false(tb_slot_settle(s, stopped, TB_SLOT_LIVE));
	/* the helpers, in the middle of a mend */
	assert_true(tb_slot_claim(s, &stopped));
	__atomic_store_n(tb_slot_word_of(s), 0, __ATOMIC_RELEASE); /* the cut: zeros */
	assert_true(tb_slot_mend_begin(s, tb_slot_word_generation(stopped), &mending));
	assert_false(tb_slot_settle(s, stopped, TB_SLOT_LIVE));
	assert_false(tb_slot_claim(s, &next)); /* held while mended */
	tb_slot_mend_end(s, mending);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	assert_true(tb_slot_claim(s, &next));
	assert_true(tb_slot_word_generation(next) - tb_slot_word_generation(stopped) >=
		    TB_SLOT_GENERATION_JUMP);
	assert_false(tb_slot_settle(s, stopped, TB_SLOT_LIVE));
	assert_true(tb_slot_settle(s, next, TB_SLOT_FREE));
}

/* A producer on slot 1 (the fixture's is on slot 0), followed by the
 * collector. */
static tb_producer *attach_followed(struct fixture *f, const char *name)
{
	tb_producer *p = tb_attach(BUS, name);
	assert_int_equal(p->slot, 1);
	housekeep(f);
	assert_true(f->c.slots[1].followed);
	return p;
}

/* A cut over the slot table zeroes the slot lines; the collector writes
 * back what it followed, the generation with the owner, so that the
 * owner's tb_detach still knows its claim and the slot is freed while its
 * process runs on. */
static void a_handle_detaches_after_a_cut_over_its_slot(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_producer *p = attach_followed(f, "cut");
	int fd = open(f->c.seg.path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)f->c.seg.layout.slots_off), 0);
	close(fd);
	assert_true(tb_segguard_check(&f->c)); /* size given back, rings quarantined */
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_QUARANTINED);
	assert_int_equal(s->pid, getpid());
	tb_detach(p);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_DETACHED);
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cut_to(struct fixture *f, uint64_t size)
{
	int fd = open(f->c.seg.path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

/* A claim judged stuck (CLAIMED for 2 s: its claimer stopped) publishes
 * after the run loop asked for the slot's release and before the holder
 * carried it out. The claim was not taken back yet, so it is the
 * producer's: the release leaves it, and the slot is followed. */
static void a_claim_published_after_its_release_was_asked_is_kept(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_slot_follow *fo = &f->c.slots[1];
	uint64_t claimed = 0;
	assert_true(tb_slot_claim(s, &claimed));
	housekeep(f);
	fo->stuck_since_ns -= 3000000000LL;
	tb_slots_housekeep(&f->c, now_ns()); /* the run loop's look: asks */
	assert_int_equal(__atomic_load_n(&fo->release, __ATOMIC_ACQUIRE), TB_RELEASE_FREE);
	/* the claimer goes on, as claim_slot does: identity, then LIVE */
	s->pid = getpid();
	s->pid_start_time = tb_proc_start_time(getpid());
	__atomic_store_n(&s->attached_ns, (uint64_t)now_ns(), __ATOMIC_RELEASE);
	assert_true(tb_slot_settle(s, claimed, TB_SLOT_LIVE));
	tb_drainer_serve_requests(&f->c.drainers[0]); /* the holder's next look */
	uint64_t word = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_ACQUIRE);
	assert_true(tb_slot_held(word, tb_slot_word_generation(claimed)));
	housekeep(f);
	assert_true(fo->followed);
	assert_true(tb_slot_detach(s, tb_slot_word_generation(claimed)));
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
}

/* The same, end to end: a producer whose claim published late records,
 * detaches, and the slot's next owner writes into a ring in order (not one
 * reset under the first owner, whose stale events would be read as the
 * next owner's and make its ring read as full). */
static void the_owner_after_a_late_published_claim_records(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_slot_follow *fo = &f->c.slots[1];
	tb_producer *p = tb_attach(BUS, "late");
	assert_int_equal(p->slot, 1);
	uint32_t g = s->generation;
	/* as its claim was before it published */
	__atomic_store_n(tb_slot_word_of(s), tb_slot_word_make(TB_SLOT_CLAIMED, g), __ATOMIC_RELEASE);
	housekeep(f);
	fo->stuck_since_ns -= 3000000000LL;
	tb_slots_housekeep(&f->c, now_ns()); /* judged stuck: asks */
	__atomic_store_n(tb_slot_word_of(s), tb_slot_word_make(TB_SLOT_LIVE, g), __ATOMIC_RELEASE);
	tb_drainer_serve_requests(&f->c.drainers[0]);
	tb_metric_t m = tb_metric(p, "m0");
	for (int k = 0; k < 100; k++)
		tb_span(p, m, 1000, 2000);
	housekeep(f);
	tb_collector_drain_all(&f->c);
	tb_detach(p);
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
	tb_producer *q = tb_attach(BUS, "next");
	assert_int_equal(q->slot, 1);
	housekeep(f);
	tb_collector_drain_all(&f->c);
	tb_metric_t mq = tb_metric(q, "m0");
	for (int k = 0; k < 10; k++)
		tb_span(q, mq, 1000, 2000);
	tb_producer_stats st;
	tb_producer_stats_get(q, &st);
	tb_detach(q);
	housekeep(f);
	assert_int_equal(st.written, 10);
	assert_int_equal(st.folded + st.dropped, 0);
}

/* A thread detaches (LIVE -> DETACHED) and, before housekeeping frees its
 * slot, a cut over its ring is repaired: the quarantine keeps the
 * DETACHED, and the slot is freed though the owner's process runs on. */
static void a_slot_detached_before_a_cut_over_its_ring_is_freed(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_producer *p = attach_followed(f, "leaves");
	tb_detach(p);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_DETACHED);
	cut_to(f, f->c.seg.layout.rings_off + f->c.seg.layout.ring_stride); /* ring 1, not slot lines */
	assert_true(tb_segguard_check(&f->c));
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_DETACHED);
	assert_true(f->c.slots[1].quarantined); /* its ring is not read */
	housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
}

/* A thread detaches between a cut over the slot table and its repair (the
 * size given back by a producer's guard; the slot line reads as zeros):
 * its tb_detach finds no claim of its own and only lets the lock go. The
 * repair quarantines the slot under its owner; the let-go lock says the
 * claim is over, and the slot is freed while the process runs on. */
static void a_slot_detached_between_a_cut_and_its_repair_is_freed(void **state)
{
	struct fixture *f = *state;
	tb_slot *s = tb_seg_slot(&f->c.seg, 1);
	tb_producer *p = attach_followed(f, "leaves");
	uint64_t size = f->c.seg.size;
	cut_to(f, f->c.seg.layout.slots_off);
	cut_to(f, size); /* given back by a producer: zeros now */
	tb_detach(p);
	assert_int_equal(tb_owner_locked(f->c.seg.fd, 1), 0);
	assert_true(tb_segguard_check(&f->c));
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_QUARANTINED);
	for (int k = 0; k < 11; k++) /* the lock is tested every tenth look */
		housekeep(f);
	assert_int_equal(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE), TB_SLOT_FREE);
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
		cmocka_unit_test_setup_teardown(an_owner_in_another_pid_namespace_is_judged_by_its_lock,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_claim_taken_back_and_claimed_again_is_not_published_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(a_slot_whose_lock_is_held_is_not_claimed, setup, teardown),
		cmocka_unit_test_setup_teardown(detach_lets_the_lock_go_while_a_child_shares_it, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_handle_detaches_only_its_own_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(a_forked_child_does_not_keep_its_parents_slot, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_handle_detaches_after_a_cut_over_its_slot, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_mended_slot_is_no_stopped_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(a_claim_published_after_its_release_was_asked_is_kept,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_owner_after_a_late_published_claim_records, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_slot_detached_before_a_cut_over_its_ring_is_freed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_slot_detached_between_a_cut_and_its_repair_is_freed,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
