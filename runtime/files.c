/* Durable files (files.h). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* syscall(): renameat2 */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"

int files_mkdirs(const char *path)
{
    char buffer[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buffer)
        return errno = ENAMETOOLONG, -1;
    memcpy(buffer, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buffer[i] != '/' && buffer[i] != '\0')
            continue;
        char kept = buffer[i];
        buffer[i] = '\0';
        if (mkdir(buffer, 0755) != 0 && errno != EEXIST)
            return -1;
        buffer[i] = kept;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
}

void files_sync_dir(const char *folder)
{
    int fd = open(folder, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int files_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    char inner[4400];
    int failed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(inner, sizeof inner, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(inner, &st) != 0)
            failed = 1;
        else if (S_ISDIR(st.st_mode) ? files_remove_tree(inner) != 0 : unlink(inner) != 0)
            failed = 1;
    }
    closedir(d);
    return failed || rmdir(path) != 0 ? -1 : 0;
}

#define RENAME_SWAP (1u << 1) /* renameat2's RENAME_EXCHANGE (Linux 3.15) */

int files_replace_dir(const char *from, const char *to, int swap)
{
    if (rename(from, to) == 0)
        return 0;
    if (errno != EEXIST && errno != ENOTEMPTY)
        return -1;
    /* Swapped atomically: `to` is the new folder at every instant; the old one ends at `from`. */
    if (swap && syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_SWAP) == 0)
        return files_remove_tree(from);
    /* No swap here: the old folder moves aside first, for a moment there is none. */
    char aside[4400];
    snprintf(aside, sizeof aside, "%s.replaced", from);
    if (files_remove_tree(aside) != 0 || rename(to, aside) != 0 || rename(from, to) != 0)
        return -1;
    return files_remove_tree(aside);
}

int files_write_all(int fd, const void *data, uint64_t n)
{
    const uint8_t *bytes = data;
    while (n > 0) {
        ssize_t done = write(fd, bytes, n > (1u << 30) ? (1u << 30) : (size_t)n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return done == 0 ? (errno = EIO, -1) : -1;
        bytes += done;
        n -= (uint64_t)done;
    }
    return 0;
}

int files_read_at(int fd, void *data, uint64_t n, uint64_t offset)
{
    uint8_t *bytes = data;
    while (n > 0) {
        ssize_t got = pread(fd, bytes, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got == 0 ? (errno = EIO, -1) : -1;
        bytes += got;
        n -= (uint64_t)got;
        offset += (uint64_t)got;
    }
    return 0;
}

int files_write(const char *path, const void *bytes, uint64_t n, uint8_t digest[32])
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return errno = ENAMETOOLONG, -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (digest) {
        struct sha256 s;
        sha256_init(&s);
        sha256_update(&s, bytes, n);
        sha256_final(&s, digest);
    }
    if (files_write_all(fd, bytes, n) != 0 || fsync(fd) != 0) {
        int error = errno;
        close(fd);
        unlink(tmp);
        return errno = error, -1;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int error = errno;
        unlink(tmp);
        return errno = error, -1;
    }
    return 0;
}

char *files_read_text(const char *path, uint64_t limit, uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    int error = 0;
    if (fstat(fd, &st) != 0)
        error = errno;
    else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > limit)
        error = S_ISREG(st.st_mode) ? EFBIG : EISDIR;
    char *text = error ? NULL : malloc((size_t)st.st_size + 1);
    if (!error && !text)
        error = ENOMEM;
    uint64_t got = 0;
    while (!error && got < (uint64_t)st.st_size) {
        ssize_t r = read(fd, text + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            error = r < 0 ? errno : EIO;
        else
            got += (uint64_t)r;
    }
    close(fd);
    if (error) {
        free(text);
        errno = error;
        return NULL;
    }
    text[got] = '\0';
    *size = got;
    return text;
}

int files_exist(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

double files_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
