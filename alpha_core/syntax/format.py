"""The one canonical layout of an `.alpha` file: what `textDocument/formatting` gives.

The layout keeps every line break of a declaration (a newline ends an item, so line breaks are
the author's, as with gofmt) and every comment, and decides the rest:

- indentation: two spaces for each bracket open at the start of a line (`{`, `(`, `[`), one
  level less for a line that starts by closing one;
- spaces within a line: none inside brackets, before `,` `:` `;` or around `..` and `.`, none
  between a name and the `(` or `[` after it, none after a unary `-`; one after `,` `:` `;`,
  around `=` `->` `+` `-` `*` `/` `@`, inside braces, between two words; before a trailing
  comment, the author's spaces; between tokens no rule names, a space if there was one;
- blank lines: at most one in a row, none just inside a brace, one between declarations, none
  at the start of the file, one newline at its end. Comments between declarations start at
  column 0.

A declaration that does not parse is left as it is (its text, without trailing blank lines):
what the author meant there is not known. A declaration that parses is formatted and parsed
again, and kept only if its tree is the same, spans aside; otherwise it too is left as it is.
So formatting never changes what a file means, and formatting twice gives the same text.
"""

from __future__ import annotations

import dataclasses
import re
from typing import NamedTuple

from alpha_core.support.span import Span
from alpha_core.syntax.parser import parse_decl
from alpha_core.syntax.pieces import cut_decls

_TOKEN = re.compile(
    r"(?P<comment>#[^\n]*)|(?P<string>\"[^\"\n]*\"?)"
    r"|(?P<number>(?:[0-9]+\.(?!\.)[0-9]*|(?<![.0-9])\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>->|\.\.|\S)"
)
_OPENERS = "({["
_CLOSERS = ")}]"
_BINARY = frozenset({"=", "->", "+", "*", "/", "@"})
_TIGHT_BEFORE = frozenset({",", ":", ";", ")", "]"})
_SPACED_AFTER = frozenset({",", ":", ";"})
_WORDS = frozenset({"name", "number", "string"})
_BLANK_TAIL = re.compile(r"(?:\n[ \t\r\f\v]*)+\Z")


class Token(NamedTuple):
    kind: str  # comment | string | number | name | op
    text: str
    before: str  # the whitespace before it on its line


def tokens(line: str) -> list[Token]:
    out = []
    end = 0
    for m in _TOKEN.finditer(line):
        kind = m.lastgroup or "op"
        text = m.group().rstrip() if kind == "comment" else m.group()
        out.append(Token(kind, text, line[end : m.start()]))
        end = m.end()
    return out


# the words after which an expression (or a number) starts: a `-` after them negates
_LEADING_WORDS = frozenset(
    "return let steps batch leaves every memory cores loss learner contract topology".split()
)


def _value_end(t: Token) -> bool:
    """Whether a token ends an operand (so a `-` after it subtracts)."""
    if t.kind == "name":
        return t.text not in _LEADING_WORDS
    return t.kind in _WORDS or t.text in (")", "]")


def _space(line: list[Token], i: int) -> str:
    """What goes between line[i - 1] and line[i]."""
    a, b = line[i - 1], line[i]
    if b.kind == "comment":  # where the author put it (aligned comments stay aligned)
        return " " * max(1, len(b.before.expandtabs(2)))
    a_unary = a.text == "-" and (i < 2 or not _value_end(line[i - 2]))
    if a.text in ("(", "[") or a_unary:
        return ""
    if b.text in _TIGHT_BEFORE or b.text in ("..", ".") or a.text in ("..", "."):
        return ""  # `0..4`, `w.T`
    if a.text in _SPACED_AFTER or a.text in _BINARY or a.text == "-":
        return " "  # after `,` `:` `;`, a binary operator (a unary minus is above)
    if b.text in ("(", "["):
        return "" if a.kind == "name" else (" " if b.before else "")
    if "{" in (a.text, b.text) or "}" in (a.text, b.text):
        return " "
    if b.text in _BINARY or b.text == "-":
        return " "
    if a.kind in _WORDS and b.kind in _WORDS:
        return " "
    return " " if b.before else ""


def layout_decl(text: str) -> str:
    """A declaration's lines re-indented and re-spaced (line breaks kept): the layout alone,
    without format_decl's guard."""
    out: list[str] = []
    depth = 0
    for raw in text.split("\n"):
        line = tokens(raw)
        if not line:
            if out and not out[-1].endswith("{") and out[-1] != "":
                out.append("")
            continue
        closing = 0
        while closing < len(line) and line[closing].text in _CLOSERS:
            closing += 1
        if line[0].text == "}" and out and out[-1] == "":
            out.pop()  # no blank line just inside a closing brace
        body = line[0].text + "".join(_space(line, i) + line[i].text for i in range(1, len(line)))
        out.append("  " * max(0, depth - closing) + body)
        for t in line:
            if t.kind == "op":
                if t.text in _OPENERS:
                    depth += 1
                elif t.text in _CLOSERS:
                    depth = max(0, depth - 1)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


def _bare(node: object) -> object:
    """A tree with its spans left out: what two parses must agree on."""
    if isinstance(node, Span):
        return None
    if isinstance(node, tuple):
        return tuple(_bare(n) for n in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return (
            type(node).__name__,
            tuple(
                _bare(getattr(node, f.name))
                for f in dataclasses.fields(node)
                if not f.name.endswith("span")
            ),
        )
    return node


def _trimmed(text: str) -> str:
    """A declaration's text without the blank lines at its end (an unclosed one runs up to the
    next declaration)."""
    return _BLANK_TAIL.sub("", text)


def format_decl(text: str) -> str:
    """One declaration in the canonical layout, or as it is if it does not parse (or if the
    layout would change its tree)."""
    parsed = parse_decl(text)
    if parsed.diagnostics or parsed.decl.kind == "error":
        return _trimmed(text)
    laid = layout_decl(text)
    again = parse_decl(laid)
    if again.diagnostics or _bare(again.decl) != _bare(parsed.decl):
        return _trimmed(text)
    return laid


def _gap_lines(gap: str) -> list[str]:
    """The lines between two declarations: comments to column 0, other text as it is (it is
    refused where it stands), trailing blanks off, blank runs as one blank line."""
    out: list[str] = []
    for raw in gap.split("\n"):
        line = raw.rstrip()
        stripped = line.lstrip()
        if not stripped:
            if out and out[-1] != "":
                out.append("")
            continue
        out.append(stripped if stripped.startswith("#") else line)
    return out


def _after(out: list[str], gap: str) -> str:
    """Append the rest of the last line of the previous declaration (a comment after its `}`)
    to it; the gap's other lines are returned."""
    if not out:
        return gap
    rest, _, gap = gap.partition("\n")
    if rest.strip():
        out[-1] += " " + rest.strip()
    return gap


def format_text(text: str) -> str:
    """The whole file in the canonical layout."""
    bounds, _ = cut_decls(text)
    out: list[str] = []  # lines of the result
    pos = 0
    for start, end in bounds:
        # the gap ends at the start of the line the declaration begins: its last piece is empty
        lines = _gap_lines(_after(out, text[pos:start]))[:-1]
        while lines and lines[0] == "":
            lines.pop(0)
        if out:
            out.append("")  # one blank line after a declaration
        out += lines
        out += format_decl(text[start:end]).split("\n")
        pos = end
    lines = _gap_lines(_after(out, text[pos:]))
    while lines and lines[0] == "":
        lines.pop(0)
    if out and lines:
        out.append("")
    out += lines
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n" if out else ""
