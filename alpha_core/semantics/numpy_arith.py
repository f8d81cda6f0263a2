"""NumPy interpretation of :class:`~alpha_core.semantics.arith.Arith` — the reference.

Every method is one elementwise NumPy operation on float32 / int32 / uint64 arrays of any
(broadcastable) shape.  Two hazards are guarded against because either would silently
change bits:

* *promotion*: mixing a float32 array with a float64 value makes NumPy compute in float64
  and round once at the end, which is not what the compiled code does.  Every constant is
  created as ``np.float32`` and every result is checked to still be float32 (``_f32``).
* *warnings*: overflow to ``inf`` and invalid operations producing NaN are part of the
  defined semantics, so NumPy's floating-point warnings are silenced per operation.

NumPy does not enable flush-to-zero, so subnormals behave as in the LLVM code.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from alpha_core.semantics.arith import check_shift, to_int32, to_uint64

FArr = npt.NDArray[np.float32]
IArr = npt.NDArray[np.int32]
MArr = npt.NDArray[np.bool_]
UArr = npt.NDArray[np.uint64]

_INT32_MIN = np.int32(-(2**31))
_INT32_MAX = np.int32(2**31 - 1)
_TWO31 = np.float32(2.0**31)


def _checked(x: Any, dtype: type[np.generic]) -> Any:
    """``x`` as an array, refusing any dtype other than ``dtype`` (catches promotion)."""
    arr = np.asarray(x)
    if arr.dtype != dtype:
        raise TypeError(f"expected {np.dtype(dtype)}, got {arr.dtype}: a value was promoted")
    return arr


def _f32(x: Any) -> FArr:
    out: FArr = _checked(x, np.float32)
    return out


def _i32(x: Any) -> IArr:
    out: IArr = _checked(x, np.int32)
    return out


def _mask(x: Any) -> MArr:
    out: MArr = _checked(x, np.bool_)
    return out


def _u64(x: Any) -> UArr:
    out: UArr = _checked(x, np.uint64)
    return out


class NumpyArith:
    """Elementwise float32/int32/uint64 arithmetic with exactly the :class:`Arith` rules.

    Implements both :class:`~alpha_core.semantics.arith.Arith` (``F`` = float32 array,
    ``I`` = int32 array, ``M`` = bool array) and
    :class:`~alpha_core.semantics.arith.Arith64` (``U`` = uint64 array).
    """

    # -- float32 -------------------------------------------------------------------------
    def const(self, x: float) -> FArr:
        with np.errstate(all="ignore"):
            return _f32(np.float32(x))

    def add(self, a: FArr, b: FArr) -> FArr:
        with np.errstate(all="ignore"):
            return _f32(np.add(_f32(a), _f32(b)))

    def sub(self, a: FArr, b: FArr) -> FArr:
        with np.errstate(all="ignore"):
            return _f32(np.subtract(_f32(a), _f32(b)))

    def mul(self, a: FArr, b: FArr) -> FArr:
        with np.errstate(all="ignore"):
            return _f32(np.multiply(_f32(a), _f32(b)))

    def div(self, a: FArr, b: FArr) -> FArr:
        with np.errstate(all="ignore"):
            return _f32(np.divide(_f32(a), _f32(b)))

    def neg(self, a: FArr) -> FArr:
        return _f32(np.negative(_f32(a)))

    def sqrt(self, a: FArr) -> FArr:
        with np.errstate(all="ignore"):
            return _f32(np.sqrt(_f32(a)))

    # -- comparisons and selection ---------------------------------------------------------
    # NumPy's <, <=, >, >=, == are false when either side is NaN: IEEE ordered compares.
    def lt(self, a: FArr, b: FArr) -> MArr:
        with np.errstate(all="ignore"):
            return _mask(np.less(_f32(a), _f32(b)))

    def le(self, a: FArr, b: FArr) -> MArr:
        with np.errstate(all="ignore"):
            return _mask(np.less_equal(_f32(a), _f32(b)))

    def gt(self, a: FArr, b: FArr) -> MArr:
        with np.errstate(all="ignore"):
            return _mask(np.greater(_f32(a), _f32(b)))

    def ge(self, a: FArr, b: FArr) -> MArr:
        with np.errstate(all="ignore"):
            return _mask(np.greater_equal(_f32(a), _f32(b)))

    def eq(self, a: FArr, b: FArr) -> MArr:
        with np.errstate(all="ignore"):
            return _mask(np.equal(_f32(a), _f32(b)))

    def select(self, m: MArr, a: FArr, b: FArr) -> FArr:
        return _f32(np.where(_mask(m), _f32(a), _f32(b)))

    def iselect(self, m: MArr, a: IArr, b: IArr) -> IArr:
        return _i32(np.where(_mask(m), _i32(a), _i32(b)))

    # -- bit views and conversions -----------------------------------------------------------
    def bits(self, a: FArr) -> IArr:
        return _i32(_f32(a).view(np.int32))

    def from_bits(self, i: IArr) -> FArr:
        return _f32(_i32(i).view(np.float32))

    def itof(self, i: IArr) -> FArr:
        return _f32(_i32(i).astype(np.float32))

    def ftoi(self, f: FArr) -> IArr:
        # Saturating truncation, NaN -> 0: the semantics of llvm.fptosi.sat.i32.f32.
        f = _f32(f)
        with np.errstate(all="ignore"):
            in_range = (f > -_TWO31) & (f < _TWO31)  # false for NaN
            t = np.where(in_range, f, np.float32(0)).astype(np.int32)
            t = np.where(f >= _TWO31, _INT32_MAX, t)
            t = np.where(f <= -_TWO31, _INT32_MIN, t)
        return _i32(t)

    # -- int32 ----------------------------------------------------------------------------
    def iconst(self, x: int) -> IArr:
        return _i32(np.int32(to_int32(x)))

    def iadd(self, a: IArr, b: IArr) -> IArr:
        with np.errstate(all="ignore"):
            return _i32(np.add(_i32(a), _i32(b)))

    def isub(self, a: IArr, b: IArr) -> IArr:
        with np.errstate(all="ignore"):
            return _i32(np.subtract(_i32(a), _i32(b)))

    def iand(self, a: IArr, b: IArr) -> IArr:
        return _i32(np.bitwise_and(_i32(a), _i32(b)))

    def ior(self, a: IArr, b: IArr) -> IArr:
        return _i32(np.bitwise_or(_i32(a), _i32(b)))

    def ishl(self, a: IArr, n: int) -> IArr:
        # Shift the unsigned view: a signed left shift that overflows is undefined in C.
        u = _i32(a).view(np.uint32)
        return _i32(np.left_shift(u, np.uint32(check_shift(n, 32))).view(np.int32))

    def ishr(self, a: IArr, n: int) -> IArr:
        return _i32(np.right_shift(_i32(a), np.int32(check_shift(n, 32))))

    # -- uint64 ---------------------------------------------------------------------------
    def u64const(self, x: int) -> UArr:
        return _u64(np.uint64(to_uint64(x)))

    def u64add(self, a: UArr, b: UArr) -> UArr:
        with np.errstate(all="ignore"):
            return _u64(np.add(_u64(a), _u64(b)))

    def u64mul(self, a: UArr, b: UArr) -> UArr:
        with np.errstate(all="ignore"):
            return _u64(np.multiply(_u64(a), _u64(b)))

    def u64xor(self, a: UArr, b: UArr) -> UArr:
        return _u64(np.bitwise_xor(_u64(a), _u64(b)))

    def u64shr(self, a: UArr, n: int) -> UArr:
        return _u64(np.right_shift(_u64(a), np.uint64(check_shift(n, 64))))

    def u64_low32(self, a: UArr) -> IArr:
        low = np.bitwise_and(_u64(a), np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return _i32(np.asarray(low).view(np.int32))
