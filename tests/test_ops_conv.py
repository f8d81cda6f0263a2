"""Convolution, pooling and embeddings (issue 13): the executable equals the NumPy float32
reference bit for bit, and the gradients agree with float64 finite differences, for several
strides, paddings and window sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import program_of
from test_exact import assert_exact
from test_ops_layers import assert_finite_differences

CNN = """system c {
  data train: synthetic(rows: 100, features: 64, classes: 3, seed: 5, noise: 0.3, holdout: 20)
  batch 8 leaves 2 shuffle(seed: 3)
  param k1: f32[4, 1, 3, 3] = normal(0.0, 0.4, seed: 1)
  param c1: f32[4, 1, 1] = uniform(-0.1, 0.1, seed: 2)
  param k2: f32[3, 4, 2, 2] = normal(0.0, 0.4, seed: 3)
  param w: f32[%(flat)d, 3] = normal(0.0, 0.3, seed: 4)
  fn model(x: f32[B, 1, 8, 8]) -> f32[B, 3] {
    %(body)s
    return reshape(r, B, %(flat)d) @ w
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps %(steps)d
}
"""
BODIES = {
    # padding 1, a 2x2 max pool, a strided padded convolution, an overlapping average pool
    "padded": (
        "let h = relu(conv2d(x, k1, stride: 1, padding: 1) + c1)\n"
        "    let p = max_pool(h, size: 2, stride: 2)\n"
        "    let q = conv2d(p, k2, stride: 2, padding: 1)\n"
        "    let r = avg_pool(q, size: 2, stride: 1)",
        12,
    ),
    # no padding, stride 2, overlapping max windows
    "strided": (
        "let h = tanh(conv2d(x, k1, stride: 2) + c1)\n"
        "    let r = max_pool(h, size: 2, stride: 1) + avg_pool(h, size: 2, stride: 1)",
        16,
    ),
}


def source(body: str, steps: int = 15) -> str:
    text, flat = BODIES[body]
    return CNN % {"body": text, "flat": flat, "steps": steps}


@pytest.mark.parametrize("body", sorted(BODIES))
def test_convolution_and_pooling_are_exact(body: str, tmp_path: Path) -> None:
    assert_exact(source(body), tmp_path)


@pytest.mark.parametrize("body", sorted(BODIES))
def test_convolution_gradients_match_finite_differences(body: str, tmp_path: Path) -> None:
    assert_finite_differences(program_of(source(body), tmp_path / "g.alpha"), False)


EMBED = """system e {
  data train: synthetic(rows: 90, features: 6, classes: 3, seed: 2, noise: 0.3, holdout: 18)
  batch 12 leaves 3
  param table: f32[5, 4] = normal(0.0, 0.5, seed: 1)
  param w: f32[24, 3] = normal(0.0, 0.3, seed: 2)
  fn model(x: f32[B, 6]) -> f32[B, 3] {
    let tokens = x + 2.0
    return reshape(embed(table, tokens), B, 24) @ w
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 12
}
"""


def test_embedding_lookup_is_exact_and_its_gradient_matches(tmp_path: Path) -> None:
    """Token values are truncated toward zero and clamped into the table (x + 2 ranges over
    roughly -2 .. 6, so rows 0 and 4 also collect the out-of-range tokens)."""
    assert_exact(EMBED, tmp_path / "exact")
    assert_finite_differences(program_of(EMBED, tmp_path / "g.alpha"), False)
