"""Which column sums ride on a large product's packing: a bias gradient, `reduce_to(dy, [n])`,
added up while the weight gradient `xᵀ · dy` packs dy as its B.

The GEMM (gemm.py) copies B into panels a row of B at a time, k ascending, once per column of
tasks; adding each copied vector into the column sums there costs a load, an add and a store per
vector of B, where the reduce on its own read the whole tensor again (from memory: a transformer's
dy is larger than L2) and ran on one thread between two parallel products.

Exactness: reduce_to adds its input in row-major order from +0.0, so output j is ((0 + dy[0, j])
+ dy[1, j]) + ... over the rows of dy flattened to (k, n), and the packing adds the same values in
the same order: the k-blocks ascending, each block's rows ascending, one task per column (the
first row of tasks; the others pack the same columns again and add nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from alpha_core.ir.graph import Graph, Node, size


def column_sums(
    graph: Graph,
    live: Sequence[int],
    shape: Callable[[int], tuple[int, ...]],
    large: Callable[[Node], bool],
    placed: Collection[int],
    lanes: int,
    min_rows: int,
) -> dict[int, int]:
    """product -> the reduce_to its packing computes, in a kernel computing `live`.

    A reduce qualifies when its memory is given (`placed`: a parameter's gradient, stored where
    the caller wants it) and no live node reads it, its output is its input's last axis (n, a
    multiple of the GEMM's panel width `lanes`), and a large product takes that input, or a
    reshape of it to (k, n), as its B; the product's A has more than `min_rows` rows, so that
    B is packed, never read in place."""
    users: dict[int, list[int]] = {}
    for i in live:
        for j in graph[i].inputs:
            users.setdefault(j, []).append(i)
    found: dict[int, int] = {}
    for i in live:
        node = graph[i]
        if node.op != "reduce_to" or i not in placed or users.get(i):
            continue
        src = node.inputs[0]
        src_shape, out = shape(src), shape(i)
        if len(out) != 1 or len(src_shape) < 2 or src_shape[-1] != out[0] or out[0] % lanes:
            continue
        n = out[0]
        k = size(src_shape) // n
        views = [src] + [u for u in users.get(src, ()) if graph[u].op == "reshape"]
        for view in views:
            if shape(view) != (k, n):
                continue
            product = next(
                (
                    u
                    for u in users.get(view, ())
                    if u not in found
                    and graph[u].op == "matmul"
                    and graph[u].inputs[1] == view
                    and graph[u].inputs[0] != view
                    and large(graph[u])
                    and shape(graph[u].inputs[0])[0] > min_rows
                ),
                None,
            )
            if product is not None:
                found[product] = i
                break
    return found
