/* The round loop. The runtime's only arithmetic on training values is the tree's additions and
 * the division of the round loss by the batch; everything else is the compiler's kernels. */
#include "train.h"

#include <stdlib.h>

#include "batch.h"
#include "events.h"
#include "refusal.h"
#include "tree.h"

struct leaf_context {
    const struct alpha_program *p;
    const struct dataset *d;
    uint32_t train_rows;
    uint32_t round;
    const float *params;
    float *x;
    int32_t *y_class;
    float *y_reg;
};

static float compute_leaf(void *context, uint32_t leaf, float *grad)
{
    struct leaf_context *c = context;
    batch_gather(c->p, c->d, c->train_rows, c->round, leaf, c->x, c->y_class, c->y_reg);
    return alpha_leaf_grad(c->params, c->x, c->y_class, c->y_reg, grad);
}

float train(const struct alpha_program *p, const struct dataset *d, float *params, int quiet)
{
    uint64_t n = p->n_params;
    float *state = checked_calloc(p->n_state, sizeof(float), "learner state");
    float *grad = checked_calloc(n, sizeof(float), "the gradient");
    uint32_t depth = tree_depth(p->leaves);
    float **scratch = checked_calloc(depth, sizeof(float *), "the combine tree");
    for (uint32_t i = 0; i < depth; i++)
        scratch[i] = checked_calloc(n, sizeof(float), "the combine tree");

    struct leaf_context c = {
        .p = p,
        .d = d,
        .train_rows = p->rows - p->holdout,
        .params = params,
        .x = checked_calloc((size_t)p->leaf_size * p->features, sizeof(float), "a leaf's inputs"),
        .y_class = d->y_class ? checked_calloc(p->leaf_size, sizeof(int32_t), "a leaf's labels")
                              : NULL,
        .y_reg = d->y_reg ? checked_calloc((size_t)p->leaf_size * p->outputs, sizeof(float),
                                           "a leaf's targets")
                          : NULL,
    };

    float loss = 0.0f;
    for (uint32_t t = 0; t < p->steps; t++) {
        c.round = t;
        float loss_sum = tree_reduce(p->leaves, n, grad, scratch, compute_leaf, &c);
        loss = loss_sum / (float)p->batch;
        alpha_apply(params, state, grad, t);
        if (!quiet)
            event_step(t + 1, loss);
    }

    free(c.x);
    free(c.y_class);
    free(c.y_reg);
    for (uint32_t i = 0; i < depth; i++)
        free(scratch[i]);
    free(scratch);
    free(grad);
    free(state);
    return loss;
}
