/* Which examples form each leaf: leaf l of round t is a pure function of (t, l), so any role
 * can gather the leaves it is assigned without asking anyone. Specified in docs/runtime.md and
 * reproduced by alpha_core/link/batch_reference.py. */
#ifndef ALPHA_BATCH_H
#define ALPHA_BATCH_H

#include <stdint.h>

#include "alpha_program.h"
#include "data.h"

uint64_t splitmix64(uint64_t x);
/* A bijection on [0, n): position q of epoch `epoch` goes to the returned row. n >= 1. */
uint64_t batch_permute(uint64_t seed, uint64_t epoch, uint64_t q, uint64_t n);
/* Training row of example i of leaf `leaf` in round t (0-based). */
uint32_t batch_row(const struct alpha_program *p, uint32_t train_rows, uint32_t t,
                   uint32_t leaf, uint32_t i);
/* Copies the leaf's leaf_size examples: x gets leaf_size * features floats; y_class (class kind)
 * leaf_size labels or y_reg (regression kind) leaf_size * outputs floats. */
void batch_gather(const struct alpha_program *p, const struct dataset *d, uint32_t train_rows,
                  uint32_t t, uint32_t leaf, float *x, int32_t *y_class, float *y_reg);

#endif
