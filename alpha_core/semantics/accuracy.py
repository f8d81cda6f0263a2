"""Measuring the recipes' error in ulps against float64 NumPy.

The documented bounds (:data:`~alpha_core.semantics.mathfuncs.MAX_ULP`) come from
``python -m alpha_core.semantics.accuracy``, which evaluates the compiled recipes on every
finite float32 input (2**32 bit patterns; a few minutes per function) and compares each
result with the float64 reference.  The float64 functions are accurate to well under
2**-29 float32 ulps, so they stand in for the exact value.
"""

from __future__ import annotations

import argparse
import ctypes
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from llvmlite import ir

from alpha_core.semantics import llvm_arith, mathfuncs


def _sigmoid64(x: Any) -> Any:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


#: float64 stand-ins for the exact functions.
REFERENCE: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": _sigmoid64,
}


def exact(name: str, x: Any) -> Any:
    """The float64 reference of function ``name`` at the float32 inputs ``x``."""
    with np.errstate(all="ignore"):
        return REFERENCE[name](np.asarray(x, dtype=np.float32).astype(np.float64))


def ulp_error(y: Any, v: Any) -> Any:
    """|y - v| in units of the float32 spacing at v (the ulp of the exact result).

    ``y`` is the float32 result, ``v`` the (float64) exact value.  The ulp of v is
    2**(e - 23) for v in [2**e, 2**(e+1)), and 2**-149 for subnormal v.  If y is the
    correctly rounded value (including matching infinities and NaN for NaN) the error is
    at most 0.5; any other non-finite mismatch is an infinite error.
    """
    y32 = np.asarray(y, dtype=np.float32)
    v64 = np.asarray(v, dtype=np.float64)
    with np.errstate(all="ignore"):
        rounded = v64.astype(np.float32)
        _, e = np.frexp(np.abs(v64))
        ulp = np.maximum(np.ldexp(1.0, e - 24), 2.0**-149)
        ulp = np.where(np.abs(v64) >= 2.0**128, 2.0**104, ulp)
        err = np.abs(y32.astype(np.float64) - v64) / ulp
    same = (y32 == rounded) | (np.isnan(y32) & np.isnan(v64))
    err = np.where(same, np.minimum(np.nan_to_num(err, nan=0.0, posinf=0.5), 0.5), err)
    return np.where(np.isnan(err), np.inf, err)


def normal_result(v: Any) -> Any:
    """Mask of exact results that are *not* subnormal: normal, zero, infinite or NaN."""
    a = np.abs(np.asarray(v, dtype=np.float64))
    return ~((a > 0) & (a < 2.0**-126))


def _compiled(out_dir: Path) -> dict[str, Callable[[Any], Any]]:
    from alpha_core.semantics.harness import build_shared, emit_unary_kernel, unary_caller

    module = ir.Module(name="accuracy")
    for name, fn in llvm_arith.emit_math_functions(module).items():
        emit_unary_kernel(module, f"k_{name}", fn)
    lib = ctypes.CDLL(str(build_shared(module, out_dir, "accuracy")))
    return {name: unary_caller(lib, f"k_{name}") for name in mathfuncs.RECIPES}


def exhaustive(
    name: str, fn: Callable[[Any], Any], step: int = 1, chunk: int = 1 << 24
) -> dict[str, Any]:
    """Worst error over every ``step``-th float32 bit pattern (finite inputs only).

    With ``step=1`` this is every finite input.  Results are split by whether the exact
    result is normal (or zero, or beyond the float32 range) or subnormal.
    """
    worst: dict[str, Any] = {}
    for lo in range(0, 1 << 32, chunk):
        x = np.arange(lo, lo + chunk, step, dtype=np.uint64).astype(np.uint32).view(np.float32)
        x = x[np.isfinite(x)]
        v = exact(name, x)
        err = ulp_error(fn(x), v)
        normal = normal_result(v)
        for cls, mask in (("normal", normal), ("subnormal", ~normal)):
            if mask.any():
                i = int(np.argmax(np.where(mask, err, -1.0)))
                if err[i] > worst.get(cls, {"ulp": -1.0})["ulp"]:
                    worst[cls] = {"ulp": float(err[i]), "x": float(x[i])}
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", default=list(mathfuncs.RECIPES))
    parser.add_argument("--step", type=int, default=1, help="sample every STEP-th pattern")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fns = _compiled(Path(tmp))
        for name in args.names:
            start = time.time()
            print(
                name,
                exhaustive(name, fns[name], args.step),
                f"{time.time() - start:.0f}s",
                flush=True,
            )


if __name__ == "__main__":
    main()
