"""The front door of the core: pure phases memoized by content, shared by the CLI, LSP and TUI.

Analysis is incremental per declaration. Parsing is memoized by the text of each declaration
and of each item in it (syntax/parser.py); checking a system by (its text, the folder its data
paths are relative to, the digests of the data files it read), a plan by (its text, its
system's check), a pairing by (its text, its plan's check). Each is computed once at offset 0
and moved to where its declaration stands, and a move is kept for as long as that offset is in
use, so an edit costs the declaration it touched, the declarations that depend on it, and
lookups for the rest. The workspace does no IO of its own beyond reading the data files a
system names, through `read_file`, which a face may replace (an editor's unsaved buffers, say).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from alpha_core.check.program import Program
from alpha_core.data import csv_rows, synthetic
from alpha_core.diagnostics import Diagnostic
from alpha_core.plan.model import Pairing, Plan
from alpha_core.support.collector import collector_paused
from alpha_core.support.files import DATA_LIMIT, NotReadable, read_regular
from alpha_core.support.memo import Lru, MemoStats
from alpha_core.syntax import ast, parser
from alpha_core.syntax.parser import ParsedFile, parse_file
from alpha_core.workspace.module_check import (
    CheckedModule,
    DeclCheck,
    Placed,
    assemble,
    check_pairing_decl,
    check_plan_decl,
    check_system_decl,
    shift_check,
)


@dataclass(frozen=True)
class Analysis:
    """Everything the faces ask of one file: the tree, the programs, every diagnostic."""

    path: str
    text: str
    parsed: ParsedFile
    checked: CheckedModule

    @property
    def module(self) -> ast.Module:
        """The tree, spans into `text`; made when first asked for (diagnostics do not need it)."""
        return self.parsed.module

    @property
    def parse_diagnostics(self) -> tuple[Diagnostic, ...]:
        return self.parsed.diagnostics

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return list(self.parse_diagnostics) + list(self.checked.diagnostics)

    def plan(
        self, name: str, pairing: str | None = None
    ) -> tuple[Plan | None, Pairing | None, list[Diagnostic]]:
        """A plan (and optionally a pairing of it) to build. Refusals if they do not fit."""
        wanted = {("plan", name)}
        if pairing is not None:
            wanted.add(("pairing", pairing))
        for parsed, _ in self.parsed.decls:  # the system the plan is of
            if parsed.decl.kind == "plan" and parsed.decl.name == name:
                wanted.add(("system", parsed.decl.target or ""))
        diags = self.blocking(wanted)
        if diags:
            return None, None, diags
        plan = self.checked.plans.get(name)
        if plan is None:
            have = ", ".join(f"`{p}`" for p in sorted(self.checked.plans)) or "none"
            message = f"no plan named `{name}` (plans: {have})"
            return (
                None,
                None,
                [Diagnostic("no-system", message, None, help=_near(name, self.checked.plans))],
            )
        if pairing is None:
            return plan, None, []
        chosen = self.checked.pairings.get(pairing)
        if chosen is None or chosen.plan.name != name:
            own = sorted(n for n, p in self.checked.pairings.items() if p.plan.name == name)
            have = ", ".join(f"`{p}`" for p in own) or "none"
            message = f"no pairing named `{pairing}` for plan `{name}` (its pairings: {have})"
            return None, None, [Diagnostic("no-system", message, None, help=_near(pairing, own))]
        return plan, chosen, []

    def program(self, name: str | None = None) -> tuple[Program | None, list[Diagnostic]]:
        """The system to build: the one named, or the only one. Refusals if none fits."""
        decls = [parsed.decl for parsed, _ in self.parsed.decls]  # names need no offsets
        systems = [d for d in decls if d.kind == "system"]
        if name is not None:
            systems = [d for d in systems if d.name == name]
        diags = self.blocking({("system", d.name) for d in systems} or {("system", "")})
        if diags:
            return None, diags
        if len(systems) != 1:
            have = ", ".join(f"`{d.name}`" for d in decls if d.kind == "system")
            message = (
                f"no system named `{name}`"
                if name is not None and not systems
                else "no system to build"
                if not systems
                else f"several systems ({have}); choose one with --system"
            )
            if have and not systems:
                message += f" (the file declares {have})"
            names = [d.name for d in decls if d.kind == "system"]
            near = _near(name, names) if name is not None and not systems else None
            return None, [Diagnostic("no-system", message, None, help=near)]
        return self.checked.programs[systems[0].name], []

    def blocking(self, wanted: set[tuple[str, str]]) -> list[Diagnostic]:
        """The errors that stop a build of the declarations `wanted` ((kind, name) pairs): those
        inside them, and those of no declaration (stray text, the file). A refusal inside another
        plan or pairing (a GPU profile this system cannot use, say) does not stop it."""
        extents: list[tuple[int, int, tuple[str, str]]] = [
            (offset, offset + len(parsed.text), (parsed.decl.kind, parsed.decl.name))
            for parsed, offset in self.parsed.decls
        ]
        out: list[Diagnostic] = []
        for d in self.diagnostics:
            if d.severity != "error":
                continue
            owner = None
            if d.span is not None:
                for lo, hi, key in extents:
                    if lo <= d.span.start < hi:
                        owner = key
                        break
            if owner is None or owner in wanted or owner[0] == "error":
                out.append(d)
        return out


def _near(name: str, names: Iterable[str]) -> str | None:
    """`did you mean ...?` for a name given on the command line, or None."""
    from alpha_core.check.context import suggest

    near = suggest(name, names)
    return "did you mean " + " or ".join(f"`{n}`" for n in near) + "?" if near else None


def read_disk(path: str) -> bytes | None:
    """A data file's bytes, or None. Only regular files: never a FIFO, a device or stdin."""
    try:
        return read_regular(path, DATA_LIMIT)
    except NotReadable:
        return None


@dataclass
class CheckCounts:
    """How many declarations the workspace has checked anew (memo misses), by kind.

    A memo hit is not counted: after an edit inside one system of a file analysed before, only
    that system (and the plans and pairings that depend on it) are counted again."""

    systems: int = 0
    plans: int = 0
    pairings: int = 0


Reads = dict[str, str | None]  # data file path → digest of its bytes (None: unreadable)


class _Checker:
    """The workspace's checker for one analysis: memoized by declaration (see module doc)."""

    def __init__(self, ws: Workspace, base_dir: str, seen: Reads) -> None:
        self.ws = ws
        self.base_dir = base_dir
        self.seen = seen  # the data files read so far in this analysis
        self.reads: Reads = {}  # every data file the analysis depends on, with its digest
        # each data file's bytes, read once per analysis however many systems name it (a file
        # of 30,000 systems on one table read and hashed it 30,000 times)
        self.contents: dict[str, bytes | None] = {}

    def read(self, path: str) -> bytes | None:
        if path not in self.contents:
            self.contents[path] = content = self.ws._read(path)
            self.seen[path] = self.ws._digest(path, content)
        return self.contents[path]

    def system(self, d: Placed) -> DeclCheck:
        ws = self.ws
        key = (d.text, self.base_dir)
        kept = ws._systems.get(key)
        if kept is not None and all(ws._current(p, self.seen) == dg for p, dg in kept[0].items()):
            self.reads.update(kept[0])
            return kept[1]
        reads: Reads = {}

        def tracked_read(p: str) -> bytes | None:
            content = self.read(p)
            reads[p] = self.seen[p]
            return content

        check = check_system_decl(d.decl, tracked_read, self.base_dir, d.text or None)
        ws.counts.systems += 1
        ws._systems.put(key, (reads, check), len(d.text))
        self.reads.update(reads)
        return check

    def plan(self, d: Placed, system: DeclCheck) -> DeclCheck:
        kept = self.ws._plans.get((d.text, system))
        if kept is None:
            assert isinstance(system.value, Program)
            kept = check_plan_decl(d.decl, system.value)
            self.ws.counts.plans += 1
            self.ws._plans.put((d.text, system), kept, len(d.text))
        return kept

    def pairing(self, d: Placed, plan: DeclCheck) -> DeclCheck:
        kept = self.ws._pairings.get((d.text, plan))
        if kept is None:
            assert isinstance(plan.value, Plan)
            kept = check_pairing_decl(d.decl, plan.value)
            self.ws.counts.pairings += 1
            self.ws._pairings.put((d.text, plan), kept, len(d.text))
        return kept

    def placed(
        self, check: DeclCheck, offset: int, target: Program | Plan | None = None
    ) -> DeclCheck:
        # the target is compared by identity (hashing a program would walk its graph); the
        # entry holds it, so its id cannot be reused while the entry lives
        key = (check, offset, None if target is None else id(target))
        kept = self.ws._placed.get(key)
        if kept is not None and kept[0] is target:
            return kept[1]
        placed = shift_check(check, offset, target)
        # weighed by what a move copies: its findings (diagnostics, types, definitions)
        findings = 1 + len(check.diagnostics) + len(check.types) + len(check.definitions)
        self.ws._placed.put(key, (target, placed), findings)
        return placed


class Workspace:
    """Analyses of files, and the memos they share, each bounded (`alpha_core.support.memo.Lru`,
    least recently used out): whole analyses by (path, text), up to `capacity` of them and
    `text_budget` characters of their texts together; per declaration (checks of systems, plans
    and pairings) up to `declarations` entries and `text_budget` characters of declaration text
    each; checks moved to an offset up to `declarations` entries and `findings` findings.
    `counts` says how many declarations were checked anew; `parser.parse_cache_info()` how many
    were parsed anew; `memo_stats()` what every table holds."""

    def __init__(
        self,
        read_file: Callable[[str], bytes | None] = read_disk,
        capacity: int = 64,
        declarations: int = 16384,
        text_budget: int = 1_500_000,
        findings: int = 2_000_000,
        one_shot: bool = False,
    ) -> None:
        self._read = read_file
        # a workspace of a process that analyses once and exits (`alpha check`): what an
        # analysis built is frozen out of the cyclic collector (`collector_paused`)
        self._one_shot = one_shot
        if one_shot:  # nothing is asked twice: keep no analysis and no check (half its memory)
            capacity = declarations = 0
        # key: (path, text digest) → (the data files read with their digests, analysis)
        self._analyses: Lru[tuple[str, str], tuple[Reads, Analysis]] = Lru(
            "workspace.analyses", capacity, text_budget
        )
        # per declaration; checks are compared by identity, so a plan's key holds its system's
        self._systems: Lru[tuple[str, str], tuple[Reads, DeclCheck]] = Lru(
            "workspace.systems", declarations, text_budget
        )
        self._plans: Lru[tuple[str, DeclCheck], DeclCheck] = Lru(
            "workspace.plans", declarations, text_budget
        )
        self._pairings: Lru[tuple[str, DeclCheck], DeclCheck] = Lru(
            "workspace.pairings", declarations, text_budget
        )
        self._placed: Lru[
            tuple[DeclCheck, int, int | None], tuple[Program | Plan | None, DeclCheck]
        ] = Lru("workspace.placed", declarations, findings)
        # the last bytes seen of each data file and their digest: a reader that hands back the
        # same bytes object (the language server's, while the file stands) is not hashed again
        self._digests: Lru[str, tuple[bytes, str]] = Lru("workspace.digests", 256, 1 << 40)
        self.counts = CheckCounts()

    def memo_stats(self) -> list[MemoStats]:
        """What this workspace's memo tables hold now (entries, weight, bounds)."""
        tables = (
            self._analyses,
            self._systems,
            self._plans,
            self._pairings,
            self._placed,
            self._digests,
        )
        return [t.stats() for t in tables]

    def _digest(self, path: str, content: bytes | None) -> str | None:
        if content is None:
            return None
        kept = self._digests.get(path)
        if kept is not None and kept[0] is content:
            return kept[1]
        digest = hashlib.sha256(content).hexdigest()
        self._digests.put(path, (content, digest))
        return digest

    def _current(self, path: str, seen: Reads) -> str | None:
        """A data file's digest now, read once per analysis (`seen` holds what it read)."""
        if path not in seen:
            seen[path] = self._digest(path, self._read(path))
        return seen[path]

    def analyze(self, path: str, text: str) -> Analysis:
        key = (path, hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest())
        seen: Reads = {}
        cached = self._analyses.get(key)
        if cached is not None:
            reads, analysis = cached
            if all(self._current(p, seen) == d for p, d in reads.items()):
                return analysis
        with collector_paused(freeze=self._one_shot):
            parsed = parse_file(text)
            checked, reads = self._check(path, parsed, seen)
        analysis = Analysis(path, text, parsed, checked)
        self._analyses.put(key, (reads, analysis), len(text))
        return analysis

    def check(self, path: str, parsed: ParsedFile) -> CheckedModule:
        """Check a parsed file (the second half of `analyze`, reusing what it kept)."""
        with collector_paused():
            return self._check(path, parsed, {})[0]

    def _check(self, path: str, parsed: ParsedFile, seen: Reads) -> tuple[CheckedModule, Reads]:
        checker = _Checker(self, os.path.dirname(os.path.abspath(path)), seen)
        decls = [Placed(p.decl, offset, p.text) for p, offset in parsed.decls]
        return assemble(decls, checker), checker.reads

    def analyze_file(self, path: str) -> Analysis:
        return self.analyze(path, Path(path).read_text(encoding="utf-8", errors="replace"))


def clear_memos() -> None:
    """Forget what pure phases memoize for the whole process (parsed declarations and items,
    placed trees, synthetic data and its digests, tables' row verdicts): to measure a cold
    analysis. A workspace's own memos go with it."""
    parser.clear_memos()
    synthetic.clear_memos()
    csv_rows.clear_memo()
