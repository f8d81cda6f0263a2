"""The one diagnostic type every phase reports, whatever face shows it."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.syntax.span import Span


@dataclass(frozen=True)
class Related:
    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    """A refusal: a registered name, a one-line message with the facts, and where it applies.

    `message` follows rustc's style: lowercase, no trailing period, concrete facts.
    """

    name: str
    message: str
    span: Span | None
    related: tuple[Related, ...] = ()
    notes: tuple[str, ...] = ()
    help: str | None = None
    severity: str = "error"

    def __post_init__(self) -> None:
        from alpha_core.diagnostics.registry import REGISTRY

        if self.name not in REGISTRY:
            raise ValueError(f"diagnostic name {self.name!r} is not registered")
