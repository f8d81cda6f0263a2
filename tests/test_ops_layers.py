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
from layer_sources import BODIES, seq_source
from reference import F64, evaluate
from test_exact import assert_exact

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program


def source(body: str, regression: bool = False, steps: int = 20) -> str:
    return seq_source(body, regression, steps)


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


def test_a_gpu_pairing_of_the_layer_operations_checks_clean(tmp_path: Path) -> None:
    """max and min (and every other layer operation) have GPU kernels now: a GPU pairing of
    a system using them checks clean (tests/test_gpu_roles.py runs it on the host shadow)."""
    from alpha_core.workspace.analysis import Workspace

    text = source("extremes") + (
        "\nplan pair for s {\n  roles worker[2]\n  topology pair\n}\n"
        "\npairing gpus for pair {\n  worker[*]: host x86_64, gpu h200\n}\n"
    )
    path = tmp_path / "gpu.alpha"
    path.write_text(text)
    got = Workspace().analyze_file(str(path)).diagnostics
    assert got == [], [(d.name, d.message) for d in got]
