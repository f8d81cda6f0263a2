"""What an op's host emitter (tensor_ops.py, conv_ops.py, loss_ops.py) may ask of the graph
emitter that calls it: the module, the math functions, each node's buffer and concrete shape,
whether the kernel trains, and the module's GEMM (convolutions run on it, conv_gemm.py). A
protocol, so the op modules depend on this and not on graph_emit.py, which imports them to
dispatch."""

from __future__ import annotations

from typing import Protocol

from llvmlite import ir

from alpha_core.codegen.gemm import GemmEmitter


class NodeContext(Protocol):
    module: ir.Module
    math: dict[str, ir.Function]  # alpha_exp, alpha_log, … by recipe name
    ptrs: dict[int, ir.Value]  # each computed or bound node's buffer
    training: bool  # a training kernel (dropout masks) rather than the forward pass
    gemm: GemmEmitter  # the module's packed products (codegen/gemm.py)

    def shape(self, i: int) -> tuple[int, ...]:
        """Node i's shape with the batch axis made concrete."""
        ...
