/* Atomic publication of the parameter file: a reader sees the old file or the whole new one. */
#define _POSIX_C_SOURCE 200809L
#include "params_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refusal.h"
#include "sha256.h"

static int write_all(int fd, const uint8_t *bytes, size_t n)
{
    while (n > 0) {
        ssize_t done = write(fd, bytes, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return -1;
        bytes += done;
        n -= (size_t)done;
    }
    return 0;
}

static _Noreturn void fail(const char *path, const char *tmp, const char *what)
{
    int error = errno;
    unlink(tmp);
    refuse(REFUSAL_PARAMS_WRITE_FAILED, "cannot %s parameter file %s: %s", what, path,
           strerror(error));
}

/* The folder holding path, for the fsync that makes the rename durable. */
static void sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char folder[4096];
    if (!slash)
        strcpy(folder, ".");
    else if (slash == path)
        strcpy(folder, "/");
    else
        snprintf(folder, sizeof folder, "%.*s", (int)(slash - path), path);
    int fd = open(folder, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);   /* best effort: some file systems refuse fsync on folders */
        close(fd);
    }
}

void params_write(const char *path, const float *params, uint64_t n, char hex[65])
{
    size_t tmp_size = strlen(path) + 5;
    char *tmp = checked_calloc(tmp_size, 1, "a file name");
    snprintf(tmp, tmp_size, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        refuse(REFUSAL_PARAMS_WRITE_FAILED, "cannot create %s: %s", tmp, strerror(errno));

    struct sha256 s;
    sha256_init(&s);
    uint8_t chunk[4096];
    size_t used = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &params[i], sizeof bits);
        chunk[used++] = (uint8_t)bits;
        chunk[used++] = (uint8_t)(bits >> 8);
        chunk[used++] = (uint8_t)(bits >> 16);
        chunk[used++] = (uint8_t)(bits >> 24);
        if (used == sizeof chunk || i + 1 == n) {
            sha256_update(&s, chunk, used);
            if (write_all(fd, chunk, used) != 0)
                fail(path, tmp, "write");
            used = 0;
        }
    }
    if (fsync(fd) != 0)
        fail(path, tmp, "sync");
    if (close(fd) != 0)
        fail(path, tmp, "close");
    if (rename(tmp, path) != 0)
        fail(path, tmp, "publish");
    sync_folder(path);
    free(tmp);

    uint8_t digest[32];
    sha256_final(&s, digest);
    sha256_hex(digest, hex);
}
