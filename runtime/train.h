/* The training loop of a single-process run: every round evaluates all leaves, combines them by
 * the canonical tree and applies the learner. */
#ifndef ALPHA_TRAIN_H
#define ALPHA_TRAIN_H

#include "alpha_program.h"
#include "data.h"

/* Trains params (initialised by the caller) for p->steps rounds; emits a step event per round
 * unless quiet. Returns the last round's loss (0 when steps is 0). */
float train(const struct alpha_program *p, const struct dataset *d, float *params, int quiet);

#endif
