"""The commonest pieces parsed without lark: a declaration's header, a `steps` item and a `param`
item whose initialiser is a name or a call of literal numbers.

Every declaration has a header of its own (its name), so a file of many declarations parsed
each one with lark, and a `steps N` item differs from one system to the next as often. These
two shapes are matched here by a regular expression that accepts only what the grammar reads
the same way (`grammars/alpha.lark`: `system NAME`, `plan NAME for NAME`, `pairing NAME for
NAME`, `steps INT`, separated by its WS): no comment, no keyword where a name stands, no integer
long enough to need the digit-limit refusal. A `param` item (each has its own name, shape and
seed, so it too differs from one system to the next) is read by a small tokenizer and descent
over the same subset: names, integers, decimals `D.D`, `: [ ] , = ( ) -`, whitespace. Anything
else returns None and goes to lark; the two give equal trees for every text both accept
(tests/test_quick_parse.py compares them).
"""

from __future__ import annotations

import re

from alpha_core.support.span import Span
from alpha_core.syntax import ast

_WS = r"[ \t\f\r\n]+"
_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_HEADER = re.compile(rf"(system){_WS}{_NAME}|(plan|pairing){_WS}{_NAME}{_WS}for{_WS}{_NAME}")
_STEPS = re.compile(rf"steps{_WS}([0-9]{{1,18}})")
# every word the grammar spells as a literal: the lexer reads these as keywords, not names
KEYWORDS = frozenset(
    "applies arithmetic batch by checkpoint combine computes contract data deliver each every fn "
    "for in its learner leaves let loss over pairing param plan return roles round rounds shuffle "
    "state steps system to topology".split()
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


_TOKEN = re.compile(
    r"([ \t\f\r\n]+)|([A-Za-z_][A-Za-z0-9_]*)|([0-9]+\.[0-9]+|[0-9]+)|([:\[\],=()\-])"
)
_Tok = tuple[str, str, int, int]  # kind ("name", "num", or the punctuation), text, start, end


def _tokens(text: str) -> list[_Tok] | None:
    out: list[_Tok] = []
    at = 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            return None
        if m.group(2):
            out.append(("name", m.group(2), m.start(), m.end()))
        elif m.group(3):
            out.append(("num", m.group(3), m.start(), m.end()))
        elif m.group(4):
            out.append((m.group(4), m.group(4), m.start(), m.end()))
        at = m.end()
    return out


class _Reader:
    """A cursor over a piece's tokens; `take` returns None where the shape is not the quick one."""

    def __init__(self, toks: list[_Tok], at: int) -> None:
        self.toks, self.i, self.at = toks, 0, at

    def peek(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def take(self, kind: str) -> _Tok | None:
        if self.peek() != kind:
            return None
        self.i += 1
        return self.toks[self.i - 1]

    def span(self, first: _Tok, last: _Tok) -> Span:
        return Span(self.at + first[2], self.at + last[3])

    def name(self) -> _Tok | None:
        tok = self.take("name")
        return None if tok is None or tok[1] in KEYWORDS else tok


def _number(r: _Reader) -> tuple[ast.Expr, _Tok] | None:
    minus = r.take("-")
    tok = r.take("num")
    if tok is None or (tok[1].isdigit() and len(tok[1]) > 18):
        return None
    n = ast.Number(float(tok[1]), tok[1], tok[1].isdigit(), r.span(tok, tok))
    return (n, tok) if minus is None else (ast.Neg(n, r.span(minus, tok)), tok)


def _init(r: _Reader) -> tuple[ast.Name | ast.Call, _Tok] | None:
    func = r.name()
    if func is None:
        return None
    if r.take("(") is None:
        return ast.Name(func[1], r.span(func, func)), func
    args: list[ast.Expr] = []
    kwargs: list[ast.Kwarg] = []
    close = r.take(")")
    while close is None:
        if r.peek() == "name":
            key = r.name()
            if key is None or r.take(":") is None:
                return None
            value = _number(r)
            if value is None:
                return None
            kwargs.append(ast.Kwarg(key[1], r.span(key, key), value[0], r.span(key, value[1])))
        else:
            value = _number(r)
            if value is None or kwargs:  # lark's path refuses a positional after a keyword
                return None
            args.append(value[0])
        close = r.take(")")
        if close is None and r.take(",") is None:
            return None
    call = ast.Call(func[1], r.span(func, func), tuple(args), tuple(kwargs), r.span(func, close))
    return call, close


def param(text: str, at: int) -> ast.ParamItem | None:
    toks = _tokens(text)
    if toks is None:
        return None
    r = _Reader(toks, at)
    first = r.take("name")
    name = r.name() if first is not None and first[1] == "param" else None
    dtype = r.name() if name is not None and r.take(":") is not None else None
    if dtype is None or r.take("[") is None:
        return None
    dims: list[ast.Dim] = []
    close = r.take("]")
    while close is None:
        tok = r.take("num") or r.name()
        if tok is None or (tok[0] == "num" and (not tok[1].isdigit() or len(tok[1]) > 18)):
            return None
        dims.append(ast.Dim(int(tok[1]) if tok[0] == "num" else tok[1], r.span(tok, tok)))
        close = r.take("]")
        if close is None and r.take(",") is None:
            return None
    if r.take("=") is None:
        return None
    init = _init(r)
    if init is None or r.peek() is not None or name is None or first is None:
        return None
    ty = ast.TensorType(dtype[1], r.span(dtype, dtype), tuple(dims), r.span(dtype, close))
    return ast.ParamItem(name[1], r.span(name, name), ty, init[0], r.span(first, init[1]))
