"""Losses added for layers (issue 13): binary classification from one logit
(`sigmoid_cross_entropy` with `classes: 2`) and label smoothing
(`softmax_cross_entropy(…, smoothing: e)`): the executable equals the NumPy float32 reference
bit for bit, the gradients agree with float64 finite differences, the held-out accuracy of one
logit is that of its sign, and misuse is refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import build, program_of, run_exe
from layer_sources import BINARY, SMOOTH, loss_source
from reference import F32, evaluate, load_data
from test_exact import assert_exact
from test_ops_layers import assert_finite_differences

from alpha_core.workspace.analysis import Workspace


@pytest.mark.parametrize("case", [BINARY, SMOOTH], ids=["sigmoid", "smoothing"])
def test_losses_are_exact_and_their_gradients_match(
    case: dict[str, object], tmp_path: Path
) -> None:
    assert_exact(loss_source(case), tmp_path / "exact")
    assert_finite_differences(program_of(loss_source(case), tmp_path / "g.alpha"), False)


def test_one_logit_is_evaluated_by_its_sign(tmp_path: Path) -> None:
    """The forward kernel gives [0, z]: the first maximum is class 1 exactly when z > 0, so the
    executable's held-out accuracy is that of the sign of the reference's logits at its final
    parameters."""
    program = program_of(loss_source(BINARY, steps=200), tmp_path / "b.alpha")
    params_file = tmp_path / "out.params"
    exe = build(program, tmp_path / "build").executables[0].path
    code, events, stderr = run_exe(exe, "--params-out", str(params_file))
    assert code == 0, stderr
    flat = np.fromfile(params_file, dtype="<f4")
    params = [flat[p.offset : p.offset + p.count].reshape(p.shape) for p in program.params]
    x, y = load_data(program)
    first = program.data.rows - program.data.holdout
    xs, ys = x[first:], y[first:, 0]
    z = evaluate(program.model, [program.output], params, xs, ys, len(xs), F32)[program.output]
    expected = float(np.mean((z[:, 0] > 0) == (ys == 1)))
    assert events[-1]["holdout_accuracy"] == pytest.approx(expected, abs=1e-9)
    assert expected > 0.8


REFUSED = {
    "sigmoid of three classes": (
        {**BINARY, "classes": 3},
        ("type-mismatch", "`sigmoid_cross_entropy` needs two classes but the data has 3"),
    ),
    "sigmoid of two outputs": (
        {**BINARY, "outputs": 2},
        ("shape-mismatch", "the model gives f32[B, 2] but the data's labels need f32[B, 1]"),
    ),
    "smoothing of 1": (
        {**SMOOTH, "loss": "softmax_cross_entropy(model(x), y, smoothing: 1.0)"},
        ("bad-argument", None),
    ),
    "smoothing of mse": (
        {**SMOOTH, "loss": "mse(model(x), y, smoothing: 0.1)"},
        ("bad-argument", "`mse` takes the model's output and `y`"),
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_misuse_is_refused(case: str, tmp_path: Path) -> None:
    values, (name, message) = REFUSED[case]
    path = tmp_path / "r.alpha"
    path.write_text(loss_source(values))
    got = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert any(n == name and (message is None or m == message) for n, m in got), got
