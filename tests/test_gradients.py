"""The autodiff's gradients agree with central finite differences in float64 on random small
models (random shapes, activations, broadcasting and reductions)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from conftest import program_of
from reference import F64, evaluate

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program

ACTIVATIONS = ["relu", "tanh", "sigmoid", "exp", "softplus", "square", "none"]


def _act(name: str, e: str) -> str:
    return {
        "relu": f"relu({e})",
        "tanh": f"tanh({e})",
        "sigmoid": f"sigmoid({e})",
        "exp": f"exp({e} * 0.3)",
        "softplus": f"log(exp({e}) + 1.0)",
        "square": f"({e}) * ({e}) / 4.0",
        "none": e,
    }[name]


def random_source(rng: random.Random) -> tuple[str, bool]:
    f, h, o = rng.randint(2, 5), rng.randint(2, 6), rng.randint(2, 4)
    regression = rng.random() < 0.5
    act1, act2 = rng.choice(ACTIVATIONS), rng.choice(ACTIVATIONS)
    extra = rng.choice(
        [
            "",
            " - mean(w1, axis: 0)",
            " + sum(b1, axis: 0) / 5.0",
            " * b1",
            " / (b1 * b1 + 2.0)",
        ]
    )
    body = f"let h = {_act(act1, 'x @ w1 + b1')}{extra}\n    return {_act(act2, 'h @ w2')} + b2"
    labels = f"targets: {o}" if regression else f"classes: {o}"
    src = f"""system g {{
  data train: synthetic(rows: 40, features: {f}, {labels}, seed: {rng.randint(0, 99)})
  batch 6 leaves 2
  param w1: f32[{f}, {h}] = normal(0.0, 0.5, seed: {rng.randint(0, 99)})
  param b1: f32[{h}] = uniform(-0.5, 0.5, seed: {rng.randint(0, 99)})
  param w2: f32[{h}, {o}] = normal(0.0, 0.5, seed: {rng.randint(0, 99)})
  param b2: f32[{o}] = uniform(-0.2, 0.2, seed: 1)
  fn model(x: f32[B, {f}]) -> f32[B, {o}] {{
    {body}
  }}
  loss {"mse" if regression else "softmax_cross_entropy"}(model(x), y)
  learner sgd(lr: 0.1)
  steps 1
}}
"""
    return src, regression


def loss_and_grads(
    program: Program, params: list[np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[float, list[np.ndarray]]:
    step = training_step(program)
    v = evaluate(step.graph, [step.loss_sum, *step.grads], params, x, y, program.leaf_size, F64)
    return float(v[step.loss_sum]), [v[g] for g in step.grads]


@pytest.mark.parametrize("seed", range(24))
def test_gradients_match_finite_differences(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    src, regression = random_source(rng)
    program = program_of(src, tmp_path / "g.alpha")
    nrng = np.random.default_rng(seed)
    params = [nrng.normal(0, 0.5, p.shape) for p in program.params]
    n, f, o = program.leaf_size, program.data.features, program.data.outputs
    x = nrng.normal(0, 1, (n, f))
    y = nrng.normal(0, 1, (n, o)) if regression else nrng.integers(0, o, n).astype(np.float64)
    _, grads = loss_and_grads(program, params, x, y)
    eps = 1e-6
    for pi, p in enumerate(params):
        for index in np.ndindex(p.shape):
            plus = [q.copy() for q in params]
            minus = [q.copy() for q in params]
            plus[pi][index] += eps
            minus[pi][index] -= eps
            numeric = (
                loss_and_grads(program, plus, x, y)[0] - loss_and_grads(program, minus, x, y)[0]
            ) / (2 * eps)
            analytic = grads[pi][index]
            assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6), (
                f"{program.params[pi].name}{index}: autodiff {analytic}, "
                f"finite difference {numeric}\n{src}"
            )
