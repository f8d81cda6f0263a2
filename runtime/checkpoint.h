/* Checkpoint captures: what a role writes on checkpoint rounds (docs/runtime.md, "Checkpoints").
 *
 * A capture lives in <checkpoint_dir>/round-<R>/ (R = rounds completed, 8 digits at least).
 * CHECKPOINT writes the role's shards: one per kind of state and tensor slice, named in the
 * manifest by logical identity and element range within the tensor (kind `adam.m`, tensor `w1`,
 * start, count), little-endian float32, appended to the role's one pack file
 * `shards/<role>.f32` (written in place: the capture is unpublished until LATEST names it) at a
 * byte offset, with its SHA-256; the pack is fsynced once. A role with a parent then writes its
 * sub-manifest
 * `manifests/<role>.json` (its shards and its children's sub-manifests, each with its digest) and
 * acknowledges it to the parent with that digest; the root writes `manifest.json` and publishes
 * the capture by renaming `<checkpoint_dir>/LATEST` (the capture's folder name) into place. */
#ifndef ALPHA_CHECKPOINT_H
#define ALPHA_CHECKPOINT_H

#include <stdint.h>

#include "alpha_program.h"

#define CHECKPOINT_FORMAT "alpha-checkpoint/2"
#define CHECKPOINT_PART_FORMAT "alpha-checkpoint-part/2"

struct shard_entry {
    char kind[48];          /* "params", "adam.m", "adam.scalars", ... */
    const char *tensor;     /* the tensor's name; "" for the learner's scalars */
    uint64_t start, count;  /* elements within the tensor (within the scalars) */
    uint64_t offset;        /* bytes into the role's pack file (4 x count of them) */
    char sha256[65];
};

struct child_entry {
    const char *role;
    char file[160];         /* "manifests/<role>.json" */
    char sha256[65];
};

struct capture {
    const struct alpha_program *p;
    const struct alpha_role *r;
    const char *dir;        /* the checkpoint folder */
    char path[4096];        /* <dir>/round-<R> */
    uint32_t round;         /* rounds completed */
    int open;               /* this round's capture has begun */
    struct shard_entry *shards;
    uint32_t n_shards, cap_shards;
    struct child_entry *children;
    uint32_t n_children, cap_children;
    uint8_t digest[32];     /* of this role's sub-manifest, once sealed */
    uint64_t bytes;         /* shard bytes written this capture (the pack's size) */
    int fd;                 /* the pack file, open from the first shard to the seal; else -1 */
    char pack[160];         /* "shards/<role>.f32", relative to the capture */
    double started;
};

void capture_init(struct capture *c, const struct alpha_program *p, const struct alpha_role *r,
                  const char *dir);
/* CHECKPOINT: this role's shards of op's range, from the round's parameters and learner state
 * (the state block of [state_start, state_start + state_count)). */
void capture_write(struct capture *c, uint32_t round, const struct alpha_op *op,
                   const float *params, const float *state, uint64_t state_start,
                   uint64_t state_count);
/* ACK_RECV: a child's sub-manifest digest. */
void capture_child(struct capture *c, uint32_t round, const char *role,
                   const uint8_t digest[32]);
/* ACK_SEND: writes the role's sub-manifest; returns its digest. */
const uint8_t *capture_seal(struct capture *c, uint32_t round);
/* PUBLISH: writes manifest.json, then LATEST. `loss` is the round's loss. */
void capture_publish(struct capture *c, uint32_t round, float loss);

#endif
