"""Strict reading of the files of a capture: refusals, bounded reads, manifest JSON without
duplicate keys or non-finite constants, and the field types a manifest may hold."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from alpha_core.support.files import kind_of


class CheckpointError(Exception):
    """A refusal: `name` is one of REFUSALS, `message` says what and where."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def incomplete(message: str) -> CheckpointError:
    return CheckpointError("checkpoint-incomplete", message)


def malformed(file: Path | str, why: str) -> CheckpointError:
    return CheckpointError("checkpoint-malformed", f"checkpoint manifest {file}: {why}")


def safe_name(name: str) -> bool:
    return (
        0 < len(name.encode("utf-8", "surrogatepass")) <= 200
        and not name.startswith("/")
        and "\0" not in name
        and ".." not in name.split("/")
    )


def read_sized(path: Path, limit: int) -> bytes:
    """A regular file's bytes, refused (OSError) above `limit` before anything is read. Opened
    without following a final link and without waiting (O_NONBLOCK), so a FIFO in a pack's
    place is refused at once instead of holding the reader until something writes to it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP and path.is_symlink():
            raise OSError("it is a symbolic link, not a regular file") from None
        raise
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"it is {kind_of(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise OSError(f"{path} has {info.st_size} bytes, more than {limit}")
        return f.read(info.st_size)


def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def json_object(path: Path, data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(
            data.decode("utf-8"), object_pairs_hook=no_duplicates, parse_constant=no_constant
        )
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise malformed(path, f"not JSON: {str(error)[:120]}") from None
    if not isinstance(value, dict):
        raise malformed(path, "not a JSON object")
    return value


def as_count(value: object) -> int | None:
    return value if type(value) is int and 0 <= value < 1 << 64 else None


def as_string(value: object) -> str | None:
    return value if isinstance(value, str) else None
