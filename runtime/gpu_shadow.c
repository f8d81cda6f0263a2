/* The host shadow of a GPU role (gpu.h): the role's kernels compiled for the host and run with
 * the GPU's launch geometry, thread by thread, each computing the outputs its GPU thread would.
 * A control for the GPU code path on machines without a GPU - never a fallback: a shadow build
 * is named as one in its manifest, its device event and every face. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "gpu.h"
#include "gpu_program.h"
#include "refusal.h"

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t spent_us;
static uint64_t *kernel_us, *kernel_launches; /* each kernel's host time and launches */

void alpha_gpu_open(const char *uuid, uint32_t index, struct alpha_gpu_device *dev)
{
    (void)uuid, (void)index;
    memset(dev, 0, sizeof *dev);
    strcpy(dev->name, "host shadow");
    strcpy(dev->uuid, "shadow");
    dev->shadow = 1;
}

/* Host memory was admitted when the role was built, against its pairing. */
void alpha_gpu_admit(const struct alpha_gpu_device *dev, uint64_t demand, const char *breakdown)
{
    (void)dev, (void)demand, (void)breakdown;
}

void alpha_gpu_load(const char *ptx, uint32_t n, const char *const *names)
{
    (void)ptx, (void)names;
    kernel_us = checked_calloc(n, sizeof *kernel_us, "the GPU kernels' times");
    kernel_launches = checked_calloc(n, sizeof *kernel_launches, "the GPU kernels' launches");
}

uint64_t alpha_gpu_alloc(uint64_t bytes, const char *what)
{
    return (uint64_t)(uintptr_t)checked_calloc((size_t)bytes, 1, what);
}

void alpha_gpu_upload(uint64_t dst, const void *src, uint64_t bytes)
{
    if (bytes)
        memcpy((void *)(uintptr_t)dst, src, (size_t)bytes);
}

void alpha_gpu_download(void *dst, uint64_t src, uint64_t bytes)
{
    if (bytes)
        memcpy(dst, (const void *)(uintptr_t)src, (size_t)bytes);
}

void alpha_gpu_copy(uint64_t dst, uint64_t src, uint64_t bytes)
{
    if (bytes)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)bytes);
}

static void counted(uint32_t k, uint64_t us)
{
    spent_us += us;
    kernel_us[k] += us;
    kernel_launches[k]++;
}

void alpha_gpu_launch(uint32_t k, uint64_t args, uint64_t threads)
{
    uint64_t started = now_us();
    const uint64_t *table = (const uint64_t *)(uintptr_t)args;
    alpha_shadow_kernel kernel = ALPHA_SHADOW_KERNELS[k];
    uint64_t blocks = (threads + ALPHA_GPU_BLOCK - 1) / ALPHA_GPU_BLOCK;
    if (ALPHA_GPU.blockwise[k]) { /* a tiled product: its threads' phases run in turn */
        for (uint64_t block = 0; block < blocks; block++)
            kernel(table, block);
        counted(k, now_us() - started);
        return;
    }
    for (uint64_t block = 0; block < blocks; block++)
        for (uint64_t t = 0; t < ALPHA_GPU_BLOCK; t++) {
            uint64_t out = block * ALPHA_GPU_BLOCK + t;
            if (out < threads)
                kernel(table, out);
        }
    counted(k, now_us() - started);
}

uint64_t alpha_gpu_sync(void)
{
    uint64_t us = spent_us;
    spent_us = 0;
    return us;
}

const uint64_t *alpha_gpu_kernel_us(void)
{
    return kernel_us;
}

const uint64_t *alpha_gpu_kernel_launches(void)
{
    return kernel_launches;
}
