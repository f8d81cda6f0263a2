"""Check a whole parsed module: systems, then the plans and pairings that name them."""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.check.context import CheckContext
from alpha_core.check.program import Program
from alpha_core.check.system import ReadFile, check_system
from alpha_core.diagnostics import Diagnostic
from alpha_core.ir.graph import Shape
from alpha_core.plan.check import check_pairing, check_plan
from alpha_core.plan.model import Pairing, Plan
from alpha_core.syntax import ast
from alpha_core.syntax.span import Span


@dataclass(frozen=True)
class CheckedModule:
    programs: dict[str, Program]
    diagnostics: tuple[Diagnostic, ...]
    types: dict[Span, Shape] = field(default_factory=dict)
    definitions: dict[Span, Span] = field(default_factory=dict)
    plans: dict[str, Plan] = field(default_factory=dict)
    pairings: dict[str, Pairing] = field(default_factory=dict)


def check_module(module: ast.Module, read_file: ReadFile, base_dir: str) -> CheckedModule:
    ctx = CheckContext()
    programs: dict[str, Program] = {}
    declared: dict[str, dict[str, ast.Decl]] = {"system": {}, "plan": {}, "pairing": {}}
    for decl in module.decls:
        if decl.kind not in declared:
            continue
        if decl.name in declared[decl.kind]:
            ctx.refuse(
                "duplicate-name", f"a second {decl.kind} named `{decl.name}`", decl.name_span
            )
            continue
        declared[decl.kind][decl.name] = decl
        if decl.kind == "system":
            program = check_system(decl, ctx, read_file, base_dir)
            if program is not None:
                programs[decl.name] = program
    plans: dict[str, Plan] = {}
    for decl in declared["plan"].values():
        target = _target(decl, declared["system"], ctx)
        if target is not None and decl.target in programs:
            plan = check_plan(decl, programs[decl.target], ctx)
            if plan is not None:
                plans[decl.name] = plan
    pairings: dict[str, Pairing] = {}
    for decl in declared["pairing"].values():
        target = _target(decl, declared["plan"], ctx)
        if target is not None and decl.target in plans:
            pairing = check_pairing(decl, plans[decl.target], ctx)
            if pairing is not None:
                pairings[decl.name] = pairing
    return CheckedModule(
        programs, tuple(ctx.diagnostics), ctx.types, ctx.definitions, plans, pairings
    )


def _target(decl: ast.Decl, candidates: dict[str, ast.Decl], ctx: CheckContext) -> str | None:
    """The declaration a plan or pairing names after `for`, refused when there is none."""
    assert decl.target is not None and decl.target_span is not None
    if decl.target not in candidates:
        kind = "system" if decl.kind == "plan" else "plan"
        ctx.unknown(kind, decl.target, decl.target_span, candidates)
        return None
    ctx.definitions[decl.target_span] = candidates[decl.target].name_span
    return decl.target
