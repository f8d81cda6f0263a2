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

/* rm -r below the open folder `fd` (closed here), never following a link: every entry is
 * looked at with AT_SYMLINK_NOFOLLOW, a link is unlinked itself, and a folder is opened with
 * O_NOFOLLOW, so nothing outside the tree can be reached from inside it. */
static int remove_below(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d)
        return close(fd), -1;
    int failed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            failed |= errno != ENOENT;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= unlinkat(fd, e->d_name, 0) != 0 && errno != ENOENT;
            continue;
        }
        int inner = depth < 8 ? openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                          O_CLOEXEC) : -1;
        if (inner < 0 || remove_below(inner, depth + 1) != 0 ||
            unlinkat(fd, e->d_name, AT_REMOVEDIR) != 0)
            failed = 1;
    }
    closedir(d);
    return failed ? -1 : 0;
}

int files_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) /* a link (to a folder or not) or a file: only the name goes */
        return unlink(path);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || remove_below(fd, 0) != 0)
        return -1;
    return rmdir(path);
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
    char why[96];
    uint64_t bytes = 0;
    int fd = files_open_regular(path, why, &bytes);
    if (fd < 0)
        return NULL;
    int error = bytes > limit ? EFBIG : 0;
    char *text = error ? NULL : malloc((size_t)bytes + 1);
    if (!error && !text)
        error = ENOMEM;
    uint64_t got = 0;
    while (!error && got < bytes) {
        ssize_t r = read(fd, text + got, (size_t)(bytes - got));
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

const char *files_kind(unsigned mode)
{
    return S_ISREG(mode) ? "a regular file" : S_ISDIR(mode) ? "a folder"
         : S_ISLNK(mode) ? "a symbolic link" : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
         : S_ISSOCK(mode) ? "a socket" : "a special file";
}

int files_open_regular(const char *path, char why[96], uint64_t *size)
{
    /* O_NONBLOCK: opening a FIFO never waits for a writer; O_NOFOLLOW: a link is not opened.
     * The kind is then taken from the open descriptor, so it cannot change in between. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int error = errno;
        if (error == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            snprintf(why, 96, "it is a symbolic link, not a regular file");
        else
            snprintf(why, 96, "%s", strerror(error));
        return errno = error, -1;
    }
    if (fstat(fd, &st) != 0) {
        int error = errno;
        snprintf(why, 96, "%s", strerror(error));
        close(fd);
        return errno = error, -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, 96, "it is %s, not a regular file", files_kind(st.st_mode));
        close(fd);
        return errno = EINVAL, -1;
    }
    if (size)
        *size = (uint64_t)st.st_size;
    return fd;
}

int files_writable_folder(const char *path, char why[200])
{
    char folder[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof folder)
        return snprintf(why, 200, "%s", strerror(ENAMETOOLONG)), errno = ENAMETOOLONG, -1;
    memcpy(folder, path, n + 1);
    struct stat st;
    /* The nearest folder that exists: what is missing below it is made later, by mkdir. */
    while (stat(folder, &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) /* ENOTDIR: a file above; found below */
            return snprintf(why, 200, "%.120s: %s", folder, strerror(errno)), -1;
        char *slash = strrchr(folder, '/');
        while (slash && slash > folder && slash[1] == '\0') { /* a trailing slash */
            *slash = '\0';
            slash = strrchr(folder, '/');
        }
        if (!slash)
            snprintf(folder, sizeof folder, ".");
        else
            slash[slash == folder] = '\0'; /* "/x" -> "/" */
    }
    if (!S_ISDIR(st.st_mode))
        return snprintf(why, 200, "%.120s is %s, not a folder", folder, files_kind(st.st_mode)),
               errno = ENOTDIR, -1;
    /* An unnamed file in the folder tests what the run will do (create a file there) and
     * leaves nothing behind, even if the process dies; where the file system has no
     * O_TMPFILE, the permission bits are asked instead. */
    int fd = open(folder, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0)
        return close(fd), 0;
    if ((errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) &&
        access(folder, W_OK | X_OK) == 0)
        return 0;
    return snprintf(why, 200, "cannot create files in %.120s: %s", folder, strerror(errno)), -1;
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
