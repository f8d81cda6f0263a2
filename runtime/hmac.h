/* HMAC-SHA256 (RFC 2104 over FIPS 180-4 SHA-256): the handshake's proofs, the per-link keys
 * derived from it, and the frame MAC's subkeys and per-frame pads (handshake.c, frame.c,
 * frame_mac.c). A keyed state is prepared once per key (hmac_init), then copied for each
 * message, so a frame's pad costs two SHA-256 blocks. */
#ifndef ALPHA_HMAC_H
#define ALPHA_HMAC_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define HMAC_BYTES 32u

struct hmac {
    struct sha256 inner, outer; /* the key's ipad and opad blocks already hashed */
};

/* Keys of any length; longer than 64 bytes are hashed first, as RFC 2104 says. */
void hmac_init(struct hmac *h, const uint8_t *key, size_t key_bytes);
void hmac_update(struct hmac *h, const void *data, size_t n);
/* The MAC of everything given since hmac_init (h is spent afterwards). */
void hmac_final(struct hmac *h, uint8_t mac[HMAC_BYTES]);
/* One message in one call. */
void hmac_sha256(const uint8_t *key, size_t key_bytes, const void *data, size_t n,
                 uint8_t mac[HMAC_BYTES]);
/* 1 when the n bytes are equal, 0 otherwise, in a time that depends on n only. */
int hmac_equal(const uint8_t *a, const uint8_t *b, size_t n);
/* Overwrites n bytes with zeros in a way the compiler keeps (secrets no longer needed). */
void hmac_wipe(void *p, size_t n);

#endif
