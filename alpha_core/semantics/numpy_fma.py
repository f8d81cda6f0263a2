"""float32 fused multiply-add in NumPy, correctly rounded: the reference's side of `arithmetic
fused` (docs/semantics.md, "Arithmetic").

fma(a, b, c) is a · b + c computed exactly and rounded once to float32 (round to nearest, ties to
even). NumPy has no such operation, and the obvious float64 formula `float32(a64 * b64 + c64)`
rounds twice: the product of two float32 values is exact in float64 (24 + 24 bits of 53), but
the sum is rounded to float64 first, and a float64 result that lands exactly on a float32
halfway point then rounds to even where the exact value lay just above or below it.

The remedy is rounding to odd. The float64 sum s = fl(p + c) and its error e (TwoSum: p + c =
s + e exactly) say where the exact value lies; rounded to odd, it is s when e is zero or s is
odd, else the neighbour of s on e's side (two adjacent floats of one sign differ by one in
their bits, so one of s and that neighbour is odd). A value rounded to odd in a format of at
least 2·24 + 2 bits rounds to float32 exactly as the exact value would (Boldo and Melquiond,
"Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd"),
subnormal and overflowing results included, since float64's range covers float32's. Infinite
and NaN operands take the float64 formula: the exact value is not finite, and float64 gives
the IEEE result (inf - inf and 0 · inf are NaN; which NaN payload is not part of the contract).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F32 = NDArray[np.float32]


def fma32(a: F32 | np.float32, b: F32 | np.float32, c: F32 | np.float32) -> F32:
    """Element-wise fma(a, b, c) of float32 arrays (broadcast), correctly rounded to float32."""
    with np.errstate(all="ignore"):  # NaN, inf and overflow are defined results here
        a64 = np.asarray(a, dtype=np.float32).astype(np.float64)
        b64 = np.asarray(b, dtype=np.float32).astype(np.float64)
        c64 = np.asarray(c, dtype=np.float32).astype(np.float64)
        p = a64 * b64  # exact: 48 significant bits at most, never outside float64's range
        s = p + c64
        # TwoSum (Knuth): p + c = s + e exactly, for finite p, c, s
        v = s - p
        e = (p - (s - v)) + (c64 - v)
        bits = s.view(np.int64)
        inexact = (e != 0) & np.isfinite(s)
        even = (bits & 1) == 0
        # towards e: one up in the bits when e has s's sign (away from zero), else one down
        step = np.where((e > 0) == (s > 0), 1, -1).astype(np.int64)
        odd = np.where(inexact & even, bits + step, bits).view(np.float64)
        return np.asarray(odd.astype(np.float32))
