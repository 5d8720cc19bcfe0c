/* tailbus/rand.h - a seeded sequence of 64-bit numbers (splitmix64, Steele,
 * Lea and Flood 2014): the same numbers for the same seed, every state
 * visited once in 2^64 steps. For load generators, test data and benchmark
 * inputs that must reproduce; not for anything that must be unpredictable.
 */
#ifndef TAILBUS_RAND_H
#define TAILBUS_RAND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The next number of the sequence whose state is *state (any seed). */
static inline uint64_t tb_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

#ifdef __cplusplus
}
#endif

#endif
