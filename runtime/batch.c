/* Batch selection.
 *
 * Example position g = t * batch + leaf * leaf_size + i (t the 0-based round, all in uint64).
 * With shuffle == 0 the row is g mod n, n = train_rows = rows - holdout. With shuffle == 1,
 * epoch e = g / n and q = g mod n, and the row is perm(seed, e, q):
 *
 *   mix(z)       = splitmix64(z): z += 0x9E3779B97F4A7C15;
 *                  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
 *                  z = (z ^ (z >> 27)) * 0x94D049BB133111EB;  return z ^ (z >> 31)   (mod 2^64)
 *   k            = the smallest k with 2^k >= n, plus one if odd (so both halves are h = k/2 bits)
 *   key          = mix(mix(seed) ^ e)
 *   F(r, R)      = mix(key ^ (r << 32) ^ R) & (2^h - 1)           for rounds r = 0, 1, 2, 3
 *   feistel(x)   = L = x >> h, R = x & (2^h - 1);
 *                  4 times (r = 0..3): (L, R) = (R, L ^ F(r, R));   return (L << h) | R
 *   perm(seed, e, q) = x = feistel(q); while x >= n: x = feistel(x); return x   (cycle walking)
 *
 * feistel is a bijection on [0, 2^k), and cycle walking from a point inside [0, n) restricts it
 * to a bijection on [0, n); since 2^k < 4n, the walk takes under four steps on average. */
#include "batch.h"

#include <string.h>

uint64_t splitmix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t feistel(uint64_t x, uint64_t key, unsigned half_bits)
{
    uint64_t mask = ((uint64_t)1 << half_bits) - 1;
    uint64_t left = x >> half_bits, right = x & mask;
    for (uint64_t r = 0; r < 4; r++) {
        uint64_t f = splitmix64(key ^ (r << 32) ^ right) & mask;
        uint64_t next_right = left ^ f;
        left = right;
        right = next_right;
    }
    return (left << half_bits) | right;
}

uint64_t batch_permute(uint64_t seed, uint64_t epoch, uint64_t q, uint64_t n)
{
    unsigned k = 0;
    while (((uint64_t)1 << k) < n)
        k++;
    k += k & 1;
    uint64_t key = splitmix64(splitmix64(seed) ^ epoch);
    uint64_t x = feistel(q, key, k / 2);
    while (x >= n)
        x = feistel(x, key, k / 2);
    return x;
}

uint32_t batch_row(const struct alpha_program *p, uint32_t train_rows, uint32_t t,
                   uint32_t leaf, uint32_t i)
{
    uint64_t g = (uint64_t)t * p->batch + (uint64_t)leaf * p->leaf_size + i;
    if (!p->shuffle)
        return (uint32_t)(g % train_rows);
    return (uint32_t)batch_permute(p->shuffle_seed, g / train_rows, g % train_rows, train_rows);
}

void batch_gather(const struct alpha_program *p, const struct dataset *d, uint32_t train_rows,
                  uint32_t t, uint32_t leaf, float *x, int32_t *y_class, float *y_reg)
{
    for (uint32_t i = 0; i < p->leaf_size; i++) {
        uint32_t row = batch_row(p, train_rows, t, leaf, i);
        memcpy(x + (size_t)i * d->features, d->x + (size_t)row * d->features,
               d->features * sizeof(float));
        if (d->y_class)   /* d->targets labels per row: 1, or a sequence's positions */
            memcpy(y_class + (size_t)i * d->targets, d->y_class + (size_t)row * d->targets,
                   d->targets * sizeof(int32_t));
        else
            memcpy(y_reg + (size_t)i * d->targets, d->y_reg + (size_t)row * d->targets,
                   d->targets * sizeof(float));
    }
}
