"""Shared state of one system's check: diagnostics, and facts for the editor (types by span)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from alpha_core.diagnostics import Diagnostic, Related
from alpha_core.ir.graph import BATCH, Shape
from alpha_core.support.span import Span


def show_shape(shape: Shape) -> str:
    # -k (k > 1): k per example, the rows of a product over every position (never declared)
    return "f32[" + ", ".join(_dim(d) for d in shape) + "]"


def _dim(d: int) -> str:
    return "B" if d == BATCH else f"B*{-d}" if d < 0 else str(d)


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein (optimal string alignment): insertions, deletions, substitutions
    and swaps of two neighbours each cost one."""
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row = row, [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], before[j - 2] + 1)
        before = prev
    return row[len(b)]


def suggest(name: str, candidates: Iterable[str]) -> list[str]:
    """Elm-style: the declared names nearest to a misspelt one. A name within rustc's edit
    distance (a third of its length, at least one) is near however short it is: difflib's
    ratio alone misses `w3` for `w2` (0.5) while it finds `ww2`."""
    pool = sorted(set(candidates))
    limit = max(1, len(name) // 3)
    # a distance is at least the difference of the lengths: a name far longer or shorter
    # than every candidate (a pasted paragraph) costs no quadratic comparison
    near_length = [c for c in pool if c != name and abs(len(c) - len(name)) <= limit]
    close = sorted((edit_distance(name, c), c) for c in near_length)
    # one letter for another is no evidence of a slip: `c` would be "near" every `b` and `x`
    near = [c for d, c in close if d <= limit and len(name) > 1]
    near += [c for c in difflib.get_close_matches(name, pool, n=3, cutoff=0.6) if c not in near]
    return near[:3]


@dataclass
class CheckContext:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    types: dict[Span, Shape] = field(default_factory=dict)  # expression span → shape
    definitions: dict[Span, Span] = field(default_factory=dict)  # use span → definition span

    def refuse(
        self,
        name: str,
        message: str,
        span: Span | None,
        *,
        related: tuple[Related, ...] = (),
        help: str | None = None,
        notes: tuple[str, ...] = (),
    ) -> None:
        self.diagnostics.append(Diagnostic(name, message, span, related, notes, help))

    def unknown(self, kind: str, name: str, span: Span, candidates: Iterable[str]) -> None:
        near = suggest(name, candidates)
        help = "did you mean " + " or ".join(f"`{n}`" for n in near) + "?" if near else None
        self.refuse("unknown-name", f"unknown {kind} `{name}`", span, help=help)
