"""The front door of the core: pure phases memoized by content, shared by the CLI, LSP and TUI.

Parsing is memoized per piece of text (see syntax/parser.py), checking per file text and the
bytes of the data files it read. The workspace does no IO of its own beyond reading the data
files a system names, through `read_file`, which a face may replace (an editor's unsaved
buffers, say).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from alpha_core.check.module import CheckedModule, check_module
from alpha_core.check.program import Program
from alpha_core.diagnostics import Diagnostic
from alpha_core.plan.model import Pairing, Plan
from alpha_core.syntax import ast
from alpha_core.syntax.parser import parse


@dataclass(frozen=True)
class Analysis:
    """Everything the faces ask of one file: the tree, the programs, every diagnostic."""

    path: str
    text: str
    module: ast.Module
    checked: CheckedModule

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return list(self.parse_diagnostics) + list(self.checked.diagnostics)

    parse_diagnostics: tuple[Diagnostic, ...] = ()

    def plan(
        self, name: str, pairing: str | None = None
    ) -> tuple[Plan | None, Pairing | None, list[Diagnostic]]:
        """A plan (and optionally a pairing of it) to build. Refusals if they do not fit."""
        diags = self.diagnostics
        if any(d.severity == "error" for d in diags):
            return None, None, diags
        plan = self.checked.plans.get(name)
        if plan is None:
            have = ", ".join(f"`{p}`" for p in sorted(self.checked.plans)) or "none"
            return (
                None,
                None,
                [Diagnostic("no-system", f"no plan named `{name}` (plans: {have})", None)],
            )
        if pairing is None:
            return plan, None, []
        chosen = self.checked.pairings.get(pairing)
        if chosen is None or chosen.plan.name != name:
            return (
                None,
                None,
                [Diagnostic("no-system", f"no pairing named `{pairing}` for plan `{name}`", None)],
            )
        return plan, chosen, []

    def program(self, name: str | None = None) -> tuple[Program | None, list[Diagnostic]]:
        """The system to build: the one named, or the only one. Refusals if none fits."""
        diags = self.diagnostics
        if any(d.severity == "error" for d in diags):
            return None, diags
        systems = [d for d in self.module.decls if d.kind == "system"]
        if name is not None:
            systems = [d for d in systems if d.name == name]
        if len(systems) != 1:
            have = ", ".join(f"`{d.name}`" for d in self.module.decls if d.kind == "system")
            message = (
                f"no system named `{name}`"
                if name is not None and not systems
                else "no system to build"
                if not systems
                else f"several systems ({have}); choose one with --system"
            )
            if have and not systems:
                message += f" (the file declares {have})"
            return None, [Diagnostic("no-system", message, None)]
        return self.checked.programs[systems[0].name], []


def read_disk(path: str) -> bytes | None:
    """A data file's bytes, or None. Only regular files: never a FIFO, a device or stdin."""
    try:
        p = Path(path)
        if not p.is_file():
            return None
        return p.read_bytes()
    except (OSError, ValueError):  # ValueError: a path with a NUL byte
        return None


class Workspace:
    def __init__(
        self, read_file: Callable[[str], bytes | None] = read_disk, capacity: int = 64
    ) -> None:
        self._read = read_file
        self._capacity = capacity
        # key: (path, text digest) → (the data files read with their digests, analysis)
        self._analyses: dict[tuple[str, str], tuple[dict[str, str | None], Analysis]] = {}

    def _digest(self, content: bytes | None) -> str | None:
        return None if content is None else hashlib.sha256(content).hexdigest()

    def analyze(self, path: str, text: str) -> Analysis:
        key = (path, hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest())
        cached = self._analyses.get(key)
        if cached is not None:
            seen, analysis = cached
            if all(self._digest(self._read(p)) == d for p, d in seen.items()):
                return analysis
        reads: dict[str, str | None] = {}

        def tracked_read(p: str) -> bytes | None:
            content = self._read(p)
            reads[p] = self._digest(content)
            return content

        module, parse_diags = parse(text)
        base = os.path.dirname(os.path.abspath(path))
        checked = check_module(module, tracked_read, base)
        analysis = Analysis(path, text, module, checked, tuple(parse_diags))
        if len(self._analyses) >= self._capacity:
            self._analyses.pop(next(iter(self._analyses)))
        self._analyses[key] = (reads, analysis)
        return analysis

    def analyze_file(self, path: str) -> Analysis:
        return self.analyze(path, Path(path).read_text(encoding="utf-8", errors="replace"))
