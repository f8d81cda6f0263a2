"""Which operations of a system have no GPU kernel: asked by the pairing check, so a GPU role
that cannot be built is refused `unsupported-on-target` before anything is compiled, without
loading the code generator (codegen/gpu_nodes.py emits exactly these; a test holds the two
equal)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.ir.graph import Graph
from alpha_core.lower.live import live_nodes

# every op a GPU role computes; any other is refused `unsupported-on-target` at compile time
GPU_OPS = frozenset(
    {
        "abs",
        "abs_grad",
        "add",
        "avg_pool",
        "avg_pool_grad",
        "bmatmul",
        "broadcast",
        "causal_mask",
        "const",
        "conv2d",
        "conv2d_dw",
        "conv2d_dx",
        "div",
        "dropout",
        "embed",
        "embed_grad",
        "exp",
        "gelu",
        "gelu_grad",
        "input_x",
        "label_class",
        "label_reg",
        "log",
        "log_softmax",
        "matmul",
        "max",
        "max_grad",
        "max_pool",
        "max_pool_grad",
        "maximum",
        "mean",
        "min",
        "min_grad",
        "minimum",
        "mse",
        "mse_grad",
        "mul",
        "neg",
        "param",
        "pick_grad",
        "reduce_to",
        "relu",
        "relu_grad",
        "reshape",
        "sigmoid",
        "sigmoid_grad",
        "sigmoid_xent",
        "sigmoid_xent_grad",
        "silu",
        "silu_grad",
        "slice",
        "slice_grad",
        "softmax",
        "sqrt",
        "sqrt_grad",
        "square",
        "square_grad",
        "sub",
        "sum",
        "swap_axes",
        "tanh",
        "tanh_grad",
        "transpose",
        "xent",
        "xent_grad",
        "xent_smooth",
        "xent_smooth_grad",
        "zeros",
    }
)


def unsupported_ops(graph: Graph, live: Sequence[int]) -> list[str]:
    """The ops of the live nodes that have no GPU kernel, each once, in graph order."""
    seen: list[str] = []
    for i in live:
        op = graph[i].op
        if op not in GPU_OPS and op not in seen:
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
