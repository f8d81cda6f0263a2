/* Socket helpers (sockets.h). */
#define _POSIX_C_SOURCE 200809L
#include "sockets.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "net.h"
#include "refusal.h"
#include "resolve.h"

/* Connections a listener holds before it accepts them: a hub of a star may be dialled by
 * hundreds of workers at once while it still dials its own parent (the kernel caps it at
 * net.core.somaxconn). */
#define LISTEN_BACKLOG 4096

/* Start-up code, or thin wrappers around the hashing in sha256.c: compiled for size (the
 * executable has a size budget; none of it is a loop that time is spent in). */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

void socket_describe(const struct sockaddr *a, socklen_t size, char out[64])
{
    /* inet_ntop rather than getnameinfo, which links a resolver's worth of code for a name
     * that is only ever numeric here. */
    char host[48] = "?";
    unsigned port = 0;
    if (a->sa_family == AF_INET && size >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
        port = ntohs(v4->sin_port);
    } else if (a->sa_family == AF_INET6 && size >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
        port = ntohs(v6->sin6_port);
    }
    if (a->sa_family == AF_UNIX) {
        snprintf(out, 64, "a local socket");
        return;
    }
    snprintf(out, 64, "%s:%u", host, port);
}

int socket_send_all(int fd, const uint8_t *bytes, size_t size, uint64_t deadline)
{
    while (size > 0) {
        ssize_t sent = send(fd, bytes, size, MSG_NOSIGNAL);
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            struct pollfd p = {fd, POLLOUT, 0};
            if (poll(&p, 1, net_wait_ms(deadline)) == 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            continue;
        }
        if (sent <= 0)
            return -1;
        bytes += sent;
        size -= (size_t)sent;
    }
    return 0;
}

int socket_listen(const char *host, uint32_t port, uint64_t deadline, uint32_t timeout_ms)
{
    host = host && *host ? host : NULL;
    const char *shown = host ? host : "*";
    /* A name that does not resolve yet (a record published late) is looked up again until the
     * deadline, as a peer's is. */
    struct addrinfo *found = NULL;
    const char *why;
    for (uint32_t pause = RESOLVE_PAUSE_FIRST_MS;
         (why = resolve(host, port, AI_PASSIVE, deadline, &found));)
        if (!resolve_pause(&pause, deadline))
            refuse(REFUSAL_LISTEN_FAILED, "cannot listen on %s:%u: the name did not resolve "
                   "within %u ms: %s", shown, (unsigned)port, (unsigned)timeout_ms, why);
    int one = 1;
    int fd = socket(found->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, found->ai_addr, found->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0)
        refuse(REFUSAL_LISTEN_FAILED, "cannot listen on %s:%u: %s", shown, (unsigned)port,
               strerror(errno));
    freeaddrinfo(found);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* One attempt on one address: 0 and a connected socket, or -1 with errno. */
int socket_try_connect(const struct addrinfo *a, uint64_t deadline, int *out)
{
    int fd = socket(a->ai_family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int error = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        error = errno;
        if (error == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            socklen_t size = sizeof error;
            if (poll(&p, 1, net_wait_ms(deadline)) <= 0)
                error = ETIMEDOUT;
            else
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
        }
    }
    if (error) {
        close(fd);
        errno = error;
        return -1;
    }
    *out = fd;
    return 0;
}

int socket_is_loopback(const char *host)
{
    struct in_addr v4;
    struct in6_addr v6;
    if (host && inet_pton(AF_INET, host, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    if (host && inet_pton(AF_INET6, host, &v6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&v6);
    return 0;
}

/* The abstract-namespace name of the local socket beside host:port, for a loopback host:
 * "\0alpha/host:port". Abstract names belong to the network namespace, as loopback addresses
 * do, and vanish with the socket, so none is ever left behind. */
static int local_name(const char *host, uint32_t port, struct sockaddr_un *a, socklen_t *size)
{
    if (!socket_is_loopback(host))
        return -1;
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int used = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "alpha/%s:%u", host,
                        (unsigned)port);
    if (used < 0 || (size_t)used >= sizeof a->sun_path - 1)
        return -1;
    *size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)used);
    return 0;
}

int socket_is_local(int fd)
{
    struct sockaddr_storage a;
    socklen_t size = sizeof a;
    return getsockname(fd, (struct sockaddr *)&a, &size) == 0 && a.ss_family == AF_UNIX;
}

void socket_local_buffers(int fd)
{
    /* A 4 MB piece then crosses in a few writes rather than a wake-up per 200 KB (the kernel
     * caps the request at net.core.wmem_max / rmem_max). */
    int bytes = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

int socket_listen_local(const char *host, uint32_t port)
{
    struct sockaddr_un a;
    socklen_t size;
    if (local_name(host, port, &a, &size) != 0)
        return -1;
    /* Taken, the name would be answered by whoever holds it, as a taken port would: refused
     * the same way, by name, rather than left to the peer's handshake to time out. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, size) != 0 || listen(fd, LISTEN_BACKLOG) != 0)
        refuse(REFUSAL_LISTEN_FAILED, "cannot open the local socket alpha/%s:%u beside the TCP "
               "port: %s", host, (unsigned)port, strerror(errno));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int socket_connect_local(const char *host, uint32_t port, int *out)
{
    struct sockaddr_un a;
    socklen_t size;
    if (local_name(host, port, &a, &size) != 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    /* a local connect completes at once or fails at once (EAGAIN: the backlog is full) */
    if (connect(fd, (struct sockaddr *)&a, size) != 0) {
        close(fd);
        return -1;
    }
    socket_local_buffers(fd);
    *out = fd;
    return 0;
}

#pragma clang attribute pop
