/* The device a GPU role's kernels run on, behind one interface with two implementations,
 * chosen when the role is linked:
 *   gpu_cuda.c   - the NVIDIA driver: dlopen("libcuda.so.1") and nothing else from CUDA;
 *   gpu_shadow.c - the host shadow: the same kernels compiled for the host and run with the
 *                  same launch geometry and thread-to-output mapping (a control, never a
 *                  fallback: a shadow role says so in its manifest and start event).
 *
 * Every kernel has one signature, `kernel(args, threads)`: `args` is the device address of an
 * array of 64-bit device addresses (the buffers it reads and writes, fixed for the run) and
 * `threads` the number of outputs it computes; thread t of block b computes output
 * b * ALPHA_GPU_BLOCK + t when that is below `threads`, each output by itself in the order the
 * program declares (no atomics, no split sums). Failures refuse by name (refusal.h) and never
 * return.
 */
#ifndef ALPHA_GPU_H
#define ALPHA_GPU_H

#include <stdint.h>

#define ALPHA_GPU_BLOCK 256u

struct alpha_gpu_device {
    char name[128];        /* as the driver names it, e.g. "NVIDIA H200" */
    char uuid[48];         /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints */
    uint64_t total_bytes;  /* the card's memory */
    uint64_t free_bytes;   /* free when the role started (cuMemGetInfo) */
    int cc_major, cc_minor; /* compute capability */
    int ordinal;           /* the driver's index of the device */
    int shadow;            /* 1: the host shadow, not a GPU */
};

/* Opens the device: the one whose UUID is `uuid` when that is not NULL or "", else the one
 * at `index` (0: the first). Refuses gpu-driver-missing (no libcuda.so.1, or cuInit failed:
 * the error's name) and gpu-not-found (listing the UUIDs present). Creates the context. */
void alpha_gpu_open(const char *uuid, uint32_t index, struct alpha_gpu_device *dev);

/* Refuses memory-admission when the device has less free memory than `demand` bytes;
 * `breakdown` (one line, e.g. "parameters 9.4 KiB, gradients 9.4 KiB, ...") goes into the
 * message beside the free bytes. */
void alpha_gpu_admit(const struct alpha_gpu_device *dev, uint64_t demand, const char *breakdown);

/* Loads the role's module (NUL-terminated PTX text; the shadow ignores it) and resolves the
 * kernels `names[0..n)`; refuses gpu-jit-failed with the JIT's error log. */
void alpha_gpu_load(const char *ptx, uint32_t n, const char *const *names);

/* Device memory; refuses out-of-memory naming `what` and the bytes asked for. */
uint64_t alpha_gpu_alloc(uint64_t bytes, const char *what);
void alpha_gpu_upload(uint64_t dst, const void *src, uint64_t bytes);
void alpha_gpu_download(void *dst, uint64_t src, uint64_t bytes);
/* A copy within the device, in order with the launches. */
void alpha_gpu_copy(uint64_t dst, uint64_t src, uint64_t bytes);

/* Launches kernel `k` (an index into the names given to alpha_gpu_load) over `threads`
 * threads in blocks of ALPHA_GPU_BLOCK; a failure refuses gpu-launch-failed with the CUDA
 * error's name, the kernel's name and the round (refusal_context). Launches run in order. */
void alpha_gpu_launch(uint32_t k, uint64_t args, uint64_t threads);

/* Waits for every launch so far; returns the microseconds spent in kernels since the last
 * call (the shadow: the host time of its loops). */
uint64_t alpha_gpu_sync(void);

/* Each kernel's time and launches since the role loaded them, counted at each wait: `us[k]`
 * and `launches[k]` for the kernels `names[0..n)` given to alpha_gpu_load (NULL before it). */
const uint64_t *alpha_gpu_kernel_us(void);
const uint64_t *alpha_gpu_kernel_launches(void);

#endif
