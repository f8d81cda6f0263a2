"""A checkpoint folder and the captures in it: which folder a path names (a capture, or the
newest published capture of a checkpoint folder) and what a folder holds. Only names are
read here; alpha_core.checkpoint.reader reads what is inside (docs/runtime.md, "Resume")."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from alpha_core.checkpoint.pack import TOP
from alpha_core.checkpoint.strict import incomplete


@dataclass(frozen=True)
class Capture:
    """A folder of a checkpoint folder: published (round-<R>), partial (being written or
    abandoned: never read) or expiring (being removed by --checkpoint-keep)."""

    name: str
    round: int
    state: str  # "published", "partial", "expiring"


_NAME = re.compile(r"round-([0-9]{1,20})(\.(partial|expired)-.*)?")
_STATES = {None: "published", "partial": "partial", "expired": "expiring"}


def _captures(names: list[str]) -> tuple[Capture, ...]:
    found = [(m, n) for n in names if (m := _NAME.fullmatch(n))]
    captures = [Capture(n, int(m.group(1)), _STATES[m.group(3)]) for m, n in found]
    return tuple(sorted(captures, key=lambda c: (c.round, c.name)))


def captures_in(folder: Path) -> tuple[Capture, ...]:
    """Every capture folder in a checkpoint folder, by round (nothing read inside them)."""
    try:
        return _captures(os.listdir(folder))
    except OSError:
        return ()


def locate(path: Path) -> tuple[Path, tuple[Capture, ...]]:
    """The capture folder `path` names: itself when it holds top.pack (and no listing), else
    the published capture of the highest round of the checkpoint folder `path` (and every
    capture the folder holds)."""
    if (path / TOP).exists():
        if ".partial-" in path.name:
            raise incomplete(
                f"capture {path} is not published: its writing never finished, or has not yet"
            )
        return path, ()
    try:
        captures = _captures(os.listdir(path))
    except OSError as error:
        raise incomplete(f"no checkpoint at {path}: {error.strerror}") from None
    published = [c for c in captures if c.state == "published"]
    if not published:
        partial = any(c.state == "partial" for c in captures)
        unpublished = "; only unpublished ones" if partial else ""
        raise incomplete(
            f"no published capture at {path} (no {TOP}, no round-<R> folder{unpublished})"
        )
    return path / max(published, key=lambda c: (c.round, c.name)).name, captures
