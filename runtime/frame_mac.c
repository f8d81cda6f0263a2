/* The frame MAC (frame_mac.h). A product of two field elements is four 64x64 carry-less
 * multiplies into 256 bits [p3:p2:p1:p0], then two folds by x^128 = x^7 + x^2 + x + 1 (0x87):
 * p3 * 0x87 added at bit 64, then p2 * 0x87 added at bit 0, leaving [p1:p0]. Four blocks are
 * taken per step against H^4..H^1 with their unreduced products added and reduced once:
 * (Y ^ X1) H^4 ^ X2 H^3 ^ X3 H^2 ^ X4 H is four Horner steps, so the grouping never changes a
 * tag. Where the CPU has AVX-512's carry-less multiply (VPCLMULQDQ), 32 blocks are taken per
 * step against H^32..H^1, four to a register: the reduction, the only part that depends on the
 * step before, comes once per 512 bytes instead of once per 64 (about 4x the throughput).
 * The portable multiply computes the same product another way (bit by bit, reducing as it
 * shifts). */
#include "frame_mac.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>
#endif

/* Everything but the accelerated loops is compiled for size (the executable has a size budget;
 * the portable multiply is the fallback of CPUs without a carry-less one). */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int narrowest; /* 1: the portable multiply; 2: no wider than 128-bit carry-less */

void frame_mac_portable(int on) { narrowest = on; }

/* ---- portable: y = (y ^ x) * h, one bit of the first factor at a time against h * x^i, which
 * is shifted and reduced as it goes (x^128 = 0x87). Masks instead of branches, and no table
 * indexed by key bits, so its time does not depend on H or the message. ---- */

static void mul_portable(uint64_t y[2], const uint64_t x[2], const uint64_t h[2])
{
    uint64_t a[2] = {y[0] ^ x[0], y[1] ^ x[1]}, v0 = h[0], v1 = h[1], z0 = 0, z1 = 0;
    for (int i = 0; i < 128; i++) {
        uint64_t take = 0 - ((a[i / 64] >> (i % 64)) & 1), top = 0 - (v1 >> 63);
        z0 ^= v0 & take, z1 ^= v1 & take;
        v1 = v1 << 1 | v0 >> 63;
        v0 = v0 << 1 ^ (0x87 & top);
    }
    y[0] = z0, y[1] = z1;
}

static void hash_portable(uint64_t y[2], const uint64_t h[2], const uint8_t *p, size_t blocks)
{
    for (; blocks > 0; blocks--, p += 16) {
        uint64_t x[2] = {get64(p), get64(p + 8)};
        mul_portable(y, x, h);
    }
}

#pragma clang attribute pop

#if defined(__x86_64__)
#define CLMUL __attribute__((target("pclmul,sse2")))

/* The unreduced product a * b added into lo (bits 0-127), mid (64-191) and hi (128-255). */
CLMUL static inline void mul_x86(__m128i a, __m128i b, __m128i *lo, __m128i *mid, __m128i *hi)
{
    *lo = _mm_xor_si128(*lo, _mm_clmulepi64_si128(a, b, 0x00));
    *hi = _mm_xor_si128(*hi, _mm_clmulepi64_si128(a, b, 0x11));
    *mid = _mm_xor_si128(*mid, _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01),
                                             _mm_clmulepi64_si128(a, b, 0x10)));
}

CLMUL static inline __m128i reduce_x86(__m128i lo, __m128i mid, __m128i hi)
{
    const __m128i r = _mm_set_epi64x(0, 0x87);
    lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
    hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
    __m128i t = _mm_clmulepi64_si128(hi, r, 0x01); /* p3 * 0x87, added at bit 64 */
    lo = _mm_xor_si128(lo, _mm_slli_si128(t, 8));
    hi = _mm_xor_si128(hi, _mm_srli_si128(t, 8));
    return _mm_xor_si128(lo, _mm_clmulepi64_si128(hi, r, 0x00)); /* p2 * 0x87 at bit 0 */
}

CLMUL static void hash_x86(uint64_t y[2], const uint64_t h[32][2], const uint8_t *p,
                           size_t blocks)
{
    __m128i acc = _mm_loadu_si128((const __m128i *)y), hp[4];
    for (int i = 0; i < 4; i++)
        hp[i] = _mm_loadu_si128((const __m128i *)h[i]);
    for (; blocks >= 4; blocks -= 4, p += 64) {
        __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
        mul_x86(_mm_xor_si128(acc, _mm_loadu_si128((const __m128i *)p)), hp[3], &lo, &mid, &hi);
        mul_x86(_mm_loadu_si128((const __m128i *)(p + 16)), hp[2], &lo, &mid, &hi);
        mul_x86(_mm_loadu_si128((const __m128i *)(p + 32)), hp[1], &lo, &mid, &hi);
        mul_x86(_mm_loadu_si128((const __m128i *)(p + 48)), hp[0], &lo, &mid, &hi);
        acc = reduce_x86(lo, mid, hi);
    }
    for (; blocks > 0; blocks--, p += 16) {
        __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
        mul_x86(_mm_xor_si128(acc, _mm_loadu_si128((const __m128i *)p)), hp[0], &lo, &mid, &hi);
        acc = reduce_x86(lo, mid, hi);
    }
    _mm_storeu_si128((__m128i *)y, acc);
}

#define WIDE __attribute__((target("avx512f,vpclmulqdq,pclmul")))

/* The unreduced products of four blocks at once, one per 128-bit lane. */
WIDE static inline void mul_wide(__m512i a, __m512i b, __m512i *lo, __m512i *mid, __m512i *hi)
{
    *lo = _mm512_xor_si512(*lo, _mm512_clmulepi64_epi128(a, b, 0x00));
    *hi = _mm512_xor_si512(*hi, _mm512_clmulepi64_epi128(a, b, 0x11));
    *mid = _mm512_xor_si512(*mid, _mm512_xor_si512(_mm512_clmulepi64_epi128(a, b, 0x01),
                                                   _mm512_clmulepi64_epi128(a, b, 0x10)));
}

WIDE static inline __m128i fold_lanes(__m512i v)
{
    __m128i a = _mm512_extracti32x4_epi32(v, 0), b = _mm512_extracti32x4_epi32(v, 1);
    __m128i c = _mm512_extracti32x4_epi32(v, 2), d = _mm512_extracti32x4_epi32(v, 3);
    return _mm_xor_si128(_mm_xor_si128(a, b), _mm_xor_si128(c, d));
}

/* Thirty-two Horner steps at a time over whole groups of 32 blocks; returns the blocks hashed.
 * Block 4j + l of a group (register j, lane l) is multiplied by H^(32 - 4j - l): the key's
 * H^(29 - 4j)..H^(32 - 4j), their four lanes reversed. */
WIDE static size_t hash_wide(uint64_t y[2], const uint64_t h[32][2], const uint8_t *p,
                             size_t blocks)
{
    __m512i m[8];
    for (int j = 0; j < 8; j++)
        m[j] = _mm512_shuffle_i64x2(_mm512_loadu_si512((const void *)h[28 - 4 * j]),
                                    _mm512_loadu_si512((const void *)h[28 - 4 * j]), 0x1b);
    __m128i acc = _mm_loadu_si128((const __m128i *)y);
    size_t done = blocks - blocks % 32;
    for (; blocks >= 32; blocks -= 32, p += 512) {
        __m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;
        __m512i x = _mm512_zextsi128_si512(acc);
#pragma clang loop unroll(disable) /* the executable has a size budget; as fast either way */
        for (int j = 0; j < 8; j++) {
            x = _mm512_xor_si512(x, _mm512_loadu_si512((const void *)(p + 64 * j)));
            mul_wide(x, m[j], &lo, &mid, &hi);
            x = _mm512_setzero_si512();
        }
        acc = reduce_x86(fold_lanes(lo), fold_lanes(mid), fold_lanes(hi));
    }
    _mm_storeu_si128((__m128i *)y, acc);
    return done;
}

/* What the CPU has: 0 no carry-less multiply, 1 PCLMULQDQ, 2 also AVX-512's VPCLMULQDQ with the
 * OS saving the 512-bit registers (XCR0: SSE, AVX, opmask and both upper ZMM halves). */
static int clmul_level(void)
{
    static int known = -1;
    if (known < 0) {
        unsigned a, b, c, d, xcr0 = 0, high;
        known = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 1)); /* PCLMULQDQ */
        if (known && (c & (1u << 27))) {                             /* OSXSAVE */
            __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
            known += (xcr0 & 0xe6) == 0xe6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
                     (b & (1u << 16)) && (c & (1u << 10)); /* AVX512F, VPCLMULQDQ */
        }
    }
    return known;
}
#endif

#if defined(__aarch64__)
#define PMULL __attribute__((target("aes")))

PMULL static inline uint64x2_t pmull(uint64_t a, uint64_t b)
{
    return vreinterpretq_u64_p128(vmull_p64((poly64_t)a, (poly64_t)b));
}

PMULL static inline void mul_arm(uint64x2_t a, uint64x2_t b, uint64x2_t *lo, uint64x2_t *mid,
                                 uint64x2_t *hi)
{
    uint64_t a0 = vgetq_lane_u64(a, 0), a1 = vgetq_lane_u64(a, 1);
    uint64_t b0 = vgetq_lane_u64(b, 0), b1 = vgetq_lane_u64(b, 1);
    *lo = veorq_u64(*lo, pmull(a0, b0));
    *hi = veorq_u64(*hi, pmull(a1, b1));
    *mid = veorq_u64(*mid, veorq_u64(pmull(a0, b1), pmull(a1, b0)));
}

PMULL static inline uint64x2_t reduce_arm(uint64x2_t lo, uint64x2_t mid, uint64x2_t hi)
{
    const uint64x2_t zero = vdupq_n_u64(0);
    lo = veorq_u64(lo, vextq_u64(zero, mid, 1)); /* {0, mid.lo} */
    hi = veorq_u64(hi, vextq_u64(mid, zero, 1)); /* {mid.hi, 0} */
    uint64x2_t t = pmull(vgetq_lane_u64(hi, 1), 0x87); /* p3 * 0x87, added at bit 64 */
    lo = veorq_u64(lo, vextq_u64(zero, t, 1));
    hi = veorq_u64(hi, vextq_u64(t, zero, 1));
    return veorq_u64(lo, pmull(vgetq_lane_u64(hi, 0), 0x87)); /* p2 * 0x87 at bit 0 */
}

PMULL static void hash_arm(uint64_t y[2], const uint64_t h[32][2], const uint8_t *p,
                           size_t blocks)
{
    uint64x2_t acc = vld1q_u64(y), hp[4];
    for (int i = 0; i < 4; i++)
        hp[i] = vld1q_u64(h[i]);
    for (; blocks >= 4; blocks -= 4, p += 64) {
        uint64x2_t lo = vdupq_n_u64(0), mid = lo, hi = lo;
        mul_arm(veorq_u64(acc, vreinterpretq_u64_u8(vld1q_u8(p))), hp[3], &lo, &mid, &hi);
        mul_arm(vreinterpretq_u64_u8(vld1q_u8(p + 16)), hp[2], &lo, &mid, &hi);
        mul_arm(vreinterpretq_u64_u8(vld1q_u8(p + 32)), hp[1], &lo, &mid, &hi);
        mul_arm(vreinterpretq_u64_u8(vld1q_u8(p + 48)), hp[0], &lo, &mid, &hi);
        acc = reduce_arm(lo, mid, hi);
    }
    for (; blocks > 0; blocks--, p += 16) {
        uint64x2_t lo = vdupq_n_u64(0), mid = lo, hi = lo;
        mul_arm(veorq_u64(acc, vreinterpretq_u64_u8(vld1q_u8(p))), hp[0], &lo, &mid, &hi);
        acc = reduce_arm(lo, mid, hi);
    }
    vst1q_u64(y, acc);
}

static int has_pmull(void)
{
    static int known = -1;
    if (known < 0)
        known = (getauxval(AT_HWCAP) & (1ul << 4)) != 0; /* HWCAP_PMULL */
    return known;
}
#endif

#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

/* Y = Horner steps of `blocks` 16-byte blocks at p. */
static void hash(uint64_t y[2], const struct frame_key *k, const uint8_t *p, size_t blocks)
{
#if defined(__x86_64__)
    int level = narrowest ? narrowest - 1 : 2, cpu = clmul_level(); /* as clmul_level counts */
    if (cpu < level)
        level = cpu;
    if (level >= 1) {
        if (level == 2 && blocks >= 64) {
            size_t done = hash_wide(y, k->h, p, blocks);
            p += 16 * done, blocks -= done;
        }
        hash_x86(y, k->h, p, blocks);
        return;
    }
#elif defined(__aarch64__)
    if (narrowest != 1 && has_pmull()) {
        hash_arm(y, k->h, p, blocks);
        return;
    }
#endif
    hash_portable(y, k->h[0], p, blocks);
}

/* The message as one stream of blocks, whatever the parts' lengths. */
static void absorb(struct frame_mac_state *a, const uint8_t *p, uint64_t n)
{
    if (n == 0)
        return;
    if (a->used) {
        size_t take = 16 - a->used < n ? 16 - (size_t)a->used : (size_t)n;
        memcpy(a->block + a->used, p, take);
        a->used += take, p += take, n -= take;
        if (a->used < 16)
            return;
        hash(a->y, a->k, a->block, 1);
        a->used = 0;
    }
    hash(a->y, a->k, p, (size_t)(n / 16));
    a->used = n % 16;
    memcpy(a->block, p + (n - a->used), (size_t)a->used);
}

static const char pad_label[] = "alpha-frame-pad";

void frame_mac_begin(struct frame_mac_state *s, const struct frame_key *k,
                     const uint8_t header[64])
{
    *s = (struct frame_mac_state){.k = k};
    absorb(s, header, 64);
}

void frame_mac_absorb(struct frame_mac_state *s, const void *part, uint64_t bytes)
{
    absorb(s, part, bytes);
    s->bytes += bytes;
}

void frame_mac_end(struct frame_mac_state *s, uint64_t seq, uint8_t out[FRAME_MAC_BYTES])
{
    if (s->used) {
        memset(s->block + s->used, 0, 16 - (size_t)s->used);
        hash(s->y, s->k, s->block, 1);
    }
    put64(s->block, 64);
    put64(s->block + 8, s->bytes);
    hash(s->y, s->k, s->block, 1);
    struct hmac h = s->k->pad;
    uint8_t pad[HMAC_BYTES];
    put64(s->block, seq);
    hmac_update(&h, pad_label, sizeof pad_label - 1);
    hmac_update(&h, s->block, 8);
    hmac_final(&h, pad);
    for (int i = 0; i < 16; i++)
        out[i] = (uint8_t)(pad[i] ^ (uint8_t)(s->y[i / 8] >> (8 * (i % 8))));
    hmac_wipe(pad, sizeof pad);
    hmac_wipe(s, sizeof *s);
}

void frame_mac(const struct frame_key *k, uint64_t seq, const uint8_t header[64],
               const void *payload, uint64_t bytes, const void *tail, uint64_t tail_bytes,
               uint8_t out[FRAME_MAC_BYTES])
{
    struct frame_mac_state s;
    frame_mac_begin(&s, k, header);
    frame_mac_absorb(&s, payload, bytes);
    frame_mac_absorb(&s, tail, tail_bytes);
    frame_mac_end(&s, seq, out);
}

static const char hash_label[] = "alpha-3 frame hash key";
static const char key_label[] = "alpha-3 frame pad key";

void frame_key_init(struct frame_key *k, const uint8_t direction_key[32])
{
    uint8_t sub[HMAC_BYTES];
    hmac_sha256(direction_key, 32, hash_label, sizeof hash_label - 1, sub);
    uint64_t h[2] = {get64(sub), get64(sub + 8)}, zero[2] = {0, 0};
    memcpy(k->h[0], h, sizeof h);
    for (int i = 1; i < 32; i++) {
        memcpy(k->h[i], k->h[i - 1], sizeof h);
        mul_portable(k->h[i], zero, h);
    }
    hmac_sha256(direction_key, 32, key_label, sizeof key_label - 1, sub);
    hmac_init(&k->pad, sub, sizeof sub);
    hmac_wipe(sub, sizeof sub);
    hmac_wipe(h, sizeof h);
}

#pragma clang attribute pop
