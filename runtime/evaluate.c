/* Holdout evaluation, for the report only: nothing here feeds back into training, so the
 * double accumulation is harmless. The forward kernel takes leaf_size rows at a time; the last
 * chunk is padded with zero rows whose outputs are ignored. */
#include "evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "refusal.h"

static uint32_t argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;   /* the first maximum wins */
    for (uint32_t k = 1; k < n; k++)
        if (v[k] > v[best])
            best = k;
    return best;
}

double evaluate_holdout(const struct alpha_program *p, const struct dataset *d,
                        const float *params)
{
    if (p->holdout == 0)
        return 0.0;
    uint32_t first = p->rows - p->holdout;
    float *x = checked_calloc((size_t)p->leaf_size * p->features, sizeof(float), "holdout inputs");
    /* class kind: `outputs` floats for each of a row's d->targets labels */
    uint32_t labels = d->y_class ? d->targets : 1;
    float *out = checked_calloc((size_t)p->leaf_size * labels * p->outputs, sizeof(float),
                                "holdout outputs");
    double total = 0.0;
    for (uint32_t start = first; start < p->rows; start += p->leaf_size) {
        uint32_t count = p->rows - start < p->leaf_size ? p->rows - start : p->leaf_size;
        memset(x, 0, (size_t)p->leaf_size * p->features * sizeof(float));
        memcpy(x, d->x + (size_t)start * p->features, (size_t)count * p->features * sizeof(float));
        alpha_forward(params, x, out);
        for (uint32_t i = 0; i < count; i++) {
            const float *o = out + (size_t)i * labels * p->outputs;
            if (d->y_class) {
                for (uint32_t k = 0; k < labels; k++)
                    total += argmax(o + (size_t)k * p->outputs, p->outputs) ==
                             (uint32_t)d->y_class[(size_t)(start + i) * labels + k];
            } else {
                const float *y = d->y_reg + (size_t)(start + i) * p->outputs;
                for (uint32_t k = 0; k < p->outputs; k++) {
                    double e = (double)o[k] - (double)y[k];
                    total += e * e;
                }
            }
        }
    }
    free(x);
    free(out);
    return d->y_class ? total / ((double)p->holdout * labels)
                      : total / ((double)p->holdout * p->outputs);
}
