"""The learners' per-element updates, written once against Arith.

The code generator runs them through LlvmArith inside a loop over the parameter elements; the
NumPy reference runs them through NumpyArith over whole arrays. Each update is elementwise, so
it gives the same bits wherever an element is updated: that is what lets a plan partition
optimizer state, gradients and parameters without changing the result.

`gsum` is the round's gradient: the canonical-tree sum of the leaf gradients. Every learner
first divides it by the batch (one rounding), then updates in the order written here.
"""

from __future__ import annotations

from typing import TypeVar

from alpha_core.semantics.arith import Arith

F = TypeVar("F")
I = TypeVar("I")  # noqa: E741
M = TypeVar("M")


def mean_gradient(A: Arith[F, I, M], gsum: F, batch: int) -> F:
    return A.div(gsum, A.const(float(batch)))


def sgd(A: Arith[F, I, M], p: F, g: F, lr: float) -> F:
    return A.sub(p, A.mul(A.const(lr), g))


def momentum(A: Arith[F, I, M], p: F, v: F, g: F, lr: float, mu: float) -> tuple[F, F]:
    v2 = A.add(A.mul(A.const(mu), v), g)
    return A.sub(p, A.mul(A.const(lr), v2)), v2


def adam_powers(
    A: Arith[F, I, M], first: M, b1t: F, b2t: F, beta1: float, beta2: float
) -> tuple[F, F]:
    """beta1^t and beta2^t kept in the state: set on the first round, then multiplied."""
    return (
        A.select(first, A.const(beta1), A.mul(b1t, A.const(beta1))),
        A.select(first, A.const(beta2), A.mul(b2t, A.const(beta2))),
    )


def adam(
    A: Arith[F, I, M],
    p: F,
    m: F,
    v: F,
    g: F,
    b1t: F,
    b2t: F,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
) -> tuple[F, F, F]:
    one = A.const(1.0)
    m2 = A.add(A.mul(A.const(beta1), m), A.mul(A.sub(one, A.const(beta1)), g))
    v2 = A.add(A.mul(A.const(beta2), v), A.mul(A.sub(one, A.const(beta2)), A.mul(g, g)))
    mhat = A.div(m2, A.sub(one, b1t))
    vhat = A.div(v2, A.sub(one, b2t))
    step = A.div(A.mul(A.const(lr), mhat), A.add(A.sqrt(vhat), A.const(eps)))
    return A.sub(p, step), m2, v2


def relu(A: Arith[F, I, M], x: F) -> F:
    zero = A.const(0.0)
    return A.select(A.gt(x, zero), x, zero)


def relu_grad(A: Arith[F, I, M], x: F, d: F) -> F:
    zero = A.const(0.0)
    return A.select(A.gt(x, zero), d, zero)


def tanh_grad(A: Arith[F, I, M], y: F, d: F) -> F:
    return A.mul(d, A.sub(A.const(1.0), A.mul(y, y)))


def sigmoid_grad(A: Arith[F, I, M], y: F, d: F) -> F:
    return A.mul(d, A.mul(y, A.sub(A.const(1.0), y)))
