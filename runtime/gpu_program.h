/* What `alpha build` generates for a GPU role besides its schedule: the role's kernels (PTX,
 * or for the host shadow the same kernels compiled for the host), its device buffers and the
 * launches that make each entry point of alpha_program.h (alpha_core/codegen/gpu_kernels.py).
 * runtime/gpu_role.c runs them through gpu.h. */
#ifndef ALPHA_GPU_PROGRAM_H
#define ALPHA_GPU_PROGRAM_H

#include <stdint.h>

struct alpha_gpu_arg {
    uint32_t buffer;  /* index into buffer_bytes */
    uint32_t unused;
    uint64_t offset;  /* bytes into it */
};

struct alpha_gpu_launch {
    uint32_t kernel;    /* index into kernel_names */
    uint32_t first_arg; /* its arguments: args[first_arg .. first_arg + n_args) */
    uint32_t n_args;
    uint32_t unused;
    uint64_t threads;   /* outputs; 0: the learner update's element count */
};

struct alpha_gpu_entry {
    uint32_t first, count; /* launches[first .. first + count) */
};

struct alpha_gpu_grad {
    uint64_t offset, count; /* floats of the flat gradient */
    int32_t buffer;         /* read back from this buffer; -1: every element is `value` */
    float value;
};

struct alpha_gpu_program {
    const char *profile;     /* the pairing's profile, e.g. "h200" */
    int shadow;              /* 1: the host shadow build */
    const char *uuid;        /* the device asked for at build time (--gpu-uuid), or "" */
    uint32_t index;          /* else its index (--gpu-index) */
    const char *ptx;         /* NUL-terminated PTX text ("" in a shadow build) */
    uint32_t n_kernels;
    const char *const *kernel_names;
    const uint8_t *blockwise; /* per kernel: 1 when it is a block-tiled product, which the host
                               * shadow calls once per block (gpu_tiles.py), else 0 */
    uint32_t n_buffers;
    const uint64_t *buffer_bytes;
    const char *const *buffer_what;
    const struct alpha_gpu_arg *args;
    uint32_t n_args;
    const struct alpha_gpu_launch *launches;
    struct alpha_gpu_entry init, leaf, apply, forward;
    struct alpha_gpu_entry sqsum; /* clipping: one gradient-norm node (count 0: no clipping) */
    struct alpha_gpu_entry adds;  /* the leaves' tree: launch d adds sum slot d+1 into slot d */
    uint32_t n_grads;
    const struct alpha_gpu_grad *grads;
    uint32_t params, x, y_class, y_reg, state, grad_sum, scalars; /* buffers */
    uint32_t leaf_scalars; /* the round and leaf of the gradient in progress (dropout) */
    uint32_t norm;         /* clipping: the node [lo, hi) asked for (u64 x 2), its value at 16 */
    uint32_t loss, out;
    uint32_t sums;       /* the tree's partial sums: tree_depth + 1 slots of n_params + 1 */
    uint32_t constants;  /* the constant gradient pieces' values, in place */
    uint32_t tree_depth; /* 0: one leaf a round, no tree on the device */
    uint32_t x_all, y_class_all, y_reg_all, leaf_all; /* a node's leaves' inputs, all at once */
    const float *clip_sqsum; /* clipping: the round's sum of squares (clip_norm.c sets it) */
    uint64_t demand;         /* device bytes the role needs (memory admission) */
    const char *breakdown;   /* what they are, one line */
};

extern const struct alpha_gpu_program ALPHA_GPU;

/* Clipping on a GPU role: the value of gradient-norm node [lo, hi) of grad_sum, computed on
 * the device (gpu_role.c); the generated program's alpha_grad_sqsum calls it. */
float alpha_gpu_grad_sqsum(const float *grad_sum, uint64_t lo, uint64_t hi);

/* A kernel of the host shadow: output t of a launch whose arguments are at args, or (a
 * blockwise kernel) every output of block t, its threads run phase by phase. */
typedef void (*alpha_shadow_kernel)(const uint64_t *args, uint64_t t);
extern const alpha_shadow_kernel ALPHA_SHADOW_KERNELS[];

#endif
