/* A GPU role's kernels: the entry points of alpha_program.h, each a fixed sequence of launches
 * on the role's device (gpu.h). Parameters and learner state live on the device: the update
 * leaves the host's copies stale and the schedule fetches what it reads (schedule.h's
 * alpha_device_fetch_*), and the host's copies go over only where they differ from what the
 * device holds. A node of the role's leaves is summed on the device by the canonical tree. The
 * runtime's schedule, frames and checkpoints stay the host's. Linked only into GPU roles (gpu_*.c are not part of every
 * executable), with gpu_cuda.c or gpu_shadow.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpha_program.h"
#include "events.h"
#include "gpu.h"
#include "gpu_program.h"
#include "refusal.h"

/* The host kernels' contract with pool.c: a GPU role runs no host tasks. */
const uint64_t alpha_scratch_floats = 0;
void (*const alpha_threads_hook)(uint32_t threads) = 0;

static struct {
    struct alpha_gpu_device dev;
    uint64_t *addr;      /* device address of each buffer */
    uint64_t args;       /* device address of the argument table */
    uint64_t kernel_us;  /* kernel time since the last step event */
    uint64_t to_device;  /* bytes copied to the device since the last step event */
    uint64_t to_host;    /* and back */
    float *params;       /* what the device's parameters hold, as the host last saw them */
    float *state;        /* and its learner state */
    struct span { uint64_t start, count; } *newer; /* parameters the device updated and the
                                                    * host has not fetched */
    uint32_t n_newer, cap_newer;
    int state_newer;      /* the device updated the state and the host has not fetched it */
    uint64_t state_floats; /* the state the update keeps on the device */
    const char *uuid;    /* --gpu-uuid */
    int64_t index;       /* --gpu-index; -1: the build's */
    int started;
} G = {.index = -1};

int alpha_device_option(const char *flag, const char *value);
const char *alpha_device_usage(void);
void alpha_device_start(void);
uint64_t alpha_device_kernel_us(void);
void alpha_device_copies(uint64_t *to_device, uint64_t *to_host);
void alpha_device_fetch_params(float *params, uint64_t start, uint64_t count);
void alpha_device_fetch_state(float *state);
void alpha_device_params_written(uint64_t start, uint64_t count);
void alpha_device_kernels_event(void);

/* --gpu-uuid UUID | --gpu-index N: which device (a deployment input; the build's otherwise).
 * Returns 1 when the flag is one of these and its value was used. */
int alpha_device_option(const char *flag, const char *value)
{
    if (strcmp(flag, "--gpu-uuid") == 0) {
        if (!value || !*value)
            refuse(REFUSAL_USAGE, "--gpu-uuid needs a device UUID such as GPU-5f1c0a9e-...");
        G.uuid = value;
        return 1;
    }
    if (strcmp(flag, "--gpu-index") == 0) {
        const char *n = value ? value : "";
        if (!*n || strspn(n, "0123456789") != strlen(n) || strlen(n) > 4)
            refuse(REFUSAL_USAGE, "--gpu-index needs a device index from 0, not '%s'", n);
        G.index = strtol(n, NULL, 10);
        G.uuid = NULL;
        return 1;
    }
    return 0;
}

const char *alpha_device_usage(void)
{
    return ALPHA_GPU.shadow
               ? "This is the host shadow of a GPU role (a control, not a GPU run).\n"
               : "  --gpu-uuid UUID        the GPU to run on, as nvidia-smi -L prints it\n"
                 "  --gpu-index N          else the N-th GPU the driver lists (default: the\n"
                 "                         build's, else the first)\n";
}

static void device_event(void)
{
    const struct alpha_gpu_device *d = &G.dev;
    printf("{\"event\":\"device\",\"role\":");
    json_string(stdout, alpha_role()->name);
    printf(",\"target\":");
    char target[96];
    snprintf(target, sizeof target, "gpu %s%s", ALPHA_GPU.profile,
             ALPHA_GPU.shadow ? " (shadow)" : "");
    json_string(stdout, target);
    printf(",\"shadow\":%s,\"name\":", ALPHA_GPU.shadow ? "true" : "false");
    json_string(stdout, d->name);
    printf(",\"uuid\":");
    json_string(stdout, d->uuid);
    printf(",\"memory\":%llu,\"free\":%llu,\"demand\":%llu,\"compute_capability\":\"%d.%d\","
           "\"kernels\":%u}\n",
           (unsigned long long)d->total_bytes, (unsigned long long)d->free_bytes,
           (unsigned long long)ALPHA_GPU.demand, d->cc_major, d->cc_minor,
           (unsigned)ALPHA_GPU.n_kernels);
    fflush(stdout);
}

/* Before `done`: every kernel launched in the run, the most time first (ties: the build's
 * order), with its launches and microseconds, so that a run on a card says where its time went. */
void alpha_device_kernels_event(void)
{
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    const uint64_t *us = alpha_gpu_kernel_us(), *launched = alpha_gpu_kernel_launches();
    if (!G.started || !us || !launched)
        return;
    uint32_t *order = checked_calloc(g->n_kernels ? g->n_kernels : 1, sizeof *order,
                                     "the kernels event");
    uint32_t n = 0;
    for (uint32_t k = 0; k < g->n_kernels; k++) {
        if (!launched[k])
            continue;
        uint32_t i = n++;
        for (; i > 0 && us[order[i - 1]] < us[k]; i--)
            order[i] = order[i - 1];
        order[i] = k;
    }
    printf("{\"event\":\"kernels\",\"role\":");
    json_string(stdout, alpha_role()->name);
    printf(",\"kernels\":[");
    for (uint32_t i = 0; i < n; i++) {
        printf(i ? ",{\"name\":" : "{\"name\":");
        json_string(stdout, g->kernel_names[order[i]]);
        printf(",\"launches\":%llu,\"us\":%llu}", (unsigned long long)launched[order[i]],
               (unsigned long long)us[order[i]]);
    }
    printf("]}\n");
    fflush(stdout);
    free(order);
}

/* Before anything is read or written: the device, its memory, the module, the buffers. */
void alpha_device_start(void)
{
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    const char *uuid = G.uuid ? G.uuid : G.index >= 0 ? NULL : g->uuid;
    uint32_t index = G.index >= 0 ? (uint32_t)G.index : g->index;
    alpha_gpu_open(uuid, index, &G.dev);
    device_event();
    alpha_gpu_admit(&G.dev, g->demand, g->breakdown);
    alpha_gpu_load(g->ptx, g->n_kernels, g->kernel_names);
    G.addr = checked_calloc(g->n_buffers, sizeof *G.addr, "the device buffer table");
    for (uint32_t b = 0; b < g->n_buffers; b++)
        G.addr[b] = alpha_gpu_alloc(g->buffer_bytes[b], g->buffer_what[b]);
    uint64_t *table = checked_calloc(g->n_args ? g->n_args : 1, sizeof *table,
                                     "the kernels' argument table");
    for (uint32_t a = 0; a < g->n_args; a++)
        table[a] = G.addr[g->args[a].buffer] + g->args[a].offset;
    G.args = alpha_gpu_alloc(8 * (uint64_t)(g->n_args ? g->n_args : 1), "the argument table");
    alpha_gpu_upload(G.args, table, 8 * (uint64_t)g->n_args);
    free(table);
    uint64_t n_state = (uint64_t)ALPHA_PROGRAM.state_slots * ALPHA_PROGRAM.n_params +
                       ALPHA_PROGRAM.state_scalars;
    G.params = checked_calloc(ALPHA_PROGRAM.n_params ? ALPHA_PROGRAM.n_params : 1, sizeof(float),
                              "the device parameters' mirror");
    G.state = checked_calloc(n_state ? n_state : 1, sizeof(float), "the device state's mirror");
    /* the mirrors say zeros: make it so (cuMemAlloc does not clear) */
    alpha_gpu_upload(G.addr[g->params], G.params, 4 * ALPHA_PROGRAM.n_params);
    alpha_gpu_upload(G.addr[g->state], G.state, 4 * n_state);
    if (g->tree_depth) { /* the constant gradient pieces' values, where the tree reads them */
        float *values = checked_calloc(ALPHA_PROGRAM.n_params ? ALPHA_PROGRAM.n_params : 1,
                                       sizeof(float), "the constant gradients");
        int any = 0;
        for (uint32_t i = 0; i < g->n_grads; i++)
            if (g->grads[i].buffer < 0) {
                for (uint64_t j = 0; j < g->grads[i].count; j++)
                    values[g->grads[i].offset + j] = g->grads[i].value;
                any = 1;
            }
        if (any)
            alpha_gpu_upload(G.addr[g->constants], values, 4 * ALPHA_PROGRAM.n_params);
        free(values);
    }
    G.started = 1;
}

/* The bytes copied each way since the last call (the step event's to_device and to_host). */
void alpha_device_copies(uint64_t *to_device, uint64_t *to_host)
{
    *to_device = G.to_device;
    *to_host = G.to_host;
    G.to_device = G.to_host = 0;
}

static void up(uint64_t dst, const void *src, uint64_t bytes)
{
    alpha_gpu_upload(dst, src, bytes);
    G.to_device += bytes;
}

static void down(void *dst, uint64_t src, uint64_t bytes)
{
    alpha_gpu_download(dst, src, bytes);
    G.to_host += bytes;
}

/* State that lives on the device across calls (parameters, learner state): `host[0..n)` is
 * copied to device buffer `dst` only in the runs of floats where it differs from `mirror`,
 * what the device holds, compared bit for bit; the mirror then matches. The runtime changes
 * these arrays itself only when it receives parameters from another role or resumes. */
#define SYNC_RUN 4096u
static void sync_up(uint64_t dst, float *mirror, const float *host, uint64_t n)
{
    for (uint64_t at = 0; at < n;) {
        uint64_t len = n - at < SYNC_RUN ? n - at : SYNC_RUN;
        if (memcmp(mirror + at, host + at, 4 * len) == 0) {
            at += len;
            continue;
        }
        uint64_t end = at + len; /* extend over the following runs that differ too */
        while (end < n) {
            uint64_t next = n - end < SYNC_RUN ? n - end : SYNC_RUN;
            if (memcmp(mirror + end, host + end, 4 * next) == 0)
                break;
            end += next;
        }
        memcpy(mirror + at, host + at, 4 * (end - at));
        up(dst + 4 * at, host + at, 4 * (end - at));
        at = end;
    }
}

uint64_t alpha_device_kernel_us(void)
{
    uint64_t us = G.kernel_us;
    G.kernel_us = 0;
    return us;
}

/* The launches of entry e, back to back, without waiting for them. */
static void issue(struct alpha_gpu_entry e, uint64_t dynamic)
{
    if (!G.started)
        refuse(REFUSAL_PROGRAM_INVALID, "a GPU kernel was called before the device started");
    for (uint32_t i = e.first; i < e.first + e.count; i++) {
        const struct alpha_gpu_launch *l = &ALPHA_GPU.launches[i];
        uint64_t threads = l->threads ? l->threads : dynamic;
        if (threads)
            alpha_gpu_launch(l->kernel, G.args + 8 * (uint64_t)l->first_arg, threads);
    }
}

static void run(struct alpha_gpu_entry e, uint64_t dynamic)
{
    issue(e, dynamic);
    G.kernel_us += alpha_gpu_sync();
}

static uint64_t at(uint32_t buffer, uint64_t float_offset)
{
    return G.addr[buffer] + 4 * float_offset;
}

void alpha_init_params(float *params)
{
    run(ALPHA_GPU.init, 0);
    down(params, at(ALPHA_GPU.params, 0), 4 * ALPHA_PROGRAM.n_params);
    memcpy(G.params, params, 4 * ALPHA_PROGRAM.n_params);
}

/* sync_up of parameters [lo, lo + n) of the host's array `host` (the whole flat array), except
 * where the device holds newer values than the host (its own update, not fetched yet). */
static void sync_params(const float *host, uint64_t lo, uint64_t n)
{
    uint64_t at_ = lo, end = lo + n;
    while (at_ < end) {
        uint64_t next = end; /* the first device-newer span at or after at_ */
        uint64_t skip_to = at_;
        for (uint32_t i = 0; i < G.n_newer; i++) {
            const struct span *v = &G.newer[i];
            if (v->start + v->count <= at_ || v->start >= end)
                continue;
            if (v->start <= at_) {
                if (v->start + v->count > skip_to)
                    skip_to = v->start + v->count;
            } else if (v->start < next) {
                next = v->start;
            }
        }
        if (skip_to > at_) { /* at_ lies in a newer span: go past it */
            at_ = skip_to;
            continue;
        }
        sync_up(at(ALPHA_GPU.params, at_), G.params + at_, host + at_, next - at_);
        at_ = next;
    }
}

/* Parameters [start, start + count) the device has and the host needs: each device-newer part
 * copied back into `params` (the flat array) and the mirror, and no longer newer. */
void alpha_device_fetch_params(float *params, uint64_t start, uint64_t count)
{
    uint64_t end = start + count;
    for (uint32_t i = 0; i < G.n_newer;) {
        struct span v = G.newer[i];
        uint64_t lo = v.start > start ? v.start : start;
        uint64_t hi = v.start + v.count < end ? v.start + v.count : end;
        if (lo >= hi) {
            i++;
            continue;
        }
        down(params + lo, at(ALPHA_GPU.params, lo), 4 * (hi - lo));
        memcpy(G.params + lo, params + lo, 4 * (hi - lo));
        /* what is left of the span: before lo and after hi */
        G.newer[i] = G.newer[--G.n_newer];
        if (v.start < lo)
            G.newer[G.n_newer++] = (struct span){v.start, lo - v.start};
        if (hi < v.start + v.count) {
            G.newer = checked_grow(G.newer, G.n_newer, &G.cap_newer, sizeof *G.newer, 4,
                                   "the device's newer parameters");
            G.newer[G.n_newer++] = (struct span){hi, v.start + v.count - hi};
        }
    }
}

void alpha_device_fetch_state(float *state)
{
    if (!G.state_newer)
        return;
    down(state, at(ALPHA_GPU.state, 0), 4 * G.state_floats);
    memcpy(G.state, state, 4 * G.state_floats);
    G.state_newer = 0;
}

/* The host received parameters [start, start + count) from another role. A role never
 * receives parameters it updates itself (its plan's owners are disjoint): if it did, the
 * device's values and the host's would both claim to be the newest. */
void alpha_device_params_written(uint64_t start, uint64_t count)
{
    for (uint32_t i = 0; i < G.n_newer; i++)
        if (G.newer[i].start < start + count && start < G.newer[i].start + G.newer[i].count)
            refuse(REFUSAL_PROGRAM_INVALID,
                   "%s receives parameters %llu..%llu, which it updates itself",
                   alpha_role()->name, (unsigned long long)start,
                   (unsigned long long)(start + count));
}

static void mark_newer(uint64_t start, uint64_t count)
{
    for (uint32_t i = 0; i < G.n_newer; i++)
        if (G.newer[i].start == start && G.newer[i].count == count)
            return;
    G.newer = checked_grow(G.newer, G.n_newer, &G.cap_newer, sizeof *G.newer, 4,
                           "the device's newer parameters");
    G.newer[G.n_newer++] = (struct span){start, count};
}

float alpha_leaf_grad(const float *params, const float *x, const int32_t *y_class,
                      const float *y_reg, float *grad)
{
    const struct alpha_program *p = &ALPHA_PROGRAM;
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    uint64_t rows = p->leaf_size;
    sync_params(params, 0, p->n_params);
    up(at(g->x, 0), x, 4 * rows * p->features);
    if (y_class)
        up(at(g->y_class, 0), y_class,
                         4 * rows * (p->label_positions ? p->label_positions : 1));
    if (y_reg)
        up(at(g->y_reg, 0), y_reg, 4 * rows * p->outputs);
    uint32_t leaf[2] = {alpha_leaf_round, alpha_leaf_index}; /* dropout's (t, l) */
    up(at(g->leaf_scalars, 0), leaf, sizeof leaf);
    run(g->leaf, 0);
    for (uint32_t i = 0; i < g->n_grads; i++) {
        const struct alpha_gpu_grad *q = &g->grads[i];
        if (q->buffer < 0) {
            for (uint64_t j = 0; j < q->count; j++)
                grad[q->offset + j] = q->value;
        } else {
            down(grad + q->offset, at((uint32_t)q->buffer, 0), 4 * q->count);
        }
    }
    float loss;
    down(&loss, at(g->loss, 0), sizeof loss);
    return loss;
}

/* ---- a node of the role's leaves on the device ------------------------------------------
 *
 * The schedule hands a GPU role all the leaves of a tree node it computes at once
 * (alpha_leaves_grad, schedule.c): each leaf runs as alpha_leaf_grad's launches do, its
 * gradient pieces and loss are copied on the device into a slot of partial sums, and the
 * canonical tree's additions run as kernels (launch d of `adds`: slot d += slot d + 1, every
 * element, left + right as the host adds two pieces). Only the node's sum crosses the bus. */
int alpha_leaves_batch(uint32_t count);
float alpha_leaves_grad(const float *params, const float *x, const int32_t *y_class,
                        const float *y_reg, float *grad, uint32_t count);

int alpha_leaves_batch(uint32_t count)
{
    return ALPHA_GPU.tree_depth && count >= 2 && count <= ALPHA_PROGRAM.leaves;
}

/* Leaf j of the node into sum slot `slot`: its inputs copied on the device from where they
 * were copied over together, its launches, its gradient pieces and loss copied into the slot.
 * Nothing here waits for the device. */
static void leaf_into(uint32_t slot, uint32_t j)
{
    const struct alpha_program *p = &ALPHA_PROGRAM;
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    uint64_t rows = p->leaf_size;
    uint64_t labels = p->label_positions ? p->label_positions : 1;
    alpha_gpu_copy(at(g->x, 0), at(g->x_all, j * rows * p->features), 4 * rows * p->features);
    alpha_gpu_copy(at(g->y_class, 0), at(g->y_class_all, j * rows * labels), 4 * rows * labels);
    alpha_gpu_copy(at(g->y_reg, 0), at(g->y_reg_all, j * rows * p->outputs),
                   4 * rows * p->outputs);
    alpha_gpu_copy(at(g->leaf_scalars, 0), at(g->leaf_all, 2 * (uint64_t)j), 8);
    issue(g->leaf, 0);
    uint64_t base = at(g->sums, (uint64_t)slot * (p->n_params + 1));
    for (uint32_t i = 0; i < g->n_grads; i++) {
        const struct alpha_gpu_grad *q = &g->grads[i];
        uint64_t from = q->buffer < 0 ? at(g->constants, q->offset) : at((uint32_t)q->buffer, 0);
        alpha_gpu_copy(base + 4 * q->offset, from, 4 * q->count);
    }
    alpha_gpu_copy(base + 4 * p->n_params, at(g->loss, 0), sizeof(float));
}

/* Node [lo, hi) of the leaves (0-based in the batch) into slot `slot`: its left child there,
 * its right child in the next slot, then their sum. */
static void node_into(uint32_t slot, uint32_t lo, uint32_t hi)
{
    if (hi - lo == 1) {
        leaf_into(slot, lo);
        return;
    }
    uint32_t half = 1;
    while (2 * half < hi - lo)
        half *= 2; /* the largest power of two strictly below hi - lo */
    node_into(slot, lo, lo + half);
    node_into(slot + 1, lo + half, hi);
    if (slot >= ALPHA_GPU.tree_depth)
        refuse(REFUSAL_PROGRAM_INVALID, "a node of %u leaves is deeper than the role's tree",
               (unsigned)(hi - lo));
    struct alpha_gpu_entry add = {ALPHA_GPU.adds.first + slot, 1};
    issue(add, 0);
}

float alpha_leaves_grad(const float *params, const float *x, const int32_t *y_class,
                        const float *y_reg, float *grad, uint32_t count)
{
    const struct alpha_program *p = &ALPHA_PROGRAM;
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    if (!alpha_leaves_batch(count))
        refuse(REFUSAL_PROGRAM_INVALID, "%u leaves asked of a GPU role at once", (unsigned)count);
    sync_params(params, 0, p->n_params);
    /* every leaf's inputs over in one copy each; then the leaves and the tree, back to back */
    uint64_t rows = (uint64_t)p->leaf_size * count;
    uint64_t labels = p->label_positions ? p->label_positions : 1;
    up(at(g->x_all, 0), x, 4 * rows * p->features);
    if (y_class)
        up(at(g->y_class_all, 0), y_class, 4 * rows * labels);
    if (y_reg)
        up(at(g->y_reg_all, 0), y_reg, 4 * rows * p->outputs);
    uint32_t *leaf = checked_calloc(2 * (size_t)count, sizeof *leaf, "the leaves' indices");
    for (uint32_t j = 0; j < count; j++)
        leaf[2 * j] = alpha_leaf_round, leaf[2 * j + 1] = alpha_leaf_index + j; /* dropout */
    up(at(g->leaf_all, 0), leaf, 8 * (uint64_t)count);
    free(leaf);
    node_into(0, 0, count);
    G.kernel_us += alpha_gpu_sync();
    down(grad, at(g->sums, 0), 4 * p->n_params);
    float loss;
    down(&loss, at(g->sums, p->n_params), sizeof loss);
    return loss;
}

float alpha_gpu_grad_sqsum(const float *grad_sum, uint64_t lo, uint64_t hi)
{
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    uint64_t node[2] = {lo, hi};
    up(at(g->grad_sum, lo), grad_sum + lo, 4 * (hi - lo));
    up(at(g->norm, 0), node, sizeof node);
    run(g->sqsum, 0);
    float value;
    down(&value, at(g->norm, 4), sizeof value);
    return value;
}

void alpha_apply(float *params, float *state, const float *grad_sum, uint32_t step,
                 uint64_t start, uint64_t count)
{
    const struct alpha_program *p = &ALPHA_PROGRAM;
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    uint64_t n_state = (uint64_t)p->state_slots * count + p->state_scalars;
    uint64_t scalars[6] = {start, count, step, 0, 0, 0};
    if (g->clip_sqsum) /* float 11: the round's sum of squares (gpu_kernels.SCALAR_SQSUM) */
        memcpy((char *)scalars + 44, g->clip_sqsum, sizeof(float));
    sync_params(params, start, count);
    up(at(g->grad_sum, start), grad_sum + start, 4 * count);
    if (n_state && !G.state_newer)
        sync_up(at(g->state, 0), G.state, state, n_state);
    up(at(g->scalars, 0), scalars, sizeof scalars);
    run(g->apply, count);
    /* the updated parameters and state stay on the device, newer than the host's copies
     * until the schedule fetches them (alpha_device_fetch_params, _state) */
    mark_newer(start, count);
    G.state_newer = n_state > 0;
    G.state_floats = n_state;
}

void alpha_forward(const float *params, const float *x, float *out)
{
    const struct alpha_program *p = &ALPHA_PROGRAM;
    const struct alpha_gpu_program *g = &ALPHA_GPU;
    sync_params(params, 0, p->n_params);
    up(at(g->x, 0), x, 4 * (uint64_t)p->leaf_size * p->features);
    run(g->forward, 0);
    uint64_t labels = p->label_positions ? p->label_positions : 1; /* a label's outputs each */
    down(out, at(g->out, 0), 4 * (uint64_t)p->leaf_size * labels * p->outputs);
}
