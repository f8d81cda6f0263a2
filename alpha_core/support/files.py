"""Reading a file the user named, without trusting what the name points at.

A path can name a FIFO (open() blocks until a writer comes), `/dev/stdin` (a language server
would read its own protocol stream), `/dev/zero` (never ends) or a file far larger than anything
the caller means to hold. `read_regular` opens without blocking, checks what it opened (fstat of
the descriptor, so a file swapped after a stat cannot slip through), refuses all but regular
files and anything over a size limit, and reads at most that many bytes.
"""

from __future__ import annotations

import os
import stat


class NotReadable(Exception):
    """Why a path was not read: one line, lowercase, with the path and the fact."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; else NotReadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        shown = path.replace("\0", "\\0")
        raise NotReadable(f"cannot open {shown}: {_reason(error)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(f"{path} is {kind_of(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise NotReadable(f"{path} is {info.st_size:,} bytes; at most {limit:,} are read")
        # the whole file in one read where it can (a regular file gives what is asked): the
        # bytes are then held once, not once in pieces and again joined (a 1 GiB data file)
        chunks: list[bytes] = [os.read(fd, info.st_size + 1)]
        total = len(chunks[0])
        while True:  # a file may grow between fstat and read: never read past the limit
            if total > limit:
                raise NotReadable(f"{path} grew past {limit:,} bytes while it was read")
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError as error:
        raise NotReadable(f"cannot read {path}: {_reason(error)}") from None
    finally:
        os.close(fd)


DATA_LIMIT = 1 << 30  # a data file is at most 1 GiB: checked whole, digested, read whole


def why_not_read(path: str, limit: int) -> str:
    """Why `read_regular(path, limit)` gives nothing, in words: the system's reason, what the
    path is when not a regular file, or the file's size against the limit."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as error:
        return _reason(error)
    if not stat.S_ISREG(info.st_mode):
        return f"it is {kind_of(info.st_mode)}, not a regular file"
    if info.st_size > limit:
        return (
            f"it is {info.st_size:,} bytes, over the limit of {limit:,} bytes "
            f"({limit / (1 << 30):g} GiB) on a data file"
        )
    try:
        read_regular(path, 0 if info.st_size == 0 else 1)
    except NotReadable as error:
        if "at most" not in str(error):
            return str(error).split(": ", 1)[-1]
    return "it could not be read whole"


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return "the path contains a NUL character" if isinstance(error, ValueError) else str(error)


class SecretNotWritten(Exception):
    """A launch secret could not be written where it was asked for: `secret-file-unsafe`, one
    line naming the path and what is in its place."""

    name = "secret-file-unsafe"


def write_secret(path: str | os.PathLike[str], data: bytes) -> None:
    """Writes `data` to a new file at `path`, mode 0600 from its creation
    (O_CREAT|O_EXCL|O_NOFOLLOW: never through a link, never into a file someone else opened).
    A regular file already there (an earlier emit's secret, which belonged to that launch) is
    removed first; a symbolic link, folder, FIFO or device in its place is refused by name and
    left as it is, so a planted link never receives the secret."""
    shown = os.fspath(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        pass
    except OSError as error:
        raise SecretNotWritten(f"cannot write the secret {shown}: {_reason(error)}") from None
    else:
        if stat.S_ISLNK(info.st_mode):
            raise SecretNotWritten(
                f"{shown} is a symbolic link (to {os.readlink(path)}); a secret is never "
                "written through one: remove it or choose another folder"
            )
        if not stat.S_ISREG(info.st_mode):
            raise SecretNotWritten(
                f"{shown} is {kind_of(info.st_mode)}; a secret is written only as a new "
                "regular file: remove it or choose another folder"
            )
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:  # something was put there between the check and the open
        raise SecretNotWritten(
            f"{shown} appeared while the secret was being written; nothing was written to it"
        ) from None
    except OSError as error:
        raise SecretNotWritten(f"cannot write the secret {shown}: {_reason(error)}") from None
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as error:
        os.close(fd)
        os.unlink(path)
        raise SecretNotWritten(f"cannot write the secret {shown}: {_reason(error)}") from None
    os.close(fd)
