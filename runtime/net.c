/* Frames on open links, every round. Sockets are non-blocking; every wait is a poll() with a
 * deadline: a whole frame must arrive within io_timeout_ms of the role starting to wait for it,
 * and everything queued must leave within io_timeout_ms of net_flush (a peer trickling bytes,
 * or taking them a byte at a time, does not move the deadline). While a role waits for a frame
 * it keeps sending what it has queued, so pieces crossing in both directions cannot block each
 * other. Every frame is followed by its MAC; a received frame's MAC is checked before anything
 * the header says beyond its size is believed. */
#define _POSIX_C_SOURCE 200809L
#include "net.h"

#include "cpu_level.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "events.h"
#include "frame.h"
#include "refusal.h"
#include "shared_pages.h"
#include "sockets.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "piece payloads are sent as the host's float32 bytes, which must be little-endian"
#endif

uint64_t net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int net_wait_ms(uint64_t deadline)
{
    uint64_t now = net_now_ms();
    return now >= deadline ? 0 : (int)(deadline - now > 60000 ? 60000 : deadline - now);
}

void net_set_socket_options(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static _Noreturn void lost(const struct net *n, const struct net_link *k, const char *what,
                           int error)
{
    refuse(REFUSAL_PEER_LOST, "%s (%s) %s in round %u%s%s", k->link->peer_name, k->address,
           what, (unsigned)n->round + 1,
           error ? ": " : "", error ? strerror(error) : "");
}

/* Sends what the socket takes of the link's queue; returns 1 if anything went. A frame's
 * header, payload and tail leave in one sendmsg, so they share segments. */
static int progress(struct net *n, struct net_link *k)
{
    int moved = 0;
    while (k->count > 0) {
        struct net_send *s = &k->queue[k->head];
        struct iovec parts[4] = {
            {s->header, 64},
            {(void *)s->payload, (size_t)s->bytes},
            {(void *)s->tail, (size_t)s->tail_bytes},
            {s->mac, FRAME_MAC_BYTES},
        };
        uint64_t skip = s->done;
        int first = 0;
        while (first < 4 && skip >= parts[first].iov_len) {
            skip -= parts[first].iov_len;
            first++;
        }
        parts[first].iov_base = (uint8_t *)parts[first].iov_base + skip;
        parts[first].iov_len -= (size_t)skip;
        struct msghdr msg = {.msg_iov = parts + first};
        msg.msg_iovlen = (__typeof__(msg.msg_iovlen))(4 - first); /* int in musl, size_t in glibc */
        ssize_t sent = sendmsg(k->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return moved;
        if (sent <= 0)
            lost(n, k, "closed its connection while we sent to it", sent < 0 ? errno : 0);
        moved = 1;
        s->done += (uint64_t)sent;
        if (s->done == 64 + s->bytes + s->tail_bytes + FRAME_MAC_BYTES) {
            k->head = (k->head + 1) % k->cap;
            k->count--;
        }
    }
    return moved;
}

/* Waits until `reader` (a link index, or n_links for none) is readable or every queue is empty,
 * sending meanwhile. Returns 0 past the deadline. */
static int wait_ready(struct net *n, uint32_t reader, uint64_t deadline)
{
    struct pollfd *fds = n->fds;
    uint32_t *which = n->which;
    for (;;) {
        nfds_t m = 0;
        for (uint32_t i = 0; i < n->n_links; i++) {
            short events = (short)((i == reader ? POLLIN : 0) | (n->links[i].count ? POLLOUT : 0));
            if (events) {
                fds[m] = (struct pollfd){n->links[i].fd, events, 0};
                which[m++] = i;
            }
        }
        if (m == 0)
            return 1;
        int ready = poll(fds, m, net_wait_ms(deadline));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0 || net_now_ms() >= deadline)
            return 0;
        int readable = 0;
        for (nfds_t j = 0; j < m; j++) {
            short got = fds[j].revents;
            if (which[j] == reader && (got & (POLLIN | POLLHUP | POLLERR)))
                readable = 1;
            if ((got & (POLLOUT | POLLHUP | POLLERR)) && n->links[which[j]].count)
                progress(n, &n->links[which[j]]);
        }
        if (readable)
            return 1;
    }
}

/* Reads size bytes before deadline (the whole frame's, not renewed by each byte). What has
 * arrived is taken at once; only when nothing is there does the role wait (and send), which
 * saves a poll() per read when the bytes are already in: they usually are. */
static void read_exact(struct net *n, uint32_t link, uint8_t *into, uint64_t size,
                       const char *what, uint64_t deadline)
{
    struct net_link *k = &n->links[link];
    uint64_t got = 0;
    while (got < size) {
        uint64_t left = size - got;
        ssize_t r = recv(k->fd, into + got, left > (1u << 30) ? (1u << 30) : (size_t)left,
                         MSG_DONTWAIT);
        if (r > 0) {
            got += (uint64_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            lost(n, k, r == 0 ? "closed its connection" : "reset its connection",
                 r < 0 ? errno : 0);
        if (!wait_ready(n, link, deadline))
            refuse(REFUSAL_PEER_TIMEOUT, "no %s from %s (%s) in round %u within %u ms", what,
                   k->link->peer_name, k->address, (unsigned)n->round + 1,
                   (unsigned)n->r->io_timeout_ms);
    }
}

/* Copies n bytes from src to dst and hashes them into the MAC from dst, a chunk at a time, so
 * that the hash reads what the copy has just brought into the cache. */
static void copy_hashed(struct frame_mac_state *m, uint8_t *dst, const uint8_t *src, uint64_t n)
{
    enum { CHUNK = 128 * 1024 };
    for (uint64_t at = 0; at < n; at += CHUNK) {
        uint64_t part = n - at < CHUNK ? n - at : CHUNK;
        memcpy(dst + at, src + at, (size_t)part);
        frame_mac_absorb(m, dst + at, part);
    }
}

/* Queues a frame: its header, `bytes` of payload, then `tail_bytes` more from tail (a piece's
 * loss float). Both stay unchanged until net_flush. A large piece or parameters (`large`) on a
 * link with shared pages is copied into its slot there now, and only its header and MAC are
 * queued. */
static void send_frame(struct net *n, uint32_t link, struct frame_header *h,
                       const void *payload, uint64_t bytes, const void *tail, uint32_t tail_bytes,
                       int large)
{
    struct net_link *k = &n->links[link];
    if (k->count == k->cap)
        refuse(REFUSAL_PROGRAM_INVALID, "more sends queued to %s than the schedule has",
               k->link->peer_name);
    struct net_send *s = &k->queue[(k->head + k->count) % k->cap];
    h->sender = n->r->index;
    h->round = n->round;
    h->count = (bytes + tail_bytes) / 4;
    h->payload_bytes = bytes + tail_bytes;
    h->payload_crc = 0; /* the MAC covers the payload */
    *s = (struct net_send){.payload = payload, .bytes = bytes, .tail = tail,
                           .tail_bytes = tail_bytes};
    frame_encode_header(h, s->header);
    if (large && shared_carries(n, link, bytes + tail_bytes)) {
        uint8_t *slot = shared_send_slot(n, link, bytes + tail_bytes);
        struct frame_mac_state m;
        frame_mac_begin(&m, &k->send_key, s->header);
        copy_hashed(&m, slot, payload, bytes);
        copy_hashed(&m, slot + bytes, tail, tail_bytes);
        frame_mac_end(&m, k->send_seq++, s->mac);
        s->payload = s->tail = NULL, s->bytes = s->tail_bytes = 0; /* the socket: header, MAC */
    } else {
        frame_mac(&k->send_key, k->send_seq++, s->header, payload, bytes, tail, tail_bytes,
                  s->mac);
    }
    k->count++;
    n->frames++, n->bytes += FRAME_HEADER_BYTES + bytes + tail_bytes + FRAME_MAC_BYTES;
    progress(n, k);
}

/* Receives the frame e describes (elements from `start`) into payload and tail. */
static void recv_frame(struct net *n, uint32_t link, struct frame_expect *e, uint64_t start,
                       void *payload, uint64_t bytes, void *tail, uint32_t tail_bytes,
                       const char *what, int large)
{
    struct net_link *k = &n->links[link];
    uint64_t deadline = net_now_ms() + n->r->io_timeout_ms;
    uint8_t header[FRAME_HEADER_BYTES], mac[FRAME_MAC_BYTES];
    read_exact(n, link, header, sizeof header, "frame header", deadline);
    e->sender = k->link->peer;
    e->round = n->round;
    e->count = (bytes + tail_bytes) / 4;
    struct frame_header h;
    /* The size first (so that no more is read than expected), then the MAC over the bytes as
     * they came (so that a forged frame is named forged whatever its fields say), then the
     * fields. */
    const char *refused = frame_decode_shape(header, sizeof header, &h, e->count);
    if (!refused && h.payload_bytes != bytes + tail_bytes)
        refused = frame_check_fields(&h, e, start);
    if (!refused && large && shared_carries(n, link, bytes + tail_bytes)) {
        /* the MAC from the socket; the bytes copied out of the peer's slot, and hashed as they
         * land in ours (what is checked is what the role then uses) */
        read_exact(n, link, mac, FRAME_MAC_BYTES, what, deadline);
        const uint8_t *slot = shared_recv_slot(n, link, bytes + tail_bytes);
        uint8_t want[FRAME_MAC_BYTES];
        struct frame_mac_state m;
        frame_mac_begin(&m, &k->recv_key, header);
        copy_hashed(&m, payload, slot, bytes);
        copy_hashed(&m, tail, slot + bytes, tail_bytes);
        frame_mac_end(&m, k->recv_seq, want);
        refused = frame_check_tag(k->recv_seq, want, mac);
        if (!refused)
            refused = frame_check_fields(&h, e, start);
    } else if (!refused) {
        uint8_t end[4 + FRAME_MAC_BYTES]; /* the tail and the MAC, in one read */
        read_exact(n, link, payload, bytes, what, deadline);
        read_exact(n, link, end, tail_bytes + FRAME_MAC_BYTES, what, deadline);
        if (tail_bytes)
            memcpy(tail, end, tail_bytes);
        memcpy(mac, end + tail_bytes, FRAME_MAC_BYTES);
        refused = frame_check_mac(&k->recv_key, k->recv_seq, header, payload, bytes, tail,
                                  tail_bytes, mac);
        if (!refused)
            refused = frame_check_fields(&h, e, start);
    }
    if (refused)
        snprintf(n->reason, sizeof n->reason, "%s", frame_reason());
    k->recv_seq++;
    if (refused)
        refuse(refused, "a frame from %s in round %u, expected to be %s: %s",
               k->link->peer_name, (unsigned)n->round + 1, what, n->reason);
    n->frames++, n->bytes += FRAME_HEADER_BYTES + bytes + tail_bytes + FRAME_MAC_BYTES;
}

/* A piece's elements [start, start + count) (count 0: all) and its loss float. */
static void piece_span(const struct net *n, uint64_t *start, uint64_t *count)
{
    if (*count == 0)
        *start = 0, *count = n->p->n_params;
}

void net_send_piece(struct net *n, uint32_t link, uint32_t lo, uint32_t hi, uint64_t start,
                    uint64_t count, const float *piece)
{
    piece_span(n, &start, &count);
    struct frame_header h = {.kind = FRAME_PIECE, .tensor = FRAME_TENSOR_GRADIENT, .lo = lo,
                             .hi = hi, .start = start};
    send_frame(n, link, &h, piece + start, 4 * count, piece + n->p->n_params, 4, 1);
}

void net_recv_piece(struct net *n, uint32_t link, uint32_t lo, uint32_t hi, uint64_t start,
                    uint64_t count, float *piece)
{
    piece_span(n, &start, &count);
    char what[96];
    snprintf(what, sizeof what, "piece [%u, %u) elements [%llu, %llu)", (unsigned)lo,
             (unsigned)hi, (unsigned long long)start, (unsigned long long)(start + count));
    struct frame_expect e = {.kind = FRAME_PIECE, .tensor = FRAME_TENSOR_GRADIENT, .lo = lo,
                             .hi = hi};
    recv_frame(n, link, &e, start, piece + start, 4 * count, piece + n->p->n_params, 4, what, 1);
}

void net_send_params(struct net *n, uint32_t link, uint64_t start, uint64_t count,
                     const float *params)
{
    struct frame_header h = {.kind = FRAME_PIECE, .tensor = FRAME_TENSOR_PARAMS, .start = start};
    send_frame(n, link, &h, params + start, 4 * count, NULL, 0, 1);
}

void net_recv_params(struct net *n, uint32_t link, uint64_t start, uint64_t count,
                     float *params)
{
    char what[96];
    snprintf(what, sizeof what, "parameters [%llu, %llu)", (unsigned long long)start,
             (unsigned long long)(start + count));
    struct frame_expect e = {.kind = FRAME_PIECE, .tensor = FRAME_TENSOR_PARAMS};
    recv_frame(n, link, &e, start, params + start, 4 * count, NULL, 0, what, 1);
}

void net_send_norm(struct net *n, uint32_t link, uint64_t start, uint32_t nodes,
                   const float *values)
{
    struct frame_header h = {.kind = FRAME_PIECE, .tensor = FRAME_TENSOR_NORM, .start = start};
    send_frame(n, link, &h, values, 4 * (uint64_t)nodes, NULL, 0, 0);
}

void net_recv_norm(struct net *n, uint32_t link, uint64_t start, uint32_t nodes, float *values)
{
    char what[96];
    snprintf(what, sizeof what, "the %u gradient-norm nodes from element %llu", (unsigned)nodes,
             (unsigned long long)start);
    struct frame_expect e = {.kind = FRAME_PIECE, .tensor = FRAME_TENSOR_NORM};
    recv_frame(n, link, &e, start, values, 4 * (uint64_t)nodes, NULL, 0, what, 0);
}

void net_send_ack(struct net *n, uint32_t link, const uint8_t digest[32])
{
    struct frame_header h = {.kind = FRAME_ACK};
    send_frame(n, link, &h, digest, 32, NULL, 0, 0);
}

void net_recv_ack(struct net *n, uint32_t link, uint8_t digest[32])
{
    struct frame_expect e = {.kind = FRAME_ACK};
    recv_frame(n, link, &e, 0, digest, 32, NULL, 0, "a capture acknowledgement", 0);
}

void net_flush(struct net *n)
{
    uint64_t deadline = net_now_ms() + n->r->io_timeout_ms;
    if (!wait_ready(n, n->n_links, deadline))
        for (uint32_t i = 0; i < n->n_links; i++)
            if (n->links[i].count)
                refuse(REFUSAL_PEER_TIMEOUT, "%s (%s) did not take what was sent to it "
                       "within %u ms in round %u",
                       n->links[i].link->peer_name, n->links[i].address,
                       (unsigned)n->r->io_timeout_ms, (unsigned)n->round + 1);
    shared_round_done(n);
}

/* Start-up only, never in a round: compiled for size (the executable has a size budget). */
__attribute__((minsize)) void net_describe(const struct alpha_role *r)
{
    printf("{\"event\":\"role\",\"role\":");
    json_string(stdout, r->name);
    printf(",\"index\":%u,\"listen_host\":", (unsigned)r->index);
    json_string(stdout, r->listen_host ? r->listen_host : "");
    printf(",\"listen_port\":%u,\"cpu\":", (unsigned)r->listen_port);
    json_string(stdout, cpu_level_name() ? cpu_level_name() : "");
    printf(",\"secret_file\":");
    json_string(stdout, r->secret_file ? r->secret_file : "");
    printf(",\"links\":[");
    for (uint32_t k = 0; k < r->n_links; k++) {
        const struct alpha_link *l = &r->links[k];
        printf("%s{\"peer\":", k ? "," : "");
        json_string(stdout, l->peer_name);
        printf(",\"accept\":%s,\"host\":", l->accept ? "true" : "false");
        json_string(stdout, l->accept || !l->host ? "" : l->host);
        printf(",\"port\":%u}", l->accept ? 0u : (unsigned)l->port);
    }
    printf("]}\n");
    fflush(stdout);
}

/* One `links` event once every link is open: each link's peer and what carries it, `local`
 * (the Unix socket beside a loopback listener, sockets.h) or `tcp`. */
__attribute__((minsize)) void net_report_links(const struct net *n)
{
    printf("{\"event\":\"links\",\"role\":");
    json_string(stdout, n->r->name);
    printf(",\"links\":[");
    for (uint32_t k = 0; k < n->n_links; k++) {
        int local = socket_is_local(n->links[k].fd);
        printf("%s{\"peer\":", k ? "," : "");
        json_string(stdout, n->links[k].link->peer_name);
        printf(",\"transport\":\"%s\",\"shared_pages\":%s}", local ? "local" : "tcp",
               n->links[k].pages_in ? "true" : "false");
    }
    printf("]}\n");
    fflush(stdout);
}

void net_init(struct net *n, const struct alpha_program *p, const struct alpha_role *r)
{
    *n = (struct net){.p = p, .r = r, .n_links = r->n_links};
    n->links = checked_calloc(r->n_links, sizeof *n->links, "the links");
    n->fds = checked_calloc(r->n_links, sizeof *n->fds, "the links");
    n->which = checked_calloc(r->n_links, sizeof *n->which, "the links");
    for (uint32_t k = 0; k < r->n_links; k++) {
        const struct alpha_link *l = &r->links[k];
        struct net_link *link = &n->links[k];
        link->link = l;
        link->fd = -1;
        snprintf(link->address, sizeof link->address, "%s:%u", l->host ? l->host : "?",
                 (unsigned)l->port);
        if (l->peer >= r->n_roles || l->peer == r->index || !l->peer_name ||
            (!l->accept && (!l->host || !*l->host || l->port == 0 || l->port > 65535)))
            refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s, link %u: peer %u of %u roles, "
                   "%s %s:%u", r->name, (unsigned)k + 1, (unsigned)l->peer,
                   (unsigned)r->n_roles, l->accept ? "accepting" : "connecting to",
                   l->host ? l->host : "(no host)", (unsigned)l->port);
        for (uint32_t j = 0; j < k; j++)
            if (r->links[j].peer == l->peer)
                refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s has two links to %s", r->name,
                       l->peer_name);
        for (uint32_t i = 0; i < r->n_ops; i++) {
            uint32_t kind = r->ops[i].kind;
            link->cap += (kind == ALPHA_OP_SEND || kind == ALPHA_OP_SEND_PARAMS ||
                          kind == ALPHA_OP_ACK_SEND || kind == ALPHA_OP_NORM_SEND) &&
                         r->ops[i].link == k;
        }
        link->queue = checked_calloc(link->cap, sizeof *link->queue, "a send queue");
    }
    if (r->listen_port > 65535)
        refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s listens on port %u", r->name,
               (unsigned)r->listen_port);
}
