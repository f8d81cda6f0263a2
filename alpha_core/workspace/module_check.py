"""Check a whole parsed module: systems, then the plans and pairings that name them.

Each declaration is checked on its own, into a `DeclCheck`; `assemble` applies the rules that
span declarations (one of each name per kind; a plan's system and a pairing's plan exist and
checked) and gathers the checks in source order. A checker may check a declaration where it
stands, or once at offset 0 and reuse that check wherever its text moves: `assemble` moves a
check's spans to its declaration's offset through the checker (the workspace memoizes both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from alpha_core.check.context import CheckContext
from alpha_core.check.program import Program
from alpha_core.check.system import ReadFile, check_system
from alpha_core.diagnostics import Diagnostic
from alpha_core.ir.graph import Shape
from alpha_core.plan.check import check_plan
from alpha_core.plan.model import Pairing, Plan
from alpha_core.plan.pairing_check import check_pairing
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.syntax.parser import shift_diagnostic
from alpha_core.syntax.shift import replaced
from alpha_core.syntax.shift import span as shift_span


@dataclass(frozen=True)
class CheckedModule:
    programs: dict[str, Program]
    diagnostics: tuple[Diagnostic, ...]
    types: dict[Span, Shape] = field(default_factory=dict)
    definitions: dict[Span, Span] = field(default_factory=dict)
    plans: dict[str, Plan] = field(default_factory=dict)
    pairings: dict[str, Pairing] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class DeclCheck:
    """What checking one declaration found, with the spans of the tree it was given.

    `value` is the Program of a system, the Plan of a plan or the Pairing of a pairing, or None
    when it was refused. Compared by identity: what depends on a check is memoized by it.
    """

    value: Program | Plan | Pairing | None
    diagnostics: tuple[Diagnostic, ...]
    types: dict[Span, Shape]
    definitions: dict[Span, Span]


def _finish(value: Program | Plan | Pairing | None, ctx: CheckContext) -> DeclCheck:
    return DeclCheck(value, tuple(ctx.diagnostics), ctx.types, ctx.definitions)


def check_system_decl(
    decl: ast.Decl, read_file: ReadFile, base_dir: str, text: str | None = None
) -> DeclCheck:
    ctx = CheckContext()
    try:
        return _finish(check_system(decl, ctx, read_file, base_dir, text), ctx)
    except RecursionError:  # an expression the parser took but too deep to check
        ctx = CheckContext()
        ctx.refuse(
            "syntax-error",
            f"system `{decl.name}` nests an expression too deeply",
            decl.name_span,
            help="split the expression with `let`",
        )
        return _finish(None, ctx)


def check_plan_decl(decl: ast.Decl, system: Program) -> DeclCheck:
    ctx = CheckContext()
    return _finish(check_plan(decl, system, ctx), ctx)


def check_pairing_decl(decl: ast.Decl, plan: Plan) -> DeclCheck:
    ctx = CheckContext()
    return _finish(check_pairing(decl, plan, ctx), ctx)


def shift_program(program: Program, by: int) -> Program:
    """The same program for its system moved by `by` characters (parameters keep spans)."""
    if by == 0:
        return program
    params = tuple(replaced(p, span=shift_span(p.span, by)) for p in program.params)
    return replaced(program, params=params)


def shift_check(check: DeclCheck, by: int, target: Program | Plan | None = None) -> DeclCheck:
    """The same check for its declaration moved by `by` characters.

    A system's program moves with it. A plan's or a pairing's value points at `target`, the
    placed program or plan it depends on, in place of the one it was checked against (the same
    but for the spans of the system's parameters)."""
    value = check.value
    if isinstance(value, Program):
        value = shift_program(value, by)
    elif isinstance(value, Plan) and isinstance(target, Program) and value.system is not target:
        value = replaced(value, system=target)
    elif isinstance(value, Pairing) and isinstance(target, Plan) and value.plan is not target:
        value = replaced(value, plan=target)
    if by == 0:
        if value is check.value:
            return check
        return DeclCheck(value, check.diagnostics, check.types, check.definitions)
    return DeclCheck(
        value,
        tuple(shift_diagnostic(d, by) for d in check.diagnostics),
        {shift_span(s, by): shape for s, shape in check.types.items()},
        {shift_span(s, by): shift_span(d, by) for s, d in check.definitions.items()},
    )


@dataclass(frozen=True)
class Placed:
    """A declaration's tree, with spans relative to `offset` in the file, and its text."""

    decl: ast.Decl
    offset: int = 0
    text: str = ""  # the declaration's source, where the checker memoizes by it

    @property
    def name_span(self) -> Span:
        return shift_span(self.decl.name_span, self.offset) if self.offset else self.decl.name_span

    @property
    def target_span(self) -> Span | None:
        span = self.decl.target_span
        return shift_span(span, self.offset) if self.offset and span is not None else span


class Checker(Protocol):
    """How `assemble` gets each declaration checked. Checks are in the spans of `d.decl`."""

    def system(self, d: Placed) -> DeclCheck: ...

    def plan(self, d: Placed, system: DeclCheck) -> DeclCheck: ...

    def pairing(self, d: Placed, plan: DeclCheck) -> DeclCheck: ...

    def placed(
        self, check: DeclCheck, offset: int, target: Program | Plan | None = None
    ) -> DeclCheck:
        """The check moved to `offset` and pointed at `target` (`shift_check`, perhaps
        memoized)."""
        ...


class _Direct:
    """Every declaration checked where it stands, nothing kept."""

    def __init__(self, read_file: ReadFile, base_dir: str) -> None:
        self.read_file = read_file
        self.base_dir = base_dir

    def system(self, d: Placed) -> DeclCheck:
        return check_system_decl(d.decl, self.read_file, self.base_dir)

    def plan(self, d: Placed, system: DeclCheck) -> DeclCheck:
        assert isinstance(system.value, Program)
        return check_plan_decl(d.decl, system.value)

    def pairing(self, d: Placed, plan: DeclCheck) -> DeclCheck:
        assert isinstance(plan.value, Plan)
        return check_pairing_decl(d.decl, plan.value)

    def placed(
        self, check: DeclCheck, offset: int, target: Program | Plan | None = None
    ) -> DeclCheck:
        return shift_check(check, offset, target)


def check_module(module: ast.Module, read_file: ReadFile, base_dir: str) -> CheckedModule:
    """Check every declaration of a module from scratch."""
    return assemble([Placed(d) for d in module.decls], _Direct(read_file, base_dir))


def assemble(decls: Sequence[Placed], checker: Checker) -> CheckedModule:
    """The module's checks in source order: systems, then plans, then pairings."""
    ctx = CheckContext()  # gathers every declaration's findings, and the module's own

    def add(check: DeclCheck) -> None:
        ctx.diagnostics += check.diagnostics
        ctx.types.update(check.types)
        ctx.definitions.update(check.definitions)

    declared: dict[str, dict[str, Placed]] = {"system": {}, "plan": {}, "pairing": {}}
    checks: dict[str, DeclCheck] = {}  # by system name, as checked (the key of its plans)
    programs: dict[str, Program] = {}
    for d in decls:
        decl = d.decl
        if decl.kind not in declared:
            continue
        if decl.name in declared[decl.kind]:
            ctx.refuse("duplicate-name", f"a second {decl.kind} named `{decl.name}`", d.name_span)
            continue
        declared[decl.kind][decl.name] = d
        if decl.kind == "system":
            check = checker.system(d)
            placed = checker.placed(check, d.offset)
            add(placed)
            if isinstance(placed.value, Program):
                programs[decl.name] = placed.value
                checks[decl.name] = check
    plans: dict[str, Plan] = {}
    plan_checks: dict[str, DeclCheck] = {}
    for d in declared["plan"].values():
        target = _target(d, declared["system"], ctx)
        if target is not None and target in programs:
            check = checker.plan(d, checks[target])
            placed = checker.placed(check, d.offset, programs[target])
            add(placed)
            if isinstance(placed.value, Plan):
                plans[d.decl.name] = placed.value
                plan_checks[d.decl.name] = check
    pairings: dict[str, Pairing] = {}
    for d in declared["pairing"].values():
        target = _target(d, declared["plan"], ctx)
        if target is not None and target in plans:
            check = checker.pairing(d, plan_checks[target])
            placed = checker.placed(check, d.offset, plans[target])
            add(placed)
            if isinstance(placed.value, Pairing):
                pairings[d.decl.name] = placed.value
    return CheckedModule(
        programs, tuple(ctx.diagnostics), ctx.types, ctx.definitions, plans, pairings
    )


def _target(d: Placed, candidates: dict[str, Placed], ctx: CheckContext) -> str | None:
    """The declaration a plan or pairing names after `for`, refused when there is none."""
    decl = d.decl
    target_span = d.target_span
    assert decl.target is not None and target_span is not None
    if decl.target not in candidates:
        kind = "system" if decl.kind == "plan" else "plan"
        ctx.unknown(kind, decl.target, target_span, candidates)
        return None
    ctx.definitions[target_span] = candidates[decl.target].name_span
    return decl.target
