"""Learning-rate schedules: the learning rate of round t, written once against Arith.

A schedule is a pure function of the round index t (0-based), so a resumed run, a plan of any
shape and a partitioned learner all see the same rate in the same round. The integer part
(clamping t, the number of decays of `step`) is exact integer arithmetic that both
interpreters perform themselves (`phase` here, `kernels._emit_phase` for LLVM); everything
after it is float32 through Arith, in the order written.

With `W` the warmup rounds, `T` the schedule's rounds (`steps:`, warmup included), `peak` the
rate after warmup and `final` the rate it decays to, and `tc = min(t, 2**24)`:

    warm(t)   = peak * ((itof(tc) + 1) / itof(W))            when tc < W
    constant  = peak
    linear    = final + (peak - final) * w
    cosine    = final + (peak - final) * bump(u, w)
    step      = peak * factor ** k

    with a = itof(min(tc - W, T - W)) and D = itof(T - W): u = a / D and w = (D - a) / D, each
    rounded once; k = (tc - W) div every (in integers); bump(u, w) = (1 + cos(pi u)) / 2 as
    cos(pi u / 2) ** 2 for u <= 1/2, else sin(pi w / 2) ** 2 (cosine_bump), neither end
    cancelling.

`factor ** k` is binary exponentiation over the 24 bits of k, lowest first (r = r * b where the
bit is set, b = b * b); the cosine and sine are the series below. Every schedule length is
at most 2**24, so every integer converted to float32 is exact; from round 2**24 on the rate
stays what it is there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

from alpha_core.semantics.arith import Arith

F = TypeVar("F")
I = TypeVar("I")  # noqa: E741
M = TypeVar("M")

ROUND_CAP = 1 << 24  # t is clamped here: every schedule length is at most this
KINDS = ("constant", "linear", "cosine", "step")
EXP_BITS = 24  # bits of k that step's binary exponentiation visits


@dataclass(frozen=True)
class ScheduleSpec:
    kind: str  # constant | linear | cosine | step
    peak: float
    warmup: int = 0
    steps: int = 0  # rounds of the whole schedule, warmup included (linear, cosine)
    final: float = 0.0  # linear, cosine
    every: int = 1  # step
    factor: float = 1.0  # step

    def text(self) -> str:
        return (
            f"{self.kind}(peak={self.peak!r}, warmup={self.warmup}, steps={self.steps}, "
            f"final={self.final!r}, every={self.every}, factor={self.factor!r})"
        )


@dataclass(frozen=True)
class Phase:
    """The integer part of round t, as exact float32-representable integers."""

    t: int  # min(t, ROUND_CAP)
    after: int  # decay rounds past the warmup, clamped at the decay's length (linear, cosine)
    k: int  # step: decays so far


def phase(spec: ScheduleSpec, t: int) -> Phase:
    tc = min(t, ROUND_CAP)
    past = max(tc - spec.warmup, 0)
    span = max(spec.steps - spec.warmup, 1)
    return Phase(tc, min(past, span), past // spec.every)


# cos(pi x) = sum (-1)^j (pi x)^(2j) / (2j)!  and  sin(pi x) = sum (-1)^j (pi x)^(2j+1) / (2j+1)!
# as polynomials in x*x; on [0, 1/4] the first omitted terms are below 1e-12.
COSPI_POLY = tuple((-1) ** j * math.pi ** (2 * j) / math.factorial(2 * j) for j in range(7))
SINPI_POLY = tuple((-1) ** j * math.pi ** (2 * j + 1) / math.factorial(2 * j + 1) for j in range(7))


def _horner(A: Arith[F, I, M], x: F, coeffs: tuple[float, ...]) -> F:
    acc = A.const(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = A.add(A.const(c), A.mul(x, acc))
    return acc


def _cos_quarter(A: Arith[F, I, M], v: F) -> F:
    """cos(pi v) for v in [0, 1/4], by its series in v*v."""
    return _horner(A, A.mul(v, v), COSPI_POLY)


def _sin_quarter(A: Arith[F, I, M], w: F) -> F:
    """sin(pi w) for w in [0, 1/4]: w * S(w*w)."""
    return A.mul(w, _horner(A, A.mul(w, w), SINPI_POLY))


def cospi(A: Arith[F, I, M], u: F) -> F:
    """cos(pi u) for u in [0, 1], branch-free.

    v = u or 1 - u, whichever is at most 1/2 (1 - u is exact there), the sign flipped for the
    second; then cos(pi v) by its series for v <= 1/4, else sin(pi w) with w = 1/2 - v (exact).
    Within a few ulp of cos(pi u); 1 at u = 0, 0 at u = 1/2, -1 at u = 1.
    """
    half = A.const(0.5)
    upper = A.gt(u, half)
    v = A.select(upper, A.sub(A.const(1.0), u), u)
    mag = A.select(A.gt(v, A.const(0.25)), _sin_quarter(A, A.sub(half, v)), _cos_quarter(A, v))
    return A.select(upper, A.neg(mag), mag)


def cosine_bump(A: Arith[F, I, M], u: F, w: F) -> F:
    """(1 + cos(pi u)) / 2 for u in [0, 1], given u and w = 1 - u each rounded once:
    cos(pi u / 2) ** 2 while u <= 1/2, else sin(pi w / 2) ** 2, so neither end cancels."""
    half = A.const(0.5)
    c = _cos_quarter(A, A.mul(half, u))
    s = _sin_quarter(A, A.mul(half, w))
    return A.select(A.gt(u, half), A.mul(s, s), A.mul(c, c))


def _power(A: Arith[F, I, M], base: float, k: I) -> F:
    """base ** k by binary exponentiation over EXP_BITS bits of k, lowest bit first."""
    one = A.const(1.0)
    r, b = one, A.const(base)
    for i in range(EXP_BITS):
        bit = A.itof(A.iand(A.ishr(k, i), A.iconst(1)))
        r = A.select(A.eq(bit, one), A.mul(r, b), r)
        b = A.mul(b, b)
    return r


def rate(A: Arith[F, I, M], spec: ScheduleSpec, t: F, after: F, k: I) -> F:
    """The learning rate of a round whose Phase is (t, after, k), as float32 and int32 values."""
    peak = A.const(spec.peak)
    if spec.kind == "constant":
        decayed = peak
    elif spec.kind == "step":
        decayed = A.mul(peak, _power(A, spec.factor, k))
    else:
        span = A.const(float(max(spec.steps - spec.warmup, 1)))
        u = A.div(after, span)  # the decay done and the decay left, each rounded once
        w = A.div(A.sub(span, after), span)
        left = w if spec.kind == "linear" else cosine_bump(A, u, w)
        decayed = A.add(A.const(spec.final), A.mul(A.sub(peak, A.const(spec.final)), left))
    if spec.warmup == 0:
        return decayed
    w = A.const(float(spec.warmup))
    warm = A.mul(peak, A.div(A.add(t, A.const(1.0)), w))
    return A.select(A.lt(t, w), warm, decayed)
