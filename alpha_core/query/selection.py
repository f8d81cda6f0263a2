"""Selection ranges: from the word at the cursor out through every node around it to its
declaration and the whole file, each range strictly larger than the one inside it."""

from __future__ import annotations

from alpha_core.query.rename import word_at
from alpha_core.query.tree import enclosing
from alpha_core.support.span import Span
from alpha_core.syntax import ast


def selection_chain(module: ast.Module, text: str, offset: int) -> list[Span]:
    """Innermost first."""
    spans: list[Span] = []
    word = word_at(text, offset)
    if word is not None:
        spans.append(word)
    for node in reversed(enclosing(module, offset)):
        span = getattr(node, "span", None)
        if isinstance(span, Span):
            spans.append(span)
    spans.append(Span(0, len(text)))
    out: list[Span] = []
    for s in spans:
        if not out or (s.start <= out[-1].start and out[-1].end <= s.end and s != out[-1]):
            out.append(s)
    return out
