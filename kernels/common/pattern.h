/* Data pattern and random numbers shared by every kernel.
 *
 * The byte a writer rank puts at an absolute file offset depends only on (seed, rank, offset), so any range at any
 * offset can be generated or checked on its own, whatever order or request size the kernel uses. The contract
 * (tests re-implement it, keep it stable):
 *
 *   mix(z)     = splitmix64 finalizer: z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
 *                                      z *= 0x94d049bb133111eb; z ^= z >> 31
 *   base       = mix(seed) ^ mix((rank + 1) * 0x9e3779b97f4a7c15)
 *   word(i)    = mix(base + (i + 1) * 0x9e3779b97f4a7c15)          (all arithmetic modulo 2^64)
 *   byte(off)  = byte (off % 8) of word(off / 8), least significant byte first
 */
#ifndef IOTAME_KERNELS_PATTERN_H
#define IOTAME_KERNELS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf with the len pattern bytes of (seed, rank) starting at file offset `offset`. */
void iotame_pattern_fill(void *buf, size_t len, uint64_t seed, int rank, uint64_t offset);

/* Compares buf with the pattern. Returns how many leading bytes match: len when all do; otherwise buf[returned]
 * is the first bad byte and *expected / *got hold what should be there and what is. */
size_t iotame_pattern_check(const void *buf, size_t len, uint64_t seed, int rank, uint64_t offset,
                            uint8_t *expected, uint8_t *got);

/* One pattern byte (slow path; for messages and tests). */
uint8_t iotame_pattern_byte(uint64_t seed, int rank, uint64_t offset);

/* A small seeded generator (splitmix64) for random offsets and shuffles: the same (seed, stream) gives the same
 * sequence on every rank and every run. */
typedef struct iotame_rng {
    uint64_t state;
} iotame_rng_t;

void iotame_rng_seed(iotame_rng_t *rng, uint64_t seed, uint64_t stream);
uint64_t iotame_rng_next(iotame_rng_t *rng);
uint64_t iotame_rng_below(iotame_rng_t *rng, uint64_t n); /* uniform in [0, n), n > 0 */

/* Fisher-Yates shuffle of n indices. */
void iotame_rng_shuffle(iotame_rng_t *rng, uint64_t *items, size_t n);

#endif
