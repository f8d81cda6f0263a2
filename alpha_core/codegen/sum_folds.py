"""Which additions after a large product ride on the product's store: `a @ w + b`, `x + a @ w`,
`x + a @ w + b`.

The GEMM (gemm.py) adds a chain of same-shaped arrays and then a row (a bias, one float per
column) to each finished sum while it is still in a register, before the one store. An add whose
input is a large product that nothing else reads is that; so is an add whose input is such an
add. Folding them saves writing the product and reading it back once per add, which for the
element-wise adds of a transformer's linear layers was most of their time (each a pass over a
tensor larger than L1).

Exactness: each folded add is the program's own float32 addition of the same two values, in the
same nesting: `(h + s) + b` is computed as `(s + h) + b`, and an IEEE addition's result does not
depend on its operands' order (a NaN's payload aside, and NaNs compare equal in the exactness
contract). Only where the intermediate values live changes: a register instead of a buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from alpha_core.codegen.gemm import CHAIN_MAX
from alpha_core.ir.graph import Graph, Node, size


@dataclass(frozen=True)
class SumFold:
    """The product whose store computes the add `end`: its same-shaped addends, the innermost
    first, then the row added last; `skipped` the nodes no longer computed on their own (the
    product, the adds before `end`, the reshapes between them)."""

    product: int
    inner: tuple[int, ...]
    row: int | None
    skipped: tuple[int, ...]


def fold_sums(
    graph: Graph,
    live: Sequence[int],
    roots: Collection[int],
    shape: Callable[[int], tuple[int, ...]],
    large: Callable[[Node], bool],
    fixed: Collection[int],
) -> dict[int, SumFold]:
    """The folds of a kernel computing `live` in order: end add -> its fold. `fixed`: nodes
    whose memory is given (bound, placed, or chained by the caller): never folded away."""
    users: dict[int, set[int]] = {}
    for i in live:
        for j in graph[i].inputs:
            users.setdefault(j, set()).add(i)
    roots = set(roots)
    kept = roots | set(fixed)
    claimed: set[int] = set()  # in a fold: its skipped nodes and its end
    skipped_all: set[int] = set()  # not computed: never an addend
    folds: dict[int, SumFold] = {}
    for i in live:
        node = graph[i]
        if node.op != "matmul" or i in kept or i in claimed or not large(node):
            continue
        rows, cols = shape(i)
        x, walked = i, [i]
        inner: list[int] = []
        row: int | None = None
        end: int | None = None
        while row is None and x not in kept and len(users.get(x, ())) == 1:
            (u,) = users[x]
            un = graph[u]
            if u in claimed or u in fixed or (u in roots and un.op == "reshape"):
                break
            if un.op == "reshape":
                if size(shape(u)) != rows * cols or shape(u)[-1] != cols:
                    break
                walked.append(u)
                x = u
                continue
            if un.op != "add" or shape(u) != shape(x):
                break
            y = un.inputs[1] if un.inputs[0] == x else un.inputs[0]
            if y == x or y in skipped_all or graph[y].op == "const":
                break
            if shape(y) == shape(u) and len(inner) < CHAIN_MAX:
                inner.append(y)
            elif shape(y)[-1:] == (cols,) and size(shape(y)) == cols:
                row = y
            else:
                break
            walked.append(u)
            end, x = u, u
        if end is None:
            continue
        skipped = tuple(walked[: walked.index(end)])
        skipped_all.update(skipped)
        claimed.update(skipped)
        claimed.add(end)
        folds[end] = SumFold(i, tuple(inner), row, skipped)
    return folds
