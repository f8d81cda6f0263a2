"""Which nodes of a graph a set of roots needs: what the emitters compute and what admission
counts, asked without generating code."""

from __future__ import annotations

from collections.abc import Sequence

from alpha_core.ir.graph import Graph


def live_nodes(graph: Graph, roots: Sequence[int]) -> list[int]:
    """The nodes the roots depend on, in graph order."""
    need = set(roots)
    for i in range(len(graph) - 1, -1, -1):
        if i in need:
            need.update(graph[i].inputs)
    return sorted(need)
