/* Host names looked up within a deadline (resolve.h).
 *
 * getaddrinfo blocks for as long as the C library's resolver waits for a name server (musl:
 * resolv.conf's `timeout`, 5 s by default), whatever the role's deadline. So a name is looked up
 * in a thread of its own and the caller waits for it only until the deadline. A lookup still
 * running then is abandoned: the thread, detached, frees what it finds when it ends, and the
 * caller goes on to its refusal (whose exit ends the thread). A numeric address, or no host at
 * all, needs no lookup and no thread. */
#define _POSIX_C_SOURCE 200809L
#include "resolve.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "net.h"
#include "refusal.h"

/* Start-up code: compiled for size (the executable has a size budget). */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

/* One lookup, held by the caller and by its thread: whichever lets go last frees it. */
struct lookup {
    const char *host; /* the role's compiled-in name: it outlives the thread */
    char service[12];
    struct addrinfo hints;
    pthread_mutex_t lock;
    pthread_cond_t ended;
    int done, error;        /* under lock */
    struct addrinfo *found; /* under lock, until the caller takes it */
    atomic_int holders;
};

static void let_go(struct lookup *l)
{
    if (atomic_fetch_sub(&l->holders, 1) != 1)
        return;
    if (l->found) /* musl's freeaddrinfo dereferences what it is given */
        freeaddrinfo(l->found);
    pthread_cond_destroy(&l->ended);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static void *look_up(void *arg)
{
    struct lookup *l = arg;
    struct addrinfo *found = NULL;
    int error = getaddrinfo(l->host, l->service, &l->hints, &found);
    pthread_mutex_lock(&l->lock);
    l->found = found, l->error = error, l->done = 1;
    pthread_cond_signal(&l->ended);
    pthread_mutex_unlock(&l->lock);
    let_go(l);
    return NULL;
}

/* Starts the lookup's thread, detached, with every signal blocked (signals are the main
 * thread's); where no thread can be had, looks the name up here, without a deadline. */
static void start(struct lookup *l)
{
    pthread_attr_t attr;
    pthread_t thread;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int started = pthread_create(&thread, &attr, look_up, l) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!started)
        look_up(l);
}

const char *resolve(const char *host, uint32_t port, int flags, uint64_t deadline,
                    struct addrinfo **found)
{
    struct addrinfo hints = {.ai_flags = flags | AI_NUMERICSERV | AI_NUMERICHOST,
                             .ai_socktype = SOCK_STREAM};
    char service[12];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    *found = NULL;
    int error = getaddrinfo(host, service, &hints, found);
    if (error != EAI_NONAME) /* found, or refused, without asking anyone */
        return error ? gai_strerror(error) : NULL;

    struct lookup *l = checked_calloc(1, sizeof *l, "a name lookup");
    l->host = host;
    snprintf(l->service, sizeof l->service, "%s", service);
    l->hints = hints;
    l->hints.ai_flags &= ~AI_NUMERICHOST;
    atomic_init(&l->holders, 2);
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t clock;
    pthread_condattr_init(&clock);
    pthread_condattr_setclock(&clock, CLOCK_MONOTONIC); /* net_now_ms's clock */
    pthread_cond_init(&l->ended, &clock);
    pthread_condattr_destroy(&clock);
    start(l);

    struct timespec until = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
    const char *why = "no answer yet from the name server";
    int waited = 0;
    pthread_mutex_lock(&l->lock);
    while (!l->done && waited != ETIMEDOUT)
        waited = pthread_cond_timedwait(&l->ended, &l->lock, &until);
    if (l->done) {
        why = l->error ? gai_strerror(l->error) : NULL;
        *found = l->found;
        l->found = NULL;
    }
    pthread_mutex_unlock(&l->lock);
    let_go(l);
    return why;
}

int resolve_pause(uint32_t *pause_ms, uint64_t deadline)
{
    uint64_t until = net_now_ms() + *pause_ms;
    poll(NULL, 0, net_wait_ms(until < deadline ? until : deadline));
    *pause_ms = *pause_ms < RESOLVE_PAUSE_MAX_MS / 2 ? *pause_ms * 2 : RESOLVE_PAUSE_MAX_MS;
    return net_now_ms() < deadline;
}

#pragma clang attribute pop
