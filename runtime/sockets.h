/* Small POSIX socket helpers for the handshake: listening, one connection attempt with a
 * deadline, writing a short message whole, naming an address. */
#ifndef ALPHA_SOCKETS_H
#define ALPHA_SOCKETS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct addrinfo;

/* "host:port" of a socket address. */
void socket_describe(const struct sockaddr *a, socklen_t size, char out[64]);
/* A non-blocking listening socket on host (NULL or "": every address) and port, SO_REUSEADDR;
 * a name that does not resolve is looked up again until deadline (resolve.h); refuses
 * listen-failed, naming timeout_ms when the name never resolved. */
int socket_listen(const char *host, uint32_t port, uint64_t deadline, uint32_t timeout_ms);
/* One attempt on one address before deadline: 0 and a connected non-blocking socket in *out,
 * or -1 with errno. */
int socket_try_connect(const struct addrinfo *a, uint64_t deadline, int *out);
/* Whether host is a numeric loopback address (127.0.0.0/8, ::1). */
int socket_is_loopback(const char *host);
/* Beside a listener on a loopback host:port, a non-blocking Unix stream socket in the abstract
 * namespace that peers on this machine dial instead of TCP (the same bytes cross it); -1 when
 * the host is not a loopback address; refuses listen-failed when the name is taken. */
int socket_listen_local(const char *host, uint32_t port);
/* One attempt on that local socket: 0 and a connected non-blocking socket in *out, or -1. */
int socket_connect_local(const char *host, uint32_t port, int *out);
/* Whether fd is a Unix socket: a local link, to a peer on this machine. */
int socket_is_local(int fd);
/* Socket buffers for a local link: large enough that a 4 MB frame needs few wake-ups. */
void socket_local_buffers(int fd);
/* Writes all of bytes before deadline: 0, or -1 with errno. */
int socket_send_all(int fd, const uint8_t *bytes, size_t size, uint64_t deadline);

#endif
