"""The canonical combine tree over a round's leaves: the one order in which a round's leaf results
are added (runtime/tree.c evaluates exactly this tree; docs/runtime.md).

Node [lo, hi) with more than one leaf has children [lo, mid) and [mid, hi), where mid is lo plus
the largest power of two strictly below hi - lo. A plan only decides which role evaluates which
node; the code generators walk it as the runtime's combine walk does (`tree_walk`); tests and
docs evaluate it in Python (`tree_combine`, `tree_shape`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
Node = tuple[int, int]


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


def split(lo: int, hi: int) -> int:
    """The first leaf of node [lo, hi)'s right child (lo + 1 for a node of one leaf)."""
    return lo + (tree_split(hi - lo) if hi - lo >= 2 else 1)


def cover(a: int, b: int, leaves: int) -> list[Node]:
    """The maximal tree nodes inside [a, b), left to right (O(log leaves) of them)."""
    out: list[Node] = []

    def visit(lo: int, hi: int) -> None:
        if hi <= a or b <= lo:
            return
        if a <= lo and hi <= b:
            out.append((lo, hi))
            return
        mid = split(lo, hi)
        visit(lo, mid)
        visit(mid, hi)

    if a < b:
        visit(0, leaves)
    return out


def is_node(lo: int, hi: int, leaves: int) -> bool:
    a, b = 0, leaves
    while (a, b) != (lo, hi):
        if hi - lo < 1 or lo < a or hi > b or b - a == 1:
            return False
        mid = split(a, b)
        if hi <= mid:
            b = mid
        elif lo >= mid:
            a = mid
        else:
            return False
    return True


def internal_nodes(leaves: int) -> list[Node]:
    """Every node with two children, in the order a single process evaluates them."""
    out: list[Node] = []

    def visit(lo: int, hi: int) -> None:
        if hi - lo < 2:
            return
        mid = split(lo, hi)
        visit(lo, mid)
        visit(mid, hi)
        out.append((lo, hi))

    visit(0, leaves)
    return out


def tree_walk(leaves: int) -> tuple[list[tuple[int, int | None, tuple[int, ...]]], int]:
    """The canonical tree over `leaves` leaves as the runtime's combine walk makes it: steps
    (leaf, the buffer its value goes to (None: the root, C), the chain added to it) and how many
    buffers the walk needs. A node's left subtree is computed first and joins the chain of its
    right one; the chain's values, and so every addition, are the tree's."""
    steps: list[tuple[int, int | None, tuple[int, ...]]] = []
    free: list[int] = []
    made = 0

    def take() -> int:
        nonlocal made
        if free:
            return free.pop()
        made += 1
        return made - 1

    def walk(lo: int, hi: int, chain: tuple[int, ...]) -> int:
        if hi - lo == 1:
            into = take()
            steps.append((lo, into, chain))
            free.extend(chain)
            return into
        mid = lo + tree_split(hi - lo)
        return walk(mid, hi, (*chain, walk(lo, mid, ())))

    walk(0, leaves, ())
    leaf, _, chain = steps[-1]
    steps[-1] = (leaf, None, chain)  # the root goes to C
    used = {j for _, into, links in steps for j in (*links, *([] if into is None else [into]))}
    return steps, max(used, default=-1) + 1
