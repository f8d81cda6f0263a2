"""Workspace symbols: every named thing of a file's outline, flat, with its container, and the
fuzzy match an editor's symbol search expects (the query's characters in order, any case)."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.query.outline import Symbol

NAMED = frozenset({"system", "plan", "pairing", "data", "param", "fn", "let", "role"})


@dataclass(frozen=True)
class Found:
    symbol: Symbol
    container: str  # the declaration (and function) it is in; "" for a declaration


def matches(query: str, name: str) -> bool:
    """Whether `query`'s characters occur in `name` in order, ignoring case (empty: all)."""
    rest = iter(name.lower())
    return all(ch in rest for ch in query.lower())


def flat(symbols: list[Symbol], query: str = "") -> list[Found]:
    out: list[Found] = []

    def visit(s: Symbol, container: str) -> None:
        if s.kind in NAMED and s.name and matches(query, s.name):
            out.append(Found(s, container))
        inner = (
            f"{container}.{s.name}"
            if container and s.kind in NAMED
            else (s.name if s.kind in ("system", "plan", "pairing") else container)
        )
        for c in s.children:
            visit(c, inner)

    for s in symbols:
        visit(s, "")
    return out
