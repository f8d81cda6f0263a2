/* Host names looked up within a deadline (resolve.c), for the listening address and the peers'
 * (handshake.c, sockets.c). Only roles with links reach it, so only they link a resolver. */
#ifndef ALPHA_RESOLVE_H
#define ALPHA_RESOLVE_H

#include <stdint.h>

struct addrinfo;

/* The stream addresses of host:port (`flags`: getaddrinfo's, AI_PASSIVE for a listener), found
 * before `deadline` (net_now_ms): NULL and the list in *found (freeaddrinfo it), or why not (the
 * resolver's reason, or that it had not answered by the deadline) and *found NULL. */
const char *resolve(const char *host, uint32_t port, int flags, uint64_t deadline,
                    struct addrinfo **found);
/* Waits `*pause_ms` before a name that did not resolve is looked up again, and doubles *pause_ms
 * for the next time, up to RESOLVE_PAUSE_MAX_MS; 0 (the name is not looked up again: the last
 * reason stands) when the deadline comes first. */
int resolve_pause(uint32_t *pause_ms, uint64_t deadline);

enum { RESOLVE_PAUSE_FIRST_MS = 20, RESOLVE_PAUSE_MAX_MS = 1000 };

#endif
