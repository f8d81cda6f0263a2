"""`--data FILE` at build time: the data is part of a run's identity (its SHA-256 is in the
system's canonical text), so a file other than the one the system was checked with is refused
before anything is compiled, rather than by the executable once built and started."""

from __future__ import annotations

import hashlib
import os

from alpha_core.data.spec import DataSpec
from alpha_core.diagnostics import Diagnostic
from alpha_core.support.files import DATA_LIMIT, why_not_read


def _digest(path: str) -> str | None:
    """The SHA-256 of the regular file at `path` (read in pieces: a file may be 1 GiB), or None
    when it cannot be read as the checker would read it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not (info.st_mode & 0o170000 == 0o100000) or info.st_size > DATA_LIMIT:
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def data_refusals(spec: DataSpec, path: str | None) -> list[Diagnostic]:
    """`data-digest-mismatch` when `--data PATH` is not the file the system was checked with
    (`data-unreadable` when it cannot be read); nothing for the same bytes at another path."""
    if not path or spec.kind != "table":
        return []  # embedded data: the executable refuses `--data` itself (usage)
    digest = _digest(path)
    if digest is None:
        why = why_not_read(path, DATA_LIMIT)
        return [Diagnostic("data-unreadable", f"cannot read --data {path}: {why}", None)]
    if digest == spec.sha256:
        return []
    return [
        Diagnostic(
            "data-digest-mismatch",
            f"--data {path} has sha256 {digest}, but the system was checked with {spec.path} "
            f"(sha256 {spec.sha256}): the data is part of the run's identity, so another file "
            "is another system",
            None,
            help="`--data` moves the same file; to train on this one, name it in the system's "
            "`data` item and build again",
        )
    ]
