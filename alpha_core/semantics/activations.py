"""The activations and elementwise operations added for layers, written once against Arith.

Like exp/log/tanh (mathfuncs.py), each is a fixed straight line of correctly rounded float32
operations, so the NumPy reference (NumpyArith) and the compiled code (LlvmArith) agree bit for
bit. Gradients take the forward input `x` (or output `y`) and the incoming adjoint `d`.
Constants are float32 values (docs/semantics.md lists them with their bits).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from alpha_core.semantics.arith import Arith
from alpha_core.semantics.mathfuncs import exp, fabs, log, sigmoid, tanh
from alpha_core.semantics.rng import uniform01

F = TypeVar("F")
I = TypeVar("I")  # noqa: E741
M = TypeVar("M")

#: sqrt(2 / pi) and the cubic coefficient of the tanh form of GELU
GELU_C0 = 0.7978845834732056  # 0x3f4c422a
GELU_C1 = 0.044714998453855515  # 0x3d372713
GELU_C3 = 0.13414500653743744  # 0x3e095d4f, float32(3 * 0.044715)


def square(A: Arith[F, I, M], x: F) -> F:
    return A.mul(x, x)


def square_grad(A: Arith[F, I, M], x: F, d: F) -> F:
    return A.mul(d, A.add(x, x))


def sqrt(A: Arith[F, I, M], x: F) -> F:
    return A.sqrt(x)


def sqrt_grad(A: Arith[F, I, M], y: F, d: F) -> F:
    """d / (2 sqrt(x)), from the output: d / (y + y)."""
    return A.div(d, A.add(y, y))


def abs_(A: Arith[F, I, M], x: F) -> F:
    return fabs(A, x)


def abs_grad(A: Arith[F, I, M], x: F, d: F) -> F:
    """d where x > 0, -d where x < 0, +0 at zero (as sign(x) · d with sign(0) = 0)."""
    zero = A.const(0.0)
    return A.select(A.gt(x, zero), d, A.select(A.lt(x, zero), A.neg(d), zero))


def gelu(A: Arith[F, I, M], x: F) -> F:
    """The tanh form: (0.5 x) (1 + tanh(C0 (x + C1 ((x x) x))))."""
    u = A.mul(A.const(GELU_C0), A.add(x, A.mul(A.const(GELU_C1), A.mul(A.mul(x, x), x))))
    return A.mul(A.mul(A.const(0.5), x), A.add(A.const(1.0), tanh(A, u)))


def gelu_grad(A: Arith[F, I, M], x: F, d: F) -> F:
    """d (0.5 (1 + t) + (0.5 x) ((1 - t)(1 + t)) C0 (1 + C3 (x x))), t the tanh of gelu."""
    one = A.const(1.0)
    u = A.mul(A.const(GELU_C0), A.add(x, A.mul(A.const(GELU_C1), A.mul(A.mul(x, x), x))))
    t = tanh(A, u)
    du = A.mul(A.const(GELU_C0), A.add(one, A.mul(A.const(GELU_C3), A.mul(x, x))))
    sech2 = A.mul(A.sub(one, t), A.add(one, t))
    slope = A.add(
        A.mul(A.const(0.5), A.add(one, t)), A.mul(A.mul(A.mul(A.const(0.5), x), sech2), du)
    )
    return A.mul(d, slope)


def silu(A: Arith[F, I, M], x: F) -> F:
    """x sigmoid(x)."""
    return A.mul(x, sigmoid(A, x))


def silu_grad(A: Arith[F, I, M], x: F, d: F) -> F:
    """d (s (1 + x (1 - s))), s = sigmoid(x)."""
    one = A.const(1.0)
    s = sigmoid(A, x)
    return A.mul(d, A.mul(s, A.add(one, A.mul(x, A.sub(one, s)))))


def maximum(A: Arith[F, I, M], a: F, c: F) -> F:
    """a where a >= c, else c (a tie gives a; a NaN in either gives c)."""
    return A.select(A.ge(a, c), a, c)


def minimum(A: Arith[F, I, M], a: F, c: F) -> F:
    """a where a <= c, else c."""
    return A.select(A.le(a, c), a, c)


def pick_grad(A: Arith[F, I, M], kind: str, side: int, a: F, c: F, d: F) -> F:
    """The adjoint of maximum/minimum towards operand `side`: d where that operand was
    chosen, else +0."""
    chosen = A.ge(a, c) if kind == "maximum" else A.le(a, c)
    zero = A.const(0.0)
    return A.select(chosen, d, zero) if side == 0 else A.select(chosen, zero, d)


def sigmoid_xent(A: Arith[F, I, M], z: F, c: F) -> F:
    """The cross-entropy of one logit z with label c (0.0 or 1.0), never overflowing:
    (max(z, 0) - z c) + log(1 + exp(-|z|)). Its gradient is sigmoid(z) - c."""
    zero = A.const(0.0)
    top = A.select(A.gt(z, zero), z, zero)
    tail = log(A, A.add(A.const(1.0), exp(A, A.neg(fabs(A, z)))))
    return A.add(A.sub(top, A.mul(z, c)), tail)


def dropout_keep(A: Any, seed: int, index: Any, rate: float) -> Any:
    """Whether element `index` survives: uniform01(seed, index, 0) >= rate (semantics §3's
    counter-based generator, so the mask is a pure function of the seed and the index)."""
    return A.ge(uniform01(A, A.u64const(seed), index, 0), A.const(rate))


def dropout_scale(A: Arith[F, I, M], rate: float) -> F:
    """1 / (1 - rate), each operation in float32: a kept element is multiplied by it."""
    return A.div(A.const(1.0), A.sub(A.const(1.0), A.const(rate)))


# The recipe of each activation op and of its adjoint op. Which ops there are, their adjoint
# ops and what each adjoint reads (the input x or the output y): alpha_core/ops/table.py
# (tests/test_op_table.py holds the two equal).

#: one input, one output, by graph op
UNARY: dict[str, Callable[[Any, Any], Any]] = {
    "sqrt": sqrt,
    "abs": abs_,
    "square": square,
    "gelu": gelu,
    "silu": silu,
}
#: (forward input or output, adjoint) -> adjoint of the input, by graph op
GRADS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "sqrt_grad": sqrt_grad,
    "abs_grad": abs_grad,
    "square_grad": square_grad,
    "gelu_grad": gelu_grad,
    "silu_grad": silu_grad,
}
