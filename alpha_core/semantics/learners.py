"""The learners' per-element updates, written once against Arith.

The code generator runs them through LlvmArith inside a loop over the parameter elements; the
NumPy reference runs them through NumpyArith over whole arrays. Each update is elementwise, so
it gives the same bits wherever an element is updated: that is what lets a plan partition
optimizer state, gradients and parameters without changing the result.

`gsum` is the round's gradient: the canonical-tree sum of the leaf gradients. Every learner
first divides it by the batch (one rounding), then updates in the order written here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from alpha_core.semantics import schedules
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


# -- the learners with weight decay, Nesterov momentum, AdamW, schedules and clipping ------
# The `*_step` recipes take the round's learning rate as a value (a schedule makes it a function
# of the round); the functions above are the constant-rate cases, kept for their callers.


def coupled_decay(A: Arith[F, I, M], p: F, g: F, weight_decay: float) -> F:
    """L2 weight decay folded into the gradient (sgd, momentum, adam): g + wd * p."""
    return A.add(g, A.mul(A.const(weight_decay), p))


def sgd_step(A: Arith[F, I, M], p: F, g: F, lr: F) -> F:
    return A.sub(p, A.mul(lr, g))


def momentum_step(
    A: Arith[F, I, M], p: F, v: F, g: F, lr: F, mu: float, nesterov: bool
) -> tuple[F, F]:
    """v = mu*v + g; plain: p - lr*v; Nesterov: p - lr*(g + mu*v) with the new v."""
    v2 = A.add(A.mul(A.const(mu), v), g)
    d = A.add(g, A.mul(A.const(mu), v2)) if nesterov else v2
    return A.sub(p, A.mul(lr, d)), v2


def adam_step(
    A: Arith[F, I, M],
    p: F,
    m: F,
    v: F,
    g: F,
    b1t: F,
    b2t: F,
    lr: F,
    beta1: float,
    beta2: float,
    eps: float,
) -> tuple[F, F, F]:
    """adam above with the rate a value: the same operations in the same order."""
    one = A.const(1.0)
    m2 = A.add(A.mul(A.const(beta1), m), A.mul(A.sub(one, A.const(beta1)), g))
    v2 = A.add(A.mul(A.const(beta2), v), A.mul(A.sub(one, A.const(beta2)), A.mul(g, g)))
    mhat = A.div(m2, A.sub(one, b1t))
    vhat = A.div(v2, A.sub(one, b2t))
    step = A.div(A.mul(lr, mhat), A.add(A.sqrt(vhat), A.const(eps)))
    return A.sub(p, step), m2, v2


def decoupled_factor(A: Arith[F, I, M], lr: F, weight_decay: float) -> F:
    """AdamW's per-round parameter factor, 1 - lr * wd (once per round, not per element)."""
    return A.sub(A.const(1.0), A.mul(lr, A.const(weight_decay)))


def clip_square(A: Arith[F, I, M], gsum: F, batch: int) -> F:
    """One element's term of the global norm: the mean gradient's element, squared."""
    g = mean_gradient(A, gsum, batch)
    return A.mul(g, g)


def clip_scale(A: Arith[F, I, M], sqsum: F, threshold: float) -> F:
    """The factor every gradient element is multiplied by: threshold / norm when the norm
    (the correctly rounded sqrt of the canonical-tree sum of squares) is above the threshold,
    else exactly 1 (x * 1 is x, so an unclipped round keeps its bits)."""
    norm = A.sqrt(sqsum)
    c = A.const(threshold)
    return A.select(A.gt(norm, c), A.div(c, norm), A.const(1.0))


# -- one learner, whatever its options: the dispatch both interpreters run -------------------
SLOTS = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}  # state arrays per element
SCALARS = {"sgd": 0, "momentum": 0, "adam": 2, "adamw": 2}  # state scalars: beta powers


class Learner(Protocol):
    """What the recipes read of a checked learner (alpha_core.check.program.LearnerSpec)."""

    @property
    def kind(self) -> str: ...
    @property
    def hyper(self) -> tuple[tuple[str, float], ...]: ...
    @property
    def schedule(self) -> schedules.ScheduleSpec | None: ...
    @property
    def clip(self) -> float | None: ...


@dataclass(frozen=True)
class Round(Generic[F]):
    """The values a round computes once and every element's update reads."""

    lr: F  # the round's learning rate
    factor: F  # adamw: 1 - lr * weight_decay; else 1
    b1t: F  # adam, adamw: beta1 ** (t + 1), kept in the state; else 0
    b2t: F
    scale: F  # clipping: threshold / norm when clipped, else 1


def round_values(
    A: Arith[F, I, M],
    spec: Learner,
    when: tuple[F, F, I] | None,
    first: M,
    b1t: F,
    b2t: F,
    sqsum: F | None,
) -> Round[F]:
    """`when`: the round's schedules.Phase as (t, after) float32 values and k an int32 (None
    without a schedule); `first`: whether this is round 0; b1t, b2t: the beta powers of the
    state (read only on later rounds); `sqsum`: the canonical-tree sum of squares of the mean
    gradient (None without clipping)."""
    hyper = dict(spec.hyper)
    if spec.schedule is None or when is None:
        lr = A.const(hyper["lr"])
    else:
        lr = schedules.rate(A, spec.schedule, *when)
    zero, one = A.const(0.0), A.const(1.0)
    factor = decoupled_factor(A, lr, hyper["weight_decay"]) if spec.kind == "adamw" else one
    if spec.kind in ("adam", "adamw"):
        b1t, b2t = adam_powers(A, first, b1t, b2t, hyper["beta1"], hyper["beta2"])
    else:
        b1t, b2t = zero, zero
    scale = one if spec.clip is None or sqsum is None else clip_scale(A, sqsum, spec.clip)
    return Round(lr, factor, b1t, b2t, scale)


def update(
    A: Arith[F, I, M], spec: Learner, batch: int, p: F, slots: list[F], gsum: F, r: Round[F]
) -> tuple[F, list[F]]:
    """One element: its new parameter and learner state slots, from the round's gradient sum."""
    hyper = dict(spec.hyper)
    g = mean_gradient(A, gsum, batch)
    if spec.clip is not None:
        g = A.mul(g, r.scale)
    wd = hyper.get("weight_decay", 0.0)
    if spec.kind != "adamw" and wd != 0.0:
        g = coupled_decay(A, p, g, wd)
    if spec.kind == "sgd":
        return sgd_step(A, p, g, r.lr), []
    if spec.kind == "momentum":
        p2, v2 = momentum_step(A, p, slots[0], g, r.lr, hyper["mu"], hyper.get("nesterov", 0) != 0)
        return p2, [v2]
    if spec.kind == "adamw":
        p = A.mul(p, r.factor)
    p2, m2, v2 = adam_step(
        A,
        p,
        slots[0],
        slots[1],
        g,
        r.b1t,
        r.b2t,
        r.lr,
        hyper["beta1"],
        hyper["beta2"],
        hyper["eps"],
    )
    return p2, [m2, v2]


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
