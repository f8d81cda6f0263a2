"""Where names are defined and used (expressions, systems, plans, roles), and which names may be
written at an offset."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from alpha_core.check.module import CheckedModule
from alpha_core.query.tree import contains, decl_at, fn_signature, type_text, walk
from alpha_core.syntax import ast
from alpha_core.syntax.span import Span


def role_decls(module: ast.Module, plan_name: str | None) -> dict[str, ast.RoleDecl]:
    """The roles a plan declares, read from its text (also when the plan itself is refused)."""
    for decl in module.decls:
        if decl.kind == "plan" and decl.name == plan_name:
            return {
                r.name: r
                for item in decl.items
                if isinstance(item, ast.RolesItem)
                for r in item.roles
            }
    return {}


def _role_uses(decl: ast.Decl) -> Iterator[tuple[str, Span]]:
    for item in decl.items:
        if isinstance(item, ast.TopologyItem) and isinstance(item.shape, ast.Call):
            for a in item.shape.args:
                if isinstance(a, ast.Name):
                    yield a.id, a.span
        elif isinstance(item, ast.RoundItem):
            for s in item.stmts:
                if isinstance(s, ast.ComputeStmt | ast.ApplyStmt):
                    yield s.family, s.family_span
        elif isinstance(item, ast.LeavesItem):
            for r in item.ranges:
                yield r.role.name, r.role.name_span
        elif isinstance(item, ast.PairingItem):
            yield item.role.name, item.role.name_span


def links(module: ast.Module, checked: CheckedModule) -> dict[Span, Span]:
    """Use span → definition span: the checker's, plus the roles named in plans and pairings."""
    out = dict(checked.definitions)
    by_name = {(d.kind, d.name): d for d in module.decls}
    for decl in module.decls:
        if decl.kind == "plan":
            roles = role_decls(module, decl.name)
            if decl.target is not None and decl.target_span is not None:
                target = by_name.get(("system", decl.target))
                if target is not None:
                    out.setdefault(decl.target_span, target.name_span)
        elif decl.kind == "pairing":
            roles = role_decls(module, decl.target)
            if decl.target is not None and decl.target_span is not None:
                target = by_name.get(("plan", decl.target))
                if target is not None:
                    out.setdefault(decl.target_span, target.name_span)
        else:
            continue
        for name, span in _role_uses(decl):
            if name in roles:
                out[span] = roles[name].name_span
    return out


def definition_at(
    module: ast.Module, checked: CheckedModule, offset: int
) -> tuple[Span, Span] | None:
    """(the use under `offset`, its definition), or None where nothing is defined."""
    found = [(u, d) for u, d in links(module, checked).items() if contains(u, offset)]
    if not found:
        return None
    return min(found, key=lambda ud: ud[0].end - ud[0].start)


def references_at(
    module: ast.Module, checked: CheckedModule, offset: int, include_definition: bool = True
) -> list[Span]:
    """Every use of what is under `offset` (a use or the definition itself), in source order."""
    table = links(module, checked)
    target: Span | None = None
    for use, d in table.items():
        if contains(use, offset):
            target = d
            break
    if target is None:
        defs = [d for d in set(table.values()) if contains(d, offset)]
        defs += [s for s in _definition_spans(module) if contains(s, offset) and s not in set(defs)]
        if not defs:
            return []
        target = defs[0]
    uses = sorted(u for u, d in table.items() if d == target)
    return ([target] if include_definition else []) + uses


def _definition_spans(module: ast.Module) -> Iterator[Span]:
    for decl in module.decls:
        if decl.kind != "error":
            yield decl.name_span
        for node in walk(decl.items):
            if isinstance(
                node, ast.ParamItem | ast.FnItem | ast.FnParam | ast.Let | ast.DataItem
            ) or isinstance(node, ast.RoleDecl):
                yield node.name_span


# ---- scope ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeName:
    name: str
    kind: str  # param | fn | data | argument | local | role | label | system | plan
    detail: str


def names_in_scope(module: ast.Module, offset: int) -> list[ScopeName]:
    """The names that may be written at `offset`."""
    decl = decl_at(module, offset)
    if decl is None:
        return []
    if decl.kind == "system":
        return _system_scope(decl, offset)
    plan_name = decl.name if decl.kind == "plan" else decl.target
    if decl.kind in ("plan", "pairing"):
        return [
            ScopeName(r.name, "role", f"role family [{r.count}]" if r.count else "role")
            for r in role_decls(module, plan_name).values()
        ]
    return []


def _system_scope(decl: ast.Decl, offset: int) -> list[ScopeName]:
    out: list[ScopeName] = []
    for item in decl.items:
        if isinstance(item, ast.ParamItem):
            out.append(ScopeName(item.name, "param", type_text(item.type)))
        elif isinstance(item, ast.FnItem):
            out.append(ScopeName(item.name, "fn", fn_signature(item)))
        elif isinstance(item, ast.DataItem):
            out.append(ScopeName(item.name, "data", f"data set ({item.source.func})"))
    for item in decl.items:
        span = getattr(item, "span", None)
        if span is None or not contains(span, offset):
            continue
        if isinstance(item, ast.FnItem):
            out += [ScopeName(p.name, "argument", type_text(p.type)) for p in item.params]
            out += [
                ScopeName(s.name, "local", "let")
                for s in item.body
                if isinstance(s, ast.Let) and s.span.end < offset
            ]
        elif isinstance(item, ast.LossItem):
            out += [ScopeName("x", "label", "the examples"), ScopeName("y", "label", "the labels")]
    return out
