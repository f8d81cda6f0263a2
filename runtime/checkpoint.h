/* Checkpoint captures: what a role writes on checkpoint rounds (docs/runtime.md, "Checkpoints").
 *
 * A capture is written into <checkpoint_dir>/round-<R>.partial-<plan12> (R = rounds completed,
 * 8 digits at least; plan12 = the first 12 hex digits of the plan identity) and published by
 * the root, once every piece is durable, by renaming that folder to <checkpoint_dir>/round-<R>.
 * Each writing role has one pack file: the root `top.pack`, every other role
 * `parts/<role>.pack`. A pack holds the role's shards (one per kind of state and tensor slice,
 * little-endian float32, one after another, each named in the manifest by logical identity and
 * element range: kind `adam.m`, tensor `w1`, start, count, with its byte offset and SHA-256),
 * then the role's manifest (JSON: its shards, and its children's packs with the SHA-256 of
 * their manifests), then a 48-byte trailer: the manifest's length (u64, little-endian), its
 * SHA-256 and the magic "ALPHACK3". A pack is fsynced once; a role with a parent acknowledges
 * its manifest's digest to the parent, and the root publishes. */
#ifndef ALPHA_CHECKPOINT_H
#define ALPHA_CHECKPOINT_H

#include <stdint.h>

#include "alpha_program.h"

#define CHECKPOINT_FORMAT "alpha-checkpoint/3"
#define CHECKPOINT_PART_FORMAT "alpha-checkpoint-part/3"
#define CHECKPOINT_MAGIC "ALPHACK3"
#define CHECKPOINT_TRAILER 48 /* manifest length (8), its SHA-256 (32), the magic (8) */
#define CHECKPOINT_TOP "top.pack"

struct shard_entry {
    char kind[48];          /* "params", "adam.m", "adam.scalars", ... */
    const char *tensor;     /* the tensor's name; "" for the learner's scalars */
    uint64_t start, count;  /* elements within the tensor (within the scalars) */
    uint64_t offset;        /* bytes into the role's pack (4 x count of them) */
    char sha256[65];
};

struct child_entry {
    const char *role;
    char file[160];         /* "parts/<role>.pack" */
    char sha256[65];
};

struct capture {
    const struct alpha_program *p;
    const struct alpha_role *r;
    const char *dir;        /* the checkpoint folder */
    char path[4096];        /* <dir>/round-<R>: the capture once published */
    char partial[4200];     /* <dir>/round-<R>.partial-<plan12>: where it is written */
    int root;               /* this role publishes (its pack is top.pack) */
    uint32_t keep;          /* the root keeps this many published captures; 0: every one */
    uint32_t round;         /* rounds completed */
    int open;               /* this round's capture has begun */
    struct shard_entry *shards;
    uint32_t n_shards, cap_shards;
    struct child_entry *children;
    uint32_t n_children, cap_children;
    uint8_t digest[32];     /* of this role's manifest, once sealed */
    uint64_t bytes;         /* shard bytes written this capture (where the manifest starts) */
    int fd;                 /* the pack, open from the capture's first op to the seal; else -1 */
    char pack[160];         /* "top.pack" or "parts/<role>.pack", relative to the capture */
    double started;
};

void capture_init(struct capture *c, const struct alpha_program *p, const struct alpha_role *r,
                  const char *dir);
/* CHECKPOINT: this role's shards of op's range, from the round's parameters and learner state
 * (the state block of [state_start, state_start + state_count)). */
void capture_write(struct capture *c, uint32_t round, const struct alpha_op *op,
                   const float *params, const float *state, uint64_t state_start,
                   uint64_t state_count);
/* ACK_RECV: the digest of a child's manifest. */
void capture_child(struct capture *c, uint32_t round, const char *role,
                   const uint8_t digest[32]);
/* ACK_SEND: ends the role's pack with its manifest and makes it durable; returns the manifest's
 * digest. */
const uint8_t *capture_seal(struct capture *c, uint32_t round);
/* PUBLISH: ends top.pack with the capture's manifest, makes it durable, then renames the
 * capture into place (refused with checkpoint-folder-foreign when the name holds anything but
 * a capture of this system). `loss` is the round's loss. With keep > 0 it then removes this
 * system's published captures of earlier rounds but the keep - 1 newest, and this plan's
 * abandoned partial captures of earlier rounds (retention.h). */
void capture_publish(struct capture *c, uint32_t round, float loss);

#endif
