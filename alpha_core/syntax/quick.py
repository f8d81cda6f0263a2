"""The commonest one-line pieces parsed without lark: a declaration's header and a `steps` item.

Every declaration has a header of its own (its name), so a file of many declarations parsed
each one with lark, and a `steps N` item differs from one system to the next as often. These
two shapes are matched here by a regular expression that accepts only what the grammar reads
the same way (`grammars/alpha.lark`: `system NAME`, `plan NAME for NAME`, `pairing NAME for
NAME`, `steps INT`, separated by its WS): no comment, no keyword where a name stands, no integer
long enough to need the digit-limit refusal. Anything else returns None and goes to lark; the
two give equal trees for every text both accept.
"""

from __future__ import annotations

import re

from alpha_core.syntax import ast
from alpha_core.syntax.span import Span

_WS = r"[ \t\f\r\n]+"
_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_HEADER = re.compile(rf"(system){_WS}{_NAME}|(plan|pairing){_WS}{_NAME}{_WS}for{_WS}{_NAME}")
_STEPS = re.compile(rf"steps{_WS}([0-9]{{1,18}})")
# every word the grammar spells as a literal: the lexer reads these as keywords, not names
KEYWORDS = frozenset(
    "applies batch by checkpoint combine computes contract data deliver each every fn for its "
    "learner leaves let loss over pairing param plan return roles round rounds shuffle state "
    "steps system to topology".split()
)

Header = tuple[str, str, Span, str | None, Span | None]


def header(text: str, at: int) -> Header | None:
    m = _HEADER.fullmatch(text)
    if m is None:
        return None
    if m.group(1):
        name = m.group(2)
        if name in KEYWORDS:
            return None
        return ("system", name, Span(at + m.start(2), at + m.end(2)), None, None)
    name, target = m.group(4), m.group(5)
    if name in KEYWORDS or target in KEYWORDS:
        return None
    return (
        m.group(3),
        name,
        Span(at + m.start(4), at + m.end(4)),
        target,
        Span(at + m.start(5), at + m.end(5)),
    )


def steps(text: str, at: int) -> ast.StepsItem | None:
    m = _STEPS.fullmatch(text)
    if m is None:
        return None
    return ast.StepsItem(
        int(m.group(1)), Span(at + m.start(1), at + m.end(1)), Span(at, at + m.end())
    )
