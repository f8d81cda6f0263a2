"""Initialisers (issue 13): ones, constant, xavier/glorot and he/kaiming, uniform and normal.
Each lowers to one of the generator's kinds (alpha_core.semantics.rng) with its bound or std
fixed from the parameter's shape; a compiled run from them ends with the NumPy reference's
bits, the bounds and spreads are PyTorch's formulas, and the refusals are shown."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import program_of
from reference import init_params
from test_exact import assert_exact

from alpha_core.check.init_check import fans
from alpha_core.workspace.analysis import Workspace

SYSTEM = """system s {
  data train: synthetic(rows: 120, features: 6, classes: 3, seed: 5, noise: 0.3)
  batch 12 leaves 3 shuffle(seed: 3)
  param w1: f32[6, 40] = %(w1)s
  param b1: f32[40] = %(b1)s
  param w2: f32[40, 3] = %(w2)s
  param b2: f32[3] = %(b2)s
  fn model(x: f32[B, 6]) -> f32[B, 3] {
    return relu(x @ w1 + b1) @ w2 + b2
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 5
}
"""


def text(w1: str, b1: str = "zeros", w2: str = "he_normal(seed: 2)", b2: str = "ones") -> str:
    return SYSTEM % {"w1": w1, "b1": b1, "w2": w2, "b2": b2}


@pytest.mark.parametrize(
    ("w1", "b1", "w2", "b2"),
    [
        ("xavier_uniform(seed: 1)", "constant(0.25)", "he_normal(seed: 2)", "ones"),
        ("he_uniform(seed: 1)", "ones()", "xavier_normal(seed: 2, gain: 0.5)", "constant(-0.5)"),
        ("kaiming_uniform(seed: 4, gain: 1.0)", "zeros()", "glorot_normal(seed: 5)", "zeros"),
    ],
)
def test_initialisers_are_exact(w1: str, b1: str, w2: str, b2: str, tmp_path: Path) -> None:
    assert_exact(text(w1, b1, w2, b2), tmp_path)


def test_bounds_and_spreads_are_the_fan_formulas(tmp_path: Path) -> None:
    program = program_of(
        text("xavier_uniform(seed: 1)", "constant(0.25)", "he_normal(seed: 2)"),
        tmp_path / "a.alpha",
    )
    w1, b1, w2, b2 = init_params(program)
    bound = math.sqrt(6.0 / (6 + 40))  # torch.nn.init.xavier_uniform_ of a 6 -> 40 layer
    assert program.params[0].init.b == pytest.approx(bound, rel=1e-7)
    assert w1.min() >= -bound and w1.max() < bound and w1.max() > 0.9 * bound
    assert np.all(b1 == np.float32(0.25)) and np.all(b2 == np.float32(1.0))
    assert program.params[2].init.b == pytest.approx(math.sqrt(2.0 / 40), rel=1e-7)  # he_normal
    assert abs(float(w2.std()) - math.sqrt(2.0 / 40)) < 0.03
    assert fans((16, 8, 3, 3)) == (8 * 9, 16 * 9)  # a conv kernel f32[O, C, KH, KW]


def test_spellings_and_neutral_values_keep_one_identity(tmp_path: Path) -> None:
    def identity(name: str, **parts: str) -> str:
        return program_of(text(**parts), tmp_path / f"{name}.alpha").identity()  # type: ignore[arg-type]

    assert identity("a", w1="xavier_uniform(seed: 1)") == identity(
        "b", w1="glorot_uniform(seed: 1)"
    )
    assert identity("c", w1="he_normal(seed: 1)") == identity("d", w1="kaiming_normal(seed: 1)")
    assert identity("e", w1="he_normal(seed: 1)", b1="zeros()") == identity(
        "f", w1="he_normal(seed: 1)", b1="constant(0.0)"
    )
    assert identity("g", w1="he_normal(seed: 1)", b1="zeros") == identity(
        "h", w1="he_normal(seed: 1)", b1="zeros()"
    )
    # -0.0 is a value of its own (its sign bit is in every element)
    assert identity("i", w1="he_normal(seed: 1)", b1="constant(-0.0)") != identity(
        "j", w1="he_normal(seed: 1)", b1="zeros"
    )


@pytest.mark.parametrize(
    ("b1", "name", "message"),
    [
        (
            "xavier_uniform(seed: 1)",
            "bad-argument",
            "`xavier_uniform` scales by the parameter's fan-in and fan-out, which f32[40] does "
            "not have: it needs rank 2 or more",
        ),
        ("ones(2)", "bad-argument", "`ones` takes no argument"),
        ("he_normal(seed: 1, gain: 0)", "bad-argument", "`gain` is 0.0; it must be above 0.0"),
        ("he_normal(gain: 2.0)", "bad-argument", "`he_normal` needs `seed:`"),
        ("constant()", "bad-argument", "`constant` needs `value:`"),
        ("onez", "unknown-name", "unknown initialiser `onez`"),
    ],
)
def test_refusals(b1: str, name: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "r.alpha"
    path.write_text(text("he_normal(seed: 1)", b1=b1))
    found = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert len(found) == 1 and found[0][0] == name, found
    assert found[0][1].startswith(message), found


def test_a_scalar_parameter_takes_a_constant(tmp_path: Path) -> None:
    src = text("he_normal(seed: 1)").replace(
        "  param b2: f32[3] = ones\n",
        "  param b2: f32[3] = ones\n  param s: f32[] = constant(2.0)\n",
    )
    assert_exact(src.replace("@ w2 + b2", "@ w2 * s + b2"), tmp_path)
