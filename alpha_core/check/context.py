"""Shared state of one system's check: diagnostics, and facts for the editor (types by span)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from alpha_core.diagnostics import Diagnostic, Related
from alpha_core.ir.graph import BATCH, Shape
from alpha_core.syntax.span import Span


def show_shape(shape: Shape) -> str:
    return "f32[" + ", ".join("B" if d == BATCH else str(d) for d in shape) + "]"


def suggest(name: str, candidates: Iterable[str]) -> list[str]:
    """Elm-style: the declared names nearest to a misspelt one."""
    return difflib.get_close_matches(name, sorted(set(candidates)), n=3, cutoff=0.6)


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
