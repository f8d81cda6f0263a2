"""Pure-Python reference of the canonical combine tree (runtime/tree.c, docs/runtime.md): the
one order in which a round's leaf results are added."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def tree_split(count: int) -> int:
    """The largest power of two strictly less than count (count >= 2)."""
    if count < 2:
        raise ValueError(f"a tree node needs at least two leaves, not {count}")
    return 1 << ((count - 1).bit_length() - 1)


def tree_combine(values: Sequence[T], add: Callable[[T, T], T]) -> T:
    """tree(0, len(values)), calling add(left, right) with the left operand first."""

    def tree(lo: int, hi: int) -> T:
        if hi - lo == 1:
            return values[lo]
        p = tree_split(hi - lo)
        return add(tree(lo, lo + p), tree(lo + p, hi))

    if not values:
        raise ValueError("a tree needs at least one leaf")
    return tree(0, len(values))


def tree_shape(leaves: int) -> object:
    """The tree as nested pairs of leaf indices, e.g. 3 -> ((0, 1), 2); for docs and tests."""
    leaf_indices: list[object] = list(range(leaves))
    return tree_combine(leaf_indices, lambda left, right: (left, right))
