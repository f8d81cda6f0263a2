"""Character offsets (the core's) ↔ LSP positions (lines and code units of the negotiated
encoding, UTF-16 unless the client asked for another).

Lines end at `\\n`, `\\r\\n` or `\\r`, as the protocol says; a column counts code units of the
encoding: an astral character is two UTF-16 units, one UTF-32 unit, four UTF-8 bytes.
"""

from __future__ import annotations

import bisect
import re

from lsprotocol import types

from alpha_core.support.span import Span

_BREAK = re.compile(r"\r\n|\r|\n")


def _units(text: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf32 or text.isascii():
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class Lines:
    """One text's line starts, and conversions between its offsets and LSP positions."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.text = text
        self.encoding = encoding
        self.ascii = text.isascii()  # then every encoding counts one unit a character
        self.starts = [0]
        self.ends: list[int] = []  # where each line's content ends (before its break)
        for m in _BREAK.finditer(text):
            self.ends.append(m.start())
            self.starts.append(m.end())
        self.ends.append(len(text))

    def line_column(self, offset: int) -> tuple[int, int]:
        """The line and the column (in code units) of an offset."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        if self.ascii:
            return line, min(offset, self.ends[line]) - start
        return line, _units(self.text[start : min(offset, self.ends[line])], self.encoding)

    def position(self, offset: int) -> types.Position:
        line, column = self.line_column(offset)
        return types.Position(line=line, character=column)

    def offset(self, position: types.Position) -> int:
        if position.line >= len(self.starts):
            return len(self.text)
        start, end = self.starts[position.line], self.ends[position.line]
        want = max(0, position.character)
        line = self.text[start:end]
        if line.isascii() or self.encoding == types.PositionEncodingKind.Utf32:
            return start + min(want, len(line))
        units = 0
        for i, ch in enumerate(line):
            if units >= want:
                return start + i
            units += _units(ch, self.encoding)
        return end

    def range(self, span: Span | None) -> types.Range:
        if span is None:
            return types.Range(start=types.Position(0, 0), end=types.Position(0, 0))
        return types.Range(start=self.position(span.start), end=self.position(span.end))

    def span(self, r: types.Range) -> Span:
        a, b = self.offset(r.start), self.offset(r.end)
        return Span(min(a, b), max(a, b))
