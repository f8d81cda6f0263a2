/* HMAC-SHA256 (hmac.h), written from RFC 2104: MAC = H((K ^ opad) || H((K ^ ipad) || m)). */
#include "hmac.h"

#include <string.h>

/* Start-up code, or thin wrappers around the hashing in sha256.c: compiled for size (the
 * executable has a size budget; none of it is a loop that time is spent in). */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

void hmac_init(struct hmac *h, const uint8_t *key, size_t key_bytes)
{
    uint8_t block[64] = {0}, pad[64];
    if (key_bytes > sizeof block) {
        struct sha256 s;
        sha256_init(&s);
        sha256_update(&s, key, key_bytes);
        sha256_final(&s, block);
    } else if (key_bytes > 0) {
        memcpy(block, key, key_bytes);
    }
    for (int i = 0; i < 64; i++)
        pad[i] = block[i] ^ 0x36;
    sha256_init(&h->inner);
    sha256_update(&h->inner, pad, sizeof pad);
    for (int i = 0; i < 64; i++)
        pad[i] = block[i] ^ 0x5c;
    sha256_init(&h->outer);
    sha256_update(&h->outer, pad, sizeof pad);
    hmac_wipe(block, sizeof block);
    hmac_wipe(pad, sizeof pad);
}

void hmac_update(struct hmac *h, const void *data, size_t n) { sha256_update(&h->inner, data, n); }

void hmac_final(struct hmac *h, uint8_t mac[HMAC_BYTES])
{
    uint8_t inner[32];
    sha256_final(&h->inner, inner);
    sha256_update(&h->outer, inner, sizeof inner);
    sha256_final(&h->outer, mac);
}

void hmac_sha256(const uint8_t *key, size_t key_bytes, const void *data, size_t n,
                 uint8_t mac[HMAC_BYTES])
{
    struct hmac h;
    hmac_init(&h, key, key_bytes);
    hmac_update(&h, data, n);
    hmac_final(&h, mac);
    hmac_wipe(&h, sizeof h);
}

int hmac_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint8_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ |= (uint8_t)(a[i] ^ b[i]);
    return differ == 0;
}

void hmac_wipe(void *p, size_t n)
{
    volatile uint8_t *v = p;
    while (n--)
        *v++ = 0;
}

#pragma clang attribute pop
