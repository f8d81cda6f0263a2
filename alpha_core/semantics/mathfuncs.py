"""Elementary functions defined once, as fixed sequences of :class:`Arith` primitives.

A libm ``expf`` differs between glibc, musl, macOS, CUDA and LLVM's constant folder, so it
cannot appear in a program whose bits must be reproducible.  Instead each function here is
a *recipe*: a straight-line sequence of correctly rounded float32 operations, integer
operations on bit patterns and selects.  Running a recipe through
:class:`~alpha_core.semantics.numpy_arith.NumpyArith` gives the reference; running it
through :class:`~alpha_core.semantics.llvm_arith.LlvmArith` gives the compiled code
(:func:`~alpha_core.semantics.llvm_arith.emit_math_functions`).  Because both see the same
operations in the same order and every operation is exactly specified by IEEE 754, they
agree bit for bit.

Design rules:

* only primitives — no libm, no FMA, no wider precision;
* branch-free: special cases are handled by computing every candidate and selecting, so
  every element executes the same instructions (vectorises, and has no data-dependent
  control flow that could differ between targets);
* every constant is a float32 value written out exactly (see ``docs/semantics.md``).

Measured maximum errors, exhaustively over all finite float32 inputs whose exact result is
a normal float32: exp 0.98 ulp, log 0.84 ulp, tanh 1.34 ulp, sigmoid 2.41 ulp (bounds in
:data:`MAX_ULP`; details in ``docs/semantics.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from alpha_core.semantics.arith import Arith
from alpha_core.semantics.numpy_arith import NumpyArith

F = TypeVar("F")
I = TypeVar("I")  # noqa: E741
M = TypeVar("M")

# ---------------------------------------------------------------------------------------
# Constants.  Every float below is exactly representable in float32 (its value is the
# float32 nearest to the written decimal, and the decimal is that float32's shortest repr).
# ---------------------------------------------------------------------------------------

#: 1.5 * 2**23.  Adding it to |v| < 2**22 rounds v to the nearest integer (ties to even)
#: because float32 values in [2**23, 2**24) are spaced exactly 1 apart; the integer then
#: sits in the low mantissa bits: bits(v + MAGIC) - bits(MAGIC) == round(v).
MAGIC = 12582912.0
MAGIC_BITS = 0x4B400000
LOG2E = 1.4426950216293335  # 0x3fb8aa3b, log2(e) rounded to float32
#: Cody-Waite split of ln 2.  LN2_HI has only 15 significant bits, so n * LN2_HI is exact
#: for |n| <= 512 and x - n * LN2_HI is exact; LN2_LO = float32(ln 2 - LN2_HI).
LN2_HI = 0.693145751953125  # 0x3f317200
LN2_LO = 1.428606765330187e-06  # 0x35bfbe8e

#: exp input clamp.  Below EXP_LO the result rounds to +0 anyway (e**-104 < 2**-150); above
#: EXP_HI it overflows to +inf anyway (e**89 > FLT_MAX); clamping keeps n in [-150, 129] so
#: the two-step scaling below never leaves the normal exponent range.
EXP_LO = -104.0
EXP_HI = 89.0
#: exp(r) ~= 1 + r + r*r*(E2 + r*(E3 + r*(E4 + r*(E5 + r*E6)))) on |r| <= ln2/2 (+margin).
#: Near-minimax (Lawson) for relative error; fit error 3.1e-9 before rounding to float32.
EXP_POLY = (
    0.4999999403953552,  # 0x3efffffe
    0.1666651964187622,  # 0x3e2aaa48
    0.04166840761899948,  # 0x3d2aac7e
    0.008368918672204018,  # 0x3c091dca
    0.0013814179692417383,  # 0x3ab510b2
)

#: log: the fdlibm/musl ``logf`` kernel; s = f/(2+f), log(1+f) = f - hfsq + s*(hfsq+R(s*s)).
LOG_LG1 = float.fromhex("0xaaaaaa.0p-24")  # 0.6666666269302368, 0x3f2aaaaa
LOG_LG2 = float.fromhex("0xccce13.0p-25")  # 0.40000972151756287, 0x3eccce13
LOG_LG3 = float.fromhex("0x91e9ee.0p-25")  # 0.2849878668785095, 0x3e91e9ee
LOG_LG4 = float.fromhex("0xf89e26.0p-26")  # 0.24279078841209412, 0x3e789e26
SQRT_HALF_BITS = 0x3F3504F3  # float32 sqrt(1/2): mantissa is normalised into [this, 2*this)
TWO_POW_25 = 33554432.0  # subnormal prescale factor
TWO_POW_M126 = float.fromhex("0x1p-126")  # smallest normal float32

#: tanh: |x| < TANH_SMALL uses x + x*(z*P(z)), z = x*x (odd minimax polynomial, fit error
#: 1.6e-10); larger |x| uses 1 - 2/(exp(2|x|) + 1).  The threshold is well above the
#: ~0.0625 often quoted: below ~0.55 the subtraction 1 - 2/(e+1) cancels and magnifies the
#: exp error (measured: tens of ulp at 0.0625), so the polynomial must cover that range.
TANH_SMALL = 0.625
TANH_POLY = (
    -0.3333333134651184,  # 0xbeaaaaaa
    0.1333320587873459,  # 0x3e088833
    -0.05394676327705383,  # 0xbd5cf748
    0.021700700744986534,  # 0x3cb1c5ab
    -0.008177392184734344,  # 0xbc05fa78
    0.0021429560147225857,  # 0x3b0c70d6
)

SIGN_MASK = 0x7FFFFFFF


def _horner(A: Arith[F, I, M], x: F, coeffs: tuple[float, ...]) -> F:
    """c0 + x*(c1 + x*(c2 + ...)): evaluated innermost first, each op rounded."""
    acc = A.const(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = A.add(A.const(c), A.mul(x, acc))
    return acc


def fabs(A: Arith[F, I, M], x: F) -> F:
    """|x| by clearing the sign bit (exact for every input, NaN included)."""
    return A.from_bits(A.iand(A.bits(x), A.iconst(SIGN_MASK)))


def copysign(A: Arith[F, I, M], magnitude: F, sign_of: F) -> F:
    """``magnitude`` with the sign bit of ``sign_of`` (``magnitude`` must be positive)."""
    sign = A.iand(A.bits(sign_of), A.iconst(~SIGN_MASK))
    return A.from_bits(A.ior(A.bits(magnitude), sign))


def exp(A: Arith[F, I, M], x: F) -> F:
    """e**x.

    Recipe: clamp x to [EXP_LO, EXP_HI]; n = round(x*LOG2E) by the MAGIC trick;
    r = (x - n*LN2_HI) - n*LN2_LO; p = 1 + (r + (r*r)*Q(r)); result = (p * 2**n1) * 2**n2
    with n1 = n >> 1, n2 = n - n1 (both powers built from bits).  Splitting the scale keeps
    each power of two normal, so results near FLT_MAX and gradual underflow into the
    subnormals are rounded once, correctly, by the last multiply.

    Specials: +inf -> +inf, -inf -> +0, NaN -> NaN (the clamps use ordered compares, which
    let NaN through, and NaN then propagates through the arithmetic).
    """
    xc = A.select(A.gt(x, A.const(EXP_HI)), A.const(EXP_HI), x)
    xc = A.select(A.lt(xc, A.const(EXP_LO)), A.const(EXP_LO), xc)
    t = A.add(A.mul(xc, A.const(LOG2E)), A.const(MAGIC))
    n = A.isub(A.bits(t), A.iconst(MAGIC_BITS))
    kf = A.sub(t, A.const(MAGIC))
    r = A.sub(A.sub(xc, A.mul(kf, A.const(LN2_HI))), A.mul(kf, A.const(LN2_LO)))
    q = _horner(A, r, EXP_POLY)
    p = A.add(A.const(1.0), A.add(r, A.mul(A.mul(r, r), q)))
    n1 = A.ishr(n, 1)
    n2 = A.isub(n, n1)
    s1 = A.from_bits(A.ishl(A.iadd(n1, A.iconst(127)), 23))
    s2 = A.from_bits(A.ishl(A.iadd(n2, A.iconst(127)), 23))
    return A.mul(A.mul(p, s1), s2)


def log(A: Arith[F, I, M], x: F) -> F:
    """Natural logarithm.

    Recipe (fdlibm/musl ``logf`` kernel, made branch-free): positive subnormals are first
    multiplied by 2**25 (exact) and k is corrected by -25; the exponent is split off with
    the mantissa normalised into [sqrt(1/2), sqrt(2)) so f = m - 1 is in [-0.293, 0.414];
    s = f/(2+f), z = s*s, w = z*z, R = z*(LG1 + w*LG3) + w*(LG2 + w*LG4), hfsq = (0.5*f)*f,
    log = (((s*(hfsq+R) + k*LN2_LO) - hfsq) + f) + k*LN2_HI.

    Specials: x < 0 (including -inf) -> NaN, x == ±0 -> -inf, +inf -> +inf, NaN -> NaN.
    """
    one = A.const(1.0)
    tiny = A.lt(x, A.const(TWO_POW_M126))
    xs = A.select(tiny, A.mul(x, A.const(TWO_POW_25)), x)
    kadj = A.iselect(tiny, A.iconst(-25), A.iconst(0))
    ix = A.iadd(A.bits(xs), A.iconst(0x3F800000 - SQRT_HALF_BITS))
    k = A.iadd(A.isub(A.ishr(ix, 23), A.iconst(0x7F)), kadj)
    ix = A.iadd(A.iand(ix, A.iconst(0x007FFFFF)), A.iconst(SQRT_HALF_BITS))
    f = A.sub(A.from_bits(ix), one)
    s = A.div(f, A.add(A.const(2.0), f))
    z = A.mul(s, s)
    w = A.mul(z, z)
    t1 = A.mul(w, A.add(A.const(LOG_LG2), A.mul(w, A.const(LOG_LG4))))
    t2 = A.mul(z, A.add(A.const(LOG_LG1), A.mul(w, A.const(LOG_LG3))))
    rr = A.add(t2, t1)
    hfsq = A.mul(A.mul(A.const(0.5), f), f)
    dk = A.itof(k)
    res = A.mul(s, A.add(hfsq, rr))
    res = A.add(res, A.mul(dk, A.const(LN2_LO)))
    res = A.sub(res, hfsq)
    res = A.add(res, f)
    res = A.add(res, A.mul(dk, A.const(LN2_HI)))
    res = A.select(A.eq(x, A.const(math.inf)), A.const(math.inf), res)
    res = A.select(A.eq(x, A.const(0.0)), A.const(-math.inf), res)
    res = A.select(A.lt(x, A.const(0.0)), A.const(math.nan), res)
    return A.select(A.eq(x, x), res, x)  # NaN in -> that NaN out


def tanh(A: Arith[F, I, M], x: F) -> F:
    """Hyperbolic tangent.

    Recipe: a = |x|; small = a + a*(z*P(z)) with z = a*a; large = 1 - 2/(exp(a+a) + 1);
    pick small when a < TANH_SMALL, then copy the sign bit of x.  No clamp is needed for
    large |x|: exp overflows to +inf, 2/inf = 0 and the result is exactly 1.

    Specials: ±0 -> ±0, ±inf -> ±1, NaN -> NaN.
    """
    a = fabs(A, x)
    z = A.mul(a, a)
    small = A.add(a, A.mul(a, A.mul(z, _horner(A, z, TANH_POLY))))
    e = exp(A, A.add(a, a))
    large = A.sub(A.const(1.0), A.div(A.const(2.0), A.add(e, A.const(1.0))))
    mag = A.select(A.lt(a, A.const(TANH_SMALL)), small, large)
    return copysign(A, mag, x)


def sigmoid(A: Arith[F, I, M], x: F) -> F:
    """Logistic function 1/(1+exp(-x)).

    Recipe: e = exp(-|x|), d = 1 + e; x >= 0 -> 1/d (literally 1/(1+exp(-x))), otherwise
    e/d (the same function rewritten so exp never overflows and tiny results keep their
    precision down into the subnormals instead of becoming 1/inf = 0).

    Specials: +inf -> 1, -inf -> +0, NaN -> NaN, ±0 -> 0.5.
    """
    e = exp(A, A.neg(fabs(A, x)))
    d = A.add(A.const(1.0), e)
    return A.select(A.ge(x, A.const(0.0)), A.div(A.const(1.0), d), A.div(e, d))


def dsigmoid_from_output(A: Arith[F, I, M], y: F) -> F:
    """sigmoid'(x) given y = sigmoid(x): y * (1 - y)."""
    return A.mul(y, A.sub(A.const(1.0), y))


def dtanh_from_output(A: Arith[F, I, M], y: F) -> F:
    """tanh'(x) given y = tanh(x): (1 - y) * (1 + y).

    Written as a product rather than 1 - y*y: for |y| near 1 the rounding of y*y would be
    magnified by the cancellation, while 1 - y is exact there (Sterbenz).
    """
    return A.mul(A.sub(A.const(1.0), y), A.add(A.const(1.0), y))


#: The unary recipes by name (the names used in Alpha programs).
RECIPES: dict[str, Callable[[Any, Any], Any]] = {
    "exp": exp,
    "log": log,
    "tanh": tanh,
    "sigmoid": sigmoid,
}

#: Documented bounds on the error in ulps of the exact result, for every finite float32
#: input whose exact result is a normal float32 (or 0, or beyond the range).  Measured
#: exhaustively over all 2**32 inputs (``python -m alpha_core.semantics.accuracy``):
#: exp 0.977, log 0.835, tanh 1.332, sigmoid 2.402.  Subnormal results (exp, sigmoid
#: below about -87.3; tanh of subnormals) are within 0.75 of the subnormal spacing 2**-149.
MAX_ULP: dict[str, float] = {"exp": 1.0, "log": 1.0, "tanh": 1.5, "sigmoid": 2.5}


def numpy_math(name: str, x: Any) -> Any:
    """Reference evaluation of recipe ``name`` on a float32 array (any shape)."""
    arr = np.asarray(x)
    if arr.dtype != np.float32:
        raise TypeError(f"numpy_math expects float32 input, got {arr.dtype}")
    return RECIPES[name](NumpyArith(), arr)
