/* Shared pages for the large frames of a local link (shared_pages.c).
 *
 * On a link over a Unix socket (both roles on one machine), each side makes a memory file for
 * the large frames it sends on that link and passes it to the peer over the socket (SCM_RIGHTS)
 * right after the handshake; the peer maps it read-only. A large frame (a piece or parameters
 * of at least SHARED_MIN_BYTES) then crosses as its header and MAC on the socket, its payload
 * and tail copied by the sender into its slot in the pages and by the receiver out of it, each
 * copy hashed into the MAC as it goes, so the bytes are hashed from the cache and the kernel
 * copies no payload. Everything else, and every link over TCP, crosses the socket as before.
 *
 * The pages: a control block, then two rounds of slots, one per large frame a round sends on
 * the link, in the order of the role's ops (both sides derive the same layout from their
 * schedules: the sender's sends are the receiver's receives). Round t of the link uses the
 * slots of parity t % 2; before it writes a slot the sender waits until the peer has finished
 * round t - 2 on the link, which the peer publishes in its own control block at the end of
 * every round. A frame refused, a peer gone or a wait past io_timeout_ms is refused by name as
 * on the socket. */
#ifndef ALPHA_SHARED_PAGES_H
#define ALPHA_SHARED_PAGES_H

#include <stdint.h>

#include "net.h"

#define SHARED_MIN_BYTES (64u * 1024u)

/* After every link is open: the pages of each local link that has large frames (made, sent,
 * received and mapped; refused by name when the peer's are not the size its schedule needs). */
void shared_open(struct net *n, uint64_t deadline);
/* Whether a frame of `bytes` (payload and tail) on `link` crosses in the pages: a piece or
 * parameters (the frames the layout counts) of at least SHARED_MIN_BYTES, on a link that has
 * them. */
int shared_carries(const struct net *n, uint32_t link, uint64_t bytes);
/* The next send slot of the round on `link`, for `bytes`, once the peer has freed it. */
uint8_t *shared_send_slot(struct net *n, uint32_t link, uint64_t bytes);
/* The next receive slot of the round on `link`, for `bytes`. */
const uint8_t *shared_recv_slot(struct net *n, uint32_t link, uint64_t bytes);
/* The round has run whole: every link's slots of it are free for the peer to write again. */
void shared_round_done(struct net *n);

#endif
