"""Cut a source text into declarations and their bodies into items, before any parsing.

Each piece is parsed on its own (see parser.py), so one syntax error costs one item and an edit
re-parses only the pieces whose text changed. The scanner knows just enough of the lexical
syntax to do this: brackets, strings, comments and newlines.
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.syntax.span import Span

DECL_KEYWORDS = ("system", "plan", "pairing")
OPEN = "({["
CLOSE = ")}]"


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


def _skip_string_or_comment(text: str, i: int) -> int:
    """If text[i] starts a string or comment, return the offset just after it, else i."""
    ch = text[i]
    if ch == "#":
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if ch == '"':
        j = i + 1
        while j < len(text) and text[j] not in '"\n':
            j += 1
        return j + 1 if j < len(text) and text[j] == '"' else j
    return i


def _at_line_start_keyword(text: str, i: int) -> bool:
    """A declaration keyword at column 0, followed by a space: where a new declaration starts."""
    if i > 0 and text[i - 1] != "\n":
        return False
    for kw in DECL_KEYWORDS:
        if text.startswith(kw, i) and i + len(kw) < len(text) and text[i + len(kw)] in " \t":
            return True
    return False


def split_items(text: str, start: int, end: int) -> list[Piece]:
    """Items of a body: an item ends at a newline outside every bracket."""
    items: list[Piece] = []
    depth = 0
    item_start: int | None = None
    i = start
    while i < end:
        ch = text[i]
        j = _skip_string_or_comment(text, i)
        if j != i:
            if ch == '"' and item_start is None:
                item_start = i
            i = j
            continue
        if ch == "\n":
            if depth == 0 and item_start is not None:
                items.append(Piece(text[item_start:i].rstrip(), Span(item_start, i)))
                item_start = None
            i += 1
            continue
        if not ch.isspace() and item_start is None:
            item_start = i
        if ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth = max(0, depth - 1)
        i += 1
    if item_start is not None:
        items.append(Piece(text[item_start:end].rstrip(), Span(item_start, end)))
    return [Piece(p.text, Span(p.span.start, p.span.start + len(p.text))) for p in items]


def split_decls(text: str) -> tuple[list[DeclPieces], list[Stray]]:
    """Find the declarations of a file; anything else that is not blank is stray text."""
    decls: list[DeclPieces] = []
    strays: list[Stray] = []
    i = 0
    n = len(text)
    stray_start: int | None = None

    def flush_stray(upto: int) -> None:
        nonlocal stray_start
        if stray_start is not None:
            chunk = text[stray_start:upto].rstrip()
            if chunk:
                strays.append(Stray(Piece(chunk, Span(stray_start, stray_start + len(chunk)))))
            stray_start = None

    while i < n:
        j = _skip_string_or_comment(text, i) if text[i] == "#" else i
        if j != i:
            i = j
            continue
        if _at_line_start_keyword(text, i):
            flush_stray(i)
            decl, i = _scan_decl(text, i)
            decls.append(decl)
            continue
        if not text[i].isspace() and stray_start is None:
            stray_start = i
        i += 1
    flush_stray(n)
    return decls, strays


def _scan_decl(text: str, start: int) -> tuple[DeclPieces, int]:
    n = len(text)
    i = start
    while i < n and text[i] not in "{\n":
        i += 1
    # the brace may sit on the next line; look past blank space for it
    k = i
    while k < n and text[k] in " \t\r\n":
        k += 1
    if k < n and text[k] == "{":
        i = k
    header_text = text[start:i].rstrip()
    header = Piece(header_text, Span(start, start + len(header_text)))
    if i >= n or text[i] != "{":
        end = _next_decl_start(text, i)
        return DeclPieces(header, Span(i, i), (), Span(start, end), False, True), end
    body_start = i + 1
    depth = 1
    j = body_start
    while j < n:
        ch = text[j]
        k = _skip_string_or_comment(text, j)
        if k != j:
            j = k
            continue
        if _at_line_start_keyword(text, j):
            break  # an unclosed body ends where the next declaration begins
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                items = tuple(split_items(text, body_start, j))
                return DeclPieces(
                    header, Span(body_start, j), items, Span(start, j + 1), False, False
                ), j + 1
        j += 1
    items = tuple(split_items(text, body_start, j))
    return DeclPieces(header, Span(body_start, j), items, Span(start, j), True, False), j


def _next_decl_start(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if _at_line_start_keyword(text, i):
            return i
        i += 1
    return n
