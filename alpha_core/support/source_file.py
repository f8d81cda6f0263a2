"""Reading a source file for a face: its text, or the named refusal that says why there is none.

The CLI and alpha-tui both read sources through `read_source`, so they refuse alike. Only a
regular file is read (`alpha_core.support.files.read_regular`: a folder, a FIFO, a device or a
socket is
refused by what it is, checked on the descriptor opened without blocking, so a FIFO never hangs
the reader). The bytes are decoded as UTF-8 with replacement: a byte that is not UTF-8 becomes
U+FFFD, which the parser refuses as a `syntax-error` where it stands, in every face.
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.support.files import NotReadable, read_regular

SOURCE_UNREADABLE = "source-unreadable"
# Far above any real source (a 10 MB file of 32,870 systems checks in seconds), far below what
# would exhaust memory.
SOURCE_LIMIT = 256 << 20


@dataclass(frozen=True)
class SourceRefusal:
    """Why a source has no text: `name` is a registered refusal, `message` names the path."""

    name: str
    message: str


def read_source(path: str) -> str | SourceRefusal:
    """The text of the source at `path`, or a `source-unreadable` refusal saying why not."""
    try:
        data = read_regular(path, SOURCE_LIMIT)
    except NotReadable as why:
        return SourceRefusal(SOURCE_UNREADABLE, str(why))
    return data.decode("utf-8", errors="replace")
