"""Which operations of a system have no GPU kernel: asked by the pairing check, so a GPU role
that cannot be built is refused `unsupported-on-target` before anything is compiled."""

from __future__ import annotations

import functools

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.codegen.gpu_nodes import unsupported_ops
from alpha_core.codegen.graph_emit import live_nodes


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
