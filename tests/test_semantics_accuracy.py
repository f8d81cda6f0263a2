"""Accuracy of the math recipes in ulps, against float64 NumPy.

The NumPy reference is used here (it is bit-identical to the compiled code, which
test_semantics_bits checks), on about 1.6 million inputs: a stride through every float32
bit pattern, dense samples of the busy ranges, and the worst inputs found by the
exhaustive scan (``python -m alpha_core.semantics.accuracy``) so the asserted maximum is
the real one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from alpha_core.semantics import mathfuncs
from alpha_core.semantics.accuracy import exact, normal_result, ulp_error

#: Worst inputs of the exhaustive scan over all 2**32 inputs (see docs/semantics.md).
WORST_INPUTS = {
    "exp": [-5.8606462478637695, -88.02577209472656],
    "log": [1.4054595232009888],
    "tanh": [0.6310442090034485],
    "sigmoid": [-4.157293796539307],
}
#: The exhaustive maxima themselves (normal results); the test checks they are reached.
MEASURED = {"exp": 0.9763852, "log": 0.8347881, "tanh": 1.3319599, "sigmoid": 2.4018767}
#: Bound for results that are subnormal, in units of the subnormal spacing 2**-149.
SUBNORMAL_ULP = 0.75


def _inputs() -> np.ndarray:
    g = np.random.default_rng(5)
    stride = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate(
        [
            stride[np.isfinite(stride)],
            g.uniform(-4.0, 4.0, 300_000).astype(np.float32),
            g.uniform(-104.0, 89.0, 300_000).astype(np.float32),
            np.exp(g.uniform(-103.0, 88.0, 200_000)).astype(np.float32),
            np.array(sum(WORST_INPUTS.values(), []), dtype=np.float32),
        ]
    )


@pytest.fixture(scope="module")
def inputs() -> np.ndarray:
    return _inputs()


@pytest.mark.parametrize("name", list(mathfuncs.RECIPES))
def test_max_ulp_error(inputs: np.ndarray, name: str) -> None:
    y = mathfuncs.numpy_math(name, inputs)
    v = exact(name, inputs)
    err = ulp_error(y, v)
    normal = normal_result(v)
    worst = float(err[normal].max())
    assert worst <= mathfuncs.MAX_ULP[name], (name, worst, inputs[normal][np.argmax(err[normal])])
    if (~normal).any():
        assert float(err[~normal].max()) <= SUBNORMAL_ULP, name
    assert worst == pytest.approx(MEASURED[name], abs=1e-6), (name, worst)
    # most results are correctly rounded
    assert (err[normal] <= 0.5).mean() > 0.85, name


def _bits(x: float) -> int:
    return int(np.float32(x).view(np.uint32))


SPECIALS = {
    "exp": [(0.0, 1.0), (-0.0, 1.0), (math.inf, math.inf), (-math.inf, 0.0), (89.0, math.inf),
            (88.8, math.inf), (-104.0, 0.0), (1.0, 2.7182817), (2.0**-149, 1.0)],
    "log": [(1.0, 0.0), (0.0, -math.inf), (-0.0, -math.inf), (math.inf, math.inf),
            (-1.0, math.nan), (-math.inf, math.nan), (-(2.0**-149), math.nan),
            (2.0, 0.6931472)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (math.inf, 1.0), (-math.inf, -1.0), (20.0, 1.0),
             (-20.0, -1.0), (2.0**-149, 2.0**-149), (-(2.0**-140), -(2.0**-140))],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (math.inf, 1.0), (-math.inf, 0.0), (100.0, 1.0),
                (-200.0, 0.0)],
}  # fmt: skip


@pytest.mark.parametrize("name", list(mathfuncs.RECIPES))
def test_special_values(name: str) -> None:
    xs = np.array([x for x, _ in SPECIALS[name]] + [math.nan], dtype=np.float32)
    ys = mathfuncs.numpy_math(name, xs)
    for (x, want), y in zip(SPECIALS[name], ys[:-1], strict=True):
        if math.isnan(want):
            assert math.isnan(y), (name, x, y)
        else:
            assert _bits(y) == _bits(want), (name, x, float(y), want)
    assert math.isnan(ys[-1])


@pytest.mark.parametrize(
    ("name", "x"),
    [("exp", 88.72283), ("exp", 88.7228), ("exp", -87.33655), ("exp", -103.9), ("exp", -103.2),
     ("log", 2.0**-149), ("log", 2.0**-126), ("log", 3.4028235e38), ("log", 1.0000001),
     ("log", 0.99999994), ("tanh", 0.625), ("tanh", 0.62499994), ("sigmoid", -87.0),
     ("sigmoid", -95.0), ("sigmoid", 16.5)],
)  # fmt: skip
def test_range_edges_are_accurate(name: str, x: float) -> None:
    xs = np.array([x], dtype=np.float32)
    err = float(ulp_error(mathfuncs.numpy_math(name, xs), exact(name, xs))[0])
    assert err <= mathfuncs.MAX_ULP[name], (name, x, err)


def test_recipes_work_on_any_shape() -> None:
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    for name in mathfuncs.RECIPES:
        y = mathfuncs.numpy_math(name, x)
        assert y.shape == x.shape and y.dtype == np.float32
        flat = mathfuncs.numpy_math(name, x.ravel())
        assert np.array_equal(y.ravel().view(np.uint32), flat.view(np.uint32))
    scalar = mathfuncs.numpy_math("exp", np.float32(1.0))
    assert np.asarray(scalar).dtype == np.float32


def test_float64_input_is_refused() -> None:
    with pytest.raises(TypeError):
        mathfuncs.numpy_math("exp", np.array([1.0]))


def test_derivative_helpers() -> None:
    from alpha_core.semantics.numpy_arith import NumpyArith

    A = NumpyArith()
    x = np.linspace(-6, 6, 1001, dtype=np.float32)
    s = mathfuncs.sigmoid(A, x)
    t = mathfuncs.tanh(A, x)
    ds = mathfuncs.dsigmoid_from_output(A, s).astype(np.float64)
    dt = mathfuncs.dtanh_from_output(A, t).astype(np.float64)
    x64 = x.astype(np.float64)
    s64 = 1 / (1 + np.exp(-x64))
    assert np.allclose(ds, s64 * (1 - s64), rtol=1e-5, atol=1e-7)
    assert np.allclose(dt, 1 - np.tanh(x64) ** 2, rtol=1e-4, atol=1e-7)


def test_constants_are_exact_float32() -> None:
    """Every documented constant must be a float32 value, so nothing depends on rounding."""
    scalars = ["MAGIC", "LOG2E", "LN2_HI", "LN2_LO", "EXP_LO", "EXP_HI", "LOG_LG1", "LOG_LG2",
               "LOG_LG3", "LOG_LG4", "TWO_POW_25", "TWO_POW_M126", "TANH_SMALL"]  # fmt: skip
    values = [getattr(mathfuncs, n) for n in scalars]
    values += list(mathfuncs.EXP_POLY) + list(mathfuncs.TANH_POLY)
    for v in values:
        assert float(np.float32(v)) == v, v
    assert int(np.float32(mathfuncs.MAGIC).view(np.uint32)) == mathfuncs.MAGIC_BITS
    # n * LN2_HI is exact for |n| <= 255: LN2_HI has at most 16 significant bits
    hi_bits = int(np.float32(mathfuncs.LN2_HI).view(np.uint32)) & 0x7FFFFF
    assert (hi_bits | 0x800000) % (1 << 8) == 0
