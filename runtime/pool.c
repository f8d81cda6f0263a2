/* A fixed team of worker threads for the kernels' tasks (pool.h).
 *
 * A job is published under the lock with a new generation number; tasks are handed out from
 * one 64-bit ticket that holds (generation << 32 | next task), so a worker still holding an
 * earlier job can never take a task of a later one. The caller takes tasks too, then waits
 * for the last one to finish. */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "refusal.h"

enum { POOL_MAX = 256 };

struct job {
    alpha_task fn;
    const void *ctx;
    uint32_t count;
    uint32_t generation;
};

static struct {
    uint32_t workers; /* threads, the caller included */
    float *scratch[POOL_MAX];
    pthread_t threads[POOL_MAX];
    pthread_mutex_t lock;
    pthread_cond_t wake, finished;
    struct job job;             /* the current job; written under lock */
    _Atomic uint64_t ticket;    /* generation << 32 | next task index */
    _Atomic uint32_t done;      /* tasks of the current job finished */
    _Atomic uint32_t published; /* the newest job's generation, readable without the lock */
} pool = {.workers = 1, .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER, .finished = PTHREAD_COND_INITIALIZER};

static float *scratch_for(uint32_t worker)
{
    if (!pool.scratch[worker]) {
        size_t bytes = ((size_t)alpha_scratch_floats * sizeof(float) + 63) & ~(size_t)63;
        void *p = aligned_alloc(64, bytes ? bytes : 64);
        if (!p)
            refuse(REFUSAL_THREADS_UNAVAILABLE, "cannot allocate %zu bytes of scratch for "
                   "thread %u", bytes, (unsigned)worker);
        pool.scratch[worker] = p;
    }
    return pool.scratch[worker];
}

/* Takes and runs tasks of `job` until none is left. */
static void run_tasks(const struct job *job, uint32_t worker)
{
    float *scratch = scratch_for(worker);
    for (;;) {
        uint64_t t = atomic_load(&pool.ticket);
        uint32_t next;
        do {
            next = (uint32_t)t;
            if ((uint32_t)(t >> 32) != job->generation || next >= job->count)
                return;
        } while (!atomic_compare_exchange_weak(&pool.ticket, &t, t + 1));
        job->fn(job->ctx, next, scratch);
        if (atomic_fetch_add(&pool.done, 1) + 1 == job->count) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.finished);
            pthread_mutex_unlock(&pool.lock);
        }
    }
}

/* A short wait by polling before sleeping: the products of a step come tens of microseconds
 * apart, and waking a sleeping thread costs about as much. */
enum { SPINS = 16384 };

static inline void relax(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static void *worker_main(void *arg)
{
    uint32_t worker = (uint32_t)(uintptr_t)arg;
    uint32_t seen = 0;
    for (;;) {
        for (int i = 0; i < SPINS && atomic_load(&pool.published) == seen; i++)
            relax();
        pthread_mutex_lock(&pool.lock);
        while (pool.job.generation == seen)
            pthread_cond_wait(&pool.wake, &pool.lock);
        struct job job = pool.job;
        seen = job.generation;
        pthread_mutex_unlock(&pool.lock);
        run_tasks(&job, worker);
    }
    return NULL;
}

uint32_t pool_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n < 1 ? 1 : (uint32_t)n;
}

void pool_start(uint32_t threads)
{
    if (threads < 1 || threads > POOL_MAX)
        refuse(REFUSAL_USAGE, "--threads needs a count from 1 to %d, not %u", POOL_MAX,
               (unsigned)threads);
    if (alpha_threads_hook)
        alpha_threads_hook(threads);
}

void alpha_pool_spawn(uint32_t threads)
{
    for (uint32_t w = 0; w < threads; w++)
        scratch_for(w); /* all scratch before round 0: a run cannot fail for memory later */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (uint32_t w = 1; w < threads; w++) {
        int error = pthread_create(&pool.threads[w], &attr, worker_main, (void *)(uintptr_t)w);
        if (error)
            refuse(REFUSAL_THREADS_UNAVAILABLE, "cannot start thread %u of %u: %s",
                   (unsigned)w + 1, (unsigned)threads, strerror(error));
    }
    pthread_attr_destroy(&attr);
    pool.workers = threads;
}

uint32_t alpha_workers(void)
{
    return pool.workers;
}

void alpha_parallel(alpha_task fn, const void *ctx, uint32_t count)
{
    if (pool.workers == 1 || count <= 1) {
        for (uint32_t i = 0; i < count; i++)
            fn(ctx, i, scratch_for(0));
        return;
    }
    pthread_mutex_lock(&pool.lock);
    uint32_t generation = pool.job.generation + 1;
    if (generation == 0)
        generation = 1; /* 0 is what a worker has seen before its first job */
    pool.job = (struct job){fn, ctx, count, generation};
    atomic_store(&pool.done, 0);
    atomic_store(&pool.ticket, (uint64_t)generation << 32);
    atomic_store(&pool.published, generation);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    struct job job = {fn, ctx, count, generation};
    run_tasks(&job, 0);
    for (int i = 0; i < SPINS && atomic_load(&pool.done) != count; i++)
        relax();
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.done) != count)
        pthread_cond_wait(&pool.finished, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}
