"""Move a syntax tree to another offset: the same nodes with every span shifted.

A declaration is parsed and checked once at offset 0 and placed wherever its text sits; placing
rebuilds each node, so it is done without `dataclasses.replace` (which looks up the fields and
runs `__init__` for every node): a node's fields are sorted once per class into spans, subtrees
and plain values, and each copy is a fresh instance whose `__dict__` is filled directly. This
is sound for the tree's frozen dataclasses, which have no `__post_init__` and no slots.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from alpha_core.support.span import Span

T = TypeVar("T")

_ATOMS = frozenset({"str", "int", "float", "bool", "None"})
# a node class → (fields holding a span or None, fields holding subtrees, tuples or None)
_PLANS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}
_new = object.__new__
# the slots' descriptors, looked up once (what `object.__setattr__` finds each time)
_set_start = vars(Span)["start"].__set__
_set_end = vars(Span)["end"].__set__


def node_fields(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A node class's fields that hold a span (or None), and those that may hold subtrees
    (nodes, tuples of them, or None), each in declaration order. Computed once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        spans: list[str] = []
        trees: list[str] = []
        for f in dataclasses.fields(cls):
            # annotations are strings here (`from __future__ import annotations`)
            words = {w.strip() for w in str(f.type).split("|")}
            if words <= {"Span", "None"}:
                spans.append(f.name)
            elif not words <= _ATOMS:
                trees.append(f.name)
        plan = _PLANS[cls] = (tuple(spans), tuple(trees))
    return plan


def span(s: Span, by: int) -> Span:
    # a slotted frozen dataclass: its slots filled directly, without running `__init__`
    moved = _new(Span)
    _set_start(moved, s.start + by)
    _set_end(moved, s.end + by)
    return moved


def replaced(node: T, **changes: Any) -> T:
    """`dataclasses.replace` for a frozen dataclass, without running `__init__` again (the
    same object `replace` would give, for a class without `__post_init__`)."""
    cls = node.__class__
    if hasattr(cls, "__post_init__") or not hasattr(node, "__dict__"):
        return dataclasses.replace(node, **changes)  # type: ignore[type-var]
    new: T = _new(cls)
    fields = new.__dict__
    fields.update(node.__dict__)
    fields.update(changes)
    return new


def _shift(node: Any, by: int) -> Any:
    cls = node.__class__
    if cls is Span:
        return span(node, by)
    if cls is tuple:
        return tuple([_shift(n, by) for n in node])
    if node is None or not hasattr(cls, "__dataclass_fields__"):
        return node
    spans, trees = node_fields(cls)
    moved = _new(cls)
    fields = moved.__dict__
    fields.update(node.__dict__)
    for name in spans:
        s = fields[name]
        if s is not None:
            fields[name] = span(s, by)
    for name in trees:
        value = fields[name]
        if value is not None:
            fields[name] = _shift(value, by)
    return moved


def shift(node: T, by: int) -> T:
    """The same tree with every span moved by `by` characters (the tree itself when by is 0)."""
    if by == 0:
        return node
    result: T = _shift(node, by)
    return result
