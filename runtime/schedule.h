/* The schedule interpreter: every round, a role runs the ops of ALPHA_ROLE in order over a
 * table of pieces keyed by canonical-tree node [lo, hi). A piece is n_params gradient floats and
 * one loss float: the sums over the node's leaves, added in the canonical tree's order. A role
 * may hold only elements [start, start + count) of a piece (gradients delivered partitioned);
 * the loss float travels with every part.
 *
 * Before anything else the schedule is run once "dry" (no arithmetic, no network, checkpoint ops
 * included) to check it (schedule_check.c): every piece it combines, sends or applies is held,
 * nothing is held twice, APPLY comes once at most, a checkpoint writes only parameters the round
 * updated and state the round applied. A COMPUTE directly followed by a COMBINE that covers its
 * leaves, whose leaf pieces nothing else uses, is folded into that COMBINE: the leaves are
 * computed as the tree walk reaches them, so a single-process round holds ceil(log2 leaves) + 1
 * vectors rather than one per leaf.
 *
 * A round stages its updates: APPLY and RECV_PARAMS write `staged` (and `state_staged`), SEND_PARAMS
 * and CHECKPOINT read them, and they are committed to `params` and `state` once every op of the
 * round has run. A refusal ends the process and writes nothing, so the staged copies are the
 * committed ones, updated in place, except that `staged` is a copy of its own when a RECV_PARAMS
 * comes before a leaf computation (stage.c). */
#ifndef ALPHA_SCHEDULE_H
#define ALPHA_SCHEDULE_H

#include <stdint.h>

#include "alpha_program.h"
#include "checkpoint.h"
#include "data.h"
#include "events.h"
#include "net.h"

struct piece {
    uint32_t lo, hi;
    int held;               /* in the current round */
    uint64_t start, count;  /* the elements held (0, n_params: all of them) */
    float *data;            /* n_params + 1 floats, allocated on first use and kept */
};

struct range {
    uint64_t start, count;
};

/* A node [lo, hi) of the canonical tree over the gradient's elements and its value, the sum of
 * the squared mean gradient over those elements (clip_norm.c). */
struct norm_node {
    uint64_t lo, hi;
    float value;
};

struct schedule {
    const struct alpha_program *p;
    const struct alpha_role *r;
    uint8_t *fused;               /* per op: 1 for a COMPUTE folded into the next COMBINE */
    uint8_t *defers;              /* per op: 1 for a COMBINE that may leave its sum to APPLY */
    int deferred;                 /* this round's gradient is left to the learner */
    /* the round's gradient left to the learner: left + right, added as APPLY reads it; its loss
     * float is added now (NULLs when the round's gradient is a vector) */
    const float *defer_left, *defer_right;
    float defer_loss;
    struct piece *pieces;
    uint32_t n_pieces, cap_pieces;
    float **spare;                /* vectors for the combine walk's sums (schedule.c) */
    uint32_t n_spare, cap_spare;
    uint32_t live, most;          /* the walk's vectors now, and the most at once (dry run) */
    uint32_t combines;            /* COMBINE ops of a round: each piece keeps its sum */
    uint32_t batch_leaves;        /* the most leaves computed at once (alpha_leaves_grad) */
    struct addition *adds;        /* this round's additions, in order */
    uint32_t n_adds, cap_adds;
    uint32_t lazy_lo, lazy_hi;    /* leaves the running COMBINE computes itself */
    int dry;
    int applies;                  /* the role has an APPLY op: it holds learner state */
    /* The learning state: committed, and staged by the running round (the same storage unless
     * stage.c says otherwise). */
    float *params, *staged;
    float *state, *state_staged;  /* state_slots * state_count + state_scalars floats */
    uint64_t state_start, state_count, state_floats;
    struct range *touched;        /* parameter ranges the round has updated so far */
    uint32_t n_touched;
    int applied;                  /* the round has applied the learner */
    struct capture capture;
    /* the round being run */
    const struct dataset *d;
    struct net *net;
    float *x, *y_reg;
    int32_t *y_class;
    uint32_t round, first_round;
    int checkpointing;            /* the round is a checkpoint round */
    uint32_t step_every; /* a step event every this many rounds and the last; 0: none */
    uint32_t eval_every; /* the held-out metric every this many rounds (single process); 0: none */
    float loss;
    /* clipping by global norm (clip_norm.c): this round's norm nodes, and the values sent */
    struct norm_node *norms;
    uint32_t n_norms, cap_norms;
    float *norm_out;
    uint32_t n_out, cap_out;
};

/* Clipping by global norm: runs NORM_SEND, NORM_RECV and, before APPLY, sets the round's sum
 * of squares for the kernels. The kernels of a system that clips define alpha_clip_hook (it
 * points at clip_norm_run); for any other it is NULL, and clip_norm.c is not linked in. */
typedef const char *clip_hook_fn(struct schedule *s, const struct alpha_op *op);
extern clip_hook_fn *const alpha_clip_hook __attribute__((weak));

/* A GPU role keeps its parameters and learner state on the device (gpu_role.c): its update
 * leaves the host's copies as they were, and the schedule asks for them where the host reads
 * them (parameters sent, captured or written at the end; state captured) and says where it
 * wrote parameters itself (received). Undefined in host roles. */
void alpha_device_fetch_params(float *params, uint64_t start, uint64_t count)
    __attribute__((weak));
void alpha_device_fetch_state(float *state) __attribute__((weak));
void alpha_device_params_written(uint64_t start, uint64_t count) __attribute__((weak));
const char *clip_norm_run(struct schedule *s, const struct alpha_op *op);

/* Checks ALPHA_ROLE against the program (refusing program-invalid) and prepares s. */
void schedule_check(struct schedule *s, const struct alpha_program *p,
                    const struct alpha_role *r);

/* Allocates the learning state: parameters from alpha_init_params, learner state zero. */
void schedule_prepare(struct schedule *s, const char *checkpoint_dir);

/* Makes the staged copies equal to params and state (after they were loaded). */
void schedule_restage(struct schedule *s);

/* Runs rounds first_round .. steps-1; returns the last round's loss (s->loss when none ran). */
float schedule_train(struct schedule *s, const struct dataset *d, struct net *net,
                     uint32_t step_every);

/* One round, dry or real (schedule.c): NULL, or why op *failed cannot run (dry runs only). */
const char *schedule_round(struct schedule *s, uint32_t *failed);

/* The staged round (stage.c): parameters [start, start + count) were updated in staged; whether
 * every parameter of a range was; the commit once the round has run whole. */
void stage_touch(struct schedule *s, struct range e);
int stage_updated(const struct schedule *s, struct range e);
void stage_commit(struct schedule *s);

#endif
