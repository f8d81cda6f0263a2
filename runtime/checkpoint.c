/* Writing checkpoint captures (checkpoint.h): each role's pack (its shards, its manifest, the
 * trailer) and the root's publication. A pack is written in place inside the capture's partial
 * folder and fsynced once; the capture appears under its published name only by the root's
 * rename, after every pack is durable. A failure refuses with checkpoint-write-failed; a
 * partial folder is never read by --resume. */
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events.h"
#include "files.h"
#include "manifest.h"
#include "refusal.h"
#include "retention.h"
#include "sha256.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "shards are written as the host's float32 bytes, which must be little-endian"
#endif

void capture_init(struct capture *c, const struct alpha_program *p, const struct alpha_role *r,
                  const char *dir)
{
    *c = (struct capture){.p = p, .r = r, .dir = dir, .fd = -1};
    for (uint32_t i = 0; i < r->n_ops; i++)
        c->root |= r->ops[i].kind == ALPHA_OP_PUBLISH;
}

static _Noreturn void write_failed(const char *what, const char *path)
{
    refuse(REFUSAL_CHECKPOINT_WRITE_FAILED, "cannot write %s %s: %s", what, path,
           strerror(errno));
}

/* mkdir, or a real folder already there (left by a crash in this round): never a link, which
 * would lead the packs somewhere else. */
static int made_folder(const char *path)
{
    struct stat st;
    if (mkdir(path, 0755) == 0)
        return 1;
    if (errno != EEXIST)
        return 0;
    if (lstat(path, &st) != 0)
        return 0;
    return S_ISDIR(st.st_mode) ? 1 : (errno = ENOTDIR, 0);
}

/* Starts this round's capture on its first checkpoint op: the partial folder and the pack. */
static void begin(struct capture *c, uint32_t round)
{
    if (c->open && c->round == round)
        return;
    if (c->fd >= 0)
        close(c->fd); /* a capture of an earlier round never sealed */
    c->open = 1, c->round = round, c->fd = -1;
    c->n_shards = c->n_children = 0;
    c->bytes = 0;
    c->started = files_now();
    if (snprintf(c->path, sizeof c->path, "%s/round-%08u", c->dir, (unsigned)round) >=
        (int)sizeof c->path - 64)
        refuse(REFUSAL_CHECKPOINT_WRITE_FAILED, "the checkpoint folder name is too long");
    snprintf(c->partial, sizeof c->partial, "%s.partial-%.12s", c->path, c->r->plan_identity);
    char name[128], path[4400];
    checkpoint_role_file(c->r->name, name);
    if (c->root)
        snprintf(c->pack, sizeof c->pack, "%s", CHECKPOINT_TOP);
    else
        snprintf(c->pack, sizeof c->pack, "parts/%s.pack", name);
    if (files_mkdirs(c->dir) != 0)
        write_failed("checkpoint folder", c->dir);
    if (!made_folder(c->partial))
        write_failed("capture folder", c->partial);
    snprintf(path, sizeof path, "%s/parts", c->partial);
    if (!c->root && !made_folder(path))
        write_failed("folder", path);
    snprintf(path, sizeof path, "%s/%s", c->partial, c->pack);
    if ((c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                      0644)) < 0)
        write_failed("file", path);
}

/* Appends n bytes to the role's pack. */
static void pack_append(struct capture *c, const void *bytes, uint64_t n)
{
    if (files_write_all(c->fd, bytes, n) != 0) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", c->partial, c->pack);
        write_failed("file", path);
    }
}

/* Ends the pack with the role's manifest and the trailer, fsyncs and closes it; the manifest's
 * digest in c->digest. */
static void pack_seal(struct capture *c, int top, float loss)
{
    size_t size;
    char *text = manifest_text(c, top, loss, &size);
    uint8_t trailer[CHECKPOINT_TRAILER];
    uint64_t n = size;
    for (int i = 0; i < 8; i++)
        trailer[i] = (uint8_t)(n >> (8 * i));
    struct sha256 h;
    sha256_init(&h);
    sha256_update(&h, text, size);
    sha256_final(&h, c->digest);
    memcpy(trailer + 8, c->digest, 32);
    memcpy(trailer + 40, CHECKPOINT_MAGIC, 8);
    pack_append(c, text, size);
    pack_append(c, trailer, sizeof trailer);
    free(text);
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", c->partial, c->pack);
    int fd = c->fd;
    c->fd = -1;
    if (fsync(fd) != 0 || close(fd) != 0)
        write_failed("file", path);
}

static void shard(struct capture *c, const char *kind, const char *tensor, uint64_t start,
                  uint64_t count, const float *values)
{
    c->shards = checked_grow(c->shards, c->n_shards, &c->cap_shards, sizeof *c->shards, 16,
                             "the shard list");
    struct shard_entry *s = &c->shards[c->n_shards++];
    *s = (struct shard_entry){.tensor = tensor, .start = start, .count = count,
                              .offset = c->bytes};
    snprintf(s->kind, sizeof s->kind, "%s", kind);
    sha256_text(values, 4 * count, s->sha256);
    pack_append(c, values, 4 * count);
    c->bytes += 4 * count;
}
void capture_write(struct capture *c, uint32_t round, const struct alpha_op *op,
                   const float *params, const float *state, uint64_t state_start,
                   uint64_t state_count)
{
    const struct alpha_program *p = c->p;
    begin(c, round);
    uint64_t a = op->count ? op->start : 0, b = op->count ? op->start + op->count : p->n_params;
    char kind[48];
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        const struct alpha_tensor *t = &p->tensors[i];
        uint64_t lo = a > t->offset ? a : t->offset;
        uint64_t hi = b < t->offset + t->count ? b : t->offset + t->count;
        if (lo >= hi)
            continue;
        if (op->flags & ALPHA_WRITES_PARAMS)
            shard(c, "params", t->name, lo - t->offset, hi - lo, params + lo);
        for (uint32_t k = 0; (op->flags & ALPHA_WRITES_OPTIMIZER) && k < p->state_slots; k++) {
            checkpoint_kind(p, k, kind);
            shard(c, kind, t->name, lo - t->offset, hi - lo,
                  state + k * state_count + (lo - state_start));
        }
    }
    if ((op->flags & ALPHA_WRITES_SCALARS) && p->state_scalars) {
        checkpoint_kind(p, p->state_slots, kind);
        shard(c, kind, "", 0, p->state_scalars, state + p->state_slots * state_count);
    }
}

void capture_child(struct capture *c, uint32_t round, const char *role,
                   const uint8_t digest[32])
{
    begin(c, round);
    c->children = checked_grow(c->children, c->n_children, &c->cap_children,
                               sizeof *c->children, 4, "the capture's child list");
    struct child_entry *e = &c->children[c->n_children++];
    char name[128];
    checkpoint_role_file(role, name);
    e->role = role;
    snprintf(e->file, sizeof e->file, "parts/%s.pack", name);
    sha256_hex(digest, e->sha256);
}

static void event(const struct capture *c, int published)
{
    printf("{\"event\":\"checkpoint\",\"role\":");
    json_string(stdout, c->r->name);
    printf(",\"round\":%u,\"capture\":", (unsigned)c->round);
    json_string(stdout, c->path);
    printf(",\"files\":%u,\"bytes\":%llu,\"write_ms\":%.3f,\"published\":%s}\n",
           (unsigned)c->n_shards, (unsigned long long)c->bytes,
           (files_now() - c->started) * 1000.0, published ? "true" : "false");
    fflush(stdout);
}

const uint8_t *capture_seal(struct capture *c, uint32_t round)
{
    begin(c, round);
    pack_seal(c, 0, 0.0f);
    char parts[4400];
    snprintf(parts, sizeof parts, "%s/parts", c->partial);
    files_sync_dir(parts); /* the pack's name; the root syncs the capture folder itself */
    c->open = 0;
    event(c, 0);
    return c->digest;
}

/* ALPHA_FAILPOINT=before-publish[:R]: exit 9 right before the capture is renamed into place;
 * ALPHA_FAILPOINT=no-swap: replace a published round as where renameat2 cannot swap (tests
 * only). */
static int no_swap(void)
{
    const char *f = getenv("ALPHA_FAILPOINT");
    return f && strcmp(f, "no-swap") == 0;
}

static void failpoint(uint32_t round)
{
    const char *f = getenv("ALPHA_FAILPOINT");
    const char *name = "before-publish";
    if (!f || strncmp(f, name, strlen(name)) != 0)
        return;
    f += strlen(name);
    if (*f == '\0' || (*f == ':' && strtoul(f + 1, NULL, 10) == round)) {
        fflush(stdout);
        _exit(9);
    }
}

void capture_publish(struct capture *c, uint32_t round, float loss)
{
    begin(c, round);
    pack_seal(c, 1, loss);
    /* Every child's pack is durable (it acknowledged after its fsync); top.pack now is too.
     * The folder's names, then the rename that publishes them, then the rename made durable. */
    files_sync_dir(c->partial);
    failpoint(round);
    capture_claim(c, c->path); /* another system's capture of this round is never swapped out */
    if (files_replace_dir(c->partial, c->path, !no_swap()) != 0)
        write_failed("capture folder", c->path);
    files_sync_dir(c->dir);
    c->open = 0;
    event(c, 1);
    if (c->keep)
        capture_prune(c);
}
