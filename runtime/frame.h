/* Frames: what travels between roles. Every frame is a fixed 64-byte little-endian header
 * followed by `payload_bytes` bytes of payload (layout in docs/runtime.md):
 *
 *   off size field           off size field
 *    0   4   magic "ALPH"     28   4   reserved (0)
 *    4   2   version          32   8   element start
 *    6   2   kind             40   8   element count
 *    8   4   sender role      48   8   payload bytes (= count * 4)
 *   12   4   round            56   4   CRC-32C of the payload (0 if MACed)
 *   16   4   tensor id        60   4   CRC-32C of bytes 0..59
 *   20   4   node lo
 *   24   4   node hi
 *
 * Version 3 authenticates: a link opens with a mutual challenge-response (HELLO from the
 * dialer, HELLO from the acceptor with its proof, AUTH from the dialer with its proof; each proof
 * an HMAC-SHA256 keyed by the launch secret over both nonces, the plan identity, both roles and
 * the epoch), and every PIECE and ACK after it is followed by a 16-byte MAC (frame_mac.h): a
 * Carter-Wegman MAC keyed from the link's key for that direction over the header and the
 * payload, its one-time pad drawn from the frame's sequence number on that link (implicit: 0,
 * 1, 2, ... per direction), so a replayed, reordered, forged or spliced frame fails its MAC.
 * The MAC covers the payload, so an authenticated frame's payload CRC is not computed (0) nor
 * checked; the header CRC stays, so that damage to the header is named frame-corrupt by the
 * shape checks that come before the MAC.
 *
 * Decoding is strict and total: any byte string gives either a header that matches what the
 * schedule expects, or a refusal name. Nothing here refuses or allocates, so the fuzz harness
 * (tests/test_net_frames.py) loads this file alone (with crc32c.c, frame_mac.c, hmac.c and
 * sha256.c). */
#ifndef ALPHA_FRAME_H
#define ALPHA_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "frame_mac.h"
#include "hmac.h"

#define FRAME_MAGIC 0x48504c41u /* the bytes "ALPH" */
#define FRAME_VERSION 3u
#define FRAME_HEADER_BYTES 64u
#define FRAME_ANY 0xffffffffu   /* an expected sender that may be any role */

/* HELLO opens a link; PIECE carries elements of a tensor; ACK acknowledges a checkpoint
 * capture: its payload is the SHA-256 of the sender's sub-manifest (FRAME_ACK_COUNT elements);
 * AUTH carries the dialer's proof (FRAME_AUTH_COUNT elements). */
enum frame_kind { FRAME_HELLO = 1, FRAME_PIECE = 2, FRAME_ACK = 3, FRAME_AUTH = 4 };

/* A HELLO's payload: the plan identity (32 bytes), then receiver, epoch, n_roles and a reserved
 * zero as u32, then the sender's nonce (32 random bytes) and its proof (32 bytes: zeros from
 * the dialer, which proves itself in AUTH); 28 elements of 4 bytes. Its sender is the header's
 * sender. */
#define FRAME_HELLO_COUNT 28u
#define FRAME_HELLO_BYTES (FRAME_HEADER_BYTES + 4u * FRAME_HELLO_COUNT)
#define FRAME_AUTH_COUNT 8u
#define FRAME_AUTH_BYTES (FRAME_HEADER_BYTES + 4u * FRAME_AUTH_COUNT)
/* A PIECE's tensor. A gradient piece of node [lo, hi) carries elements [start, start + count - 1)
 * of the node's gradient and then its loss float (count includes it; a whole piece is start 0,
 * count n_params + 1). A parameter piece (lo = hi = 0) carries parameter elements
 * [start, start + count). */
#define FRAME_TENSOR_GRADIENT 0u
#define FRAME_TENSOR_PARAMS 1u
/* Clipping: the values of the canonical element-tree nodes covering the elements from `start`
 * (lo = hi = 0; count: the number of nodes), each a sum of squares of the mean gradient. */
#define FRAME_TENSOR_NORM 2u
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
    uint8_t nonce[32];
    uint8_t proof[32];
};

/* Sets magic, version and header_crc, then writes the 64 header bytes. */
void frame_encode_header(struct frame_header *h, uint8_t out[FRAME_HEADER_BYTES]);

/* Decodes and checks the first 64 of n bytes against expect: frame_decode_shape (at most
 * expect->count elements), then frame_check_fields. Returns NULL, or the refusal name
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

/* ---- authentication ---- */

/* The proof a side gives of knowing the secret: HMAC-SHA256(secret, label || dialer nonce ||
 * acceptor nonce || the sender's own HELLO fields (plan identity, sender, receiver, epoch,
 * n_roles)). The label differs for the dialer and the acceptor, so neither's proof can be
 * reflected as the other's. */
void frame_proof(const uint8_t secret[32], int from_dialer, const struct hello *own,
                 const uint8_t dialer_nonce[32], const uint8_t acceptor_nonce[32],
                 uint8_t out[32]);
/* The two keys of a link, one per direction, derived from the secret and the handshake
 * (HMAC-SHA256 of a label per direction, both nonces, the plan identity, both roles and the
 * epoch, as in HKDF's expand step): a fresh pair for every link of every launch. */
void frame_link_keys(const uint8_t secret[32], const struct hello *dialer,
                     const uint8_t acceptor_nonce[32], uint8_t to_acceptor[32],
                     uint8_t to_dialer[32]);
/* A complete AUTH frame carrying proof. */
void frame_encode_auth(uint32_t sender, const uint8_t proof[32], uint8_t out[FRAME_AUTH_BYTES]);

/* The checks that need no expectations: magic, version, header checksum, reserved word, at most
 * max_count elements of 4 bytes (frame-corrupt, frame-version-mismatch, frame-oversize). */
const char *frame_decode_shape(const uint8_t *bytes, size_t n, struct frame_header *out,
                               uint64_t max_count);
/* The checks of what the schedule fixes (kind, sender, round, tensor, node, elements from
 * start): frame-unexpected. */
const char *frame_check_fields(const struct frame_header *h, const struct frame_expect *e,
                               uint64_t start);
/* frame-forged unless mac is the MAC of the frame as frame_mac computes it. */
const char *frame_check_mac(const struct frame_key *key, uint64_t seq,
                            const uint8_t header[FRAME_HEADER_BYTES], const void *payload,
                            uint64_t bytes, const void *tail, uint64_t tail_bytes,
                            const uint8_t mac[FRAME_MAC_BYTES]);
/* frame-forged unless mac is `want`, the tag frame_mac_end made of the seq-th frame as it came
 * (compared in constant time). */
const char *frame_check_tag(uint64_t seq, const uint8_t want[FRAME_MAC_BYTES],
                            const uint8_t mac[FRAME_MAC_BYTES]);
/* A whole authenticated frame in one buffer (header, payload, MAC), received as the seq-th on
 * its link, in the order net.c checks: shape, length, MAC, fields. */
const char *frame_open(const struct frame_key *key, uint64_t seq, const uint8_t *bytes,
                       size_t n, struct frame_header *out, const struct frame_expect *e,
                       uint64_t start);

#endif
