/* Links between roles: TCP connections opened at start-up (handshake.c) and the frames sent and
 * received on them every round (net.c). Every wait has a deadline and ends in a named refusal:
 * peer-unreachable, peer-timeout, peer-lost, or one of the frame and identity refusals. Every
 * frame after the handshake carries a MAC under its link's key for that direction (frame.h). */
#ifndef ALPHA_NET_H
#define ALPHA_NET_H

#include <poll.h>
#include <stdint.h>

#include "alpha_program.h"
#include "frame_mac.h"

/* One queued outgoing frame: its header, then the payload it points to (a piece the schedule
 * keeps until the round ends), then a tail (a piece's loss float, when not contiguous). */
struct net_send {
    uint8_t header[64];
    const uint8_t *payload, *tail;
    uint64_t bytes;         /* payload bytes */
    uint32_t tail_bytes;
    uint64_t done;          /* bytes sent, header and MAC included */
    uint8_t mac[FRAME_MAC_BYTES]; /* sent after the tail */
};

struct net_link {
    const struct alpha_link *link;
    int fd;
    char address[64];       /* the peer's address and port, for messages */
    struct net_send *queue; /* a ring of `cap` sends, `count` of them from `head` */
    uint32_t cap, head, count;
    struct frame_key send_key, recv_key; /* MAC keys of the link's two directions (handshake.c) */
    uint64_t send_seq, recv_seq;    /* frames sent and received on the link since it opened */
    /* Shared pages (shared_pages.h), on a local link with large frames; NULL otherwise. */
    uint8_t *pages_out;             /* ours: a control block, then two rounds of slots */
    const uint8_t *pages_in;        /* the peer's, mapped read-only */
    uint64_t *out_at, *out_bytes, *in_at, *in_bytes; /* each large frame's slot, in op order */
    uint32_t n_out, n_in, next_out, next_in; /* large frames a round, and this round's so far */
    uint64_t out_round, in_round;   /* bytes of one round's slots */
    uint64_t rounds;                /* rounds run on the link since it opened */
};

struct net {
    const struct alpha_program *p;
    const struct alpha_role *r;
    struct net_link *links;
    uint32_t n_links;
    struct pollfd *fds;     /* n_links of them, for waits */
    uint32_t *which;
    uint32_t round;         /* the 0-based round of the frames sent and expected */
    uint64_t frames, bytes; /* frames queued and received since start, and their bytes */
    char reason[160];       /* why the last frame was refused */
};

/* Prepares n for the role's links (checking them: program-invalid); opens nothing. */
void net_init(struct net *n, const struct alpha_program *p, const struct alpha_role *r);
/* Opens every link of the role and runs the authenticated handshake on each (handshake.c),
 * keyed by the launch secret (secret.h; unused when the role has no links). */
void net_open(struct net *n, const struct alpha_program *p, const struct alpha_role *r,
              const uint8_t secret[32]);
/* The `links` event of a role whose links are all open (events: docs/runtime.md). */
void net_report_links(const struct net *n);
/* net_open, reached through the role part: a role with links defines this as a call to it
 * (ALPHA_OPEN_LINKS, program_c.py), a role without leaves it undefined (null), so that its
 * executable links no resolver, sockets or handshake at all (the linker drops what nothing
 * reaches). */
void alpha_open_links(struct net *n, const struct alpha_program *p, const struct alpha_role *r,
                      const uint8_t secret[32]) __attribute__((weak));
#define ALPHA_OPEN_LINKS                                                                        \
    void alpha_open_links(struct net *n, const struct alpha_program *p,                         \
                          const struct alpha_role *r, const uint8_t secret[32])                 \
    {                                                                                           \
        net_open(n, p, r, secret);                                                              \
    }

/* Queues elements [start, start + count) of piece [lo, hi) (count 0: all n_params) and its loss
 * float on a link, and sends what the socket takes now; the piece stays unchanged until
 * net_flush. The rest goes while the role waits in a receive or in net_flush, so two roles
 * sending to each other never wait on each other. */
void net_send_piece(struct net *n, uint32_t link, uint32_t lo, uint32_t hi, uint64_t start,
                    uint64_t count, const float *piece);
/* Receives those elements and the loss float of piece [lo, hi) of the current round. */
void net_recv_piece(struct net *n, uint32_t link, uint32_t lo, uint32_t hi, uint64_t start,
                    uint64_t count, float *piece);
/* Parameter elements [start, start + count), the same way. */
void net_send_params(struct net *n, uint32_t link, uint64_t start, uint64_t count,
                     const float *params);
void net_recv_params(struct net *n, uint32_t link, uint64_t start, uint64_t count,
                     float *params);
/* Clipping: the values of `nodes` gradient-norm nodes, those covering the elements from
 * `start` (clip_norm.c); the frame names `start` and the node count. */
void net_send_norm(struct net *n, uint32_t link, uint64_t start, uint32_t nodes,
                   const float *values);
void net_recv_norm(struct net *n, uint32_t link, uint64_t start, uint32_t nodes, float *values);
/* A capture acknowledgement: the SHA-256 of the sender's sub-manifest. */
void net_send_ack(struct net *n, uint32_t link, const uint8_t digest[32]);
void net_recv_ack(struct net *n, uint32_t link, uint8_t digest[32]);
/* Sends everything queued: the round is over on every link (its shared slots are free for the
 * peers to write again). */
void net_flush(struct net *n);

/* Shared with handshake.c. */
uint64_t net_now_ms(void);
void net_set_socket_options(int fd);
/* The time left until deadline, in ms, for poll (at least 0). */
int net_wait_ms(uint64_t deadline);
/* `--describe`: one JSON line with the deployment inputs compiled into this role (where it
 * listens, whom it dials at which address, where it reads the secret), for a deployment tool
 * or a person to check them against a manifest without starting anything. */
void net_describe(const struct alpha_role *r);

#endif
