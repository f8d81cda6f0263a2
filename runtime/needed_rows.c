/* The training rows a role reads (needed_rows.h). */
#include "needed_rows.h"

#include <stdlib.h>

#include "batch.h"
#include "refusal.h"

uint8_t *needed_rows(const struct alpha_program *p, const struct alpha_role *r)
{
    uint32_t train = p->rows - p->holdout;
    if (r->n_links == 0 || train == 0)
        return NULL;
    uint64_t leaves = 0;
    for (uint32_t k = 0; k < r->n_ops; k++)
        if (r->ops[k].kind == ALPHA_OP_COMPUTE && r->ops[k].b > r->ops[k].a)
            leaves += r->ops[k].b - r->ops[k].a;
    /* examples the role reads over the run; as many as there are rows: it may read them all */
    if (leaves && (uint64_t)p->steps * p->leaf_size >= (train + leaves - 1) / leaves)
        return NULL;
    uint8_t *needed = checked_calloc(train, 1, "the rows a role reads");
    for (uint32_t t = 0; t < p->steps; t++)
        for (uint32_t k = 0; k < r->n_ops; k++) {
            const struct alpha_op *op = &r->ops[k];
            if (op->kind != ALPHA_OP_COMPUTE)
                continue;
            for (uint32_t leaf = op->a; leaf < op->b && leaf < p->leaves; leaf++)
                for (uint32_t i = 0; i < p->leaf_size; i++)
                    needed[batch_row(p, train, t, leaf, i)] = 1;
        }
    return needed;
}
