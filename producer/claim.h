/* claim.h - a producer's claim of a slot, in its two steps (producer.c).
 * Private to the producer library and its tests.
 *
 * A slot's state and generation are adjacent 32-bit words, state first, at
 * the start of an aligned line (seg_abi.h), and a claim moves both in one
 * 64-bit compare-and-swap: FREE -> CLAIMED with the generation one up, then
 * CLAIMED -> LIVE only while both are still as the claim left them. The
 * collector takes back a claim stuck for seconds (its claimer stopped
 * mid-claim) and another producer may claim the slot again: that claim
 * has a new generation, so the first claimer's publish fails instead of
 * putting two producers on one ring. Others write the state word alone
 * (32-bit), which the 64-bit compare sees. */
#ifndef TAILBUS_PRODUCER_CLAIM_H
#define TAILBUS_PRODUCER_CLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "tailbus/seg_abi.h"

/* FREE -> CLAIMED, generation + 1. True with *claimed, the word to publish
 * from; false when the slot is not FREE. */
bool tb__slot_claim(tb_slot *s, uint64_t *claimed);
/* CLAIMED -> LIVE, if the slot is still as `claimed` says. */
bool tb__slot_publish(tb_slot *s, uint64_t claimed);
/* CLAIMED -> FREE (a claim given up before it was published), if the slot
 * is still as `claimed` says. */
void tb__slot_unclaim(tb_slot *s, uint64_t claimed);
/* The generation of a claim word. */
uint32_t tb__slot_generation(uint64_t claimed);
/* LIVE or QUARANTINED -> DETACHED, if the slot is still of generation
 * `generation` (not taken back and claimed again since). True if done. */
bool tb__slot_detach(tb_slot *s, uint32_t generation);

#endif
