"""Runs of consecutive nodes computed a block of rows at a time, all of them on one block before
the next: a layer norm's dozen passes, softmax and its scale and mask, an adjoint's chain of
element-wise nodes.

Each node that splits along its first axis (outer_split.py) runs as tasks over blocks of rows;
run one after another, each node sweeps whole tensors, and a chain of them over tensors larger
than L2 (a transformer's [16, 64, 128] activations are 512 KiB each, a layer norm touches a dozen)
reads each intermediate back from L3 or memory. A row group runs the same nodes as one set of
tasks: task t computes rows t of the first node, then rows t of the second, and so on, so that
what a node wrote is still in cache when the next reads it, and the threads fork and join once
a run instead of once a node. Measured on the d-128 transformer (43 runs a step): two threads
3% shorter a step, one thread unchanged (those nodes' time is their arithmetic and the writes
of the tensors the adjoint keeps, not the passes between them).

That is only possible where rows t of each node read rows t (or all, for an input broadcast along
the first axis) of what earlier nodes of the group wrote: a node joins the group when every input
the group computed is cut with its rows, and its output has the group's first extent. Every node
computes its outputs with the same operations in the same order as when run alone (its block
function is the one outer_split.py makes, at the group's rows), so the bits are the same; only
when each block is computed changes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from alpha_core.codegen.outer_split import task_rows
from alpha_core.ir.graph import Graph

# what a node is to a row group, from the emitter: (its first extent, which sources are cut,
# the sources' nodes, the shapes of its output and sources) or None where it cannot join
Member = tuple[int, tuple[bool, ...], list[int], tuple[int, ...], list[tuple[int, ...]]]


@dataclass(frozen=True)
class RowGroup:
    """Nodes computed together, `rows` rows of their first axis (`first`) a task."""

    members: tuple[int, ...]
    rows: int
    first: int


def row_groups(
    graph: Graph,
    live: Sequence[int],
    member: Callable[[int], Member | None],
    transparent: Callable[[int], bool],
    in_place: Collection[int],
) -> list[RowGroup]:
    """The row groups of a kernel computing `live` in order. `member(i)`: how node i would
    join, or None (a product, a sum over the first axis: it ends the run). `transparent(i)`:
    a node computed nowhere here (bound, constant, read through by a product), which neither
    joins nor ends a run. `in_place`: reshapes read where their input is."""
    groups: list[RowGroup] = []
    alias: dict[int, int] = {}  # a reshape read in place -> the node whose floats it reads
    members: list[int] = []
    first = 0
    produced: set[int] = set()
    rows: list[int] = []

    def close() -> None:
        if len(members) >= 2 and rows:
            groups.append(RowGroup(tuple(members), min(rows), first))
        members.clear()
        produced.clear()
        rows.clear()

    for i in live:
        node = graph[i]
        if i in in_place:
            src = node.inputs[0]
            alias[i] = alias.get(src, src)
            continue
        if transparent(i):
            continue
        joining = member(i)
        if joining is None:
            close()
            continue
        extent, cut, sources, out, shapes = joining
        made = [alias.get(j, j) in produced for j in sources]
        if members and (
            extent != first or any(m and not c for m, c in zip(made, cut, strict=True))
        ):
            close()
        if not members:
            first = extent
        members.append(i)
        produced.add(i)
        own = task_rows(out, shapes)
        if own < extent:  # a node that splits on its own: the group runs as its tasks do
            rows.append(own)
    close()
    return groups
