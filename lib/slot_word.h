/* slot_word.h - a slot's state and generation, moved together.
 *
 * The two are adjacent 32-bit words, state first, at the start of an
 * aligned line (seg_abi.h), so one 64-bit compare-and-swap moves both. The
 * generation goes up at every claim and every free, and a claim publishes
 * (CLAIMED -> LIVE) or a handle detaches (-> DETACHED) only while the word
 * is as its claim left it. A claimer stopped mid-claim whose claim the
 * collector took back (and freed, and perhaps another claimed since) finds
 * another generation and publishes nothing: two producers never share a
 * ring that way, and an old handle never detaches a newer claim.
 *
 * Private to the libraries (producer.c, the collector) and their tests.
 * Every change of a slot's state goes through these compare-and-swaps; the
 * 32-bit loads of the state alone that readers make are outside C11 beside
 * them, but well defined on the targets (x86-64, arm64).
 */
#ifndef TAILBUS_SLOT_WORD_H
#define TAILBUS_SLOT_WORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailbus/seg_abi.h"

TB_STATIC_ASSERT(offsetof(tb_slot, generation) == offsetof(tb_slot, state) + 4,
		 "a slot's state and generation are one 64-bit word");

/* The word as memory holds it: endian-neutral. */
typedef union tb_slot_word {
	struct {
		uint32_t state, generation;
	} f;
	uint64_t w;
} tb_slot_word;

static inline uint64_t *tb_slot_word_of(tb_slot *s)
{
	return (uint64_t *)(void *)&s->state;
}

static inline uint64_t tb_slot_word_make(uint32_t state, uint32_t generation)
{
	tb_slot_word w = {.f = {state, generation}};
	return w.w;
}

static inline uint32_t tb_slot_word_generation(uint64_t word)
{
	tb_slot_word w = {.w = word};
	return w.f.generation;
}

/* FREE -> CLAIMED, generation + 1. True with *claimed, the word the claim
 * left; false when the slot is not FREE (or was taken meanwhile). */
static inline bool tb_slot_claim(tb_slot *s, uint64_t *claimed)
{
	tb_slot_word seen = {.w = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_RELAXED)};
	if (seen.f.state != TB_SLOT_FREE)
		return false;
	uint64_t next = tb_slot_word_make(TB_SLOT_CLAIMED, seen.f.generation + 1);
	if (!__atomic_compare_exchange_n(tb_slot_word_of(s), &seen.w, next, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return false;
	*claimed = next;
	return true;
}

/* CLAIMED -> `state` (LIVE to publish, FREE to give the claim up), if the
 * slot is still as `claimed` says. */
static inline bool tb_slot_settle(tb_slot *s, uint64_t claimed, uint32_t state)
{
	return __atomic_compare_exchange_n(tb_slot_word_of(s), &claimed,
					   tb_slot_word_make(state, tb_slot_word_generation(claimed)),
					   false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Whether `word` is still the claim of `generation`, published (LIVE, or
 * QUARANTINED since): what its handle may detach. */
static inline bool tb_slot_held(uint64_t word, uint32_t generation)
{
	tb_slot_word w = {.w = word};
	return w.f.generation == generation &&
	       (w.f.state == TB_SLOT_LIVE || w.f.state == TB_SLOT_QUARANTINED);
}

/* LIVE or QUARANTINED -> DETACHED while the slot is of `generation` (a
 * quarantine landing between the load and the swap is retried). */
static inline bool tb_slot_detach(tb_slot *s, uint32_t generation)
{
	tb_slot_word seen = {.w = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_ACQUIRE)};
	while (tb_slot_held(seen.w, generation)) {
		if (__atomic_compare_exchange_n(tb_slot_word_of(s), &seen.w,
						tb_slot_word_make(TB_SLOT_DETACHED, generation), false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

/* The generations a mend jumps over (tb_slot_mend_begin). */
#define TB_SLOT_GENERATION_JUMP (UINT32_C(1) << 24)

/* The collector's, to mend a FREE slot's cut ring: FREE -> DETACHED (a
 * state no claim publishes from, and no claim takes) with a generation
 * past both the slot's and `seen` (the highest the collector saw there)
 * by TB_SLOT_GENERATION_JUMP. A cut over the slot line zeroes the
 * generation, and the next generations would meet a claimer stopped
 * mid-claim with its old word; this one does not. True with *mending. */
static inline bool tb_slot_mend_begin(tb_slot *s, uint32_t seen, uint64_t *mending)
{
	tb_slot_word now = {.w = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_RELAXED)};
	if (now.f.state != TB_SLOT_FREE)
		return false;
	uint32_t g = (int32_t)(now.f.generation - seen) > 0 ? now.f.generation : seen;
	uint64_t next = tb_slot_word_make(TB_SLOT_DETACHED, g + TB_SLOT_GENERATION_JUMP);
	if (!__atomic_compare_exchange_n(tb_slot_word_of(s), &now.w, next, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return false;
	*mending = next;
	return true;
}

/* The mend done: FREE, generation + 1, from the word the mend left only. */
static inline void tb_slot_mend_end(tb_slot *s, uint64_t mending)
{
	__atomic_compare_exchange_n(
		tb_slot_word_of(s), &mending,
		tb_slot_word_make(TB_SLOT_FREE, tb_slot_word_generation(mending) + 1), false,
		__ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* The collector's, to quarantine a followed slot whose claim is of
 * `generation`: QUARANTINED with that generation, one word, over whatever
 * the slot holds (LIVE, or zeros where a cut took the slot line: the
 * generation is written back with it). A DETACHED of that generation (its
 * owner let go first) is kept, to be released as any detached slot. True
 * when the slot is QUARANTINED now. */
static inline bool tb_slot_quarantine(tb_slot *s, uint32_t generation)
{
	tb_slot_word seen = {.w = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_ACQUIRE)};
	uint64_t next = tb_slot_word_make(TB_SLOT_QUARANTINED, generation);
	for (;;) {
		if (seen.f.state == TB_SLOT_DETACHED && seen.f.generation == generation)
			return false;
		if (__atomic_compare_exchange_n(tb_slot_word_of(s), &seen.w, next, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	}
}

/* The collector's, to release a slot it judged by the word `judged`: false
 * when the slot has moved on since (another generation: freed and claimed
 * again; a claim judged stuck that has published after all, or given
 * itself up). A claim still as judged is taken back first, held DETACHED
 * under the next generation so that its claimer publishes nothing and no
 * one claims the slot before the release has reset it (tb_slot_free then
 * frees it). */
static inline bool tb_slot_release_begin(tb_slot *s, uint64_t judged)
{
	tb_slot_word j = {.w = judged};
	tb_slot_word now = {.w = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_ACQUIRE)};
	if (now.f.generation != j.f.generation)
		return false;
	if (j.f.state != TB_SLOT_CLAIMED)
		return true;
	return __atomic_compare_exchange_n(tb_slot_word_of(s), &judged,
					   tb_slot_word_make(TB_SLOT_DETACHED, j.f.generation + 1), false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* The collector's: FREE, generation + 1, from whatever the slot holds, with
 * release (what was written to the slot and ring before happens before a
 * claim). */
static inline void tb_slot_free(tb_slot *s)
{
	uint64_t seen = __atomic_load_n(tb_slot_word_of(s), __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(
		tb_slot_word_of(s), &seen,
		tb_slot_word_make(TB_SLOT_FREE, tb_slot_word_generation(seen) + 1), false,
		__ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

#endif
