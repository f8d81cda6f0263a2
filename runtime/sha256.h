/* Compact SHA-256 (FIPS 180-4): data digests and the parameter file's digest. */
#ifndef ALPHA_SHA256_H
#define ALPHA_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
    uint32_t h[8];
    uint64_t length;       /* bytes hashed so far */
    uint8_t block[64];
    size_t used;           /* bytes waiting in block */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, uint8_t digest[32]);
/* Lowercase hex with a terminating NUL. */
void sha256_hex(const uint8_t digest[32], char hex[65]);
/* The SHA-256 of n bytes, in hex. */
void sha256_text(const void *data, size_t n, char hex[65]);

#endif
