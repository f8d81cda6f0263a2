/* Frame encoding and strict decoding. Every multi-byte field is little-endian and read byte by
 * byte, so the code does not depend on the host's byte order or alignment. */
#include "frame.h"

#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "refusal.h"

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

const char *frame_decode_header_at(const uint8_t *bytes, size_t n, struct frame_header *out,
                                   const struct frame_expect *expect, uint64_t start)
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
    if (out->kind != expect->kind)
        return fail(REFUSAL_FRAME_UNEXPECTED, "a frame of kind %llu where kind %llu was expected",
                    out->kind, expect->kind);
    if (out->count > expect->count || out->payload_bytes > 4 * expect->count)
        return fail(REFUSAL_FRAME_OVERSIZE, "%llu payload bytes, at most %llu allowed",
                    out->payload_bytes, 4 * expect->count);
    if (out->payload_bytes != 4 * out->count)
        return fail(REFUSAL_FRAME_OVERSIZE, "%llu payload bytes for %llu elements of 4 bytes",
                    out->payload_bytes, out->count);
    return check_expected(out, expect, start);
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
    if (get32(payload + 44) != 0)
        return fail(REFUSAL_FRAME_CORRUPT, "HELLO reserved word %llu is not 0",
                    get32(payload + 44), 0);
    return NULL;
}
