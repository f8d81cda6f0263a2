/* SHA-256, written from FIPS 180-4: the data file at start-up, the parameter file, and every
 * checkpoint shard written and read back. The portable compression is compact; on x86-64 with
 * the SHA extensions (checked with cpuid at first use) and on AArch64 with the SHA-2
 * instructions (checked in the auxiliary vector) the blocks go through them instead, several
 * times faster, with the same digests. */
#include "sha256.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t block[64])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
               (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

#if defined(__x86_64__)
/* The SHA-NI rounds: the state is kept as ABEF and CDGH; each group of four rounds adds its
 * four message words and constants, and the schedule extends the words four at a time:
 * W[g] = msg2(msg1(W[g-4], W[g-3]) + (W[g-1]:W[g-2] >> 4 bytes), W[g-1]). */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_ni(uint32_t h[8],
                                                                    const uint8_t *data,
                                                                    size_t blocks)
{
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i cdab = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1);
    __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; blocks > 0; blocks--, data += 64) {
        __m128i w[4], saved_abef = abef, saved_cdgh = cdgh;
        for (int g = 0; g < 16; g++) {
            if (g < 4)
                w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * g)), swap);
            else
                w[g % 4] = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(w[g % 4], w[(g + 1) % 4]),
                                  _mm_alignr_epi8(w[(g + 3) % 4], w[(g + 2) % 4], 4)),
                    w[(g + 3) % 4]);
            __m128i m = _mm_add_epi32(w[g % 4], _mm_loadu_si128((const __m128i *)&K[4 * g]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
        }
        abef = _mm_add_epi32(abef, saved_abef);
        cdgh = _mm_add_epi32(cdgh, saved_cdgh);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(dchg, feba, 8));
}

static int has_sha_ni(void)
{
    static int known = -1;
    if (known < 0) {
        unsigned a, b, c, d;
        int ssse3_sse41 = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 9)) && (c & (1u << 19));
        known = ssse3_sse41 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
    }
    return known;
}
#endif

#if defined(__aarch64__)
/* The Armv8 SHA-2 rounds: the state is kept as ABCD and EFGH; each group of four rounds adds
 * its four message words and constants, and the schedule extends the words four at a time:
 * W[g + 4] = su1(su0(W[g], W[g + 1]), W[g + 2], W[g + 3]). */
__attribute__((target("sha2"))) static void compress_arm(uint32_t h[8], const uint8_t *data,
                                                          size_t blocks)
{
    uint32x4_t abcd = vld1q_u32(&h[0]), efgh = vld1q_u32(&h[4]);
    for (; blocks > 0; blocks--, data += 64) {
        uint32x4_t w[4], saved_abcd = abcd, saved_efgh = efgh;
        for (int g = 0; g < 4; g++)
            w[g] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(data + 16 * g)));
        for (int g = 0; g < 16; g++) {
            uint32x4_t m = vaddq_u32(w[g % 4], vld1q_u32(&K[4 * g]));
            if (g < 12)
                w[g % 4] = vsha256su1q_u32(vsha256su0q_u32(w[g % 4], w[(g + 1) % 4]),
                                           w[(g + 2) % 4], w[(g + 3) % 4]);
            uint32x4_t before = abcd;
            abcd = vsha256hq_u32(abcd, efgh, m);
            efgh = vsha256h2q_u32(efgh, before, m);
        }
        abcd = vaddq_u32(abcd, saved_abcd);
        efgh = vaddq_u32(efgh, saved_efgh);
    }
    vst1q_u32(&h[0], abcd);
    vst1q_u32(&h[4], efgh);
}

static int has_sha2(void)
{
    static int known = -1;
    if (known < 0)
        known = (getauxval(AT_HWCAP) & (1ul << 6)) != 0; /* HWCAP_SHA2 */
    return known;
}
#endif

/* Whole blocks straight from the input. */
static void compress_blocks(uint32_t h[8], const uint8_t *data, size_t blocks)
{
#if defined(__x86_64__)
    if (has_sha_ni()) {
        compress_ni(h, data, blocks);
        return;
    }
#elif defined(__aarch64__)
    if (has_sha2()) {
        compress_arm(h, data, blocks);
        return;
    }
#endif
    for (; blocks > 0; blocks--, data += 64)
        compress(h, data);
}

void sha256_init(struct sha256 *s)
{
    static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, initial, sizeof initial);
    s->length = 0;
    s->used = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->length += n;
    if (s->used == 0 && n >= 64) {
        compress_blocks(s->h, p, n / 64);
        p += n - n % 64;
        n %= 64;
    }
    while (n > 0) {
        size_t take = 64 - s->used;
        if (take > n)
            take = n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == 64) {
            compress_blocks(s->h, s->block, 1);
            s->used = 0;
            if (n >= 64) {
                compress_blocks(s->h, p, n / 64);
                p += n - n % 64;
                n %= 64;
            }
        }
    }
}

void sha256_final(struct sha256 *s, uint8_t digest[32])
{
    uint64_t bits = s->length * 8;
    static const uint8_t pad = 0x80;
    static const uint8_t zero = 0;
    sha256_update(s, &pad, 1);
    while (s->used != 56)
        sha256_update(s, &zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(s->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void sha256_hex(const uint8_t digest[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
}

void sha256_text(const void *data, size_t n, char hex[65])
{
    struct sha256 s;
    uint8_t digest[32];
    sha256_init(&s);
    sha256_update(&s, data, n);
    sha256_final(&s, digest);
    sha256_hex(digest, hex);
}
