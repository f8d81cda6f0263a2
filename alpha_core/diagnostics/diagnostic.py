"""The one diagnostic type every phase reports, whatever face shows it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from alpha_core.support.span import Span

# What a terminal or an editor would act on rather than show: C0 controls (tab included, and
# newline: a message is one line), DEL, C1 controls (U+009B is a CSI on some terminals), the
# bidirectional overrides and isolates, and the line and paragraph separators.
_UNSEEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures: U+241B ␛ for ESC, U+2400 ␀ for NUL
    if code == 0x7F:
        return "\u2421"
    return f"\\u{{{code:x}}}"  # as rustc writes them: \u{9b}, \u{202e}


def visible(text: str) -> str:
    """`text` with every control character drawn as a visible symbol, so that source text, names
    and paths echoed to a terminal or an editor can never move its cursor, clear its screen or
    reorder what it shows. C0 controls and DEL take one column each, as before."""
    return _UNSEEN.sub(_shown, text) if _UNSEEN.search(text) else text


@dataclass(frozen=True)
class Related:
    span: Span
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", visible(self.message))


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
        # messages echo user text (names, paths, characters): never a raw control byte
        object.__setattr__(self, "message", visible(self.message))
        object.__setattr__(self, "notes", tuple(visible(n) for n in self.notes))
        if self.help is not None:
            object.__setattr__(self, "help", visible(self.help))
