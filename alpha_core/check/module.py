"""Check a whole parsed module: each system, giving its Program and the facts the editor uses."""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.check.context import CheckContext
from alpha_core.check.program import Program
from alpha_core.check.system import ReadFile, check_system
from alpha_core.diagnostics import Diagnostic
from alpha_core.ir.graph import Shape
from alpha_core.syntax import ast
from alpha_core.syntax.span import Span


@dataclass(frozen=True)
class CheckedModule:
    programs: dict[str, Program]
    diagnostics: tuple[Diagnostic, ...]
    types: dict[Span, Shape] = field(default_factory=dict)
    definitions: dict[Span, Span] = field(default_factory=dict)


def check_module(module: ast.Module, read_file: ReadFile, base_dir: str) -> CheckedModule:
    ctx = CheckContext()
    programs: dict[str, Program] = {}
    for decl in module.decls:
        if decl.kind != "system":
            continue
        if decl.name in programs:
            ctx.refuse("duplicate-name", f"a second system named `{decl.name}`", decl.name_span)
            continue
        program = check_system(decl, ctx, read_file, base_dir)
        if program is not None:
            programs[decl.name] = program
    return CheckedModule(programs, tuple(ctx.diagnostics), ctx.types, ctx.definitions)
