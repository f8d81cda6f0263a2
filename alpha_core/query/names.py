"""Where names are defined and used (expressions, systems, plans, roles), and which names may be
written at an offset."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from alpha_core.query.tree import contains, decl_at, fn_signature, type_text, walk
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.workspace.module_check import CheckedModule


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
            elif isinstance(node, ast.ParamArrayItem | ast.MemberName | ast.ForLoop):
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
    inner: list[ScopeName] = []  # the names of the item the offset is in
    expression = False  # inside a function or the loss: a data set is no value there
    for item in decl.items:
        span = getattr(item, "span", None)
        if span is None or not contains(span, offset):
            continue
        if isinstance(item, ast.FnItem):
            expression = True
            inner += [ScopeName(p.name, "argument", type_text(p.type)) for p in item.params]
            inner += [
                ScopeName(s.name, "local", "let")
                for s in item.body
                if isinstance(s, ast.Let) and s.span.end < offset
            ]
            inner += _loop_scope(item.body, offset)
        elif isinstance(item, ast.ErrorItem) and item.text.startswith("fn"):
            # a function being written does not parse: its arguments and the `let`s of the
            # lines before the cursor are read from its text
            expression = True
            inner += _recovered_fn(item, offset)
        elif isinstance(item, ast.LossItem):
            expression = True
            inner += [
                ScopeName("x", "label", "the examples"),
                ScopeName("y", "label", "the labels"),
            ]
    for item in decl.items:
        if isinstance(item, ast.ParamItem):
            out.append(ScopeName(item.name, "param", type_text(item.type)))
        elif isinstance(item, ast.ParamArrayItem):
            out.append(ScopeName(item.name, "param", f"block array [{item.count}]"))
        elif isinstance(item, ast.FnItem):
            out.append(ScopeName(item.name, "fn", fn_signature(item)))
        elif isinstance(item, ast.DataItem) and not expression:
            out.append(ScopeName(item.name, "data", f"data set ({item.source.func})"))
    names = {n.name for n in out}
    out += inner
    for item in decl.items:
        if isinstance(item, ast.ErrorItem) and item.text.startswith("fn"):
            header = _FN_HEADER.match(item.text)
            if header and header.group(1) not in names:
                out.append(ScopeName(header.group(1), "fn", f"fn {header.group(1)}(…)"))
    return out


def _loop_scope(body: tuple[ast.Stmt, ...], offset: int) -> list[ScopeName]:
    """Inside a `for` loop: its index, and the `let`s of its body before `offset`."""
    out: list[ScopeName] = []
    for stmt in body:
        if isinstance(stmt, ast.ForLoop) and contains(stmt.span, offset):
            out.append(ScopeName(stmt.name, "local", f"for index {stmt.start}..{stmt.stop}"))
            out += [
                ScopeName(s.name, "local", "let")
                for s in stmt.body
                if isinstance(s, ast.Let) and s.span.end < offset
            ]
            out += _loop_scope(stmt.body, offset)
    return out


_FN_HEADER = re.compile(r"fn\s+([A-Za-z_]\w*)\s*\(([^)]*)\)")
_FN_ARG = re.compile(r"([A-Za-z_]\w*)\s*:\s*([A-Za-z_]\w*\s*\[[^\]]*\])")
_LET = re.compile(r"^\s*let\s+([A-Za-z_]\w*)\s*=", re.MULTILINE)


def _recovered_fn(item: ast.ErrorItem, offset: int) -> list[ScopeName]:
    header = _FN_HEADER.match(item.text)
    if header is None:
        return []
    found = [
        ScopeName(m.group(1), "argument", " ".join(m.group(2).split()))
        for m in _FN_ARG.finditer(header.group(2))
    ]
    # the `let`s of the lines before the cursor's line
    upto = item.text.rfind("\n", 0, max(0, offset - item.span.start)) + 1
    found += [
        ScopeName(m.group(1), "local", "let") for m in _LET.finditer(item.text, header.end(), upto)
    ]
    return found
