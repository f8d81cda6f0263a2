/* Reading a capture back (resume.h): the manifest tree from top.pack down (each manifest at the
 * end of its role's pack, found by the pack's trailer), its checks, then the shards. */
#define _POSIX_C_SOURCE 200809L
#include "resume.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "files.h"
#include "json.h"
#include "manifest.h"
#include "refusal.h"
#include "sha256.h"
#include "sort.h"

#define MANIFEST_LIMIT (64u << 20)
#define TREE_DEPTH 64

struct shard {
    uint32_t kind;          /* 0 params, 1 + k slot k, 1 + state_slots the scalars */
    uint64_t at, count, offset; /* flat elements (scalars: from 0); bytes into its pack */
    uint32_t pack;          /* the pack file holding it (reader.packs) */
    char name[240];         /* "adam.m/w1.0-603": kind, tensor, element range */
    char sha256[65];
};

struct pack {
    char file[256];         /* relative to the capture */
    uint64_t manifest;      /* where its manifest starts: the end of its shards */
    uint64_t end;           /* the end of its last shard, as its manifest says */
    uint64_t size;          /* the file's size when its manifest was read */
};

struct reader {
    const struct alpha_program *p;
    struct resumed *out;
    const char *capture;
    struct shard *shards;
    struct pack *packs;
    uint32_t n_shards, cap_shards, n_packs, cap_packs;
    int fd;                 /* the one pack open at a time (a capture may have 200,000) */
    uint32_t open_pack;     /* which one, when fd >= 0 */
};

static _Noreturn void incomplete(const char *format, const char *a, const char *b)
{
    refuse(REFUSAL_CHECKPOINT_INCOMPLETE, format, a, b);
}

static _Noreturn void malformed(const char *file, const char *why)
{
    refuse(REFUSAL_CHECKPOINT_MALFORMED, "checkpoint manifest %s: %s", file, why);
}

static void add_shard(struct reader *r, const char *file, uint32_t pack, const struct json *e)
{
    const struct alpha_program *p = r->p;
    const char *kind = json_get_string(e, "kind"), *tensor = json_get_string(e, "tensor");
    const char *sha = json_get_string(e, "sha256");
    uint64_t start, count, offset, length;
    if (!kind || !tensor || !sha || json_get_u64(e, "start", &start) ||
        json_get_u64(e, "count", &count) || json_get_u64(e, "offset", &offset) ||
        json_get_u64(e, "length", &length))
        malformed(file, "a shard needs kind, tensor, start, count, offset, length, sha256");
    if (strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64 || length % 4 ||
        length / 4 != count || offset > (1ull << 62))
        malformed(file, "a shard's sha256, offset or length is not valid");
    r->shards = checked_grow(r->shards, r->n_shards, &r->cap_shards, sizeof *r->shards, 16,
                             "the shard list");
    struct shard *s = &r->shards[r->n_shards];
    if (!checkpoint_kind_of(p, kind, &s->kind))
        malformed(file, "a shard of a kind this learner does not have");
    s->count = count;
    if (s->kind == 1 + p->state_slots) {
        if (*tensor || start != 0 || count != p->state_scalars)
            malformed(file, "the scalars shard must hold all of the learner's scalars");
        s->at = 0;
    } else {
        uint32_t i = 0;
        while (i < p->n_tensors && strcmp(p->tensors[i].name, tensor) != 0)
            i++;
        if (i == p->n_tensors || count == 0 || start > p->tensors[i].count ||
            count > p->tensors[i].count - start)
            malformed(file, "a shard of an unknown tensor, or outside its tensor");
        s->at = p->tensors[i].offset + start;
    }
    checkpoint_shard_name(kind, tensor, start, count, s->name);
    if (offset + length > r->packs[pack].end)
        r->packs[pack].end = offset + length;
    s->pack = pack, s->offset = offset;
    memcpy(s->sha256, sha, 65);
    r->n_shards++;
}

/* The top manifest's description of the system must be this program's. */
static void check_top(struct reader *r, const char *path, const struct json *m)
{
    const struct alpha_program *p = r->p;
    uint64_t round, n, slots, scalars;
    const char *learner = json_get_string(m, "learner"), *bits = json_get_string(m, "loss_bits");
    if (json_get_u64(m, "round", &round) || json_get_u64(m, "n_params", &n) ||
        json_get_u64(m, "state_slots", &slots) || json_get_u64(m, "state_scalars", &scalars) ||
        !learner || !bits || strlen(bits) != 8 || strspn(bits, "0123456789abcdef") != 8)
        malformed(path, "it needs round, n_params, learner, state_slots, state_scalars and "
                  "loss_bits");
    if (round < 1 || round > p->steps || n != p->n_params || slots != p->state_slots ||
        scalars != p->state_scalars || strcmp(learner, p->learner) != 0)
        malformed(path, "its round, parameter count or learner contradict the system");
    uint32_t b = (uint32_t)strtoul(bits, NULL, 16);
    memcpy(&r->out->loss, &b, sizeof b);
    r->out->round = (uint32_t)round;
}

/* Opens pack `file` of the capture and reads its manifest (checked against its trailer, and
 * against `sha`, its parent's record, unless it is the top); returns the pack's index. */
static uint32_t open_pack(struct reader *r, const char *file, const char *sha, char **text,
                          uint64_t *size)
{
    char path[4400], hex[65], said[65];
    snprintf(path, sizeof path, "%s/%s", r->capture, file);
    r->packs = checked_grow(r->packs, r->n_packs, &r->cap_packs, sizeof *r->packs, 8,
                            "the pack list");
    uint32_t k = r->n_packs;
    struct pack *pk = &r->packs[k];
    *pk = (struct pack){.end = 0};
    snprintf(pk->file, sizeof pk->file, "%s", file);
    /* Never opened as anything but a regular file: a FIFO in a pack's place would otherwise
     * hold the open (and the role) until something writes to it. */
    char why[96];
    uint64_t bytes = 0;
    int fd = files_open_regular(path, why, &bytes);
    if (fd < 0)
        incomplete("checkpoint pack %s cannot be read: %s", path, why);
    r->n_packs++;
    uint8_t trailer[CHECKPOINT_TRAILER];
    uint64_t length = 0;
    if (bytes < CHECKPOINT_TRAILER ||
        files_read_at(fd, trailer, CHECKPOINT_TRAILER, bytes - CHECKPOINT_TRAILER) != 0 ||
        memcmp(trailer + 40, CHECKPOINT_MAGIC, 8) != 0)
        refuse(REFUSAL_CHECKPOINT_MALFORMED, "checkpoint pack %s: it does not end with a pack "
               "trailer (a manifest length, its SHA-256 and \"%s\")", path, CHECKPOINT_MAGIC);
    for (int i = 7; i >= 0; i--)
        length = length << 8 | trailer[i];
    if (length > MANIFEST_LIMIT || length > bytes - CHECKPOINT_TRAILER)
        refuse(REFUSAL_CHECKPOINT_MALFORMED, "checkpoint pack %s: its trailer gives a manifest "
               "of %llu bytes, more than the pack holds or %u", path,
               (unsigned long long)length, MANIFEST_LIMIT);
    pk->manifest = bytes - CHECKPOINT_TRAILER - length;
    *text = checked_calloc(length + 1, 1, "a checkpoint manifest");
    if (files_read_at(fd, *text, length, pk->manifest) != 0)
        incomplete("checkpoint pack %s cannot be read: %s", path, strerror(errno));
    close(fd);
    pk->size = bytes;
    *size = length;
    sha256_text(*text, length, hex);
    sha256_hex(trailer + 8, said);
    if (strcmp(hex, said) != 0)
        refuse(REFUSAL_CHECKPOINT_DIGEST_MISMATCH, "checkpoint pack %s: its manifest has sha256 "
               "%s, but its trailer says %s", path, hex, said);
    if (sha && strcmp(hex, sha) != 0)
        refuse(REFUSAL_CHECKPOINT_DIGEST_MISMATCH, "checkpoint pack %s: its manifest has sha256 "
               "%s, but its parent manifest says %s", path, hex, sha);
    return k;
}

/* Reads the manifest of pack `file` (the top when sha is NULL), then its children's. */
static void read_manifest(struct reader *r, const char *file, const char *sha, int depth)
{
    const struct alpha_program *p = r->p;
    char *text, error[160], path[4400];
    uint64_t size;
    uint32_t k = open_pack(r, file, sha, &text, &size);
    snprintf(path, sizeof path, "%s/%s", r->capture, file);
    struct json *m = json_parse(text, error);
    if (!m || m->type != JSON_OBJECT)
        malformed(path, m ? "not a JSON object" : error);
    const char *format = json_get_string(m, "format"), *id = json_get_string(m, "identity");
    if (!format || strcmp(format, sha ? CHECKPOINT_PART_FORMAT : CHECKPOINT_FORMAT) != 0)
        malformed(path, "not an Alpha checkpoint manifest of a format this runtime reads");
    const char *arithmetic = json_get_string(m, "arithmetic");
    if (!sha && id && strcmp(id, p->identity) != 0 && p->arithmetic &&
        strcmp(arithmetic ? arithmetic : "unfused", p->arithmetic) != 0)
        refuse(REFUSAL_ARITHMETIC_MISMATCH, "checkpoint %s was made by a system of arithmetic "
               "%s, but this executable's system %s is of arithmetic %s: the same parameters "
               "would go on with other bits", path, arithmetic ? arithmetic : "unfused",
               p->system, p->arithmetic);
    if (!id || strcmp(id, p->identity) != 0)
        refuse(REFUSAL_CHECKPOINT_IDENTITY_MISMATCH, "checkpoint %s is of system identity %.64s, "
               "but this executable runs system %s, identity %s", path, id ? id : "(none)",
               p->system, p->identity);
    uint64_t round;
    if (!sha)
        check_top(r, path, m);
    else if (json_get_u64(m, "round", &round) || round != r->out->round)
        malformed(path, "a sub-manifest of another round");
    const struct json *shards = json_get(m, "shards"), *children = json_get(m, "children");
    if (!shards || shards->type != JSON_ARRAY || !children || children->type != JSON_ARRAY)
        malformed(path, "shards and children must be lists");
    for (const struct json *e = shards->child; e; e = e->next)
        add_shard(r, path, k, e);
    if (r->packs[k].end != r->packs[k].manifest)
        refuse(REFUSAL_CHECKPOINT_DIGEST_MISMATCH, "checkpoint pack %s holds %llu bytes of "
               "shards, but its manifest's shards end at byte %llu", path,
               (unsigned long long)r->packs[k].manifest, (unsigned long long)r->packs[k].end);
    for (const struct json *e = children->child; e; e = e->next) {
        const char *name = json_get_string(e, "file"), *digest = json_get_string(e, "sha256");
        if (!name || !digest || !manifest_safe_name(name) || strlen(digest) != 64)
            malformed(path, "a child needs a file inside the capture and a sha256");
        if (depth >= TREE_DEPTH)
            malformed(path, "the manifest tree is deeper than 64 levels");
        read_manifest(r, name, digest, depth + 1);
    }
    json_free(m);
    free(text);
}

static int by_position(const void *a, const void *b)
{
    const struct shard *x = a, *y = b;
    return x->kind != y->kind ? (x->kind < y->kind ? -1 : 1)
         : x->at != y->at ? (x->at < y->at ? -1 : 1) : 0;
}

/* Every kind covers [0, n_params) exactly (the scalars: one shard). */
static void check_coverage(struct reader *r)
{
    const struct alpha_program *p = r->p;
    sort_items(r->shards, r->n_shards, sizeof *r->shards, by_position);
    uint32_t i = 0;
    for (uint32_t kind = 0; kind <= p->state_slots + (p->state_scalars ? 1 : 0); kind++) {
        char name[48];
        uint64_t end = kind == 1 + p->state_slots ? p->state_scalars : p->n_params, at = 0;
        if (kind)
            checkpoint_kind(p, kind - 1, name);
        else
            snprintf(name, sizeof name, "params");
        for (; i < r->n_shards && r->shards[i].kind == kind; i++) {
            if (r->shards[i].at != at)
                break;
            at += r->shards[i].count;
        }
        int more = i < r->n_shards && r->shards[i].kind == kind;
        if (more && r->shards[i].at < at)
            refuse(REFUSAL_CHECKPOINT_MALFORMED, "checkpoint %s: two shards of %s hold element "
                   "%llu", r->capture, name, (unsigned long long)r->shards[i].at);
        if (at != end || more)
            refuse(REFUSAL_CHECKPOINT_INCOMPLETE, "checkpoint %s: no shard of %s holds elements "
                   "from %llu (of %llu)", r->capture, name, (unsigned long long)at,
                   (unsigned long long)end);
    }
}

/* Streams one shard from its pack (opened unless it is the one open: one descriptor at a time,
 * whatever the number of packs): its digest checked, the part in [lo, hi) copied to
 * dst + (x - lo). */
static uint64_t load(struct reader *r, const struct shard *s, float *dst, uint64_t lo,
                     uint64_t hi)
{
    char path[4400], hex[65];
    struct pack *k = &r->packs[s->pack];
    snprintf(path, sizeof path, "%s/%s", r->capture, k->file);
    if (r->fd < 0 || r->open_pack != s->pack) {
        if (r->fd >= 0)
            close(r->fd);
        char why[96];
        uint64_t size = 0;
        r->fd = files_open_regular(path, why, &size), r->open_pack = s->pack;
        if (r->fd < 0)
            incomplete("checkpoint pack %s cannot be read: %s", path, why);
        if (size != k->size)
            refuse(REFUSAL_CHECKPOINT_DIGEST_MISMATCH, "checkpoint pack %s changed while it was "
                   "read (%llu bytes, then %llu)", path, (unsigned long long)k->size,
                   (unsigned long long)size);
    }
    static float chunk[1 << 18];
    struct sha256 h;
    sha256_init(&h);
    for (uint64_t done = 0; done < s->count;) {
        uint64_t want = s->count - done < (1u << 18) ? s->count - done : (1u << 18);
        uint64_t a = s->at + done, b = a + want;
        /* A chunk wholly wanted is read straight into place; any other through the buffer. */
        float *into = dst && a >= lo && b <= hi ? dst + (a - lo) : chunk;
        if (files_read_at(r->fd, into, 4 * want, s->offset + 4 * done) != 0)
            incomplete("checkpoint pack %s cannot be read: %s", path, strerror(errno));
        sha256_update(&h, into, 4 * want);
        uint64_t from = a > lo ? a : lo, to = b < hi ? b : hi;
        if (into == chunk && dst && from < to)
            memcpy(dst + (from - lo), chunk + (from - a), 4 * (to - from));
        done += want;
    }
    uint8_t digest[32];
    sha256_final(&h, digest);
    sha256_hex(digest, hex);
    if (strcmp(hex, s->sha256) != 0)
        refuse(REFUSAL_CHECKPOINT_DIGEST_MISMATCH, "checkpoint shard %s (bytes %llu-%llu of %s) "
               "has sha256 %s, but its manifest says %s", s->name, (unsigned long long)s->offset,
               (unsigned long long)(s->offset + 4 * s->count), path, hex, s->sha256);
    return 4 * s->count;
}

void resume_load(const struct alpha_program *p, const char *path, float *params, float *state,
                 uint64_t state_start, uint64_t state_count, struct resumed *out)
{
    memset(out, 0, sizeof *out);
    manifest_locate(path, out->capture);
    struct reader r = {.p = p, .out = out, .capture = out->capture, .fd = -1};
    read_manifest(&r, CHECKPOINT_TOP, NULL, 0);
    check_coverage(&r);
    /* Straight into place: every refusal ends the process (refuse() does not return), so a
     * shard that fails its digest part way leaves nothing that trains, evaluates or writes. */
    for (uint32_t i = 0; i < r.n_shards; i++) {
        const struct shard *s = &r.shards[i];
        if (s->kind == 0)
            out->bytes += load(&r, s, params, 0, p->n_params);
        else if (s->kind <= p->state_slots)
            out->bytes += load(&r, s, state ? state + (s->kind - 1) * state_count : NULL,
                               state_start, state_start + state_count);
        else
            out->bytes += load(&r, s, state ? state + p->state_slots * state_count : NULL, 0,
                               p->state_scalars);
    }
    out->files = r.n_packs;
    if (r.fd >= 0)
        close(r.fd);
    free(r.shards);
    free(r.packs);
}
