"""Large nodes run as tasks over blocks of their first axis (codegen/outer_split.py): a
transformer whose attention, layer norms, gelu and residual adds are large enough to split gives
the NumPy float32 reference's SHA-256 at 1, 2 and 3 threads and at each CPU level, and so does a
small convolutional network (one function, not outlined) whose pools and activations split; the
rules cut only inputs indexed along the first axis and never split a sum over it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import build, program_of
from reference import train

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.outer_split import SPLIT_FROM, cut_inputs, task_rows
from alpha_core.codegen.target import TARGETS
from alpha_core.ir.graph import Node

B, T, D, H = 32, 32, 64, 2  # [B, T, D] = 65,536 floats, [B, H, T, T] = 65,536: both split
SOURCE = f"""system wide {{
  data train: sequences(task: sort, length: {T // 2}, rows: 256, seed: 1, holdout: 64)
  batch {B} leaves 1 shuffle(seed: 7)
  param tok: f32[11, {D}] = normal(0.0, 0.3, seed: 1)
  param pos: f32[{T}, {D}] = normal(0.0, 0.3, seed: 2)
  param blocks[3] {{
    g1, g2: f32[{D}] = ones
    n1, n2, bo, b2: f32[{D}] = zeros
    wq, wk, wv, wo: f32[{D}, {D}] = normal(0.0, 0.1, seed: 10)
    w1: f32[{D}, {2 * D}] = normal(0.0, 0.1, seed: 20)
    b1: f32[{2 * D}] = zeros
    w2: f32[{2 * D}, {D}] = normal(0.0, 0.05, seed: 21)
  }}
  param out: f32[{D}, 11] = normal(0.0, 0.18, seed: 3)
  fn norm(h: f32[B, T, D], gain: f32[D], shift: f32[D]) -> f32[B, T, D] {{
    let c = h - mean(h, axis: 2, keepdims: true)
    return c / sqrt(mean(square(c), axis: 2, keepdims: true) + 0.00001) * gain + shift
  }}
  fn heads(p: f32[B, {T}, {D}]) -> f32[B, {H}, {T}, {D // H}] {{
    return transpose(reshape(p, B, {T}, {H}, {D // H}), 1, 2)
  }}
  fn block(h: f32[B, {T}, {D}], p: blocks) -> f32[B, {T}, {D}] {{
    let a = norm(h, p.g1, p.n1)
    let s = softmax(causal_mask(heads(a @ p.wq) @ heads(a @ p.wk).T * 0.17), axis: 3)
    let r = h + reshape(transpose(s @ heads(a @ p.wv), 1, 2), B, {T}, {D}) @ p.wo + p.bo
    return r + gelu(norm(r, p.g2, p.n2) @ p.w1 + p.b1) @ p.w2 + p.b2
  }}
  fn model(x: f32[B, {T}]) -> f32[B, {T // 2}, 11] {{
    let h = embed(tok, x) + pos
    for i in 0..3 {{ h = block(h, blocks[i]) }}
    return slice(h @ out, axis: 1, start: {T // 2}, stop: {T})
  }}
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.003)
  steps 3
}}
"""


def split_ops(source: str, path: Path) -> tuple[Program, set[str]]:
    """The program of `source` and the ops whose nodes its kernels run as tasks over blocks
    of rows: each alone, or in a row group (codegen/row_groups.py) with its neighbours."""
    program = program_of(source, path)
    module = str(build_kernels(program, training_step(program), TARGETS["x86_64"].triple))
    return program, set(
        re.findall(r'define internal void @"alpha\.node\.\d+\.(\w+)\.rows"', module)
    )


def assert_reference_bits(program: Program, folder: Path, runs: list[tuple[str, int]]) -> None:
    """Built and run at each (ALPHA_CPU_LEVEL or "", threads): the reference's SHA-256."""
    exe = build(program, folder / "build").executables[0].path
    expected = train(program).sha256
    for level, threads in runs:
        out = folder / f"p{threads}{level}"
        proc = subprocess.run(
            [exe, "--quiet", "--threads", str(threads), "--params-out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **({"ALPHA_CPU_LEVEL": level} if level else {})},
        )
        assert proc.returncode == 0, proc.stderr
        assert f'"params_sha256":"{expected}"' in proc.stdout.replace(" ", ""), (level, threads)


def test_the_large_nodes_split_and_give_the_reference_bits(tmp_path: Path) -> None:
    program, split = split_ops(SOURCE, tmp_path / "wide.alpha")
    # attention, layer norm, the MLP's activation and the residual adds: every kind splits
    for op in ("softmax", "causal_mask", "bmatmul", "swap_axes", "gelu", "gelu_grad", "add"):
        assert op in split, (op, sorted(split))
    assert "mean" in split and "reduce_to" in split, sorted(split)
    runs = [("", 1), ("", 2), ("", 3), ("x86-64-v2", 2), ("x86-64-v3", 2)]
    assert_reference_bits(program, tmp_path, runs)


CNN = """system images {
  data train: synthetic(rows: 64, features: 784, classes: 10, seed: 5, noise: 0.5, holdout: 0)
  batch 16 leaves 2 shuffle(seed: 7)
  param k1: f32[8, 1, 3, 3] = normal(0.0, 0.3, seed: 1)
  param c1: f32[8, 1, 1] = zeros
  param k2: f32[8, 8, 3, 3] = normal(0.0, 0.1, seed: 2)
  param c2: f32[8, 1, 1] = uniform(-0.1, 0.1, seed: 5)
  param w1: f32[1152, 10] = normal(0.0, 0.02, seed: 3)
  fn model(x: f32[B, 1, 28, 28]) -> f32[B, 10] {
    let h1 = relu(conv2d(x, k1, stride: 1, padding: 0) + c1)
    let h2 = relu(conv2d(h1, k2, stride: 1, padding: 0) + c2)
    let p = max_pool(h2, size: 2, stride: 2)
    return reshape(p, B, 1152) @ w1 + reshape(avg_pool(h2, size: 2, stride: 2), B, 1152) @ w1
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 3
}
"""


def test_a_small_kernel_splits_its_large_nodes_pools_included(tmp_path: Path) -> None:
    program, split = split_ops(CNN, tmp_path / "images.alpha")
    for op in ("max_pool", "max_pool_grad", "avg_pool", "avg_pool_grad", "relu", "add"):
        assert op in split, (op, sorted(split))
    assert_reference_bits(program, tmp_path, [("", 1), ("", 3)])


def node(op: str, **attrs: object) -> Node:
    return Node(op, (), (), tuple(attrs.items()))


@pytest.mark.parametrize(
    ("n", "out", "inputs", "cut"),
    [
        # element-wise: a bias broadcast along the first axis is read whole
        (node("add"), (16, 64, 128), [(16, 64, 128), (128,)], (True, False)),
        (node("mul"), (16, 64, 128), [(16, 64, 128), (1, 64, 128)], (True, False)),
        (node("gelu"), (16, 64, 512), [(16, 64, 512)], (True,)),
        # along another axis, the matrices of a batch, a swap of two later axes
        (node("softmax", axis=3), (16, 4, 64, 64), [(16, 4, 64, 64)], (True,)),
        (node("mean", axis=2), (16, 64), [(16, 64, 128)], (True,)),
        (node("bmatmul"), (16, 4, 64, 32), [(16, 4, 64, 64), (16, 4, 64, 32)], (True, True)),
        (node("swap_axes", a=1, b=2), (16, 4, 64, 32), [(16, 64, 4, 32)], (True,)),
        (node("reduce_to"), (16, 64, 1), [(16, 64, 128)], (True,)),
        (
            node("max_pool_grad"),
            (64, 32, 24, 24),
            [(64, 32, 24, 24), (64, 32, 12, 12)],
            (True, True),
        ),
        # never: work along the first axis, a sum over it, a random mask, a batch broadcast
        (node("softmax", axis=0), (16, 64), [(16, 64)], None),
        (node("sum", axis=0), (64, 128), [(16, 64, 128)], None),
        (node("reduce_to"), (128,), [(16, 64, 128)], None),
        (node("swap_axes", a=0, b=1), (64, 16, 128), [(16, 64, 128)], None),
        (node("dropout", p=0.1), (16, 64, 128), [(16, 64, 128)], None),
        (node("bmatmul"), (16, 4, 64, 32), [(16, 4, 64, 64), (1, 4, 64, 32)], None),
        (node("transpose"), (64, 128), [(128, 64)], None),
    ],
)
def test_the_rules_cut_only_what_is_indexed_along_the_first_axis(
    n: Node, out: tuple[int, ...], inputs: list[tuple[int, ...]], cut: tuple[bool, ...] | None
) -> None:
    assert cut_inputs(n, out, inputs) == cut


def test_a_task_takes_a_divisor_of_the_first_axis() -> None:
    assert task_rows((16, 64, 128)) == 2  # 8 tasks of 16,384 floats
    assert task_rows((1024, 128)) == 128
    assert task_rows((7, 64, 128)) == 7  # a prime of two-task rows: no divisor, one call
    assert task_rows((6, 64, 128)) == 2  # 3 tasks of 16,384 floats
    assert task_rows((4, 8, 8)) == 4  # below SPLIT_FROM: one call
    assert 4 * 8 * 8 < SPLIT_FROM
    assert task_rows((16, 64), [(16, 64, 128)]) == 2  # a mean: its input's floats are the work
