"""Tensors whose lives do not overlap share a buffer (codegen/buffer_plan.py): a node's output
is never one of its inputs' buffers, a root is never reused, a tensor read in place keeps its
holder alive, and a kernel planned so gives the reference's bits (tests/test_outer_split.py and
every exactness test build their kernels this way)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import program_of
from test_outer_split import SOURCE

from alpha_core.autodiff.reverse import training_step
from alpha_core.codegen.buffer_plan import plan_buffers
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.target import TARGETS
from alpha_core.ir.graph import concrete, size
from alpha_core.lower.live import live_nodes


def test_a_chain_reuses_what_it_no_longer_reads() -> None:
    # 1 -> 2 -> 3 -> 4, each read once by the next: two buffers take turns
    order = [1, 2, 3, 4]
    reads = {2: [1], 3: [2], 4: [3]}
    where, floats = plan_buffers(order, reads, dict.fromkeys(order, 8), kept=[4])
    assert floats == [8, 8]
    assert where[1] == where[3] and where[2] == where[4] and where[1] != where[2]


def test_an_output_is_never_an_input_and_a_root_is_never_reused() -> None:
    # 3 reads 1 and 2 for the last time: its output takes neither; 1 is a root
    order = [1, 2, 3, 4]
    reads = {2: [1], 3: [1, 2], 4: [3]}
    where, floats = plan_buffers(order, reads, dict.fromkeys(order, 4), kept=[1, 4])
    assert len({where[1], where[2], where[3]}) == 3
    assert where[4] == where[2]  # freed by 3, and 1 (a root) still held
    assert len(floats) == 3


def test_sizes_are_not_mixed_and_given_memory_is_not_planned() -> None:
    # 2 is placed (given memory, not in sizes) but reads 1; 3 reads 2
    order = [1, 2, 3, 4]
    reads = {2: [1], 3: [2], 4: [3]}
    where, floats = plan_buffers(order, reads, {1: 16, 3: 8, 4: 16}, kept=[4])
    assert 2 not in where
    assert where[4] == where[1] and floats[where[4]] == 16 and floats[where[3]] == 8


def test_the_transformer_kernel_holds_a_fraction_of_its_tensors(tmp_path: Path) -> None:
    program = program_of(SOURCE, tmp_path / "wide.alpha")
    module = str(build_kernels(program, training_step(program), TARGETS["x86_64"].triple))
    shared = re.findall(r'@"step\.b\d+(?:\.\d+)?" = internal global \[(\d+) x float\]', module)
    alone = re.findall(r'@"step\.t\d+" = internal global \[(\d+) x float\]', module)
    assert shared, "no buffer is shared"
    # the step's floats in buffers fall by more than half against one buffer per tensor
    planned = sum(int(n) for n in shared) + sum(int(n) for n in alone)
    step = training_step(program)
    live = live_nodes(step.graph, [step.loss_sum, *step.grads])
    computed = [
        size(concrete(step.graph[i].shape, program.leaf_size))
        for i in live
        if step.graph[i].op not in ("param", "const", "input_x", "label_class", "reshape")
    ]
    assert planned < sum(computed) / 2, (planned, sum(computed))
