/* Whose captures a checkpoint folder holds, and the root's clean-up of its own
 * (docs/runtime.md, "Checkpoints"). Folders of another system identity, and anything not laid
 * out as this runtime writes a capture (a link, a file, a folder holding other files), are
 * never removed, swapped out or counted: retention skips them, and publishing over one is
 * refused with checkpoint-folder-foreign (before round 0 when the folder already holds it). */
#ifndef ALPHA_RETENTION_H
#define ALPHA_RETENTION_H

#include "checkpoint.h"

enum capture_owner {
    CAPTURE_OURS,    /* laid out as a capture; sealed: of this identity */
    CAPTURE_FOREIGN, /* a sealed capture of another identity (in found) */
    CAPTURE_UNKNOWN, /* not a capture folder this runtime wrote (why says what is there) */
};

/* Looks at a capture folder without following any link: a real folder holding only a regular
 * top.pack and a real parts/ folder of regular <role>.pack files; `sealed` (a published
 * capture): top.pack and every part end with their trailers, and top.pack's manifest (its
 * SHA-256 the trailer's) is an alpha-checkpoint/3 manifest of `identity`. */
enum capture_owner capture_owner(const char *folder, int sealed, const char *identity,
                                 char found[72], char why[200]);
/* Start-up, before round 0, for a role that writes captures in rounds after first_round: its
 * checkpoint folder can be written (checkpoint-write-failed), and (the root) no round it will
 * publish is held there by anything but a capture of this system
 * (checkpoint-folder-foreign). */
void capture_start(struct capture *c, uint32_t first_round);
/* Right before publishing over `folder` (a published name): refuses checkpoint-folder-foreign
 * unless nothing is there or a capture of this system is. */
void capture_claim(const struct capture *c, const char *folder);
/* --checkpoint-keep, after round c->round is published: this system's published captures of
 * earlier rounds but the keep - 1 newest, and this plan's partial or expiring folders of
 * earlier rounds that hold nothing but packs. */
void capture_prune(const struct capture *c);

#endif
