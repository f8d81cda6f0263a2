/* The MAC every frame after the handshake carries (frame version 3): a Carter-Wegman MAC. The
 * frame is hashed by a polynomial over GF(2^128) evaluated at a secret point H (the same family
 * as GCM's GHASH, without GCM's bit reflection), and the hash is hidden by a one-time pad that
 * HMAC-SHA256 derives from the frame's sequence number on its link:
 *
 *   tag = GHASH_H(header || pad16(payload || tail) || [64, stream bytes])
 *         XOR HMAC-SHA256(K_pad, "alpha-frame-pad" || seq)[0..16)
 *
 * H and K_pad come from the link's key for that direction (frame_link_keys) by HMAC-SHA256
 * with two labels. The field is GF(2)[x]/(x^128 + x^7 + x^2 + x + 1); bit i of a 16-byte
 * little-endian block is the coefficient of x^i. Products use PCLMULQDQ on x86-64 (AVX-512's
 * VPCLMULQDQ, four blocks a register, where present) and PMULL on AArch64 (checked at first
 * use) or a constant-time portable multiply: the same tags on all. */
#ifndef ALPHA_FRAME_MAC_H
#define ALPHA_FRAME_MAC_H

#include <stdint.h>

#include "hmac.h"

#define FRAME_MAC_BYTES 16u

struct frame_key {
    uint64_t h[32][2]; /* H^1..H^32 as (low, high) words: 4 (or 32) blocks per reduction */
    struct hmac pad;  /* HMAC-SHA256 keyed by K_pad, for the per-frame pads */
};

/* The MAC key of one direction of a link, from its 32-byte direction key. */
void frame_key_init(struct frame_key *k, const uint8_t direction_key[32]);

/* The tag of a frame sent as the seq-th on its link: the 64 header bytes, then the payload in
 * two parts (either may be empty, and then NULL). */
void frame_mac(const struct frame_key *k, uint64_t seq, const uint8_t header[64],
               const void *payload, uint64_t bytes, const void *tail, uint64_t tail_bytes,
               uint8_t out[FRAME_MAC_BYTES]);

/* The same tag made piece by piece, so that a frame's bytes can be hashed as they are copied
 * (while they are still in the cache): begin with the header, absorb the payload and tail in
 * any number of parts, end with the frame's sequence number. */
struct frame_mac_state {
    const struct frame_key *k;
    uint64_t y[2];
    uint8_t block[16];
    uint64_t used, bytes; /* bytes waiting in block; payload and tail bytes absorbed */
};

void frame_mac_begin(struct frame_mac_state *s, const struct frame_key *k,
                     const uint8_t header[64]);
void frame_mac_absorb(struct frame_mac_state *s, const void *part, uint64_t bytes);
void frame_mac_end(struct frame_mac_state *s, uint64_t seq, uint8_t out[FRAME_MAC_BYTES]);

/* 1: the portable multiply even where the CPU has a carry-less one; 2: the 128-bit carry-less
 * multiply even where the CPU has the 512-bit one; 0: the fastest the CPU has (the tests
 * compare the paths; a role never calls it). */
void frame_mac_portable(int on);

#endif
