/* Data pattern (splitmix64 of seed, rank and word index) and a seeded RNG; see pattern.h for the contract. */
#include <string.h>

#include "pattern.h"

#define GOLDEN 0x9e3779b97f4a7c15ULL

static inline uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t base_of(uint64_t seed, int rank)
{
    return mix(seed) ^ mix(((uint64_t)rank + 1) * GOLDEN);
}

/* The word in file byte order (least significant byte first), ready for memcpy into a buffer. */
static inline uint64_t word_le(uint64_t base, uint64_t i)
{
    uint64_t w = mix(base + (i + 1) * GOLDEN);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

void iotame_pattern_fill(void *buf, size_t len, uint64_t seed, int rank, uint64_t offset)
{
    unsigned char *p = buf;
    uint64_t base = base_of(seed, rank), i = offset / 8;
    size_t skip = offset % 8;
    if (skip && len) { /* unaligned head: the tail bytes of one word */
        uint64_t w = word_le(base, i++);
        size_t n = len < 8 - skip ? len : 8 - skip;
        memcpy(p, (unsigned char *)&w + skip, n);
        p += n;
        len -= n;
    }
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w = word_le(base, i++);
        memcpy(p, &w, 8);
    }
    if (len) {
        uint64_t w = word_le(base, i);
        memcpy(p, &w, len);
    }
}

/* Index of the first differing byte of two 8-byte groups known to differ somewhere in the first n bytes. */
static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t k = 0;
    while (k < n && a[k] == b[k]) k++;
    return k;
}

size_t iotame_pattern_check(const void *buf, size_t len, uint64_t seed, int rank, uint64_t offset,
                            uint8_t *expected, uint8_t *got)
{
    const unsigned char *p = buf;
    uint64_t base = base_of(seed, rank), i = offset / 8;
    size_t skip = offset % 8, done = 0;
    while (done < len) {
        uint64_t w = word_le(base, i++);
        const unsigned char *want = (const unsigned char *)&w + skip;
        size_t n = 8 - skip;
        if (n > len - done) n = len - done;
        skip = 0;
        /* RATIONALE: one 8-byte compare per word keeps the check as fast as the fill; bytes only on a mismatch. */
        if (n == 8) {
            uint64_t have;
            memcpy(&have, p + done, 8);
            if (have == w) {
                done += 8;
                continue;
            }
        }
        size_t k = first_diff(want, p + done, n);
        if (k < n) {
            *expected = want[k];
            *got = p[done + k];
            return done + k;
        }
        done += n;
    }
    return len;
}

uint8_t iotame_pattern_byte(uint64_t seed, int rank, uint64_t offset)
{
    uint8_t b;
    iotame_pattern_fill(&b, 1, seed, rank, offset);
    return b;
}

void iotame_rng_seed(iotame_rng_t *rng, uint64_t seed, uint64_t stream)
{
    rng->state = mix(seed) ^ mix((stream + 1) * GOLDEN);
}

uint64_t iotame_rng_next(iotame_rng_t *rng)
{
    rng->state += GOLDEN;
    return mix(rng->state);
}

uint64_t iotame_rng_below(iotame_rng_t *rng, uint64_t n)
{
    /* Rejection sampling removes the modulo bias. */
    uint64_t limit = -n % n, r;
    do {
        r = iotame_rng_next(rng);
    } while (r < limit);
    return r % n;
}

void iotame_rng_shuffle(iotame_rng_t *rng, uint64_t *items, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = iotame_rng_below(rng, i);
        uint64_t t = items[i - 1];
        items[i - 1] = items[j];
        items[j] = t;
    }
}
