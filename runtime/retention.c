/* Which captures of a checkpoint folder belong to this system, and the root's clean-up of its
 * own (retention.h). A folder is only ever removed, swapped out or counted when it is laid out
 * as this runtime writes a capture (a real folder holding top.pack and parts/<role>.pack and
 * nothing else, no link anywhere) and, for a published capture, when top.pack's trailer and
 * manifest say it is of this system identity. Everything else is left as it is. */
#define _POSIX_C_SOURCE 200809L
#include "retention.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "json.h"
#include "manifest.h"
#include "refusal.h"
#include "sha256.h"
#include "sort.h"

#define MANIFEST_LIMIT (64u << 20)

/* The regular file `name` of folder dfd, opened without following a link or waiting on a FIFO,
 * and (sealed) ending with a pack trailer, copied to t; -1 when it is anything else. */
static int pack_at(int dfd, const char *name, int sealed, uint8_t t[CHECKPOINT_TRAILER],
                   uint64_t *size)
{
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                    (sealed && ((*size = (uint64_t)st.st_size) < CHECKPOINT_TRAILER ||
                                files_read_at(fd, t, CHECKPOINT_TRAILER,
                                              *size - CHECKPOINT_TRAILER) != 0 ||
                                memcmp(t + 40, CHECKPOINT_MAGIC, 8) != 0))))
        close(fd), fd = -1;
    return fd;
}

/* Folder dfd (closed here) holds only what this runtime writes in it: top.pack and parts/ at
 * the top, <role>.pack files in parts/. The first entry that is anything else goes to bad. */
static int only_packs(int dfd, int in_parts, int sealed, char bad[72])
{
    DIR *d = fdopendir(dfd);
    if (!d)
        return close(dfd), snprintf(bad, 72, "parts"), 0;
    int ok = 1;
    for (struct dirent *e; ok && (e = readdir(d));) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        uint8_t t[CHECKPOINT_TRAILER];
        uint64_t size;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        if (!in_parts && strcmp(n, "parts") == 0) {
            int fd = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            ok = fd >= 0 && only_packs(fd, 1, sealed, bad);
            if (fd < 0)
                snprintf(bad, 72, "parts");
            continue;
        }
        int fd = (in_parts ? len > 5 && len < 128 && strcmp(n + len - 5, ".pack") == 0
                           : strcmp(n, CHECKPOINT_TOP) == 0)
                     ? pack_at(dfd, n, sealed, t, &size) : -1;
        if (fd >= 0)
            close(fd);
        else
            ok = 0, snprintf(bad, 72, "%s%.60s", in_parts ? "parts/" : "", n);
    }
    closedir(d);
    return ok;
}

/* The identity in top.pack's manifest (sealed, its SHA-256 the trailer's) into found. */
static int top_identity(int dfd, char found[72])
{
    uint8_t t[CHECKPOINT_TRAILER];
    uint64_t size, length = 0;
    int fd = pack_at(dfd, CHECKPOINT_TOP, 1, t, &size);
    if (fd < 0)
        return 0;
    for (int i = 7; i >= 0; i--)
        length = length << 8 | t[i];
    char *text = length <= MANIFEST_LIMIT && length <= size - CHECKPOINT_TRAILER
                     ? calloc(length + 1, 1) : NULL;
    char hex[65], said[65], error[160];
    int ok = text && files_read_at(fd, text, length, size - CHECKPOINT_TRAILER - length) == 0;
    close(fd);
    if (ok) {
        sha256_text(text, length, hex);
        sha256_hex(t + 8, said);
    }
    struct json *m = ok && strcmp(hex, said) == 0 ? json_parse(text, error) : NULL;
    const char *format = json_get_string(m, "format"), *id = json_get_string(m, "identity");
    ok = format && id && strcmp(format, CHECKPOINT_FORMAT) == 0 && strlen(id) < 72;
    if (ok)
        snprintf(found, 72, "%s", id);
    json_free(m);
    free(text);
    return ok;
}

enum capture_owner capture_owner(const char *folder, int sealed, const char *identity,
                                 char found[72], char why[200])
{
    struct stat st;
    char bad[72];
    *found = '\0';
    if (lstat(folder, &st) != 0)
        return snprintf(why, 200, "%s", strerror(errno)), CAPTURE_UNKNOWN;
    int dfd = S_ISDIR(st.st_mode) ? open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                  : -1;
    if (dfd < 0)
        return snprintf(why, 200, "it is %s", files_kind(st.st_mode)), CAPTURE_UNKNOWN;
    int top = dup(dfd); /* only_packs closes the one it walks */
    int ok = only_packs(dfd, 0, sealed, bad);
    if (!ok)
        snprintf(why, 200, "it holds %s, which is not a file this runtime writes there", bad);
    else if (sealed && !top_identity(top, found))
        ok = 0, snprintf(why, 200, "its %s holds no sealed capture manifest", CHECKPOINT_TOP);
    close(top);
    if (!ok)
        return CAPTURE_UNKNOWN;
    if (sealed && strcmp(found, identity) != 0)
        return snprintf(why, 200, "it is a capture of system identity %.16s", found),
               CAPTURE_FOREIGN;
    return CAPTURE_OURS;
}

static _Noreturn void foreign(const struct capture *c, const char *folder, const char *why)
{
    refuse(REFUSAL_CHECKPOINT_FOLDER_FOREIGN, "%s is not a capture of this system (identity "
           "%.16s) and is left as it is: %s; this run would publish over it (use another "
           "--checkpoint-dir)", folder, c->p->identity, why);
}

void capture_claim(const struct capture *c, const char *folder)
{
    char found[72], why[200];
    struct stat st;
    if (lstat(folder, &st) != 0 && errno == ENOENT)
        return;
    if (capture_owner(folder, 1, c->p->identity, found, why) != CAPTURE_OURS)
        foreign(c, folder, why);
}

void capture_start(struct capture *c, uint32_t first_round)
{
    const struct alpha_role *r = c->r;
    int writes = 0;
    for (uint32_t i = 0; i < r->n_ops; i++)
        writes |= r->ops[i].kind >= ALPHA_OP_CHECKPOINT && r->ops[i].kind <= ALPHA_OP_PUBLISH;
    if (!writes || !r->checkpoint_every || first_round >= c->p->steps)
        return;
    char why[200];
    if (files_writable_folder(c->dir, why) != 0)
        refuse(REFUSAL_CHECKPOINT_WRITE_FAILED, "checkpoint folder %s cannot be written: %s",
               c->dir, why);
    DIR *d = c->root ? opendir(c->dir) : NULL;
    if (!d)
        return; /* not there yet: mkdir makes it at the first capture */
    /* Every round this run will publish, already held by something not of this system: refused
     * now, before round 0, rather than after training up to it. */
    uint64_t round, lowest = UINT64_MAX;
    char folder[4400], found[72], first[4400] = "", said[200] = "";
    for (struct dirent *e; (e = readdir(d));) {
        if (!manifest_published(e->d_name, &round) || round <= first_round ||
            round > c->p->steps || (round % r->checkpoint_every && round != c->p->steps))
            continue;
        snprintf(folder, sizeof folder, "%s/%s", c->dir, e->d_name);
        if (round < lowest && capture_owner(folder, 1, c->p->identity, found, why) !=
                                  CAPTURE_OURS) /* the first one the run would reach */
            lowest = round, memcpy(first, folder, sizeof first), memcpy(said, why, sizeof why);
    }
    closedir(d);
    if (*first)
        foreign(c, first, said);
}

struct published {
    uint64_t round;
    char name[32];          /* round-<digits>, at most 26 characters */
};

static int newest_first(const void *a, const void *b)
{
    const struct published *x = a, *y = b;
    return x->round < y->round ? 1 : x->round > y->round ? -1 : strcmp(y->name, x->name);
}

static _Noreturn void remove_failed(const char *folder)
{
    refuse(REFUSAL_CHECKPOINT_WRITE_FAILED, "cannot remove capture folder %s: %s", folder,
           strerror(errno));
}

/* Removes one capture folder of this system: first out of the published names (a crash part
 * way leaves no torn capture under one), then its files, never following a link. */
static void expire(const struct capture *c, const char *name)
{
    char from[4400], to[4500];
    snprintf(from, sizeof from, "%s/%s", c->dir, name);
    snprintf(to, sizeof to, "%s.expired-%.12s", from, c->r->plan_identity);
    if (rename(from, to) != 0 || files_remove_tree(to) != 0)
        remove_failed(from);
}

void capture_prune(const struct capture *c)
{
    DIR *d = opendir(c->dir);
    if (!d)
        refuse(REFUSAL_CHECKPOINT_WRITE_FAILED, "cannot read checkpoint folder %s: %s", c->dir,
               strerror(errno));
    struct published *rounds = NULL;
    uint64_t round;
    uint32_t n = 0, cap = 0;
    char partial[64], expiring[64], name[4400], found[72], why[200];
    snprintf(partial, sizeof partial, ".partial-%.12s", c->r->plan_identity);
    snprintf(expiring, sizeof expiring, ".expired-%.12s", c->r->plan_identity);
    for (struct dirent *e; (e = readdir(d));) {
        const char *dot = strchr(e->d_name, '.');
        snprintf(name, sizeof name, "%s/%s", c->dir, e->d_name);
        if (manifest_published(e->d_name, &round)) {
            /* Only this system's captures count and go; another's (or a stranger's folder)
             * is neither counted nor touched. */
            if (round >= c->round || capture_owner(name, 1, c->p->identity, found, why) !=
                                         CAPTURE_OURS)
                continue;
            rounds = checked_grow(rounds, n, &cap, sizeof *rounds, 16, "the capture list");
            rounds[n].round = round;
            snprintf(rounds[n++].name, sizeof rounds->name, "%.26s", e->d_name);
            continue;
        }
        if (!dot || (strcmp(dot, partial) != 0 && strcmp(dot, expiring) != 0))
            continue;
        char base[64];
        snprintf(base, sizeof base, "%.*s", (int)(dot - e->d_name) & 63, e->d_name);
        /* This plan's abandoned folder: removed only when it holds nothing but pack files. */
        if (!manifest_published(base, &round) || round >= c->round ||
            capture_owner(name, 0, c->p->identity, found, why) != CAPTURE_OURS)
            continue;
        if (files_remove_tree(name) != 0)
            remove_failed(name);
    }
    closedir(d);
    if (n)
        sort_items(rounds, n, sizeof *rounds, newest_first);
    for (uint32_t i = c->keep - 1; i < n; i++)
        expire(c, rounds[i].name);
    free(rounds);
    if (n >= c->keep)
        files_sync_dir(c->dir);
}
