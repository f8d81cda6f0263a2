/* Reading the launch secret (secret.h). Every check happens before a byte is read, so a FIFO
 * without a writer, a terminal or /dev/zero in place of the file cannot hold the role. */
#define _GNU_SOURCE
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refusal.h"

/* Start-up code, or thin wrappers around the hashing in sha256.c: compiled for size (the
 * executable has a size budget; none of it is a loop that time is spent in). */
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

/* Reads exactly SECRET_BYTES from fd (opened non-blocking) and checks that nothing follows. */
static void read_secret(int fd, const char *what, uint8_t out[SECRET_BYTES])
{
    uint32_t got = 0;
    while (got < SECRET_BYTES) {
        ssize_t r = read(fd, out + got, SECRET_BYTES - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            refuse(REFUSAL_SECRET_UNREADABLE, "%s gave %u of the %u bytes of a secret%s%s", what,
                   (unsigned)got, (unsigned)SECRET_BYTES, r < 0 ? ": " : "",
                   r < 0 ? strerror(errno) : "");
        got += (uint32_t)r;
    }
    uint8_t more;
    ssize_t r;
    do
        r = read(fd, &more, 1);
    while (r < 0 && errno == EINTR);
    if (r > 0)
        refuse(REFUSAL_SECRET_UNREADABLE, "%s holds more than the %u bytes of a secret", what,
               (unsigned)SECRET_BYTES);
}

static void from_file(const char *path, uint8_t out[SECRET_BYTES])
{
    char what[600];
    snprintf(what, sizeof what, "secret file %.500s", path);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 && errno == ENOENT)
        refuse(REFUSAL_SECRET_MISSING, "%s does not exist", what);
    if (fd < 0)
        refuse(REFUSAL_SECRET_UNREADABLE, "cannot open %s: %s", what, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0)
        refuse(REFUSAL_SECRET_UNREADABLE, "cannot stat %s: %s", what, strerror(errno));
    if (!S_ISREG(st.st_mode))
        refuse(REFUSAL_SECRET_UNREADABLE, "%s is not a regular file", what);
    if (st.st_mode & 077)
        refuse(REFUSAL_SECRET_UNREADABLE, "%s may be accessed by its group or others (mode "
               "%04o): only its owner may, chmod 600 it", what, (unsigned)(st.st_mode & 07777));
    if (st.st_size != SECRET_BYTES)
        refuse(REFUSAL_SECRET_UNREADABLE, "%s holds %lld bytes; a secret is %u", what,
               (long long)st.st_size, (unsigned)SECRET_BYTES);
    read_secret(fd, what, out);
    close(fd);
}

static void from_descriptor(const char *text, uint8_t out[SECRET_BYTES])
{
    char what[64];
    size_t digits = strspn(text, "0123456789");
    if (digits == 0 || digits > 9 || text[digits] != '\0')
        refuse(REFUSAL_SECRET_UNREADABLE, "ALPHA_SECRET_FD is '%.32s', not a descriptor number",
               text);
    int fd = atoi(text);
    snprintf(what, sizeof what, "descriptor %d (ALPHA_SECRET_FD)", fd);
    struct stat st;
    if (fstat(fd, &st) != 0)
        refuse(REFUSAL_SECRET_MISSING, "%s is not open in this process: %s", what,
               strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
        refuse(REFUSAL_SECRET_UNREADABLE, "%s is neither a regular file nor a pipe", what);
    if (S_ISREG(st.st_mode) && st.st_size != SECRET_BYTES)
        refuse(REFUSAL_SECRET_UNREADABLE, "%s holds %lld bytes; a secret is %u", what,
               (long long)st.st_size, (unsigned)SECRET_BYTES);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); /* a pipe whose writer stays open */
    read_secret(fd, what, out);
    close(fd); /* nothing the role starts later inherits it */
}

void secret_load(const char *flag_path, const char *built_path, uint8_t out[SECRET_BYTES])
{
    const char *fd = getenv("ALPHA_SECRET_FD");
    if (flag_path)
        from_file(flag_path, out);
    else if (fd)
        from_descriptor(fd, out);
    else if (built_path && *built_path)
        from_file(built_path, out);
    else
        refuse(REFUSAL_SECRET_MISSING, "this role has links but no launch secret: give "
               "--secret-file PATH (a file of %u random bytes, mode 0600) or an inherited "
               "descriptor in ALPHA_SECRET_FD; alpha run and alpha-tui give one per launch",
               (unsigned)SECRET_BYTES);
}

void secret_random(uint8_t *out, uint32_t n)
{
    uint32_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(out + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            refuse(REFUSAL_PEER_UNAUTHENTICATED, "the kernel gave no random bytes for a "
                   "handshake nonce: %s", r < 0 ? strerror(errno) : "none");
        got += (uint32_t)r;
    }
}

#pragma clang attribute pop
