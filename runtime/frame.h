/* Frames: what travels between roles. Every frame is a fixed 64-byte little-endian header
 * followed by `payload_bytes` bytes of payload (layout in docs/runtime.md):
 *
 *   off size field           off size field
 *    0   4   magic "ALPH"     28   4   reserved (0)
 *    4   2   version          32   8   element start
 *    6   2   kind             40   8   element count
 *    8   4   sender role      48   8   payload bytes (= count * 4)
 *   12   4   round            56   4   CRC-32C of the payload
 *   16   4   tensor id        60   4   CRC-32C of bytes 0..59
 *   20   4   node lo
 *   24   4   node hi
 *
 * Decoding is strict and total: any byte string gives either a header that matches what the
 * schedule expects, or a refusal name. Nothing here refuses or allocates, so the fuzz harness
 * (tests/test_net_frames.py) loads this file alone. */
#ifndef ALPHA_FRAME_H
#define ALPHA_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC 0x48504c41u /* the bytes "ALPH" */
#define FRAME_VERSION 1u
#define FRAME_HEADER_BYTES 64u
#define FRAME_ANY 0xffffffffu   /* an expected sender that may be any role */

/* HELLO opens a link; PIECE carries elements of a tensor; ACK acknowledges a checkpoint
 * capture: its payload is the SHA-256 of the sender's sub-manifest (FRAME_ACK_COUNT elements). */
enum frame_kind { FRAME_HELLO = 1, FRAME_PIECE = 2, FRAME_ACK = 3 };

/* A HELLO's payload: the plan identity (32 bytes), then receiver, epoch, n_roles and a reserved
 * zero as u32; 12 elements of 4 bytes. Its sender is the header's sender. */
#define FRAME_HELLO_COUNT 12u
#define FRAME_HELLO_BYTES (FRAME_HEADER_BYTES + 4u * FRAME_HELLO_COUNT)
/* A PIECE's tensor. A gradient piece of node [lo, hi) carries elements [start, start + count - 1)
 * of the node's gradient and then its loss float (count includes it; a whole piece is start 0,
 * count n_params + 1). A parameter piece (lo = hi = 0) carries parameter elements
 * [start, start + count). */
#define FRAME_TENSOR_GRADIENT 0u
#define FRAME_TENSOR_PARAMS 1u
#define FRAME_ACK_COUNT 8u

struct frame_header {
    uint32_t magic;
    uint16_t version;
    uint16_t kind;
    uint32_t sender;
    uint32_t round;
    uint32_t tensor;
    uint32_t lo, hi;
    uint32_t reserved;
    uint64_t start;
    uint64_t count;
    uint64_t payload_bytes;
    uint32_t payload_crc;
    uint32_t header_crc;
};

/* What the receiver's schedule expects next. `count` is both the exact element count and the
 * largest one accepted (n_params + 1 for a piece, FRAME_HELLO_COUNT for a HELLO). */
struct frame_expect {
    uint32_t kind;
    uint32_t sender; /* or FRAME_ANY */
    uint32_t round;
    uint32_t tensor;
    uint32_t lo, hi;
    uint64_t count;
};

struct hello {
    uint8_t plan_identity[32];
    uint32_t sender;
    uint32_t receiver;
    uint32_t epoch;
    uint32_t n_roles;
};

/* Sets magic, version and header_crc, then writes the 64 header bytes. */
void frame_encode_header(struct frame_header *h, uint8_t out[FRAME_HEADER_BYTES]);

/* Decodes and checks the first 64 of n bytes against expect. Returns NULL, or the refusal name
 * (frame-corrupt, frame-version-mismatch, frame-oversize, frame-unexpected); frame_reason()
 * then says which check failed. */
const char *frame_decode_header(const uint8_t *bytes, size_t n, struct frame_header *out,
                                const struct frame_expect *expect);

/* The same, for a frame whose elements must start at `start` (frame_decode_header: 0). */
const char *frame_decode_header_at(const uint8_t *bytes, size_t n, struct frame_header *out,
                                   const struct frame_expect *expect, uint64_t start);

/* Checks that payload (n bytes) is the one h announces: its length and CRC (frame-corrupt). */
const char *frame_check_payload(const struct frame_header *h, const uint8_t *payload, size_t n);

/* A whole frame in one buffer: the header checks, then exactly payload_bytes more bytes. */
const char *frame_decode(const uint8_t *bytes, size_t n, struct frame_header *out,
                         const struct frame_expect *expect);

/* The reason for the last refusal returned above, for messages. */
const char *frame_reason(void);

/* A complete HELLO frame (FRAME_HELLO_BYTES). */
void frame_encode_hello(const struct hello *h, uint8_t out[FRAME_HELLO_BYTES]);
/* The fields of a HELLO whose header decoded with FRAME_HELLO expected and whose payload was
 * checked; frame-corrupt when the reserved word is not 0. */
const char *frame_decode_hello(const struct frame_header *h, const uint8_t *payload,
                               struct hello *out);

#endif
