/* The training rows a role of a plan will ever read (data.c): the rows of its own leaves in
 * every round of the run, by the batch selection (batch.h). A role that computes a few of the
 * leaves of a short run reads a few of the rows, and parses only those (and the held-out rows,
 * which evaluation reads); the others were checked by `alpha check` and are covered by the
 * file's digest, so skipping them changes no value and hides no fault. */
#ifndef ALPHA_NEEDED_ROWS_H
#define ALPHA_NEEDED_ROWS_H

#include <stdint.h>

#include "alpha_program.h"

/* One byte per training row (rows - holdout), 1 where the role reads it; NULL when it may read
 * every row: a role without links (a single process, which may also evaluate or predict), or
 * one whose leaves over the run's rounds are at least as many examples as there are rows. The
 * caller frees it. */
uint8_t *needed_rows(const struct alpha_program *p, const struct alpha_role *r);

#endif
