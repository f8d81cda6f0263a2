"""Adds folded into a large product's store (alpha_core/codegen/sum_folds.py): `a @ w + b`,
`h + a @ w + b`, `a @ w + h` and `b + a @ w` are computed by the GEMM as it stores each sum, and
the executable still equals the NumPy float32 reference bit for bit, at 1 and 2 threads, with
the products' rows in whole and partial tiles (100 rows: 24-row tiles and an edge; 50: the
8-row tiles with B read in place) and 72 columns (4 whole vector panels and a partial one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import program_of, recorded
from test_exact import assert_exact_on_threads

from alpha_core.codegen.sum_folds import SumFold

SOURCE = """system folds {
  data train: synthetic(rows: 400, features: 40, classes: 3, seed: 5, noise: 0.3, holdout: 40)
  batch 100 leaves %(leaves)d shuffle(seed: 3)
  param w1: f32[40, 72] = normal(0.0, 0.2, seed: 1)
  param b1: f32[72] = uniform(-0.1, 0.1, seed: 2)
  param w2: f32[72, 72] = normal(0.0, 0.1, seed: 3)
  param b2: f32[72] = uniform(-0.1, 0.1, seed: 4)
  param w3: f32[72, 72] = normal(0.0, 0.1, seed: 5)
  param w4: f32[72, 3] = normal(0.0, 0.2, seed: 6)
  param b4: f32[3] = zeros
  fn model(x: f32[B, 40]) -> f32[B, 3] {
    let h = tanh(x @ w1 + b1)
    let r = h + h @ w2 + b2
    let s = r @ w3 + r
    let t = b2 + s @ w2
    return tanh(t) @ w4 + b4
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps 12
}
"""


def folds_of(src: str, tmp: Path) -> list[SumFold]:
    """The folds the training step's kernels make, as the build makes them."""
    found = recorded("fold_sums", program_of(src, tmp / "f.alpha"))
    return [fold for folds in found for fold in folds.values()]


def test_each_pattern_is_folded(tmp_path: Path) -> None:
    folds = folds_of(SOURCE % {"leaves": 1}, tmp_path)
    shapes = {(len(f.inner), f.row is not None) for f in folds}
    # x @ w1 + b1 and b2 + s @ w2: a row; h + h @ w2 + b2: one addend then a row; r @ w3 + r:
    # one addend; the backward's sums of products (the adjoint of r reaches it twice)
    assert {(0, True), (1, True), (1, False)} <= shapes
    assert len(folds) >= 4


@pytest.mark.parametrize("leaves", [1, 2])
def test_folded_sums_equal_the_reference(leaves: int, tmp_path: Path) -> None:
    assert_exact_on_threads(SOURCE % {"leaves": leaves}, tmp_path, ("2",))
