"""The canonical combine tree over a round's leaves, as the compiler reasons about it.

Node [lo, hi) with more than one leaf has children [lo, mid) and [mid, hi), where mid is lo plus
the largest power of two strictly below hi - lo. The runtime evaluates exactly this tree
(runtime/tree.c); a plan only decides which role evaluates which node.
"""

from __future__ import annotations

Node = tuple[int, int]


def split(lo: int, hi: int) -> int:
    n = hi - lo
    p = 1
    while p * 2 < n:
        p *= 2
    return lo + p


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
