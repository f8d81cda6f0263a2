/* Frame encoding and strict decoding. Every multi-byte field is little-endian and read byte by
 * byte, so the code does not depend on the host's byte order or alignment. */
#include "frame.h"

#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "refusal.h"

/* Start-up code, or thin wrappers around the hashing in sha256.c: compiled for size (the
 * executable has a size budget; none of it is a loop that time is spent in). */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

static char reason[160];

const char *frame_reason(void) { return reason; }

static const char *fail(const char *name, const char *format, unsigned long long a,
                        unsigned long long b)
{
    snprintf(reason, sizeof reason, format, a, b);
    return name;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

void frame_encode_header(struct frame_header *h, uint8_t out[FRAME_HEADER_BYTES])
{
    h->magic = FRAME_MAGIC;
    h->version = FRAME_VERSION;
    put32(out, h->magic);
    out[4] = (uint8_t)h->version, out[5] = (uint8_t)(h->version >> 8);
    out[6] = (uint8_t)h->kind, out[7] = (uint8_t)(h->kind >> 8);
    put32(out + 8, h->sender);
    put32(out + 12, h->round);
    put32(out + 16, h->tensor);
    put32(out + 20, h->lo);
    put32(out + 24, h->hi);
    put32(out + 28, h->reserved);
    put64(out + 32, h->start);
    put64(out + 40, h->count);
    put64(out + 48, h->payload_bytes);
    put32(out + 56, h->payload_crc);
    h->header_crc = crc32c(out, 60);
    put32(out + 60, h->header_crc);
}

static void read_fields(const uint8_t *b, struct frame_header *h)
{
    h->magic = get32(b);
    h->version = (uint16_t)(b[4] | b[5] << 8);
    h->kind = (uint16_t)(b[6] | b[7] << 8);
    h->sender = get32(b + 8);
    h->round = get32(b + 12);
    h->tensor = get32(b + 16);
    h->lo = get32(b + 20);
    h->hi = get32(b + 24);
    h->reserved = get32(b + 28);
    h->start = get64(b + 32);
    h->count = get64(b + 40);
    h->payload_bytes = get64(b + 48);
    h->payload_crc = get32(b + 56);
    h->header_crc = get32(b + 60);
}

/* The fields the schedule fixes: which role sent it, for which round, node and elements. */
static const char *check_expected(const struct frame_header *h, const struct frame_expect *e,
                                  uint64_t start)
{
    if (e->sender != FRAME_ANY && h->sender != e->sender)
        return fail(REFUSAL_FRAME_UNEXPECTED, "sender role %llu where role %llu was expected",
                    h->sender, e->sender);
    if (h->round != e->round)
        return fail(REFUSAL_FRAME_UNEXPECTED, "round index %llu where %llu was expected",
                    h->round, e->round);
    if (h->tensor != e->tensor)
        return fail(REFUSAL_FRAME_UNEXPECTED, "tensor %llu where %llu was expected", h->tensor,
                    e->tensor);
    if (h->lo != e->lo || h->hi != e->hi) {
        snprintf(reason, sizeof reason, "node [%u, %u) where [%u, %u) was expected",
                 (unsigned)h->lo, (unsigned)h->hi, (unsigned)e->lo, (unsigned)e->hi);
        return REFUSAL_FRAME_UNEXPECTED;
    }
    if (h->start != start || h->count != e->count) {
        snprintf(reason, sizeof reason, "elements from %llu, %llu of them, where %llu from %llu "
                 "were expected", (unsigned long long)h->start, (unsigned long long)h->count,
                 (unsigned long long)e->count, (unsigned long long)start);
        return REFUSAL_FRAME_UNEXPECTED;
    }
    return NULL;
}

const char *frame_decode_header(const uint8_t *bytes, size_t n, struct frame_header *out,
                                const struct frame_expect *expect)
{
    return frame_decode_header_at(bytes, n, out, expect, 0);
}

const char *frame_decode_shape(const uint8_t *bytes, size_t n, struct frame_header *out,
                               uint64_t max_count)
{
    memset(out, 0, sizeof *out);
    if (n < FRAME_HEADER_BYTES)
        return fail(REFUSAL_FRAME_CORRUPT, "a header of %llu bytes, not %llu", n,
                    FRAME_HEADER_BYTES);
    read_fields(bytes, out);
    /* Magic and version come first and never move, so a later version is named as such. */
    if (out->magic != FRAME_MAGIC)
        return fail(REFUSAL_FRAME_CORRUPT, "bad magic %08llx (expected %08llx)", out->magic,
                    FRAME_MAGIC);
    if (out->version != FRAME_VERSION)
        return fail(REFUSAL_FRAME_VERSION_MISMATCH, "frame version %llu, this role speaks %llu",
                    out->version, FRAME_VERSION);
    if (crc32c(bytes, 60) != out->header_crc)
        return fail(REFUSAL_FRAME_CORRUPT, "header checksum %08llx, computed %08llx",
                    out->header_crc, crc32c(bytes, 60));
    if (out->reserved != 0)
        return fail(REFUSAL_FRAME_CORRUPT, "reserved word %llu is not 0", out->reserved, 0);
    if (out->count > max_count || out->payload_bytes > 4 * max_count)
        return fail(REFUSAL_FRAME_OVERSIZE, "%llu payload bytes, at most %llu allowed",
                    out->payload_bytes, 4 * max_count);
    if (out->payload_bytes != 4 * out->count)
        return fail(REFUSAL_FRAME_OVERSIZE, "%llu payload bytes for %llu elements of 4 bytes",
                    out->payload_bytes, out->count);
    return NULL;
}

const char *frame_check_fields(const struct frame_header *h, const struct frame_expect *e,
                               uint64_t start)
{
    if (h->kind != e->kind)
        return fail(REFUSAL_FRAME_UNEXPECTED, "a frame of kind %llu where kind %llu was expected",
                    h->kind, e->kind);
    return check_expected(h, e, start);
}

const char *frame_check_mac(const struct frame_key *key, uint64_t seq,
                            const uint8_t header[FRAME_HEADER_BYTES], const void *payload,
                            uint64_t bytes, const void *tail, uint64_t tail_bytes,
                            const uint8_t mac[FRAME_MAC_BYTES])
{
    uint8_t want[FRAME_MAC_BYTES];
    frame_mac(key, seq, header, payload, bytes, tail, tail_bytes, want);
    return frame_check_tag(seq, want, mac);
}

const char *frame_check_tag(uint64_t seq, const uint8_t want[FRAME_MAC_BYTES],
                            const uint8_t mac[FRAME_MAC_BYTES])
{
    if (!hmac_equal(want, mac, FRAME_MAC_BYTES))
        return fail(REFUSAL_FRAME_FORGED, "its MAC is not that of frame %llu on this link under "
                    "the link's key (forged, replayed, reordered or from another link)", seq, 0);
    return NULL;
}

const char *frame_open(const struct frame_key *key, uint64_t seq, const uint8_t *bytes,
                       size_t n, struct frame_header *out, const struct frame_expect *e,
                       uint64_t start)
{
    const char *refused = frame_decode_shape(bytes, n, out, e->count);
    if (refused)
        return refused;
    if (out->payload_bytes != 4 * e->count) /* not read: its size is not the one expected */
        return frame_check_fields(out, e, start);
    if (n != FRAME_HEADER_BYTES + out->payload_bytes + FRAME_MAC_BYTES)
        return fail(REFUSAL_FRAME_CORRUPT, "%llu bytes where a frame of %llu was announced", n,
                    FRAME_HEADER_BYTES + out->payload_bytes + FRAME_MAC_BYTES);
    const uint8_t *payload = bytes + FRAME_HEADER_BYTES;
    refused = frame_check_mac(key, seq, bytes, payload, out->payload_bytes, NULL, 0,
                              payload + out->payload_bytes);
    return refused ? refused : frame_check_fields(out, e, start);
}

const char *frame_decode_header_at(const uint8_t *bytes, size_t n, struct frame_header *out,
                                   const struct frame_expect *expect, uint64_t start)
{
    const char *refused = frame_decode_shape(bytes, n, out, expect->count);
    return refused ? refused : frame_check_fields(out, expect, start);
}

const char *frame_check_payload(const struct frame_header *h, const uint8_t *payload, size_t n)
{
    if (n != h->payload_bytes)
        return fail(REFUSAL_FRAME_CORRUPT, "%llu payload bytes where %llu were announced", n,
                    h->payload_bytes);
    uint32_t crc = crc32c(payload, n);
    if (crc != h->payload_crc)
        return fail(REFUSAL_FRAME_CORRUPT, "payload checksum %08llx, computed %08llx",
                    h->payload_crc, crc);
    return NULL;
}

const char *frame_decode(const uint8_t *bytes, size_t n, struct frame_header *out,
                         const struct frame_expect *expect)
{
    const char *refused = frame_decode_header(bytes, n, out, expect);
    if (refused)
        return refused;
    return frame_check_payload(out, bytes + FRAME_HEADER_BYTES, n - FRAME_HEADER_BYTES);
}

void frame_encode_hello(const struct hello *h, uint8_t out[FRAME_HELLO_BYTES])
{
    uint8_t *payload = out + FRAME_HEADER_BYTES;
    memcpy(payload, h->plan_identity, 32);
    put32(payload + 32, h->receiver);
    put32(payload + 36, h->epoch);
    put32(payload + 40, h->n_roles);
    put32(payload + 44, 0);
    memcpy(payload + 48, h->nonce, 32);
    memcpy(payload + 80, h->proof, 32);
    struct frame_header header = {
        .kind = FRAME_HELLO,
        .sender = h->sender,
        .count = FRAME_HELLO_COUNT,
        .payload_bytes = 4 * FRAME_HELLO_COUNT,
        .payload_crc = crc32c(payload, 4 * FRAME_HELLO_COUNT),
    };
    frame_encode_header(&header, out);
}

const char *frame_decode_hello(const struct frame_header *h, const uint8_t *payload,
                               struct hello *out)
{
    memcpy(out->plan_identity, payload, 32);
    out->sender = h->sender;
    out->receiver = get32(payload + 32);
    out->epoch = get32(payload + 36);
    out->n_roles = get32(payload + 40);
    memcpy(out->nonce, payload + 48, 32);
    memcpy(out->proof, payload + 80, 32);
    if (get32(payload + 44) != 0)
        return fail(REFUSAL_FRAME_CORRUPT, "HELLO reserved word %llu is not 0",
                    get32(payload + 44), 0);
    return NULL;
}

/* The fields a proof or key covers, in a fixed little-endian order. */
static size_t transcript(uint8_t *out, const char *label, const uint8_t dialer_nonce[32],
                         const uint8_t acceptor_nonce[32], const struct hello *h)
{
    size_t n = strlen(label) + 1; /* the NUL too: no label is a prefix of another's input */
    memcpy(out, label, n);
    memcpy(out + n, dialer_nonce, 32);
    memcpy(out + n + 32, acceptor_nonce, 32);
    memcpy(out + n + 64, h->plan_identity, 32);
    put32(out + n + 96, h->sender);
    put32(out + n + 100, h->receiver);
    put32(out + n + 104, h->epoch);
    put32(out + n + 108, h->n_roles);
    return n + 112;
}

void frame_proof(const uint8_t secret[32], int from_dialer, const struct hello *own,
                 const uint8_t dialer_nonce[32], const uint8_t acceptor_nonce[32],
                 uint8_t out[32])
{
    uint8_t input[160];
    size_t n = transcript(input, from_dialer ? "alpha-2 dialer proof" : "alpha-2 acceptor proof",
                          dialer_nonce, acceptor_nonce, own);
    hmac_sha256(secret, 32, input, n, out);
}

void frame_link_keys(const uint8_t secret[32], const struct hello *dialer,
                     const uint8_t acceptor_nonce[32], uint8_t to_acceptor[32],
                     uint8_t to_dialer[32])
{
    uint8_t input[160];
    size_t n = transcript(input, "alpha-2 key dialer to acceptor", dialer->nonce, acceptor_nonce,
                          dialer);
    hmac_sha256(secret, 32, input, n, to_acceptor);
    n = transcript(input, "alpha-2 key acceptor to dialer", dialer->nonce, acceptor_nonce,
                   dialer);
    hmac_sha256(secret, 32, input, n, to_dialer);
    hmac_wipe(input, sizeof input);
}

void frame_encode_auth(uint32_t sender, const uint8_t proof[32], uint8_t out[FRAME_AUTH_BYTES])
{
    memcpy(out + FRAME_HEADER_BYTES, proof, 32);
    struct frame_header header = {
        .kind = FRAME_AUTH,
        .sender = sender,
        .count = FRAME_AUTH_COUNT,
        .payload_bytes = 4 * FRAME_AUTH_COUNT,
        .payload_crc = crc32c(out + FRAME_HEADER_BYTES, 4 * FRAME_AUTH_COUNT),
    };
    frame_encode_header(&header, out);
}

#pragma clang attribute pop
