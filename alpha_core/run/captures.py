"""The checkpoint folders of a face's launches (alpha-tui): a run from the start publishes into
a folder of its own under the root (`run-1`, `run-2`, …), and a resume continues in the folder
of the run it resumes. An earlier launch's captures can then never be what a later resume
picks up: the one that resumed at round 30,000 of a finished run when the killed run had
published round 8,000 (issue 14, item 1).

The folder's newest published capture is found by the rule the runtime uses (runtime/
manifest.c): the highest `round-<R>` folder that holds the root's `top.pack`; unpublished
`round-<R>.partial-*` folders are not captures.
"""

from __future__ import annotations

import re
from pathlib import Path

_PUBLISHED = re.compile(r"round-(\d+)")
TOP = "top.pack"  # runtime/checkpoint.h CHECKPOINT_TOP


def newest_capture(folder: Path) -> tuple[int, Path] | None:
    """The round and folder of the newest published capture in `folder`, or None (none, or
    no folder)."""
    try:
        names = [p.name for p in folder.iterdir()]
    except OSError:
        return None
    found = [
        (int(m.group(1)), folder / name)
        for name in names
        if (m := _PUBLISHED.fullmatch(name)) is not None and (folder / name / TOP).is_file()
    ]
    return max(found) if found else None


def newest_published(folder: Path) -> int | None:
    """The round of the newest published capture in `folder`, or None (none, or no folder)."""
    newest = newest_capture(folder)
    return newest[0] if newest is not None else None


class CaptureFolders:
    """Where each launch of one face publishes: under `root` when it has one (`run-1`,
    `run-2`, …), else in the folder each run from the start is given (`use`: alpha-tui's
    run folders)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.current: Path | None = None  # the folder of the newest run, the one `u` resumes

    def fresh(self) -> Path:
        """A new, empty folder under the root for a run from the start; it becomes the
        current one."""
        assert self.root is not None, "a root is given to take folders under it"
        self.root.mkdir(parents=True, exist_ok=True)
        n = 1
        while (self.root / f"run-{n}").exists():
            n += 1
        folder = self.root / f"run-{n}"
        folder.mkdir()
        self.current = folder
        return folder

    def use(self, folder: Path) -> Path:
        """`folder` (made if need be) for a run from the start; it becomes the current one."""
        folder.mkdir(parents=True, exist_ok=True)
        self.current = folder
        return folder

    def resumable(self) -> int | None:
        """The round a resume would start from: the newest published capture of the current
        run's folder."""
        return newest_published(self.current) if self.current is not None else None
