"""Inlay hints: the checked shape of every `let` and of every new value `h = ...`, to be shown
after its name, and after a block array's `[N]` how many tensors and floats it holds."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.check.context import show_shape
from alpha_core.query.blocks import array_text
from alpha_core.query.tree import walk
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.workspace.module_check import CheckedModule


@dataclass(frozen=True)
class Hint:
    at: int  # the offset the hint stands at: the end of the `let`'s name
    label: str  # `: f32[B, 32]`
    tooltip: str  # `h: f32[B, 32]`


def let_shapes(
    module: ast.Module, checked: CheckedModule, within: Span | None = None
) -> list[Hint]:
    """Each `let` (within `within`, if given) whose shape the checker knows, in source order.
    A `let` of a refused system, or one the checker could not type, has no hint."""
    out: list[Hint] = []
    for decl in module.decls:
        if decl.kind != "system":
            continue
        if within is not None and (decl.span.end < within.start or decl.span.start > within.end):
            continue
        for node in walk(decl.items):
            if isinstance(node, ast.ParamArrayItem):
                hint = array_hint(node)
                if within is None or within.start <= hint.at <= within.end:
                    out.append(hint)
                continue
            if not isinstance(node, ast.Let | ast.Assign):
                continue
            shape = checked.types.get(node.name_span)
            if shape is None:
                continue
            if within is not None and not within.start <= node.name_span.end <= within.end:
                continue
            shown = show_shape(shape)
            out.append(Hint(node.name_span.end, f": {shown}", f"{node.name}: {shown}"))
    return out


def array_hint(item: ast.ParamArrayItem) -> Hint:
    """After `param blocks[12]`: ` 156 tensors, 102,528 floats` (read from the declaration)."""
    head, _, _ = array_text(item).partition("\n")
    sizes = head[head.index("(") + 1 : head.index(")")]
    return Hint(item.count_span.end + 1, f" {sizes}", head)
