"""Layer operations (issue 13): every new operation's executable equals the NumPy float32
reference bit for bit, and its gradient agrees with float64 central finite differences.

Sources use rank-3 per-example tensors, size variables in signatures, `keepdims`, `reshape`,
`transpose`, a scalar parameter, softmax/log_softmax, causal masking, batched products and
the activations sqrt, abs, square, gelu, silu, maximum, minimum and clamp.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import program_of
from reference import F64, evaluate
from test_exact import assert_exact

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program

SEQ = """system s {
  data train: synthetic(rows: 120, features: 12, %(labels)s, seed: 5, noise: 0.3, holdout: 24)
  batch 12 leaves 3 shuffle(seed: 3)
  param wq: f32[4, 4] = normal(0.0, 0.4, seed: 1)
  param wk: f32[4, 4] = normal(0.0, 0.4, seed: 2)
  param wv: f32[4, 4] = normal(0.0, 0.4, seed: 3)
  param gn: f32[4] = uniform(0.5, 1.5, seed: 4)
  param s: f32[] = uniform(0.5, 1.0, seed: 6)
  param wo: f32[12, 3] = normal(0.0, 0.4, seed: 5)
  fn layer_norm(h: f32[B, T, D], gain: f32[D]) -> f32[B, T, D] {
    let mu = mean(h, axis: 2, keepdims: true)
    let c = h - mu
    let var = mean(square(c), axis: 2, keepdims: true)
    return c / sqrt(var + 0.00001) * gain
  }
  fn attend(h: f32[B, T, D]) -> f32[B, T, D] {
    let q = h @ wq
    let k = h @ wk
    let v = h @ wv
    let scores = causal_mask(q @ transpose(k) / 2.0)
    return softmax(scores, axis: 2) @ v
  }
  fn model(x: f32[B, 3, 4]) -> f32[B, 3] {
    %(body)s
  }
  loss %(loss)s(model(x), y)
  learner adam(lr: 0.01)
  steps %(steps)d
}
"""
BODIES = {
    "attention": "let h = layer_norm(x, gn)\n"
    "    let a = attend(h) + h\n"
    "    return reshape(a, B, 12) @ wo",
    "activations": "let a = x @ wq * s\n"
    "    let z = gelu(a) + silu(a) * s + abs(a) * 0.1 + maximum(a, 0.0) "
    "- minimum(a, clamp(a, -0.5, 0.5))\n"
    "    return reshape(z, B, 12) @ wo",
    "slice": "let z = slice(x @ wq, axis: 1, start: 1, stop: 3) * s\n"
    "    return reshape(z, B, 8) @ slice(wo, axis: 0, start: 2, stop: 10)",
    "log_softmax": "let z = log_softmax(x @ wk, axis: -1)"
    " + transpose(softmax(transpose(x @ wv), axis: 1)) @ wq\n"
    "    return reshape(sqrt(square(z) + 1.0), B, 12) @ wo",
}


def source(body: str, regression: bool = False, steps: int = 20) -> str:
    return SEQ % {
        "labels": "targets: 3" if regression else "classes: 3",
        "body": BODIES[body],
        "loss": "mse" if regression else "softmax_cross_entropy",
        "steps": steps,
    }


@pytest.mark.parametrize("body", sorted(BODIES))
def test_layer_operations_are_exact(body: str, tmp_path: Path) -> None:
    assert_exact(source(body, regression=body == "log_softmax"), tmp_path)


def _loss_and_grads(
    program: Program, params: list[np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[float, list[np.ndarray]]:
    step = training_step(program)
    v = evaluate(step.graph, [step.loss_sum, *step.grads], params, x, y, program.leaf_size, F64)
    return float(v[step.loss_sum]), [v[g] for g in step.grads]


def assert_finite_differences(program: Program, regression: bool, seed: int = 7) -> None:
    """Every parameter element's autodiff gradient against a float64 central difference, at
    random parameters and examples."""
    rng = np.random.default_rng(seed)
    params = [rng.normal(0, 0.5, p.shape) for p in program.params]
    n, f, o = program.leaf_size, program.data.features, program.data.outputs
    x = rng.normal(0, 1, (n, f))
    y = rng.normal(0, 1, (n, o)) if regression else rng.integers(0, o, n).astype(np.float64)
    _, grads = _loss_and_grads(program, params, x, y)
    eps = 1e-6
    for pi, p in enumerate(params):
        for index in np.ndindex(p.shape):
            plus = [q.copy() for q in params]
            minus = [q.copy() for q in params]
            plus[pi][index] += eps
            minus[pi][index] -= eps
            numeric = (
                _loss_and_grads(program, plus, x, y)[0] - _loss_and_grads(program, minus, x, y)[0]
            ) / (2 * eps)
            assert grads[pi][index] == pytest.approx(numeric, rel=1e-5, abs=1e-6), (
                f"{program.params[pi].name}{index}: autodiff {grads[pi][index]}, "
                f"finite difference {numeric}"
            )


@pytest.mark.parametrize("body", sorted(BODIES))
def test_layer_gradients_match_finite_differences(body: str, tmp_path: Path) -> None:
    regression = body == "log_softmax"
    program = program_of(source(body, regression=regression), tmp_path / "g.alpha")
    assert_finite_differences(program, regression)
