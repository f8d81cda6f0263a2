/* Opening the links at start-up. The role listens first (when any link accepts), so that peers
 * connecting to it succeed from then on; then it connects to every peer it dials (only its own
 * links: a parent and, for some topologies, a few more; never every role), retrying after
 * 20 ms, then twice as long each time up to 250 ms, each pause stretched by up to a quarter
 * according to the role's index so that hundreds of roles started together neither dial in
 * step nor keep a core busy dialling, and sends each its HELLO; then one poll loop accepts
 * connections and runs the handshake on each until every link is open. A host name, its own or a peer's, that does not
 * resolve is looked up again after 20 ms, then twice as long each time up to 1 s (resolve.h).
 * No step waits on another role's progress, only on its being started, so roles may start in
 * any order. Deadline: connect_timeout_ms from the start, for the whole handshake, name lookups
 * included (a peer trickling bytes, or a silent name server, does not extend it).
 *
 * The handshake is a mutual challenge-response keyed by the launch secret (frame.h):
 *   dialer -> acceptor  HELLO (its fields, nonce Nd)
 *   acceptor -> dialer  HELLO (its fields, nonce Na, proof over Nd, Na and its fields)
 *   dialer -> acceptor  AUTH  (proof over Nd, Na and the dialer's fields)
 * Each side checks the other's proof before it believes anything the other said. A listener
 * drops, by name in a stranger-dropped event, every connection that has not proven itself
 * (garbage, a wrong proof, a connection that leaves half-way) and keeps waiting for the real
 * peer; only a peer that proved it holds the secret and then disagrees (another plan, role or
 * epoch) refuses the run. A dialer refuses whatever answers it wrongly: it chose the address. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "events.h"
#include "frame.h"
#include "net.h"
#include "refusal.h"
#include "resolve.h"
#include "secret.h"
#include "shared_pages.h"
#include "sockets.h"

/* Start-up code, or thin wrappers around the hashing in sha256.c: compiled for size (the
 * executable has a size budget; none of it is a loop that time is spent in). */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

#define MAX_STRANGERS 16

/* A connection still in its handshake: one we dialled (link >= 0) or one we accepted and
 * cannot name yet (link = -1). An accepted one first awaits the dialer's HELLO (stage 0), then,
 * once answered, its AUTH (stage 1). */
struct conn {
    int fd;
    int32_t link;
    uint32_t stage;
    uint32_t got, want;
    uint64_t arrival; /* order of acceptance, for making room */
    char address[64];
    char label[160]; /* "left at 127.0.0.1:4000" or "a connection from 127.0.0.1:51234" */
    uint8_t bytes[FRAME_HELLO_BYTES];
    struct hello mine, theirs;
};

struct opening {
    struct net *n;
    const uint8_t *secret;
    uint8_t identity[32];
    uint64_t deadline;
    uint32_t timeout_ms;
    int listener;
    int local; /* the local socket beside a loopback listener, or -1 */
    struct conn *conns;
    uint32_t n_conns, cap;
    uint64_t arrivals, dropped;
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

/* This role's HELLO to `receiver`, with a fresh nonce and no proof yet. */
static void own_hello(struct opening *o, uint32_t receiver, struct hello *h)
{
    const struct alpha_role *r = o->n->r;
    *h = (struct hello){.sender = r->index, .receiver = receiver, .epoch = r->epoch,
                        .n_roles = r->n_roles};
    memcpy(h->plan_identity, o->identity, 32);
    secret_random(h->nonce, sizeof h->nonce);
}

static int send_bytes(struct opening *o, int fd, const uint8_t *bytes, size_t size)
{
    return socket_send_all(fd, bytes, size, o->deadline);
}

/* A stranger leaves: told in the event stream, never a refusal of this role. The message is
 * `format` with the connection's label first. */
__attribute__((format(printf, 4, 5))) static void drop(struct opening *o, struct conn *c,
                                                       const char *name, const char *format, ...)
{
    char message[400];
    va_list args;
    va_start(args, format);
    int used = snprintf(message, sizeof message, "%s ", c->label);
    vsnprintf(message + used, sizeof message - (size_t)used, format, args);
    va_end(args);
    printf("{\"event\":\"stranger-dropped\",\"role\":");
    json_string(stdout, o->n->r->name);
    printf(",\"from\":");
    json_string(stdout, c->address);
    printf(",\"name\":");
    json_string(stdout, name);
    printf(",\"message\":");
    json_string(stdout, message);
    printf("}\n");
    fflush(stdout);
    close(c->fd);
    c->fd = -1;
    o->dropped++;
}

static void add_conn(struct opening *o, int fd, int32_t link, const char *address)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    net_set_socket_options(fd);
    struct conn *c = &o->conns[o->n_conns++];
    *c = (struct conn){.fd = fd, .link = link, .want = FRAME_HELLO_BYTES,
                       .arrival = o->arrivals++};
    snprintf(c->address, sizeof c->address, "%s", address);
    if (link >= 0)
        snprintf(c->label, sizeof c->label, "%.64s at %s", o->n->links[link].link->peer_name,
                 address);
    else
        snprintf(c->label, sizeof c->label, "a connection from %s", address);
}

/* A connection we dialled to link k: our HELLO goes first. */
static void dialled(struct opening *o, uint32_t k, int fd, const char *address)
{
    add_conn(o, fd, (int32_t)k, address);
    struct conn *c = &o->conns[o->n_conns - 1];
    own_hello(o, o->n->links[k].link->peer, &c->mine);
    frame_encode_hello(&c->mine, c->bytes);
    if (send_bytes(o, fd, c->bytes, FRAME_HELLO_BYTES) != 0)
        refuse(REFUSAL_PEER_LOST, "%s closed the connection during the handshake: %s", c->label,
               strerror(errno));
}

enum { DIAL_PAUSE_FIRST_MS = 20, DIAL_PAUSE_MAX_MS = 250 };

/* Waits before a peer that is not listening yet is dialled again: *pause_ms, stretched by up to
 * a quarter by the role's index (Knuth's multiplicative hash), then doubles *pause_ms up to
 * DIAL_PAUSE_MAX_MS. Never past the deadline. */
static void dial_pause(const struct opening *o, uint32_t *pause_ms)
{
    uint64_t hashed = ((uint64_t)o->n->r->index * 2654435761u) >> 7;
    uint32_t spread = (uint32_t)(hashed % (*pause_ms / 4 + 1));
    uint64_t until = net_now_ms() + *pause_ms + spread;
    poll(NULL, 0, net_wait_ms(until < o->deadline ? until : o->deadline));
    *pause_ms = *pause_ms < DIAL_PAUSE_MAX_MS / 2 ? *pause_ms * 2 : DIAL_PAUSE_MAX_MS;
}

static void connect_to_peer(struct opening *o, uint32_t k)
{
    const struct alpha_link *l = o->n->links[k].link;
    char address[64];
    snprintf(address, sizeof address, "%s:%u", l->host, (unsigned)l->port);
    const char *why = "no attempt";
    uint32_t pause = RESOLVE_PAUSE_FIRST_MS, dial = DIAL_PAUSE_FIRST_MS;
    for (;;) {
        int fd;
        /* a peer on this machine first, by its local socket; TCP where it has none */
        if (socket_connect_local(l->host, l->port, &fd) == 0) {
            dialled(o, k, fd, address);
            return;
        }
        struct addrinfo *found = NULL;
        const char *unresolved = resolve(l->host, l->port, 0, o->deadline, &found);
        if (unresolved)
            why = unresolved;
        for (struct addrinfo *a = found; a; a = a->ai_next) {
            if (socket_try_connect(a, o->deadline, &fd) == 0) {
                freeaddrinfo(found);
                /* a peer that started between the two attempts has its local socket now: it
                 * opens it before its port (the TCP connection closes unused, a probe) */
                int local;
                if (socket_connect_local(l->host, l->port, &local) == 0)
                    close(fd), fd = local;
                dialled(o, k, fd, address);
                return;
            }
            why = strerror(errno);
        }
        if (found) /* musl's freeaddrinfo dereferences what it is given */
            freeaddrinfo(found);
        /* a name that did not resolve waits longer each time before it is looked up again */
        int late = net_now_ms() >= o->deadline;
        if (unresolved && !late)
            late = !resolve_pause(&pause, o->deadline);
        if (late && unresolved)
            refuse(REFUSAL_PEER_UNRESOLVABLE, "cannot resolve %s, the host of %s, within %u ms: "
                   "%s", l->host, l->peer_name, (unsigned)o->timeout_ms, why);
        if (late)
            refuse(REFUSAL_PEER_UNREACHABLE, "cannot connect to %s at %s within %u ms: %s",
                   l->peer_name, address, (unsigned)o->timeout_ms, why);
        if (!unresolved)
            dial_pause(o, &dial);
    }
}

/* Which link an authenticated peer's HELLO names, after the identity checks (refusing on any
 * mismatch: it holds the secret, so it is part of this launch and disagrees about the run). */
static uint32_t check_peer(struct opening *o, struct conn *c)
{
    struct net *n = o->n;
    const struct alpha_role *r = n->r;
    const struct hello *h = &c->theirs;
    char buffer[96], theirs[17];
    const char *who = peer_name(n, h->sender, buffer);
    for (int i = 0; i < 8; i++)
        snprintf(theirs + 2 * i, 3, "%02x", h->plan_identity[i]);
    int accepted = c->link < 0;
    if (memcmp(h->plan_identity, o->identity, 32) != 0)
        refuse(REFUSAL_PLAN_IDENTITY_MISMATCH, "%s says it is %s and runs plan identity %s..., "
               "but %s runs %.16s...: both must be built from the same system and plan",
               c->label, who, theirs, r->name, r->plan_identity);
    uint32_t k = accepted ? n->n_links : (uint32_t)c->link;
    for (uint32_t i = 0; accepted && i < n->n_links; i++)
        if (n->links[i].link->accept && n->links[i].link->peer == h->sender && n->links[i].fd < 0)
            k = i;
    if (h->receiver != r->index || k == n->n_links || n->links[k].link->peer != h->sender)
        refuse(REFUSAL_ROLE_IDENTITY_MISMATCH, "%s says it is %s talking to role index %u, but "
               "this is %s (role index %u)%s", c->label, who, (unsigned)h->receiver, r->name,
               (unsigned)r->index, accepted ? ", which expects no such connection" : "");
    if (h->epoch != r->epoch || h->n_roles != r->n_roles)
        refuse(REFUSAL_MEMBERSHIP_EPOCH_MISMATCH, "%s says it is %s in membership epoch %u of %u "
               "roles, but %s is in epoch %u of %u roles", c->label, who, (unsigned)h->epoch,
               (unsigned)h->n_roles, r->name, (unsigned)r->epoch, (unsigned)r->n_roles);
    return k;
}

/* The link is open: its keys (one per direction) and sequence numbers start. */
static void open_link(struct opening *o, struct conn *c, uint32_t k)
{
    struct net_link *link = &o->n->links[k];
    const struct hello *dialer = c->link >= 0 ? &c->mine : &c->theirs;
    const uint8_t *acceptor_nonce = c->link >= 0 ? c->theirs.nonce : c->mine.nonce;
    uint8_t to_acceptor[32], to_dialer[32];
    frame_link_keys(o->secret, dialer, acceptor_nonce, to_acceptor, to_dialer);
    frame_key_init(&link->send_key, c->link >= 0 ? to_acceptor : to_dialer);
    frame_key_init(&link->recv_key, c->link >= 0 ? to_dialer : to_acceptor);
    hmac_wipe(to_acceptor, sizeof to_acceptor);
    hmac_wipe(to_dialer, sizeof to_dialer);
    link->send_seq = link->recv_seq = 0;
    link->fd = c->fd;
    snprintf(link->address, sizeof link->address, "%s", c->address);
    c->fd = -1;
}

/* A whole message has arrived on a connection we dialled: the acceptor's HELLO. */
static void dialer_answered(struct opening *o, struct conn *c)
{
    struct frame_expect e = {FRAME_HELLO, FRAME_ANY, 0, 0, 0, 0, FRAME_HELLO_COUNT};
    struct frame_header h;
    const char *refused = frame_decode(c->bytes, c->got, &h, &e);
    if (!refused)
        refused = frame_decode_hello(&h, c->bytes + FRAME_HEADER_BYTES, &c->theirs);
    if (refused)
        refuse(refused, "%s, in the handshake with %s: %s", c->label, o->n->r->name,
               frame_reason());
    uint8_t proof[32];
    frame_proof(o->secret, 0, &c->theirs, c->mine.nonce, c->theirs.nonce, proof);
    if (!hmac_equal(proof, c->theirs.proof, 32))
        refuse(REFUSAL_PEER_UNAUTHENTICATED, "%s answered without proof of this launch's secret "
               "(its HELLO's proof does not verify): it is not a role of this launch",
               c->label);
    /* Prove ourselves before judging what it said, so that a peer of this launch that disagrees
     * (another plan or epoch) learns it was a peer and names the disagreement too. */
    frame_proof(o->secret, 1, &c->mine, c->mine.nonce, c->theirs.nonce, proof);
    uint8_t auth[FRAME_AUTH_BYTES];
    frame_encode_auth(o->n->r->index, proof, auth);
    if (send_bytes(o, c->fd, auth, sizeof auth) != 0)
        refuse(REFUSAL_PEER_LOST, "%s closed the connection during the handshake: %s",
               c->label, strerror(errno));
    open_link(o, c, check_peer(o, c));
}

/* A whole message has arrived on a connection we accepted: the dialer's HELLO (answered with
 * ours and our proof) or its AUTH (checked; then the link opens). */
static void acceptor_got(struct opening *o, struct conn *c)
{
    struct frame_header h;
    if (c->stage == 0) {
        struct frame_expect e = {FRAME_HELLO, FRAME_ANY, 0, 0, 0, 0, FRAME_HELLO_COUNT};
        const char *refused = frame_decode(c->bytes, c->got, &h, &e);
        if (!refused)
            refused = frame_decode_hello(&h, c->bytes + FRAME_HEADER_BYTES, &c->theirs);
        if (refused) {
            drop(o, c, refused, "sent no HELLO of this protocol: %s", frame_reason());
            return;
        }
        own_hello(o, c->theirs.sender, &c->mine);
        frame_proof(o->secret, 0, &c->mine, c->theirs.nonce, c->mine.nonce, c->mine.proof);
        uint8_t answer[FRAME_HELLO_BYTES];
        frame_encode_hello(&c->mine, answer);
        if (send_bytes(o, c->fd, answer, sizeof answer) != 0) {
            drop(o, c, REFUSAL_PEER_LOST, "left before our HELLO reached it: %s",
                 strerror(errno));
            return;
        }
        c->stage = 1, c->got = 0, c->want = FRAME_AUTH_BYTES;
        return;
    }
    struct frame_expect e = {FRAME_AUTH, c->theirs.sender, 0, 0, 0, 0, FRAME_AUTH_COUNT};
    const char *refused = frame_decode(c->bytes, c->got, &h, &e);
    if (refused) {
        drop(o, c, refused, "sent no AUTH of this protocol: %s", frame_reason());
        return;
    }
    uint8_t proof[32];
    frame_proof(o->secret, 1, &c->theirs, c->theirs.nonce, c->mine.nonce, proof);
    if (!hmac_equal(proof, c->bytes + FRAME_HEADER_BYTES, 32)) {
        drop(o, c, REFUSAL_PEER_UNAUTHENTICATED, "gave no proof of this launch's secret (its "
             "AUTH does not verify)");
        return;
    }
    open_link(o, c, check_peer(o, c));
}

/* Reads what arrived on c; a whole message goes on to its side of the handshake. */
static void read_conn(struct opening *o, struct conn *c)
{
    ssize_t got = recv(c->fd, c->bytes + c->got, c->want - c->got, 0);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (got <= 0 && c->link < 0 && c->got == 0 && c->stage == 0) {
        close(c->fd); /* a probe that connected and left */
        c->fd = -1;
        return;
    }
    if (got <= 0 && c->link < 0) {
        drop(o, c, got < 0 ? REFUSAL_PEER_LOST : REFUSAL_FRAME_CORRUPT,
             "closed the connection after %u bytes of its %s", (unsigned)c->got,
             c->stage ? "AUTH" : "HELLO");
        return;
    }
    if (got <= 0)
        refuse(REFUSAL_PEER_LOST, "%s closed the connection after %u bytes of its HELLO (it may "
               "have refused this role: see its events)", c->label, (unsigned)c->got);
    c->got += (uint32_t)got;
    if (c->got >= FRAME_HEADER_BYTES && c->got < c->want) {
        /* A header that is already wrong need not be waited out. */
        struct frame_expect e = {c->stage ? FRAME_AUTH : FRAME_HELLO, FRAME_ANY, 0, 0, 0, 0,
                                 c->stage ? FRAME_AUTH_COUNT : FRAME_HELLO_COUNT};
        struct frame_header h;
        const char *refused = frame_decode_header(c->bytes, c->got, &h, &e);
        if (refused && c->link >= 0)
            refuse(refused, "%s, in the handshake with %s: %s", c->label, o->n->r->name,
                   frame_reason());
        if (refused)
            drop(o, c, refused, "sent no %s of this protocol: %s", c->stage ? "AUTH" : "HELLO",
                 frame_reason());
        return;
    }
    if (c->got < c->want)
        return;
    if (c->link >= 0)
        dialer_answered(o, c);
    else
        acceptor_got(o, c);
}

/* Whether an accepted connection has sent nothing yet. */
static int silent(const struct conn *c)
{
    return c->stage == 0 && c->got == 0;
}

static void accept_one(struct opening *o, int listener)
{
    struct sockaddr_storage from;
    socklen_t size = sizeof from;
    int fd = accept(listener, (struct sockaddr *)&from, &size);
    if (fd < 0)
        return;
    if (listener == o->local)
        socket_local_buffers(fd);
    if (o->n_conns == o->cap) {
        /* Full of connections that have not proven themselves: a stranger makes room, so that
         * strangers cannot keep the real peer out. One that has sent nothing goes before one
         * in its handshake, and among those alike the oldest: a peer accepted early (its local
         * socket is accepted beside the TCP backlog) sends its HELLO at once, and a burst of
         * silent connections accepted after it, one a loop, must not push it out before it
         * can answer. */
        struct conn *oldest = NULL;
        for (uint32_t i = 0; i < o->n_conns; i++) {
            struct conn *c = &o->conns[i];
            if (c->fd >= 0 && c->link < 0 &&
                (!oldest || silent(c) > silent(oldest) ||
                 (silent(c) == silent(oldest) && c->arrival < oldest->arrival)))
                oldest = c;
        }
        if (!oldest) {
            close(fd);
            return;
        }
        drop(o, oldest, REFUSAL_PEER_UNAUTHENTICATED, "was dropped to make room: %u connections "
             "had not authenticated", (unsigned)MAX_STRANGERS);
        *oldest = o->conns[--o->n_conns];
    }
    char address[64];
    socket_describe((struct sockaddr *)&from, size, address);
    add_conn(o, fd, -1, address);
}

static _Noreturn void expired(struct opening *o)
{
    struct net *n = o->n;
    char strangers[96] = "";
    if (o->dropped)
        snprintf(strangers, sizeof strangers, " (%llu stranger%s dropped: see the "
                 "stranger-dropped events)", (unsigned long long)o->dropped,
                 o->dropped == 1 ? "" : "s");
    for (uint32_t k = 0; k < n->n_links; k++)
        if (n->links[k].fd < 0 && n->links[k].link->accept)
            refuse(REFUSAL_PEER_UNREACHABLE, "%s never connected to %s on %s:%u and proved "
                   "itself within %u ms%s", n->links[k].link->peer_name, n->r->name,
                   n->r->listen_host, (unsigned)n->r->listen_port, (unsigned)o->timeout_ms,
                   strangers);
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

void net_open(struct net *n, const struct alpha_program *p, const struct alpha_role *r,
              const uint8_t secret[32])
{
    net_init(n, p, r);
    if (n->n_links == 0)
        return;
    struct opening o = {.n = n, .secret = secret, .timeout_ms = r->connect_timeout_ms,
                        .listener = -1, .local = -1};
    o.deadline = net_now_ms() + r->connect_timeout_ms;
    parse_identity(r->plan_identity, o.identity);
    o.cap = n->n_links + MAX_STRANGERS;
    o.conns = checked_calloc(o.cap, sizeof *o.conns, "the handshake");
    struct pollfd *fds = checked_calloc(o.cap + 2, sizeof *fds, "the handshake");
    for (uint32_t k = 0; k < n->n_links; k++)
        if (n->links[k].link->accept && o.listener < 0) {
            /* the local socket first, so that a peer on this machine finds it whenever it
             * finds the TCP port */
            o.local = socket_listen_local(r->listen_host, r->listen_port);
            o.listener = socket_listen(r->listen_host, r->listen_port, o.deadline, o.timeout_ms);
        }
    for (uint32_t k = 0; k < n->n_links; k++)
        if (!n->links[k].link->accept)
            connect_to_peer(&o, k);
    while (!all_open(n)) {
        nfds_t m = 0;
        if (o.listener >= 0)
            fds[m++] = (struct pollfd){o.listener, POLLIN, 0};
        if (o.local >= 0)
            fds[m++] = (struct pollfd){o.local, POLLIN, 0};
        nfds_t listeners = m;
        for (uint32_t i = 0; i < o.n_conns; i++)
            if (o.conns[i].fd >= 0)
                fds[m++] = (struct pollfd){o.conns[i].fd, POLLIN, 0};
        int ready = poll(fds, m, net_wait_ms(o.deadline));
        if (ready == 0 || (ready < 0 && errno != EINTR) || net_now_ms() >= o.deadline)
            expired(&o);
        for (uint32_t i = 0; i < o.n_conns && !all_open(n); i++)
            if (o.conns[i].fd >= 0)
                read_conn(&o, &o.conns[i]);
        /* Forget finished connections, so strangers that came and went leave room. */
        uint32_t kept = 0;
        for (uint32_t i = 0; i < o.n_conns; i++)
            if (o.conns[i].fd >= 0)
                o.conns[kept++] = o.conns[i];
        o.n_conns = kept;
        for (nfds_t j = 0; j < listeners && !all_open(n); j++)
            if (fds[j].revents)
                accept_one(&o, fds[j].fd);
    }
    /* Every link is open: nobody else may join. */
    for (uint32_t i = 0; i < o.n_conns; i++)
        close(o.conns[i].fd);
    if (o.listener >= 0)
        close(o.listener);
    if (o.local >= 0)
        close(o.local);
    hmac_wipe(o.conns, o.cap * sizeof *o.conns);
    free(o.conns);
    free(fds);
    shared_open(n, o.deadline);
    net_report_links(n);
}

#pragma clang attribute pop
