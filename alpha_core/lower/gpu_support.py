"""Which operations of a system have no GPU kernel: asked by the pairing check, so a GPU role
that cannot be built is refused `unsupported-on-target` before anything is compiled, without
loading the code generator (codegen/gpu_nodes.py emits the ops the operation table gives a
GPU body family; tests/test_op_table.py holds each family to a body)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.ir.graph import Graph
from alpha_core.lower.live import live_nodes
from alpha_core.ops import GPU_SUPPORTED


def unsupported_ops(graph: Graph, live: Sequence[int]) -> list[str]:
    """The ops of the live nodes that have no GPU kernel (the operation table's GPU_SUPPORTED:
    any other is refused `unsupported-on-target`), each once, in graph order."""
    seen: list[str] = []
    for i in live:
        op = graph[i].op
        if op not in GPU_SUPPORTED and op not in seen:
            seen.append(op)
    return seen


@functools.lru_cache(maxsize=64)
def gpu_unsupported(program: Program) -> tuple[str, ...]:
    """The ops of the training step and of the forward pass without a GPU kernel."""
    step = training_step(program)
    missing = unsupported_ops(step.graph, live_nodes(step.graph, [step.loss_sum, *step.grads]))
    result = program.output if program.forward_output is None else program.forward_output
    for op in unsupported_ops(program.model, live_nodes(program.model, [result])):
        if op not in missing:
            missing.append(op)
    return tuple(missing)
