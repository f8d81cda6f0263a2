"""The canonical tree walked as the runtime's combine walk walks it (runtime/schedule.c), for
code that adds a tree of values itself: a node's left subtree is computed first and joins the
chain of pending values its right subtree adds, so each addition is made as its last operand
is produced, with the tree's grouping."""

from __future__ import annotations

from alpha_core.link.tree_reference import tree_split


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
