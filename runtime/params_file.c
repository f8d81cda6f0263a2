/* Atomic publication of the parameter file: a reader sees the old file or the whole new one. */
#define _POSIX_C_SOURCE 200809L
#include "params_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
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

/* `name` (the parameter file or its temporary) may be replaced only when it is absent or a
 * regular file: never a device, a FIFO, a folder or a link (lstat: the name itself). */
static void only_regular(const char *path, const char *name)
{
    struct stat st;
    if (lstat(name, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) /* its folder is looked at next */
            return;
        refuse(REFUSAL_PARAMS_WRITE_FAILED, "cannot write parameter file %s: %s: %s", path, name,
               strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        refuse(REFUSAL_PARAMS_WRITE_FAILED, "cannot write parameter file %s: %s is %s, and only "
               "a regular file is ever replaced", path, name, files_kind(st.st_mode));
}

static char *temporary(const char *path)
{
    size_t tmp_size = strlen(path) + 5;
    char *tmp = checked_calloc(tmp_size, 1, "a file name");
    snprintf(tmp, tmp_size, "%s.tmp", path);
    return tmp;
}

/* The folder holding path. */
static void folder_of(const char *path, char folder[4096])
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(folder, 4096, ".");
    else
        snprintf(folder, 4096, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

void params_check(const char *path)
{
    char *tmp = temporary(path), folder[4096], why[200];
    only_regular(path, path);
    only_regular(path, tmp);
    free(tmp);
    /* A folder that does not exist yet is made when the file is written (as the checkpoint
     * folder is); the one above it that exists must take a new file now. */
    folder_of(path, folder);
    if (files_writable_folder(folder, why) != 0)
        refuse(REFUSAL_PARAMS_WRITE_FAILED, "cannot write parameter file %s: %s", path, why);
}

void params_write(const char *path, const float *params, uint64_t n, char hex[65])
{
    char *tmp = temporary(path);
    /* Checked at start-up (params_check) and again now, the names may have changed since. A
     * leftover temporary (a crash) is removed; O_EXCL then never opens an existing name, so
     * no link is followed and no FIFO waited on. */
    char folder[4096];
    folder_of(path, folder);
    if (files_mkdirs(folder) != 0)
        refuse(REFUSAL_PARAMS_WRITE_FAILED, "cannot make folder %s for parameter file %s: %s",
               folder, path, strerror(errno));
    only_regular(path, path);
    only_regular(path, tmp);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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
