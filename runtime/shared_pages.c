/* Shared pages for the large frames of a local link: see shared_pages.h. */
#define _GNU_SOURCE /* memfd_create, POLLRDHUP */
#include "shared_pages.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "refusal.h"
#include "sockets.h"

#define CONTROL_BYTES 64u /* the control block: the rounds this side has finished on the link */

static uint64_t align64(uint64_t n) { return (n + 63u) & ~(uint64_t)63u; }

/* Payload and tail bytes of an op's frame, and whether it is one the layout counts. */
static int large_frame(const struct net *n, const struct alpha_op *op, uint32_t send_kind,
                       uint32_t params_kind, uint64_t *bytes)
{
    uint64_t count = op->count ? op->count : n->p->n_params;
    if (op->kind == send_kind)
        *bytes = 4 * count + 4; /* a piece: its elements and the loss float */
    else if (op->kind == params_kind)
        *bytes = 4 * count;
    else
        return 0;
    return *bytes >= SHARED_MIN_BYTES;
}

/* The slots of one direction of link k: offsets and sizes of its large frames in op order,
 * and the bytes of one round of them. */
static uint32_t layout(const struct net *n, uint32_t k, int sending, uint64_t **at,
                       uint64_t **sizes, uint64_t *round_bytes)
{
    const struct alpha_role *r = n->r;
    uint32_t count = 0;
    uint64_t bytes;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t offset = 0;
        count = 0;
        for (uint32_t i = 0; i < r->n_ops; i++) {
            const struct alpha_op *op = &r->ops[i];
            int large = sending ? large_frame(n, op, ALPHA_OP_SEND, ALPHA_OP_SEND_PARAMS, &bytes)
                                : large_frame(n, op, ALPHA_OP_RECV, ALPHA_OP_RECV_PARAMS, &bytes);
            if (!large || op->link != k)
                continue;
            if (pass == 1)
                (*at)[count] = offset, (*sizes)[count] = bytes;
            offset += align64(bytes);
            count++;
        }
        *round_bytes = offset;
        if (pass == 0) {
            *at = checked_calloc(count ? count : 1, sizeof **at, "the shared pages");
            *sizes = checked_calloc(count ? count : 1, sizeof **sizes, "the shared pages");
        }
    }
    return count;
}

/* One message on the socket: the size of our pages (0: none) and, with a size, their file. */
static int send_pages(int fd, uint64_t size, int file)
{
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++)
        bytes[i] = (uint8_t)(size >> (8 * i));
    struct iovec part = {bytes, sizeof bytes};
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &part, .msg_iovlen = 1};
    if (size) {
        msg.msg_control = control.space;
        msg.msg_controllen = sizeof control.space;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &file, sizeof file);
    }
    return sendmsg(fd, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof bytes ? 0 : -1;
}

/* The peer's message: its pages' size, and their file (-1 when it sent none). */
static uint64_t recv_pages(const struct net *n, uint32_t k, uint64_t deadline, int *file)
{
    const struct net_link *link = &n->links[k];
    uint8_t bytes[8];
    size_t got = 0;
    *file = -1;
    while (got < sizeof bytes) {
        struct pollfd p = {link->fd, POLLIN, 0};
        int ready = poll(&p, 1, net_wait_ms(deadline));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            refuse(REFUSAL_PEER_TIMEOUT, "%s (%s) sent no word of its shared pages within %u ms "
                   "of the handshake", link->link->peer_name, link->address,
                   (unsigned)n->r->connect_timeout_ms);
        union {
            struct cmsghdr align;
            char space[CMSG_SPACE(sizeof(int))];
        } control;
        struct iovec part = {bytes + got, sizeof bytes - got};
        struct msghdr msg = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space,
                             .msg_controllen = sizeof control.space};
        ssize_t r = recvmsg(link->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (r <= 0)
            refuse(REFUSAL_PEER_LOST, "%s (%s) left before it described its shared pages",
                   link->link->peer_name, link->address);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg); /* one descriptor, in the only message */
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && *file < 0 &&
            c->cmsg_len >= CMSG_LEN(sizeof(int)))
            memcpy(file, CMSG_DATA(c), sizeof *file);
        got += (size_t)r;
    }
    uint64_t size = 0;
    for (int i = 0; i < 8; i++)
        size |= (uint64_t)bytes[i] << (8 * i);
    return size;
}

/* The kernels' limit on the rows of a product whose B they read in place (codegen/gemm.py);
 * undefined (null) for kernels without large products. */
extern int64_t alpha_direct_rows __attribute__((weak));

__attribute__((minsize)) void shared_open(struct net *n, uint64_t deadline)
{
    uint64_t *own_size = checked_calloc(n->n_links ? n->n_links : 1, sizeof *own_size,
                                        "the shared pages");
    for (uint32_t k = 0; k < n->n_links; k++) { /* ours, offered on every local link */
        struct net_link *link = &n->links[k];
        if (!socket_is_local(link->fd))
            continue;
        /* Another role on this machine: the two stream their own weights through one memory,
         * where B read in place down its columns (a line a row, rows a page apart) starves and
         * packed panels, read along B's rows, do not (bench/round.py's pair: 3.9 -> 3.2 ms a
         * round; one process alone reads in place, 15% faster there). Bits are unchanged. */
        if (&alpha_direct_rows)
            alpha_direct_rows = 0;
        link->n_out = layout(n, k, 1, &link->out_at, &link->out_bytes, &link->out_round);
        link->n_in = layout(n, k, 0, &link->in_at, &link->in_bytes, &link->in_round);
        if (link->n_out + link->n_in == 0)
            continue;
        uint64_t size = CONTROL_BYTES + 2 * link->out_round;
        /* sealed at its size, so that the peer may trust it never shrinks under its mapping
         * (a read past the end of a shrunk file would be a SIGBUS, not a refusal) */
        int file = memfd_create("alpha-frames", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        void *pages = MAP_FAILED;
        if (file >= 0 && ftruncate(file, (off_t)size) == 0 &&
            fcntl(file, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
            pages = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
        if (pages != MAP_FAILED)
            link->pages_out = pages, own_size[k] = size;
        /* without pages of our own (no memory file here) the link keeps the socket for all */
        if (send_pages(link->fd, own_size[k], file) != 0)
            refuse(REFUSAL_PEER_LOST, "%s (%s) closed its connection after the handshake: %s",
                   link->link->peer_name, link->address, strerror(errno));
        if (file >= 0)
            close(file);
    }
    for (uint32_t k = 0; k < n->n_links; k++) { /* then the peer's */
        struct net_link *link = &n->links[k];
        if (!socket_is_local(link->fd) || link->n_out + link->n_in == 0)
            continue;
        int file;
        uint64_t size = recv_pages(n, k, deadline, &file), want = CONTROL_BYTES + 2 * link->in_round;
        if (size && (file < 0 || size != want))
            refuse(REFUSAL_FRAME_UNEXPECTED, "%s (%s) offered shared pages of %llu bytes%s where "
                   "its schedule and ours need %llu", link->link->peer_name, link->address,
                   (unsigned long long)size, file < 0 ? " without their file" : "",
                   (unsigned long long)want);
        struct stat st;
        int seals = size ? fcntl(file, F_GET_SEALS) : 0;
        if (size && (fstat(file, &st) != 0 || (uint64_t)st.st_size != size || seals < 0 ||
                     !(seals & F_SEAL_SHRINK)))
            refuse(REFUSAL_FRAME_UNEXPECTED, "%s (%s) offered shared pages of %llu bytes in a "
                   "file that is not a memory file of that size sealed against shrinking",
                   link->link->peer_name, link->address, (unsigned long long)size);
        void *pages = size && link->pages_out
                          ? mmap(NULL, size, PROT_READ, MAP_SHARED, file, 0)
                          : MAP_FAILED;
        if (file >= 0)
            close(file);
        if (size && link->pages_out && pages == MAP_FAILED)
            refuse(REFUSAL_OUT_OF_MEMORY, "the shared pages of %s (%llu bytes) could not be "
                   "mapped: %s", link->link->peer_name, (unsigned long long)size, strerror(errno));
        if (pages == MAP_FAILED) { /* either side without pages: the socket for everything */
            if (link->pages_out)
                munmap(link->pages_out, own_size[k]);
            link->pages_out = NULL;
            continue;
        }
        link->pages_in = pages;
    }
    free(own_size);
}

int shared_carries(const struct net *n, uint32_t link, uint64_t bytes)
{
    return n->links[link].pages_in != NULL && bytes >= SHARED_MIN_BYTES;
}

static uint64_t peer_rounds(const struct net_link *k)
{
    return __atomic_load_n((const uint64_t *)k->pages_in, __ATOMIC_ACQUIRE);
}

uint8_t *shared_send_slot(struct net *n, uint32_t link, uint64_t bytes)
{
    struct net_link *k = &n->links[link];
    uint32_t j = k->next_out++;
    if (j >= k->n_out || k->out_bytes[j] != bytes)
        refuse(REFUSAL_PROGRAM_INVALID, "a frame of %llu bytes to %s that the schedule's shared "
               "slots do not have", (unsigned long long)bytes, k->link->peer_name);
    /* the slot's last use was round t - 2 of the link: the peer must have finished it */
    uint64_t deadline = net_now_ms() + n->r->io_timeout_ms;
    while (k->rounds >= 2 && peer_rounds(k) + 1 < k->rounds) {
        struct pollfd p = {k->fd, POLLRDHUP, 0};
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            refuse(REFUSAL_PEER_LOST, "%s (%s) closed its connection in round %u",
                   k->link->peer_name, k->address, (unsigned)n->round + 1);
        if (net_now_ms() >= deadline)
            refuse(REFUSAL_PEER_TIMEOUT, "%s (%s) did not finish round %llu of the link within "
                   "%u ms, so its shared slot stays in use", k->link->peer_name, k->address,
                   (unsigned long long)(k->rounds - 1), (unsigned)n->r->io_timeout_ms);
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
    }
    return k->pages_out + CONTROL_BYTES + (k->rounds % 2) * k->out_round + k->out_at[j];
}

const uint8_t *shared_recv_slot(struct net *n, uint32_t link, uint64_t bytes)
{
    struct net_link *k = &n->links[link];
    uint32_t j = k->next_in++;
    if (j >= k->n_in || k->in_bytes[j] != bytes)
        refuse(REFUSAL_PROGRAM_INVALID, "a frame of %llu bytes from %s that the schedule's "
               "shared slots do not have", (unsigned long long)bytes, k->link->peer_name);
    return k->pages_in + CONTROL_BYTES + (k->rounds % 2) * k->in_round + k->in_at[j];
}

void shared_round_done(struct net *n)
{
    for (uint32_t i = 0; i < n->n_links; i++) {
        struct net_link *k = &n->links[i];
        if (!k->pages_in)
            continue;
        k->rounds++, k->next_out = k->next_in = 0;
        __atomic_store_n((uint64_t *)k->pages_out, k->rounds, __ATOMIC_RELEASE);
    }
}
