/* The role's threads: tasks of the generated kernels run on them, never parts of one sum.
 *
 * The kernels split a matrix product into tasks that each write their own block of outputs and
 * call alpha_parallel; which thread runs a task, and how many threads there are, changes when
 * an output is computed, never how, so the bits do not depend on the thread count. */
#ifndef ALPHA_POOL_H
#define ALPHA_POOL_H

#include <stdint.h>

/* Floats of scratch one worker needs (packed panels), defined by the generated kernels. */
extern const uint64_t alpha_scratch_floats;

typedef void (*alpha_task)(const void *ctx, uint32_t index, float *scratch);

/* Starts threads - 1 workers beside the calling thread, each with its own scratch; refuses
 * by name (REFUSAL_THREADS_UNAVAILABLE) when they cannot be had. Called once, before the
 * first kernel. Without it, tasks run on the calling thread. Kernels without tasks start
 * nothing: their hook is null. */
void pool_start(uint32_t threads);

/* What pool_start calls: alpha_pool_spawn when the kernels have tasks, else NULL (defined by
 * the generated kernels, so that an executable without tasks links no thread code). */
extern void (*const alpha_threads_hook)(uint32_t threads);
void alpha_pool_spawn(uint32_t threads);

/* The threads this process may run on (its CPU affinity), at least 1. */
uint32_t pool_cores(void);

/* Runs fn(ctx, i, scratch) for every i < count, each exactly once, and returns when all are
 * done. Called by the kernels, from the main thread only. */
void alpha_parallel(alpha_task fn, const void *ctx, uint32_t count);

/* The threads that take tasks (the caller included): how finely the kernels split a product
 * so that every thread has a fair share; never what a task computes. */
uint32_t alpha_workers(void);

#endif
