/* Predictions on new inputs: the system's forward pass (alpha_forward) over rows of features
 * read from a file, its outputs written to another (docs/runtime.md, "Predictions"). New inputs
 * are not training data: no digest of them is compiled in or checked, but every row is. */
#ifndef ALPHA_PREDICT_H
#define ALPHA_PREDICT_H

#include <stdint.h>

#include "alpha_program.h"

/* Reads `input` (CSV rows of p->features decimal numbers, or a little-endian float32 .npy of
 * shape (rows, features) or (features,)), runs alpha_forward on leaf_size rows at a time and
 * writes every row's outputs to `out`: a float32 .npy of shape (rows, per_row) when out ends
 * in ".npy", else CSV (one line per row, each float with 9 significant digits, which reads back
 * as the same float32). Refuses predict-input-unreadable or predict-input-malformed before
 * writing anything. Returns the rows predicted; *per_row gets the floats per row. */
uint32_t predict_file(const struct alpha_program *p, const float *params, const char *input,
                      const char *out, uint32_t *per_row);

/* The flat parameters of a .params file (n_params little-endian float32) into params, or
 * refuses params-file-mismatch. */
void predict_read_params(const struct alpha_program *p, const char *path, float *params);

#endif
