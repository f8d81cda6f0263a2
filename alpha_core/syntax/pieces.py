"""Cut a source text into declarations and their bodies into items, before any parsing.

Each piece is parsed on its own (see parser.py), so one syntax error costs one item and an edit
re-parses only the pieces whose text changed. The scanner knows just enough of the lexical
syntax to do this: brackets, strings, comments and newlines, each found by one compiled regular
expression, so a cut costs a few C-level searches per declaration rather than a Python step per
character.

A declaration's extent depends only on its own text: cutting `text[decl.span]` alone gives the
same declaration, shifted to offset 0. That is what lets the parser memoize a whole declaration
by its text (`parser.parse_decl`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from alpha_core.support.span import Span

DECL_KEYWORDS = ("system", "plan", "pairing")
OPEN = "({["
CLOSE = ")}]"

# A declaration starts with its keyword at column 0, followed by a space or a tab.
_DECL_START = re.compile(r"^(?:system|plan|pairing)[ \t]", re.MULTILINE)
# Inside a body: strings and comments (skipped whole: a brace in them does not count), braces,
# and the start of the next declaration (where an unclosed body ends), found by the newline
# before it (every branch starting with a character lets the engine skip ahead fast). A string
# ends at its closing quote or before the end of its line; a comment before the end of its line.
_BODY_TOKEN = re.compile(r'"[^"\n]*"?|#[^\n]*|[{}]|\n(?:system|plan|pairing)[ \t]')
# Inside an item: strings, comments, brackets and the newlines that may end it.
_ITEM_TOKEN = re.compile(r'"[^"\n]*"?|#[^\n]*|[(\[{]|[)\]}]|\n')
# Between items, and between declarations: blank space and comments.
_BLANK = re.compile(r"(?:\s+|#[^\n]*)*")
_HEADER_END = re.compile(r"[{\n]")
_SPACE_BEFORE_BRACE = re.compile(r"[ \t\r\n]*")


@dataclass(frozen=True)
class Piece:
    """A slice of the source: `text` is source[span.start:span.end]."""

    text: str
    span: Span


@dataclass(frozen=True)
class DeclPieces:
    header: Piece  # from the keyword up to (not including) the opening brace
    body: Span  # between the braces (exclusive)
    items: tuple[Piece, ...]
    span: Span  # the whole declaration
    unclosed: bool  # no matching closing brace was found
    missing_open: bool  # the header was not followed by an opening brace


@dataclass(frozen=True)
class Stray:
    """Text outside every declaration that is not blank or a comment."""

    piece: Piece


def _past(pattern: re.Pattern[str], text: str, pos: int, end: int | None = None) -> int:
    """The end of a match of a pattern that matches the empty text (so always matches)."""
    found = pattern.match(text, pos, len(text) if end is None else end)
    assert found is not None
    return found.end()


def _past_blank(text: str, pos: int, end: int) -> int:
    return _past(_BLANK, text, pos, end)


def split_items(text: str, start: int, end: int) -> list[Piece]:
    """Items of a body: an item ends at a newline outside every bracket.

    An item starts at its first character that is neither blank nor inside a comment (a string
    starts one); its text has its trailing blanks stripped.
    """
    items: list[Piece] = []
    pos = start
    while True:
        item_start = _past_blank(text, pos, end)
        if item_start >= end:
            break
        depth = 0
        item_end = end
        pos = end
        for tok in _ITEM_TOKEN.finditer(text, item_start, end):
            ch = tok.group()[0]
            if ch == "\n":
                if depth == 0:
                    item_end, pos = tok.start(), tok.end()
                    break
            elif ch in OPEN:
                depth += 1
            elif ch in CLOSE:
                depth = max(0, depth - 1)
        piece = text[item_start:item_end].rstrip()
        items.append(Piece(piece, Span(item_start, item_start + len(piece))))
        if pos >= end:
            break
    return items


def split_decls(text: str) -> tuple[list[DeclPieces], list[Stray]]:
    """Find the declarations of a file; anything else that is not blank is stray text."""
    bounds, strays = cut_decls(text)
    return [scan_decl(text, start) for start, _ in bounds], strays


def cut_decls(text: str) -> tuple[list[tuple[int, int]], list[Stray]]:
    """Where each declaration starts and ends, and the stray text between them.

    The same cut as `split_decls` without splitting the bodies into items: what an edit needs
    to find the declarations it touched.
    """
    bounds: list[tuple[int, int]] = []
    strays: list[Stray] = []
    n = len(text)
    pos = 0
    while pos < n:
        found = _DECL_START.search(text, pos)
        upto = found.start() if found else n
        _stray(text, pos, upto, strays)
        if found is None:
            break
        end = _decl_end(text, upto)
        bounds.append((upto, end))
        pos = end
    return bounds, strays


def _stray(text: str, start: int, end: int, strays: list[Stray]) -> None:
    """Text between declarations: stray from its first character that is not blank or a
    comment up to the next declaration, trailing blanks stripped."""
    first = _past_blank(text, start, end)
    if first < end:
        chunk = text[first:end].rstrip()
        strays.append(Stray(Piece(chunk, Span(first, first + len(chunk)))))


def _header_end(text: str, start: int) -> int:
    """Where the header ends: at the opening brace (which may sit on a later line, past blank
    space), else at the end of the keyword's line."""
    found = _HEADER_END.search(text, start)
    i = found.start() if found else len(text)
    k = _past(_SPACE_BEFORE_BRACE, text, i)
    return k if k < len(text) and text[k] == "{" else i


def _body_end(text: str, body_start: int) -> tuple[int, bool]:
    """The offset of the closing brace, or where an unclosed body ends: (offset, closed)."""
    depth = 1
    for tok in _BODY_TOKEN.finditer(text, body_start):
        ch = tok.group()[0]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return tok.start(), True
        elif ch == "\n":
            return tok.start() + 1, False  # an unclosed body ends where the next one begins
    return len(text), False


def _decl_end(text: str, start: int) -> int:
    i = _header_end(text, start)
    if i >= len(text) or text[i] != "{":
        found = _DECL_START.search(text, i)
        return found.start() if found else len(text)
    end, closed = _body_end(text, i + 1)
    return end + 1 if closed else end


def scan_decl(text: str, start: int = 0) -> DeclPieces:
    """The declaration whose keyword is at `start`, its body cut into items."""
    i = _header_end(text, start)
    header_text = text[start:i].rstrip()
    header = Piece(header_text, Span(start, start + len(header_text)))
    if i >= len(text) or text[i] != "{":
        found = _DECL_START.search(text, i)
        end = found.start() if found else len(text)
        return DeclPieces(header, Span(i, i), (), Span(start, end), False, True)
    body_start = i + 1
    j, closed = _body_end(text, body_start)
    items = tuple(split_items(text, body_start, j))
    return DeclPieces(
        header, Span(body_start, j), items, Span(start, j + 1 if closed else j), not closed, False
    )
