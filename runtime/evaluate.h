/* The holdout report: accuracy (class kind) or mean squared error (regression kind). */
#ifndef ALPHA_EVALUATE_H
#define ALPHA_EVALUATE_H

#include "alpha_program.h"
#include "data.h"

/* Evaluates the last p->holdout rows with alpha_forward; 0 when there are none. */
double evaluate_holdout(const struct alpha_program *p, const struct dataset *d,
                        const float *params);

#endif
