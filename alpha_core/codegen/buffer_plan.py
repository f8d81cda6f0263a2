"""Which static buffer holds each computed tensor of a kernel: tensors whose lives do not
overlap share one.

A kernel computes its nodes in one fixed order (graph_emit.py). A tensor lives from the node
that writes it to the last node that reads it (itself, or through a reshape read in place or a
transpose a product reads through strides); a root lives to the end, since the kernel's caller
reads it. A tensor is written into a buffer of its own size that no live tensor holds, the one
freed most recently where there are several, so that a step writes into memory it touched a
moment ago (in cache) instead of a fresh page; the buffers of the tensors its node read for the
last time are freed only after, so a node's output is never one of its inputs.

Only where the floats are stored changes: every node computes the same operations in the same
order, so the bits are those of one buffer per tensor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def plan_buffers(
    order: Sequence[int],
    reads: Mapping[int, Iterable[int]],
    sizes: Mapping[int, int],
    kept: Iterable[int],
) -> tuple[dict[int, int], list[int]]:
    """Buffers for the tensors in `sizes` (node id: floats): `order` is every node the kernel
    computes, in order (a node that writes memory it is given, or that is read in place, is
    there for what it reads), `reads[i]` the tensors node i reads (after reshapes and folded
    transposes, the tensor that holds the floats), `kept` the tensors read after the kernel.
    Returns each planned tensor's buffer and each buffer's floats."""
    last: dict[int, int] = {}
    for p, i in enumerate(order):
        for j in reads.get(i, ()):
            last[j] = p
    for j in kept:
        last[j] = len(order)
    ending: dict[int, list[int]] = {}
    for j, p in last.items():
        if j in sizes:
            ending.setdefault(p, []).append(j)
    free: dict[int, list[int]] = {}  # floats: buffers of that size free now, freed last at the end
    where: dict[int, int] = {}
    floats: list[int] = []
    for p, i in enumerate(order):
        if i in sizes:
            n = sizes[i]
            if free.get(n):
                where[i] = free[n].pop()
            else:
                where[i] = len(floats)
                floats.append(n)
            if i not in last:  # written and never read: free once its node has written it
                free.setdefault(n, []).append(where[i])
        for j in ending.get(p, ()):
            if j in where:
                free.setdefault(sizes[j], []).append(where[j])
    return where, floats
