"""Byte-offset spans into one source text, and the line index that turns them into positions."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_NEWLINE = re.compile("\n")


@dataclass(frozen=True, order=True, slots=True)
class Span:
    """A half-open range [start, end) of character offsets into a source text.

    Slotted: a tree, its checks and their moved copies hold millions of spans in a large file,
    and a span without a `__dict__` is a third of the memory (48 bytes against 152)."""

    start: int
    end: int

    def shifted(self, by: int) -> Span:
        return Span(self.start + by, self.end + by)

    def cover(self, other: Span) -> Span:
        return Span(min(self.start, other.start), max(self.end, other.end))


@dataclass(frozen=True)
class Position:
    """0-based line and column (in characters), as editors count them."""

    line: int
    column: int


class LineIndex:
    """Maps character offsets to (line, column) and back for one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        self.starts += (m.end() for m in _NEWLINE.finditer(text))

    def position(self, offset: int) -> Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        return Position(line, offset - self.starts[line])

    def offset(self, pos: Position) -> int:
        if pos.line >= len(self.starts):
            return len(self.text)
        start = self.starts[pos.line]
        end = self.starts[pos.line + 1] - 1 if pos.line + 1 < len(self.starts) else len(self.text)
        return min(start + pos.column, end)

    def line_text(self, line: int) -> str:
        start = self.starts[line]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]
