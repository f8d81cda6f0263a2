/* Resuming from a published checkpoint capture (docs/runtime.md, "Resume"). Every role reads the
 * manifest tree from top.pack down, checks the system identity and the SHA-256 of every
 * manifest and shard, checks that the shards cover every element of every kind once, and then
 * loads the full parameters and the learner state of its own element range, re-cut by logical
 * range from whatever partition wrote them, straight into place. Any refusal
 * (checkpoint-incomplete, checkpoint-malformed, checkpoint-identity-mismatch,
 * checkpoint-digest-mismatch) ends the process before anything loaded is used. */
#ifndef ALPHA_RESUME_H
#define ALPHA_RESUME_H

#include <stdint.h>

#include "alpha_program.h"

struct resumed {
    uint32_t round;         /* rounds completed in the capture */
    float loss;             /* that round's loss (0 with round 0) */
    uint32_t files;         /* packs read */
    uint64_t bytes;         /* bytes read */
    char capture[4096];     /* the capture's folder */
};

/* path: a checkpoint folder (its newest published capture) or a capture folder. Fills params
 * (n_params floats) and, when state is not NULL, the state block of
 * [state_start, state_start + state_count): state_slots arrays of state_count floats, then the
 * learner's scalars. */
void resume_load(const struct alpha_program *p, const char *path, float *params, float *state,
                 uint64_t state_start, uint64_t state_count, struct resumed *out);

#endif
