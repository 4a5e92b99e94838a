/* SPDX-License-Identifier: BSD-3-Clause */
#include "internal.h"

uint64_t tacos_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void tacos_rng_seed(tacos_rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = tacos_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tacos_rng_next(tacos_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t tacos_rng_below(tacos_rng_t *r, uint64_t n)
{
    /* Rejection sampling: unbiased for every n. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = tacos_rng_next(r);
    while (x >= limit);
    return x % n;
}
