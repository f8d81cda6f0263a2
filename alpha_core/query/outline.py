"""The outline of a file: its declarations with their items as children."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.query.tree import fn_signature, type_text
from alpha_core.support.span import Span
from alpha_core.syntax import ast


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # system | plan | pairing | data | batch | param | fn | let | loss | learner ...
    detail: str
    span: Span
    selection: Span
    children: tuple[Symbol, ...] = ()


def outline(module: ast.Module, text: str) -> list[Symbol]:
    out: list[Symbol] = []
    for decl in module.decls:
        if decl.kind == "error":
            continue
        kids = tuple(s for s in (_item_symbol(i, text) for i in decl.items) if s is not None)
        detail = f"for {decl.target}" if decl.target else ""
        out.append(Symbol(decl.name, decl.kind, detail, decl.span, decl.name_span, kids))
    return out


def _item_symbol(item: object, text: str) -> Symbol | None:
    def sym(name: str, kind: str, detail: str, sel: Span, kids: tuple[Symbol, ...] = ()) -> Symbol:
        return Symbol(name, kind, detail, item.span, sel, kids)  # type: ignore[attr-defined]

    if isinstance(item, ast.DataItem):
        return sym(item.name, "data", item.source.func, item.name_span)
    if isinstance(item, ast.ParamItem):
        return sym(item.name, "param", type_text(item.type), item.name_span)
    if isinstance(item, ast.ParamArrayItem):  # a block array: its members as children
        members = tuple(
            Symbol(m.name, "param", type_text(d.type), d.span, m.name_span)
            for d in item.members
            for m in d.names
        )
        return sym(item.name, "param", f"[{item.count}] blocks", item.name_span, members)
    if isinstance(item, ast.FnItem):
        lets = tuple(
            Symbol(s.name, "let", "", s.span, s.name_span)
            for s in item.body
            if isinstance(s, ast.Let)
        )
        return sym(item.name, "fn", fn_signature(item), item.name_span, lets)
    if isinstance(item, ast.BatchItem):
        return sym("batch", "batch", f"{item.size} leaves {item.leaves}", item.size_span)
    if isinstance(item, ast.LossItem | ast.LearnerItem):
        kind = "loss" if isinstance(item, ast.LossItem) else "learner"
        return sym(kind, kind, item.call.func, item.call.func_span)
    if isinstance(item, ast.StepsItem):
        return sym("steps", "steps", str(item.count), item.count_span)
    if isinstance(item, ast.ArithmeticItem):
        return sym("arithmetic", "arithmetic", item.word, item.word_span)
    if isinstance(item, ast.RolesItem):
        kids = tuple(
            Symbol(
                r.name, "role", f"[{r.count}]" if r.count is not None else "", r.span, r.name_span
            )
            for r in item.roles
        )
        return sym("roles", "roles", "", item.span, kids)
    if isinstance(item, ast.TopologyItem | ast.ContractItem):
        word = "topology" if isinstance(item, ast.TopologyItem) else "contract"
        shape = item.shape if isinstance(item, ast.TopologyItem) else item.kind
        return sym(word, word, text[shape.span.start : shape.span.end], shape.span)
    if isinstance(item, ast.RoundItem):
        return sym("round", "round", f"{len(item.stmts)} statements", item.span)
    if isinstance(item, ast.LeavesItem):
        return sym("leaves", "leaves", "", item.span)
    if isinstance(item, ast.PairingItem):
        props = ", ".join(
            f"{p.key} {text[p.value_span.start : p.value_span.end]}" for p in item.props
        )
        return sym(text[item.role.span.start : item.role.span.end], "entry", props, item.role.span)
    return None
