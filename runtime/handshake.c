/* Opening the links at start-up. The role listens first (when any link accepts), so that peers
 * connecting to it succeed from then on; then it connects to every peer it dials, retrying
 * every 20 ms, and sends each its HELLO; then one poll loop accepts connections and reads every
 * HELLO until each link is matched. No step waits on another role's progress, only on its
 * being started, so roles may start in any order. Deadline: connect_timeout_ms from the start. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "net.h"
#include "refusal.h"
#include "sockets.h"

#define MAX_STRANGERS 16

/* A connection whose HELLO is still arriving: one we dialled (link >= 0) or one we accepted and
 * cannot name yet (link = -1). */
struct conn {
    int fd;
    int32_t link;
    uint32_t got;
    char address[64];
    char label[160]; /* "left at 127.0.0.1:4000" or "a connection from 127.0.0.1:51234" */
    uint8_t bytes[FRAME_HELLO_BYTES];
};

struct opening {
    struct net *n;
    uint8_t identity[32];
    uint64_t deadline;
    uint32_t timeout_ms;
    int listener;
    struct conn *conns;
    uint32_t n_conns, cap;
};

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void parse_identity(const char *hex, uint8_t out[32])
{
    for (int i = 0; i < 32; i++) {
        int hi = hex && strlen(hex) == 64 ? hex_value(hex[2 * i]) : -1;
        int lo = hi < 0 ? -1 : hex_value(hex[2 * i + 1]);
        if (lo < 0)
            refuse(REFUSAL_PROGRAM_INVALID, "plan_identity is not 64 lowercase hex digits");
        out[i] = (uint8_t)(hi << 4 | lo);
    }
}

/* "right (role index 1)" for a peer of this role, "role index 5" for any other index. */
static const char *peer_name(const struct net *n, uint32_t index, char buffer[96])
{
    for (uint32_t k = 0; k < n->n_links; k++)
        if (n->links[k].link->peer == index) {
            snprintf(buffer, 96, "%.64s (role index %u)", n->links[k].link->peer_name,
                     (unsigned)index);
            return buffer;
        }
    snprintf(buffer, 96, "role index %u", (unsigned)index);
    return buffer;
}

static void send_hello(struct opening *o, int fd, uint32_t receiver, const char *to)
{
    const struct alpha_role *r = o->n->r;
    struct hello h = {.sender = r->index, .receiver = receiver, .epoch = r->epoch,
                      .n_roles = r->n_roles};
    memcpy(h.plan_identity, o->identity, 32);
    uint8_t bytes[FRAME_HELLO_BYTES];
    frame_encode_hello(&h, bytes);
    if (socket_send_all(fd, bytes, sizeof bytes, o->deadline) != 0)
        refuse(REFUSAL_PEER_LOST, "%s closed the connection during the handshake: %s", to,
               strerror(errno));
}

static void add_conn(struct opening *o, int fd, int32_t link, const char *address)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    net_set_socket_options(fd);
    struct conn *c = &o->conns[o->n_conns++];
    *c = (struct conn){.fd = fd, .link = link};
    snprintf(c->address, sizeof c->address, "%s", address);
    if (link >= 0)
        snprintf(c->label, sizeof c->label, "%.64s at %s", o->n->links[link].link->peer_name,
                 address);
    else
        snprintf(c->label, sizeof c->label, "a connection from %s", address);
}

static void connect_to_peer(struct opening *o, uint32_t k)
{
    const struct alpha_link *l = o->n->links[k].link;
    char port[12], address[64];
    snprintf(port, sizeof port, "%u", (unsigned)l->port);
    snprintf(address, sizeof address, "%s:%u", l->host, (unsigned)l->port);
    struct addrinfo hints = {.ai_flags = AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
    const char *why = "no attempt";
    for (;;) {
        struct addrinfo *found = NULL;
        int error = getaddrinfo(l->host, port, &hints, &found);
        if (error)
            why = gai_strerror(error);
        for (struct addrinfo *a = found; a; a = a->ai_next) {
            int fd;
            if (socket_try_connect(a, o->deadline, &fd) == 0) {
                freeaddrinfo(found);
                add_conn(o, fd, (int32_t)k, address);
                send_hello(o, fd, l->peer, l->peer_name);
                return;
            }
            why = strerror(errno);
        }
        freeaddrinfo(found);
        if (net_now_ms() >= o->deadline)
            refuse(REFUSAL_PEER_UNREACHABLE, "cannot connect to %s at %s within %u ms: %s",
                   l->peer_name, address, (unsigned)o->timeout_ms, why);
        poll(NULL, 0, net_wait_ms(net_now_ms() + 20 < o->deadline ? net_now_ms() + 20
                                                                   : o->deadline));
    }
}

/* Which accept link the HELLO names, after the identity checks (refusing on any mismatch). */
static uint32_t check_hello(struct opening *o, struct conn *c, const struct hello *h)
{
    struct net *n = o->n;
    const struct alpha_role *r = n->r;
    char buffer[96], theirs[17];
    const char *who = peer_name(n, h->sender, buffer);
    for (int i = 0; i < 8; i++)
        snprintf(theirs + 2 * i, 3, "%02x", h->plan_identity[i]);
    int accepted = c->link < 0;
    if (memcmp(h->plan_identity, o->identity, 32) != 0) {
        if (accepted)
            send_hello(o, c->fd, h->sender, who);
        refuse(REFUSAL_PLAN_IDENTITY_MISMATCH, "%s says it is %s and runs plan identity %s..., "
               "but %s runs %.16s...: both must be built from the same system and plan",
               c->label, who, theirs, r->name, r->plan_identity);
    }
    uint32_t k = accepted ? n->n_links : (uint32_t)c->link;
    for (uint32_t i = 0; accepted && i < n->n_links; i++)
        if (n->links[i].link->accept && n->links[i].link->peer == h->sender && n->links[i].fd < 0)
            k = i;
    if (h->receiver != r->index || k == n->n_links || n->links[k].link->peer != h->sender)
        refuse(REFUSAL_ROLE_IDENTITY_MISMATCH, "%s says it is %s talking to role index %u, but "
               "this is %s (role index %u)%s", c->label, who, (unsigned)h->receiver, r->name,
               (unsigned)r->index, accepted ? ", which expects no such connection" : "");
    if (h->epoch != r->epoch || h->n_roles != r->n_roles) {
        if (accepted)
            send_hello(o, c->fd, h->sender, who);
        refuse(REFUSAL_MEMBERSHIP_EPOCH_MISMATCH, "%s says it is %s in membership epoch %u of %u "
               "roles, but %s is in epoch %u of %u roles", c->label, who, (unsigned)h->epoch,
               (unsigned)h->n_roles, r->name, (unsigned)r->epoch, (unsigned)r->n_roles);
    }
    return k;
}

/* Reads what arrived on c; when its HELLO is complete and right, its link is open. */
static void read_hello(struct opening *o, struct conn *c)
{
    ssize_t got = recv(c->fd, c->bytes + c->got, FRAME_HELLO_BYTES - c->got, 0);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (got <= 0 && c->link < 0 && c->got == 0) { /* a probe that connected and left */
        close(c->fd);
        c->fd = -1;
        return;
    }
    if (got <= 0)
        refuse(c->link >= 0 ? REFUSAL_PEER_LOST : REFUSAL_FRAME_CORRUPT, "%s closed the "
               "connection after %u bytes of its HELLO%s", c->label, (unsigned)c->got,
               c->link >= 0 ? " (it may have refused this role: see its events)" : "");
    c->got += (uint32_t)got;
    if (c->got < FRAME_HEADER_BYTES)
        return;
    struct frame_expect e = {FRAME_HELLO, FRAME_ANY, 0, 0, 0, 0, FRAME_HELLO_COUNT};
    struct frame_header h;
    const char *refused = frame_decode_header(c->bytes, c->got, &h, &e);
    if (!refused && c->got < FRAME_HELLO_BYTES)
        return;
    struct hello hello;
    if (!refused)
        refused = frame_decode(c->bytes, c->got, &h, &e);
    if (!refused)
        refused = frame_decode_hello(&h, c->bytes + FRAME_HEADER_BYTES, &hello);
    if (refused)
        refuse(refused, "%s, in the handshake with %s: %s", c->label, o->n->r->name,
               frame_reason());
    uint32_t k = check_hello(o, c, &hello);
    if (c->link < 0)
        send_hello(o, c->fd, hello.sender, o->n->links[k].link->peer_name);
    o->n->links[k].fd = c->fd;
    snprintf(o->n->links[k].address, sizeof o->n->links[k].address, "%s", c->address);
    c->fd = -1;
}

static void accept_one(struct opening *o)
{
    struct sockaddr_storage from;
    socklen_t size = sizeof from;
    int fd = accept(o->listener, (struct sockaddr *)&from, &size);
    if (fd < 0)
        return;
    if (o->n_conns == o->cap) { /* more strangers at once than we will listen to */
        close(fd);
        return;
    }
    char address[64];
    socket_describe((struct sockaddr *)&from, size, address);
    add_conn(o, fd, -1, address);
}

static _Noreturn void expired(struct opening *o)
{
    struct net *n = o->n;
    for (uint32_t i = 0; i < o->n_conns; i++)
        if (o->conns[i].fd >= 0 && o->conns[i].link < 0 && o->conns[i].got > 0)
            refuse(REFUSAL_PEER_TIMEOUT, "a connection from %s sent %u of the %u bytes of a "
                   "HELLO within %u ms", o->conns[i].address, (unsigned)o->conns[i].got,
                   (unsigned)FRAME_HELLO_BYTES, (unsigned)o->timeout_ms);
    for (uint32_t k = 0; k < n->n_links; k++)
        if (n->links[k].fd < 0 && n->links[k].link->accept)
            refuse(REFUSAL_PEER_UNREACHABLE, "%s never connected to %s on %s:%u within %u ms",
                   n->links[k].link->peer_name, n->r->name, n->r->listen_host,
                   (unsigned)n->r->listen_port, (unsigned)o->timeout_ms);
    for (uint32_t i = 0; i < o->n_conns; i++)
        if (o->conns[i].fd >= 0 && o->conns[i].link >= 0)
            refuse(REFUSAL_PEER_TIMEOUT, "%s did not answer the HELLO within %u ms",
                   o->conns[i].label, (unsigned)o->timeout_ms);
    refuse(REFUSAL_PEER_TIMEOUT, "the handshake did not finish within %u ms",
           (unsigned)o->timeout_ms);
}

static int all_open(const struct net *n)
{
    for (uint32_t k = 0; k < n->n_links; k++)
        if (n->links[k].fd < 0)
            return 0;
    return 1;
}

void net_open(struct net *n, const struct alpha_program *p, const struct alpha_role *r)
{
    net_init(n, p, r);
    if (n->n_links == 0)
        return;
    struct opening o = {.n = n, .timeout_ms = r->connect_timeout_ms, .listener = -1};
    o.deadline = net_now_ms() + r->connect_timeout_ms;
    parse_identity(r->plan_identity, o.identity);
    o.cap = n->n_links + MAX_STRANGERS;
    o.conns = checked_calloc(o.cap, sizeof *o.conns, "the handshake");
    struct pollfd *fds = checked_calloc(o.cap + 1, sizeof *fds, "the handshake");
    for (uint32_t k = 0; k < n->n_links; k++)
        if (n->links[k].link->accept && o.listener < 0)
            o.listener = socket_listen(r->listen_host, r->listen_port);
    for (uint32_t k = 0; k < n->n_links; k++)
        if (!n->links[k].link->accept)
            connect_to_peer(&o, k);
    while (!all_open(n)) {
        nfds_t m = 0;
        if (o.listener >= 0)
            fds[m++] = (struct pollfd){o.listener, POLLIN, 0};
        for (uint32_t i = 0; i < o.n_conns; i++)
            if (o.conns[i].fd >= 0)
                fds[m++] = (struct pollfd){o.conns[i].fd, POLLIN, 0};
        int ready = poll(fds, m, net_wait_ms(o.deadline));
        if (ready == 0 || (ready < 0 && errno != EINTR))
            expired(&o);
        if (o.listener >= 0 && fds[0].revents)
            accept_one(&o);
        for (uint32_t i = 0; i < o.n_conns && !all_open(n); i++)
            if (o.conns[i].fd >= 0)
                read_hello(&o, &o.conns[i]);
        /* Forget finished connections, so strangers that came and went leave room. */
        uint32_t kept = 0;
        for (uint32_t i = 0; i < o.n_conns; i++)
            if (o.conns[i].fd >= 0)
                o.conns[kept++] = o.conns[i];
        o.n_conns = kept;
    }
    /* Every link is matched: nobody else may join. */
    for (uint32_t i = 0; i < o.n_conns; i++)
        close(o.conns[i].fd);
    if (o.listener >= 0)
        close(o.listener);
    free(o.conns);
    free(fds);
}
