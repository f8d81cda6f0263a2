/* A table's parsed rows shared by the roles of one launch on one host (shared_rows.h).
 *
 * The file: a 64-byte header ("ALPHAROWS-1", the payload's length and SHA-256), then the
 * payload: the features (rows x features float32), then the labels (rows x targets int32, class
 * kind) or the targets (rows x targets float32). It is named by the CSV's SHA-256 and by a
 * digest of the layout the program reads the CSV with, so only a role that would have parsed
 * exactly these values from exactly that file maps it. It is mapped only when it is a regular
 * file of this user, writable by nobody else, in a folder of this user that nobody else may
 * write in, of exactly the expected size and with a payload whose SHA-256 is the header's: a
 * torn or foreign file is never believed (the role parses the CSV itself instead). */
#define _POSIX_C_SOURCE 200809L
#include "shared_rows.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "sha256.h"

#define HEADER_BYTES 64u
static const char MAGIC[16] = "ALPHAROWS-1";

/* Start-up code, run once: compiled for size. */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

static uint64_t payload_bytes(const struct alpha_program *p, const struct dataset *d)
{
    (void)p;
    return (uint64_t)d->rows * d->features * 4u + (uint64_t)d->rows * d->targets * 4u;
}

/* The folder named by ALPHA_SHARED_ROWS_DIR when it is this user's and nobody else may write
 * in it; NULL otherwise. */
static const char *folder(void)
{
    const char *dir = getenv(SHARED_ROWS_VARIABLE);
    struct stat st;
    if (!dir || !*dir || strlen(dir) > 900 || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 022))
        return NULL;
    return dir;
}

int shared_rows_offered(void)
{
    const char *dir = getenv(SHARED_ROWS_VARIABLE);
    return dir && *dir;
}

/* Where the rows of this program's CSV lie: 0 and the path, or -1 without a folder. */
static int rows_path(const struct alpha_program *p, const struct dataset *d, char out[1100])
{
    const char *dir = folder();
    if (!dir || !p->data_sha256 || strlen(p->data_sha256) != 64)
        return -1;
    char layout[256], key[65];
    snprintf(layout, sizeof layout, "rows %u features %u targets %u class %u outputs %u "
             "label %u header %u vocabulary %u", (unsigned)d->rows, (unsigned)d->features,
             (unsigned)d->targets, (unsigned)(p->label_kind == ALPHA_LABEL_CLASS),
             (unsigned)p->outputs, (unsigned)p->label_column, (unsigned)p->csv_header,
             (unsigned)p->vocabulary);
    sha256_text(layout, strlen(layout), key);
    snprintf(out, 1100, "%s/alpha-rows-%s-%.16s", dir, p->data_sha256, key);
    return 0;
}

static void point(struct dataset *d, const uint8_t *payload, int class_kind)
{
    d->x = (const float *)payload;
    const uint8_t *labels = payload + (size_t)d->rows * d->features * 4u;
    d->y_class = class_kind ? (const int32_t *)labels : NULL;
    d->y_reg = class_kind ? NULL : (const float *)labels;
}

int shared_rows_find(const struct alpha_program *p, struct dataset *d)
{
    char path[1100];
    if (rows_path(p, d, path) != 0)
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    uint64_t want = HEADER_BYTES + payload_bytes(p, d);
    int usable = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                 !(st.st_mode & 022) && (uint64_t)st.st_size == want;
    void *at = usable ? mmap(NULL, (size_t)want, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (at == MAP_FAILED)
        return 0;
    const uint8_t *base = at;
    uint64_t length;
    memcpy(&length, base + 16, 8);
    uint8_t digest[32];
    if (memcmp(base, MAGIC, sizeof MAGIC) == 0 && length == want - HEADER_BYTES) {
        struct sha256 h;
        sha256_init(&h);
        sha256_update(&h, base + HEADER_BYTES, (size_t)length);
        sha256_final(&h, digest);
        if (memcmp(digest, base + 24, 32) == 0) {
            point(d, base + HEADER_BYTES, p->label_kind == ALPHA_LABEL_CLASS);
            return 1;
        }
    }
    munmap(at, (size_t)want);
    return 0;
}

void shared_rows_offer(const struct alpha_program *p, struct dataset *d)
{
    char path[1100], staged[1200];
    if (rows_path(p, d, path) != 0)
        return;
    int class_kind = p->label_kind == ALPHA_LABEL_CLASS;
    uint64_t xs = (uint64_t)d->rows * d->features * 4u, ys = (uint64_t)d->rows * d->targets * 4u;
    const void *labels = class_kind ? (const void *)d->y_class : (const void *)d->y_reg;
    uint8_t header[HEADER_BYTES] = {0};
    memcpy(header, MAGIC, sizeof MAGIC);
    uint64_t length = xs + ys;
    memcpy(header + 16, &length, 8);
    struct sha256 h;
    sha256_init(&h);
    sha256_update(&h, d->x, (size_t)xs);
    sha256_update(&h, labels, (size_t)ys);
    sha256_final(&h, header + 24);
    snprintf(staged, sizeof staged, "%s.%ld.staged", path, (long)getpid());
    int fd = open(staged, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int ok = files_write_all(fd, header, HEADER_BYTES) == 0 &&
             files_write_all(fd, d->x, xs) == 0 && files_write_all(fd, labels, ys) == 0;
    ok = close(fd) == 0 && ok;
    /* linked, never renamed over: the first role's copy stays, so that every role maps the
     * same file (one that lost the race maps the winner's, the same values) */
    if (!ok || (link(staged, path) != 0 && errno != EEXIST)) {
        unlink(staged);
        return;
    }
    unlink(staged);
    struct dataset mapped = *d;
    if (!shared_rows_find(p, &mapped))
        return;
    free((void *)d->x);
    free(class_kind ? (void *)d->y_class : (void *)d->y_reg);
    *d = mapped;
}

#pragma clang attribute pop
