"""What an editor says about block arrays (docs/language.md, "Block arrays"): a member's
declaration with the seed each block gives it, an array's size, a `for` loop's index; read from
the tree alone, so a system with refusals elsewhere still describes its blocks."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from alpha_core.check.block_params import BLOCK_SEED_STRIDE
from alpha_core.query.tree import type_text
from alpha_core.support.span import Span
from alpha_core.syntax import ast


def arrays(decl: ast.Decl) -> Iterator[ast.ParamArrayItem]:
    for item in decl.items:
        if isinstance(item, ast.ParamArrayItem):
            yield item


def _floats(t: ast.TensorType) -> int:
    return math.prod(d.value for d in t.dims if isinstance(d.value, int))


def array_text(item: ast.ParamArrayItem) -> str:
    """`param blocks[12]: 12 blocks × 13 tensors (156 tensors, 102,528 floats) ...`"""
    names = [m.name for d in item.members for m in d.names]
    per_block = sum(_floats(d.type) * len(d.names) for d in item.members)
    return (
        f"param {item.name}[{item.count}]: {item.count} blocks × {len(names)} tensors "
        f"({item.count * len(names):,} tensors, {item.count * per_block:,} floats)\n"
        f"members: {', '.join(names)}\n"
        f"block i's tensors are named {item.name}[i].{names[0] if names else 'm'}, ..."
    )


def _seed(init: ast.Name | ast.Call) -> int | None:
    if isinstance(init, ast.Call):
        kw = init.kwarg("seed")
        if kw is not None and isinstance(kw.value, ast.Number) and kw.value.is_int:
            return int(kw.value.text)
    return None


def member_text(item: ast.ParamArrayItem, decl: ast.MemberDecl, k: int) -> str:
    """`member wq of blocks[12]: f32[32, 32] = normal(...)`, and its seed in block i."""
    name = decl.names[k].name
    init = decl.init.id if isinstance(decl.init, ast.Name) else decl.init.func + "(…)"
    text = f"member {name} of {item.name}[{item.count}]: {type_text(decl.type)} = {init}"
    seed = _seed(decl.init)
    if seed is not None:
        last = seed + k + (item.count - 1) * BLOCK_SEED_STRIDE
        text += (
            f"\nseed in block i: {seed + k} + i·2^32 "
            f"(block 0: {seed + k:,}; block {item.count - 1}: {last:,})"
        )
    return text


def described_at(decl: ast.Decl, offset: int, definitions: dict[Span, Span]) -> str | None:
    """A block array's name, a member's name or a `for` index under `offset` (declared there,
    or used where the checker linked the use to it): what it is."""
    target: Span | None = None
    for use, where in definitions.items():
        if use.start <= offset <= use.end:
            target = where
            break
    for item in arrays(decl):
        if _at(item.name_span, offset, target):
            return array_text(item)
        for d in item.members:
            for k, m in enumerate(d.names):
                if _at(m.name_span, offset, target):
                    return member_text(item, d, k)
    for loop in loops(decl):
        if _at(loop.name_span, offset, target):
            return f"for {loop.name} in {loop.start}..{loop.stop}: {loop.name} is an integer, " + (
                f"{loop.start} to {loop.stop - 1}, one pass of the body each"
            )
    return None


def _at(span: Span, offset: int, target: Span | None) -> bool:
    return span == target or span.start <= offset <= span.end


def loops(decl: ast.Decl) -> Iterator[ast.ForLoop]:
    for item in decl.items:
        if isinstance(item, ast.FnItem):
            yield from _loops(item.body)


def _loops(body: tuple[ast.Stmt, ...]) -> Iterator[ast.ForLoop]:
    for stmt in body:
        if isinstance(stmt, ast.ForLoop):
            yield stmt
            yield from _loops(stmt.body)


def member_siblings(module: ast.Module, declared: Span) -> list[str] | None:
    """The other members of the array whose member is declared at `declared`, or None when
    no member is declared there: members have a namespace of their own."""
    for decl in module.decls:
        for item in arrays(decl):
            names = [m for d in item.members for m in d.names]
            if any(m.name_span == declared for m in names):
                return [m.name for m in names if m.name_span != declared]
    return None


def statements(body: tuple[ast.Stmt, ...]) -> Iterator[ast.Stmt]:
    """Every statement of a body, those of its loops' bodies too, in source order."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.ForLoop):
            yield from statements(stmt.body)


_BEFORE_DOT = re.compile(r"([A-Za-z_]\w*)\s*(\[[^\[\]]*\])?\s*\.\Z")


def members_after(decl: ast.Decl, item_text: str, head: str) -> list[tuple[str, str]] | None:
    """After `blocks[i].` or `p.` (`p` an argument declared `p: blocks` in the item's text,
    which need not parse while it is typed): each member of the array and its type; None
    where no block stands before the dot."""
    m = _BEFORE_DOT.search(head)
    if m is None:
        return None
    name = m.group(1)
    if m.group(2) is None:  # `p.`: the array is the argument's declared type
        typed = re.search(rf"\b{re.escape(name)}\s*:\s*([A-Za-z_]\w*)\s*[,)]", item_text)
        if typed is None:
            return None
        name = typed.group(1)
    for item in arrays(decl):
        if item.name == name:
            return [(n.name, type_text(d.type)) for d in item.members for n in d.names]
    return None
