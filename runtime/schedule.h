/* The schedule interpreter: every round, a role runs the ops of ALPHA_ROLE in order over a
 * table of pieces keyed by canonical-tree node [lo, hi). A piece is n_params gradient floats and
 * one loss float: the sums over the node's leaves, added in the canonical tree's order.
 *
 * Before anything else the schedule is run once "dry" (no arithmetic, no network) to check it:
 * every piece it combines, sends or applies is held, nothing is held twice, APPLY comes once.
 * A COMPUTE directly followed by a COMBINE that covers its leaves, whose leaf pieces nothing
 * else uses, is folded into that COMBINE: the leaves are computed as the tree walk reaches them,
 * so a single-process round holds ceil(log2 leaves) + 1 vectors rather than one per leaf. */
#ifndef ALPHA_SCHEDULE_H
#define ALPHA_SCHEDULE_H

#include <stdint.h>

#include "alpha_program.h"
#include "data.h"
#include "events.h"
#include "net.h"

struct piece {
    uint32_t lo, hi;
    int held;      /* in the current round */
    float *data;   /* n_params + 1 floats, allocated on first use and kept for later rounds */
};

struct schedule {
    const struct alpha_program *p;
    const struct alpha_role *r;
    uint8_t *fused;               /* per op: 1 for a COMPUTE folded into the next COMBINE */
    struct piece *pieces;
    uint32_t n_pieces, cap_pieces;
    float **scratch;              /* depth vectors for combines' right subtrees */
    uint32_t depth;
    struct addition *adds;        /* this round's additions, in order */
    uint32_t n_adds, cap_adds;
    uint32_t lazy_lo, lazy_hi;    /* leaves the running COMBINE computes itself */
    int dry;
    /* the round being run */
    const struct dataset *d;
    struct net *net;
    float *params, *state, *x, *y_reg;
    int32_t *y_class;
    uint32_t round;
    int quiet;
    float loss;
};

/* Checks ALPHA_ROLE against the program (refusing program-invalid) and prepares s. */
void schedule_check(struct schedule *s, const struct alpha_program *p,
                    const struct alpha_role *r);

/* Runs every round; returns the last round's loss (0 when steps is 0). */
float schedule_train(struct schedule *s, const struct dataset *d, float *params,
                     struct net *net, int quiet);

#endif
