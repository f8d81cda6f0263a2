"""Bias gradients added up as the weight gradient's product packs their input
(alpha_core/codegen/column_sums.py): the executable still equals the NumPy float32 reference
bit for bit, in both arithmetics, at 1 and 2 threads, where the weight gradient's product has
one row of tasks and where it has several (300 rows: at two threads its tasks are MC rows, and
only the first row of them adds), and a product of too few rows (B read in place) keeps its
reduce."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import program_of, recorded
from test_exact import assert_exact_on_threads

SOURCE = """system colsums {
  data train: synthetic(rows: 512, features: 300, classes: 3, seed: 5, noise: 0.3, holdout: 32)
  batch 128 leaves 1 shuffle(seed: 3)
  %(arithmetic)s
  param w1: f32[300, 64] = normal(0.0, 0.05, seed: 1)
  param b1: f32[64] = uniform(-0.1, 0.1, seed: 2)
  param w2: f32[64, 128] = normal(0.0, 0.1, seed: 3)
  param b2: f32[128] = uniform(-0.1, 0.1, seed: 4)
  param w3: f32[128, 3] = normal(0.0, 0.2, seed: 5)
  param b3: f32[3] = zeros
  fn model(x: f32[B, 300]) -> f32[B, 3] {
    let h = tanh(x @ w1 + b1)
    let g = tanh(h @ w2 + b2)
    return g @ w3 + b3
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps 6
}
"""


def source(fused: bool) -> str:
    return SOURCE % {"arithmetic": "arithmetic fused" if fused else ""}


def test_only_the_bias_of_a_tall_weight_gradient_is_folded(tmp_path: Path) -> None:
    from alpha_core.autodiff.reverse import training_step
    from alpha_core.ir.graph import concrete

    program = program_of(source(False), tmp_path / "c.alpha")
    found = [f for f in recorded("column_sums", program) if f]
    assert len(found) == 1, found  # the leaf-gradient kernel's
    ((product, reduce),) = found[0].items()
    graph = training_step(program).graph
    a, b = (concrete(graph[j].shape, program.leaf_size) for j in graph[product].inputs)
    # w1's gradient, xᵀ (300 x 128) by dh (128 x 64), adds up b1's; w2's has 64 rows (B read
    # in place: no packing to ride on), so b2's gradient keeps its reduce
    assert (graph[reduce].op, a, b) == ("reduce_to", (300, 128), (128, 64))
    assert concrete(graph[reduce].shape, program.leaf_size) == (64,)


@pytest.mark.parametrize("fused", [False, True])
def test_folded_column_sums_equal_the_reference(fused: bool, tmp_path: Path) -> None:
    assert_exact_on_threads(source(fused), tmp_path)
