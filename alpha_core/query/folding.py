"""Folding ranges: declarations, the items that span lines (a function, a `round`, a `state`,
a call written over several lines), and runs of comment lines."""

from __future__ import annotations

import re
from dataclasses import dataclass

from alpha_core.syntax import ast

_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)


@dataclass(frozen=True)
class Fold:
    start: int  # offsets: the fold starts on start's line and ends on end's line
    end: int
    kind: str  # region | comment


def folds(module: ast.Module, text: str) -> list[Fold]:
    out: list[Fold] = []

    def add(start: int, end: int, kind: str = "region") -> None:
        if "\n" in text[start:end]:
            out.append(Fold(start, end, kind))

    for decl in module.decls:
        if decl.kind == "error":
            continue
        add(decl.span.start, decl.span.end)
        for item in decl.items:
            span = getattr(item, "span", None)
            if span is not None and not isinstance(item, ast.ErrorItem):
                add(span.start, span.end)
    run: list[re.Match[str]] = []
    for m in _COMMENT_LINE.finditer(text):
        if run and text.count("\n", run[-1].end(), m.start()) != 1:
            if len(run) > 1:
                add(run[0].start(), run[-1].end(), "comment")
            run = []
        run.append(m)
    if len(run) > 1:
        add(run[0].start(), run[-1].end(), "comment")
    return sorted(out, key=lambda f: (f.start, -f.end))
