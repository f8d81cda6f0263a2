/* Writing checkpoint captures (checkpoint.h): shards, sub-manifests, the manifest and LATEST.
 * A role's shards go into its one pack file, written in place and fsynced once; manifests go
 * through files_write (temporary name, fsync, rename); a failure refuses with
 * checkpoint-write-failed, and an unpublished capture is never read back by --resume. */
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
#include "sha256.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "shards are written as the host's float32 bytes, which must be little-endian"
#endif

void capture_init(struct capture *c, const struct alpha_program *p, const struct alpha_role *r,
                  const char *dir)
{
    *c = (struct capture){.p = p, .r = r, .dir = dir, .fd = -1};
}

static _Noreturn void write_failed(const char *what, const char *path)
{
    refuse(REFUSAL_CHECKPOINT_WRITE_FAILED, "cannot write %s %s: %s", what, path,
           strerror(errno));
}

/* Starts this round's capture on its first checkpoint op. */
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
    char path[4400], name[128];
    if (snprintf(c->path, sizeof c->path, "%s/round-%08u", c->dir, (unsigned)round) >=
        (int)sizeof c->path)
        refuse(REFUSAL_CHECKPOINT_WRITE_FAILED, "the checkpoint folder name is too long");
    checkpoint_role_file(c->r->name, name);
    snprintf(c->pack, sizeof c->pack, "shards/%s.f32", name);
    if (files_mkdirs(c->path) != 0)
        write_failed("capture folder", c->path);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", c->path, i ? "manifests" : "shards");
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            write_failed("folder", path);
    }
}

/* Writes one manifest of the capture (relative name `file`, temporary name, fsync, rename); its
 * digest in digest and in hex. */
static void put_file(struct capture *c, const char *file, const void *bytes, uint64_t n,
                     uint8_t digest[32], char hex[65])
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", c->path, file);
    if (files_write(path, bytes, n, digest) != 0)
        write_failed("file", path);
    sha256_hex(digest, hex);
}

/* Appends n bytes to the role's pack file (opened, in place, at the first shard). */
static void pack_append(struct capture *c, const void *bytes, uint64_t n)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", c->path, c->pack);
    if (c->fd < 0 && (c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        write_failed("file", path);
    if (files_write_all(c->fd, bytes, n) != 0)
        write_failed("file", path);
}

/* The pack file made durable (one fsync) and closed. */
static void pack_close(struct capture *c)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", c->path, c->pack);
    int fd = c->fd;
    c->fd = -1;
    if (fd >= 0 && (fsync(fd) != 0 || close(fd) != 0))
        write_failed("file", path);
}

static void shard(struct capture *c, const char *kind, const char *tensor, uint64_t start,
                  uint64_t count, const float *values)
{
    if (c->n_shards == c->cap_shards) {
        c->cap_shards = c->cap_shards ? 2 * c->cap_shards : 16;
        struct shard_entry *grown = realloc(c->shards, c->cap_shards * sizeof *grown);
        if (!grown)
            refuse(REFUSAL_OUT_OF_MEMORY, "cannot grow the shard list");
        c->shards = grown;
    }
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
    if (c->n_children == c->cap_children) {
        c->cap_children = c->cap_children ? 2 * c->cap_children : 4;
        struct child_entry *grown = realloc(c->children, c->cap_children * sizeof *grown);
        if (!grown)
            refuse(REFUSAL_OUT_OF_MEMORY, "cannot grow the capture's child list");
        c->children = grown;
    }
    struct child_entry *e = &c->children[c->n_children++];
    char name[128];
    checkpoint_role_file(role, name);
    e->role = role;
    snprintf(e->file, sizeof e->file, "manifests/%s.json", name);
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

/* Makes the capture's names durable: each of its folders fsynced once (the files themselves
 * were fsynced as written). */
static void sync_folders(struct capture *c)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/shards", c->path);
    files_sync_dir(path);
    snprintf(path, sizeof path, "%s/manifests", c->path);
    files_sync_dir(path);
    files_sync_dir(c->path);
}

const uint8_t *capture_seal(struct capture *c, uint32_t round)
{
    begin(c, round);
    pack_close(c);
    size_t size;
    char *text = manifest_text(c, 0, 0.0f, &size);
    char name[128], file[160], hex[65];
    checkpoint_role_file(c->r->name, name);
    snprintf(file, sizeof file, "manifests/%s.json", name);
    put_file(c, file, text, size, c->digest, hex);
    free(text);
    sync_folders(c);
    c->open = 0;
    event(c, 0);
    return c->digest;
}

/* ALPHA_FAILPOINT=before-publish[:R]: exit 9 right before LATEST is renamed (tests only). */
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
    pack_close(c);
    size_t size;
    char *text = manifest_text(c, 1, loss, &size);
    char hex[66];
    put_file(c, "manifest.json", text, size, c->digest, hex);
    free(text);
    /* The top manifest has no parent to hold its digest: it sits beside it. */
    hex[64] = '\n', hex[65] = '\0';
    uint8_t unused[32];
    char ignored[65];
    put_file(c, "manifest.json.sha256", hex, 65, unused, ignored);
    sync_folders(c);
    files_sync_dir(c->dir); /* the capture's own entry */
    char next[4200], latest[4200], name[32];
    snprintf(next, sizeof next, "%s/LATEST.next", c->dir);
    snprintf(latest, sizeof latest, "%s/LATEST", c->dir);
    int n = snprintf(name, sizeof name, "round-%08u\n", (unsigned)round);
    if (files_write(next, name, (uint64_t)n, NULL) != 0)
        write_failed("file", next);
    failpoint(round);
    if (rename(next, latest) != 0)
        write_failed("file", latest);
    files_sync_dir(c->dir);
    c->open = 0;
    event(c, 1);
}
