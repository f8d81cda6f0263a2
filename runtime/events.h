/* JSON-lines events on stdout: one object per line, flushed at once, so the CLI and the TUI can
 * follow a run. Floats appear here for reporting only; nothing printed is read back. */
#ifndef ALPHA_EVENTS_H
#define ALPHA_EVENTS_H

#include <stdint.h>
#include <stdio.h>

#include "alpha_program.h"

/* One addition of the combine tree: node [lo, hi) = [lo, mid) + [mid, hi). */
struct addition {
    uint32_t lo, mid, hi;
};

/* What the done event reports. params_file is NULL for a role that writes no parameters. */
struct run_report {
    const char *role;
    uint32_t steps;
    float final_loss;           /* meaningful when steps > 0 */
    const char *params_file;
    char params_sha256[65];
    uint32_t holdout_rows;
    double holdout_metric;      /* accuracy (class kind) or mean squared error (regression) */
    int evaluate_only;          /* --evaluate-only: params_sha256 and the metric, no file */
};

/* At start: a closed stdout pipe is a failed write (EPIPE), never SIGPIPE. */
void events_init(void);
/* The errno of the first event that could not be written (this module's or any other write
 * to stdout), or 0 when every one was. */
int events_lost(void);

/* Writes s as a JSON string literal, quotes included. */
void json_string(FILE *f, const char *s);

void event_start(const struct alpha_program *p);
/* A role of a plan, once its data is loaded: the table's rows, how many of them this role
 * parsed (a CSV; 0 for other formats), and whether it maps rows another role of the launch
 * parsed (runtime/shared_rows.h). */
void event_data(const char *role, uint32_t rows, uint32_t parsed, int shared);
/* step (1-based), the round loss, the role, every addition the role performed this round, in
 * order, as "lo:hi=lo:mid+mid:hi", and the frames it sent and received this round with their
 * bytes (headers included). */
/* The held-out metric of the parameters after `round` rounds (--eval-every). */
void event_evaluated(const struct alpha_program *p, uint32_t round, double metric);
void event_step(uint32_t step, float loss, const char *role, const struct addition *adds,
                uint32_t n_adds, uint64_t frames, uint64_t bytes);
void event_done(const struct alpha_program *p, const struct run_report *r);

#endif
