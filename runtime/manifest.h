/* The layout of a checkpoint capture, shared by its writer (checkpoint.c) and its reader
 * (resume.c); docs/runtime.md, "Checkpoints", describes it. */
#ifndef ALPHA_MANIFEST_H
#define ALPHA_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "alpha_program.h"
#include "checkpoint.h"

/* The kind name of learner state slot k (k == state_slots: the scalars) into out:
 * "adam.m", "adam.v", "momentum.v", "<learner>.s<k>", "<learner>.scalars". */
void checkpoint_kind(const struct alpha_program *p, uint32_t slot, char out[48]);
/* The slot of kind `name` (0 params, 1 + k slot k, 1 + state_slots the scalars): 1, or 0 when
 * this learner has no such kind. */
int checkpoint_kind_of(const struct alpha_program *p, const char *name, uint32_t *kind);
/* A shard's name in messages: "adam.m/w1.0-603" (kind, tensor, element range), or the kind
 * alone for the scalars. */
void checkpoint_shard_name(const char *kind, const char *tensor, uint64_t start, uint64_t count,
                           char out[240]);
/* "worker[3]" -> "worker-3": role names as file names. */
void checkpoint_role_file(const char *role, char out[128]);
/* The JSON text of a role's manifest: a part's, or (top) the capture's. */
char *manifest_text(const struct capture *c, int top, float loss, size_t *size);
/* Whether name is a published capture's folder name, round-<digits>; its round in *round. */
int manifest_published(const char *name, uint64_t *round);
/* A relative file name inside the capture: not absolute, no ".." component. */
int manifest_safe_name(const char *name);
/* The capture folder `path` names: path itself when it holds top.pack (refused when it is a
 * partial folder), else its published capture of the highest round. Refuses
 * checkpoint-incomplete when there is none. */
void manifest_locate(const char *path, char out[4096]);

#endif
