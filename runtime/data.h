/* The data set: loaded once at start-up, its digest checked against ALPHA_PROGRAM.data_sha256
 * before anything is parsed. */
#ifndef ALPHA_DATA_H
#define ALPHA_DATA_H

#include <stdint.h>

#include "alpha_program.h"

struct dataset {
    uint32_t rows;
    uint32_t features;
    uint32_t targets;          /* y per row: labels (class kind: 1, or label_positions) or
                                * outputs floats (regression) */
    const float *x;            /* rows * features */
    const int32_t *y_class;    /* rows * targets labels in [0, outputs), class kind; else NULL */
    const float *y_reg;        /* rows * outputs targets, regression kind; else NULL */
    uint32_t parsed;           /* CSV rows this role parsed (the rest it never reads, or
                                * another role of the launch parsed: shared) */
    int shared;                /* the rows are another role's, mapped (shared_rows.h) */
};

/* Loads the data named by the program (path overrides data_path for the CSV kind; may be NULL).
 * Refuses with data-missing, data-unreadable, data-digest-mismatch or data-malformed. */
void data_load(const struct alpha_program *p, const char *path, struct dataset *out);
/* A CSV field's number: exactly [+-]digits[.digits][e[+-]digits] (no inf, nan or hex), and
 * finite once read as a float. The executable's predictions read their inputs by these too. */
int data_is_decimal(const char *s);
int data_is_finite(float v);

#endif
