"""Float arguments are range-checked as the float32 they become (issue 9, item 17): `eps: 1e-50`
was 0 (NaN parameters), `lr: 1e39` inf and `lr: 1e-50` 0, and all three passed `alpha check`.
Each case runs the real `alpha check` on a real file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli

SOURCE = """system tiny {{
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1, noise: {noise})
  batch 8 leaves 2
  param w: f32[4, 3] = normal(0.0, {std}, seed: 1)
  param b: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    return x @ w + b
  }}
  loss softmax_cross_entropy(model(x), y)
  learner {learner}
  steps 10
}}
"""
RANGE = "from 1.1754944e-38 to 3.4028235e+38"


def _check(tmp_path: Path, learner: str, std: str = "0.1", noise: str = "0.1") -> dict[str, object]:
    path = tmp_path / "tiny.alpha"
    path.write_text(SOURCE.format(learner=learner, std=std, noise=noise))
    proc = cli("check", "--json", str(path))
    body: dict[str, object] = json.loads(proc.stdout)
    assert proc.returncode == (0 if body["ok"] else 1), proc.stderr
    return body


def _refusal(body: dict[str, object]) -> tuple[str, str]:
    refusals = body["refusals"]
    assert isinstance(refusals, list) and len(refusals) == 1, refusals
    return refusals[0]["name"], refusals[0]["message"]


@pytest.mark.parametrize(
    ("learner", "expected"),
    [
        pytest.param(
            "adam(lr: 0.01, eps: 1e-50)",
            f"`eps` of `adam` is 1e-50, which is 0 as a float32; it must be a positive normal "
            f"float32, {RANGE}",
            id="eps-underflows-to-zero",
        ),
        pytest.param(
            "sgd(lr: 1e39)",
            "`lr` of `sgd` is 1e+39, which is inf as a float32; its magnitude must be at most "
            "3.4028235e+38",
            id="lr-overflows-to-inf",
        ),
        pytest.param(
            "sgd(lr: 1e-50)",
            f"`lr` of `sgd` is 1e-50, which is 0 as a float32; it must be a positive normal "
            f"float32, {RANGE}",
            id="lr-underflows-to-zero",
        ),
        pytest.param(
            "momentum(lr: 1e-40)",
            "`lr` of `momentum` is 1e-40, which is the subnormal 1e-40 as a float32; it must be "
            f"a positive normal float32, {RANGE}",
            id="lr-subnormal",
        ),
        pytest.param(
            "adam(lr: 0.01, beta1: 0.999999999)",
            "`beta1` is 0.999999999 (1 as a float32); it must be at least 0.0 and below 1.0",
            id="beta-rounds-to-one",
        ),
    ],
)
def test_learner_hyperparameters_checked_as_float32(
    tmp_path: Path, learner: str, expected: str
) -> None:
    assert _refusal(_check(tmp_path, learner)) == ("bad-argument", expected)


def test_initialiser_and_data_floats_checked_as_float32(tmp_path: Path) -> None:
    name, message = _refusal(_check(tmp_path, "sgd(lr: 0.1)", std="1e39"))
    assert name == "bad-argument" and "`std` of `normal` is 1e+39, which is inf" in message
    name, message = _refusal(_check(tmp_path, "sgd(lr: 0.1)", noise="1e-50"))
    assert name == "bad-argument" and "`noise` of `synthetic` is 1e-50, which is 0" in message


def test_normal_and_zero_values_still_accepted(tmp_path: Path) -> None:
    # the smallest normal float32, the largest, and zero where zero is in range
    body = _check(tmp_path, "adam(lr: 3.4e38, eps: 1.1754944e-38)", std="0.0", noise="0")
    assert body["ok"] is True, body["refusals"]
