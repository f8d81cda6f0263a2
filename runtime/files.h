/* Durable files for checkpoints: folders made as needed, files written whole under a temporary
 * name, fsynced and renamed (so a reader sees the old file or the whole new one) or written in
 * place, and files read back in chunks. Nothing here refuses: callers name the refusal. */
#ifndef ALPHA_FILES_H
#define ALPHA_FILES_H

#include <stddef.h>
#include <stdint.h>

/* mkdir -p: 0, or -1 with errno. */
int files_mkdirs(const char *path);
/* Writes n bytes to path through path.tmp (written, fsynced, closed, renamed), with their
 * SHA-256 in digest (may be NULL): 0, or -1 with errno (the temporary file removed). The
 * rename is durable once the caller has synced the folder (files_sync_dir), which it may do
 * once for many files. */
int files_write(const char *path, const void *bytes, uint64_t n, uint8_t digest[32]);
/* All n bytes written to fd at its position (EINTR retried): 0, or -1 with errno. */
int files_write_all(int fd, const void *bytes, uint64_t n);
/* Exactly n bytes of fd from offset (pread): 0, or -1 with errno (EIO: the file ended). */
int files_read_at(int fd, void *bytes, uint64_t n, uint64_t offset);
/* fsync of a folder (best effort: some file systems refuse it). */
void files_sync_dir(const char *folder);
/* Renames folder `from` to `to`, replacing a folder already at `to` (swapped in atomically
 * where the kernel can and `swap` allows, else moved aside first; then removed): 0, or -1
 * with errno. */
int files_replace_dir(const char *from, const char *to, int swap);
/* rm -r of a folder (a capture: two levels deep), never following a link: a link at `path` or
 * anywhere below it is unlinked itself, its target untouched. 0 (also when nothing is there),
 * or -1 with errno. */
int files_remove_tree(const char *path);
/* Opens path for reading only when it is a regular file (not a link, FIFO, device or folder),
 * without ever waiting (O_NONBLOCK) or following a final link (O_NOFOLLOW): the descriptor and
 * its size in *size (may be NULL), or -1 with `why` saying what it is instead ("it is a FIFO,
 * not a regular file") or the error's text. */
int files_open_regular(const char *path, char why[96], uint64_t *size);
/* "a regular file", "a FIFO", "a character device", "a symbolic link", ... of an st_mode. */
const char *files_kind(unsigned mode);
/* A whole small file, NUL-terminated, of at most `limit` bytes: NULL with errno (EFBIG when it
 * is larger). Free it with free(). */
char *files_read_text(const char *path, uint64_t limit, uint64_t *size);
/* Whether files can be made at path (a folder, made by mkdir -p when missing): its nearest
 * existing folder is a folder in which this process can create a file (tried with an unnamed
 * O_TMPFILE, which leaves nothing behind). 0, or -1 with the reason in why. */
int files_writable_folder(const char *path, char why[200]);
/* Whether path exists (as anything). */
int files_exist(const char *path);
/* Seconds since an arbitrary start, for reporting durations. */
double files_now(void);

#endif
