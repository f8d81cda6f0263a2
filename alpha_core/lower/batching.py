"""Whether a training step's leaves can be computed at once (the leaf kernel's batching):
which nodes carry rows per example, which sums close a leaf, which transposes fold into the
weight gradients' products. A decision about the graph, asked by the code generator
(codegen/leaves_kernel.py) and by admission (plan/admission.py) alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.autodiff.reverse import StepGraph
from alpha_core.check.program import Program
from alpha_core.ir.graph import Graph, concrete, size
from alpha_core.lower.blocking import packed
from alpha_core.lower.live import live_nodes
from alpha_core.lower.tree import tree_split
from alpha_core.ops import ROW_WISE

# ROW_WISE (the operation table's row_wise entries): the ops whose every output row is a
# function of the same rows of their inputs (an example's rows stay the example's), computed
# over all the leaves' rows at once, each row the same.
REDUCING = frozenset({"sum", "mean", "reduce_to"})  # over a leaf's rows, by the sub-emitter
MAX_LEAVES = 64  # a walk's chain stays under CHAIN_MAX (the tree's depth) for fewer
MAX_BATCH_BYTES = 64 << 20  # the most the rows of every leaf at once may take
OUTLINE_SUMS_FROM = 32  # sums from which each is a call of a function per kind of sum


@dataclass(frozen=True)
class Batching:
    """How the step splits: nodes with rows per example (`rows`), the sums over a leaf's
    examples (`sums`: node -> the gradient's offset, None for the loss), and the transposes
    only those sums' products read (`folded`: node -> its input)."""

    rows: frozenset[int]
    sums: dict[int, int | None]
    folded: dict[int, int]


def _rows(graph: Graph, i: int) -> bool:
    shape = graph[i].shape
    return bool(shape) and shape[0] < 0 and all(d >= 0 for d in shape[1:])


def batching(program: Program, step: StepGraph) -> Batching | None:
    """The split of the step when alpha_leaves_grad can compute it, else None."""
    graph = step.graph
    if program.leaves < 2 or program.leaves > MAX_LEAVES:
        return None
    roots = [step.loss_sum, *step.grads]
    live = live_nodes(graph, roots)
    users: dict[int, list[int]] = {}
    for i in live:
        for j in graph[i].inputs:
            users.setdefault(j, []).append(i)
    # every parameter's gradient and the loss: a sum over examples, read by nothing else
    sums: dict[int, int | None] = {step.loss_sum: None}
    for spec, g in zip(program.params, step.grads, strict=True):
        if g in sums or users.get(g):
            return None
        sums[g] = spec.offset
    if users.get(step.loss_sum):
        return None
    rows: set[int] = set()
    folded: dict[int, int] = {}
    transposes = _transposes_of(graph, sums)  # read only by the weight gradients, if valid
    for i in live:
        node = graph[i]
        batched = [j for j in node.inputs if _rows(graph, j)]
        if i in sums:
            if node.op in REDUCING and len(node.inputs) == 1 and batched:
                continue
            if node.op == "matmul" and _is_weight_gradient(graph, node.inputs, users, sums):
                folded[node.inputs[0]] = graph[node.inputs[0]].inputs[0]
                continue
            return None
        if i in folded or (node.op == "transpose" and i in transposes):
            continue
        if _rows(graph, i):
            if node.op not in ROW_WISE:
                return None
            if node.op == "matmul" and (not batched or batched != [node.inputs[0]]):
                return None
            rows.add(i)
        elif batched:  # a node without rows that reads rows: a sum nothing may read
            return None
    for t in transposes:
        folded[t] = graph[t].inputs[0]
    # Worth it where a weight gradient is a large product per leaf: there the weights read once
    # a round instead of once a leaf, and a gradient stored once, are most of the step. A small
    # model's leaves are faster one at a time (digits: 35 µs a step against 57 batched).
    products: dict[int, list[int]] = {}  # the weight gradients hᵀ · d by their transpose
    for u in sums:
        if graph[u].op == "matmul":
            products.setdefault(graph[u].inputs[0], []).append(u)
    if not any(
        packed(graph[h].shape[1], graph[g].shape[1], -graph[h].shape[0] * program.leaf_size)
        for t, h in folded.items()
        for g in products.get(t, ())
    ):
        return None
    # Leaves bound a step's memory: a batch cut into many leaves because its activations would
    # not fit at once keeps the leaf kernel.
    every = program.leaves * program.leaf_size
    held = sum(
        size(concrete(graph[i].shape, every)) * 4
        for i in rows
        if graph[i].op not in ("input_x", "label_class", "label_reg")
    )
    if held > MAX_BATCH_BYTES:
        return None
    return Batching(frozenset(rows), sums, folded)


def _transposes_of(graph: Graph, sums: dict[int, int | None]) -> set[int]:
    return {graph[g].inputs[0] for g in sums if graph[g].op == "matmul"}


def _is_weight_gradient(
    graph: Graph, inputs: tuple[int, ...], users: dict[int, list[int]], sums: dict[int, int | None]
) -> bool:
    """hᵀ · d for rows h and d (two matrices): the transpose read only by such products."""
    t, d = inputs
    if graph[t].op != "transpose" or not _rows(graph, d) or len(graph[d].shape) != 2:
        return False
    (h,) = graph[t].inputs
    if not _rows(graph, h) or len(graph[h].shape) != 2 or graph[h].shape[0] != graph[d].shape[0]:
        return False
    return all(u in sums and graph[u].op == "matmul" and graph[u].inputs[0] == t for u in users[t])


def subtree_sizes(leaves: int) -> list[int]:
    """The leaf counts of the canonical tree's nodes of two or more leaves, largest first:
    the COMBINEs a role can make of leaves it computes all itself."""
    sizes: set[int] = set()

    def walk(count: int) -> None:
        if count >= 2 and count not in sizes:
            sizes.add(count)
            mid = tree_split(count)
            walk(mid)
            walk(count - mid)

    walk(leaves)
    return sorted(sizes, reverse=True)
