"""What is at an offset of the tree: the nodes around it, its declaration, its checked shape."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from alpha_core.ir.graph import Shape
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.workspace.module_check import CheckedModule

_FIELDS: dict[type, tuple[str, ...]] = {}  # a node class → the names of its fields


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def children(node: object) -> Iterator[object]:
    """The nodes directly inside a node, in source order (tuples are looked through)."""
    if isinstance(node, tuple):
        for n in node:
            if isinstance(n, tuple):
                yield from children(n)
            elif hasattr(n, "__dataclass_fields__") and not isinstance(n, type | Span):
                yield n
        return
    if not hasattr(node, "__dataclass_fields__") or isinstance(node, type):
        return
    for name in _fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, tuple):
            yield from children(value)
        elif hasattr(value, "__dataclass_fields__") and not isinstance(value, Span):
            yield value


def walk(node: object) -> Iterator[object]:
    """Every node under `node` (itself first), depth first in source order."""
    yield node
    for c in children(node):
        yield from walk(c)


def contains(span: Span, offset: int) -> bool:
    return span.start <= offset <= span.end


def enclosing(module: ast.Module, offset: int) -> list[object]:
    """The nodes containing `offset`, outermost (a Decl) first."""
    chain: list[object] = []
    nodes: list[object] = list(module.decls)
    while True:
        inside = [n for n in nodes if contains(getattr(n, "span", Span(-1, -1)), offset)]
        if not inside:
            return chain
        # the narrowest of the candidates: an offset at the boundary of two siblings goes to the
        # one it is strictly inside, or to the later one
        best = min(inside, key=lambda n: (n.span.end - n.span.start, -n.span.start))  # type: ignore[attr-defined]
        chain.append(best)
        nodes = list(children(best))


def decl_at(module: ast.Module, offset: int) -> ast.Decl | None:
    for d in module.decls:
        if d.span.start <= offset <= d.span.end:
            return d
    return None


def shape_at(checked: CheckedModule, offset: int) -> tuple[Span, Shape] | None:
    """The checked shape of the smallest expression (or `let` name) containing `offset`."""
    best: tuple[Span, Shape] | None = None
    for span, shape in checked.types.items():
        if not contains(span, offset):
            continue
        if best is None or (span.end - span.start) < (best[0].end - best[0].start):
            best = (span, shape)
    return best


def type_text(t: ast.TensorType | ast.BlockType) -> str:
    if isinstance(t, ast.BlockType):  # one block of a block array: its array's name
        return t.array
    dims = ", ".join(str(d.value) for d in t.dims)
    return f"{t.dtype}[{dims}]"


def fn_signature(fn: ast.FnItem) -> str:
    params = ", ".join(f"{p.name}: {type_text(p.type)}" for p in fn.params)
    return f"fn {fn.name}({params}) -> {type_text(fn.result)}"
