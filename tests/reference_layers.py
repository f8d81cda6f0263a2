"""The NumPy reference of the layer operations (softmax, batched products, masks, embeddings,
maximum/minimum and the activations), op by op in the order docs/semantics.md gives them.

In float32 the per-element recipes are the compiler's (alpha_core.semantics.activations, run
through NumpyArith); every loop order, sum and index rule is written here again. In float64
(finite differences) each is the plain formula.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from reference_conv import CONV

from alpha_core.ir.graph import Node
from alpha_core.semantics import activations
from alpha_core.semantics.activations import GELU_C0, GELU_C1
from alpha_core.semantics.numpy_arith import NumpyArith

Array = Any
A = NumpyArith()


def _f32(mode: Any) -> bool:
    return bool(mode.dtype == np.float32)


def _unary64(op: str, x: Array) -> Array:
    if op == "sqrt":
        return np.sqrt(x)
    if op == "abs":
        return np.abs(x)
    if op == "square":
        return x * x
    if op == "gelu":
        return 0.5 * x * (1.0 + np.tanh(GELU_C0 * (x + GELU_C1 * x * x * x)))
    assert op == "silu"
    return x / (1.0 + np.exp(-x))


def _grad64(op: str, x: Array, d: Array) -> Array:
    if op == "sqrt_grad":
        return d / (x + x)
    if op == "abs_grad":
        return np.sign(x) * d
    if op == "square_grad":
        return d * (x + x)
    if op == "gelu_grad":
        t = np.tanh(GELU_C0 * (x + GELU_C1 * x * x * x))
        du = GELU_C0 * (1.0 + 3.0 * GELU_C1 * x * x)
        return d * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)
    assert op == "silu_grad"
    s = 1.0 / (1.0 + np.exp(-x))
    return d * (s * (1.0 + x * (1.0 - s)))


def unary(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    if _f32(mode):
        return activations.UNARY[n.op](A, ins[0].astype(np.float32))
    return _unary64(n.op, ins[0])


def grad(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    if _f32(mode):
        return activations.GRADS[n.op](A, ins[0], ins[1])
    return _grad64(n.op, ins[0], ins[1])


def pick(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    a, c = (np.broadcast_to(v, shape) for v in ins[:2])
    chosen = a >= c if n.op == "maximum" or n.attrs and n.attr("kind") == "maximum" else a <= c
    if n.op in ("maximum", "minimum"):
        return np.where(chosen, a, c).astype(mode.dtype)
    d = ins[2]
    zero = mode.dtype(0.0)
    side = n.attr("side")
    return np.where(chosen, d, zero) if side == 0 else np.where(chosen, zero, d)


def softmax(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    dt = mode.dtype
    axis = int(n.attr("axis"))  # type: ignore[call-overload]
    x = np.moveaxis(ins[0], axis, -1)
    m = x[..., 0].copy()
    for k in range(x.shape[-1]):
        m = np.where(x[..., k] > m, x[..., k], m)
    z = (x - m[..., None]).astype(dt)
    s = np.zeros(m.shape, dtype=dt)
    for k in range(x.shape[-1]):
        s = (s + mode.math("exp", z[..., k])).astype(dt)
    if n.op == "softmax":
        r = (mode.math("exp", z) / s[..., None]).astype(dt)
    else:
        r = (z - mode.math("log", s)[..., None]).astype(dt)
    return np.ascontiguousarray(np.moveaxis(r, -1, axis))


def reshape(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    return ins[0].reshape(shape)


def bmatmul(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    dt = mode.dtype
    a, c = ins
    r = np.zeros(shape, dtype=dt)
    for k in range(a.shape[-1]):
        r = mode.muladd(r, a[..., :, k : k + 1], c[..., k : k + 1, :])
    return r


def causal_mask(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    t = shape[-1]
    keep = np.arange(t)[None, :] <= np.arange(t)[:, None]  # [row, col]: col <= row
    return np.where(keep, ins[0], mode.dtype(n.attr("fill"))).astype(mode.dtype)


def token_rows(tokens: Array, rows: int) -> Array:
    """Truncated toward zero (NaN -> 0), clamped to [0, rows - 1]."""
    t = np.nan_to_num(tokens.astype(np.float64), nan=0.0)
    return np.clip(np.trunc(t), 0, rows - 1).astype(np.int64)


def embed(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    table, tokens = ins
    return table[token_rows(tokens, table.shape[0])].astype(mode.dtype)


def embed_grad(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    d, tokens = ins
    rows = token_rows(tokens, shape[0]).ravel()
    flat = d.reshape(rows.size, shape[1])
    g = np.zeros(shape, dtype=mode.dtype)
    for p, row in enumerate(rows):  # positions in row-major order, each row from +0.0
        g[row] = (g[row] + flat[p]).astype(mode.dtype)
    return g


def slice_(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    axis, start = int(n.attr("axis")), int(n.attr("start"))  # type: ignore[call-overload]
    if n.op == "slice":
        return np.take(ins[0], range(start, start + shape[axis]), axis=axis)
    r = np.zeros(shape, dtype=mode.dtype)
    at: list[Any] = [slice(None)] * len(shape)
    at[axis] = slice(start, start + ins[0].shape[axis])
    r[tuple(at)] = ins[0]
    return r


def sigmoid_xent(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    dt = mode.dtype
    z = ins[0][:, 0]
    c = ins[1].reshape(-1).astype(dt)
    if n.op == "sigmoid_xent_grad":
        return (mode.math("sigmoid", z) - c).astype(dt).reshape(shape)
    if _f32(mode):
        return activations.sigmoid_xent(A, z, c)
    return np.maximum(z, 0.0) - z * c + np.log1p(np.exp(-np.abs(z)))


def xent_smooth(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    dt = mode.dtype
    z, labels = ins
    labels = labels.reshape(-1)
    k = z.shape[1]
    eps = dt(n.attr("smoothing"))
    keep = (dt(1.0) - eps).astype(dt)
    share = (eps / dt(k)).astype(dt)
    m = z[:, 0].copy()
    for j in range(k):
        m = np.where(z[:, j] > m, z[:, j], m)
    s = np.zeros(z.shape[0], dtype=dt)
    for j in range(k):
        s = (s + mode.math("exp", (z[:, j] - m).astype(dt))).astype(dt)
    rows = np.arange(z.shape[0])
    if n.op == "xent_smooth_grad":
        p = (mode.math("exp", (z - m[:, None]).astype(dt)) / s[:, None]).astype(dt)
        hot = np.arange(k)[None, :] == labels[:, None]
        q = (np.where(hot, keep, dt(0.0)) + share).astype(dt)
        return (p - q).astype(dt)
    lse = mode.math("log", s)
    t = np.zeros(z.shape[0], dtype=dt)
    for j in range(k):
        t = (t + (lse - (z[:, j] - m).astype(dt)).astype(dt)).astype(dt)
    hit = (keep * (lse - (z[rows, labels] - m).astype(dt)).astype(dt)).astype(dt)
    return (hit + (share * t).astype(dt)).astype(dt)


# the round and leaf being evaluated (train() sets them, as the runtime sets alpha_leaf_round
# and alpha_leaf_index), and whether this is training (dropout masks) or evaluation
CONTEXT: dict[str, Any] = {"round": 0, "leaf": 0, "training": True}


def dropout(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    if not CONTEXT["training"]:
        return ins[0]
    rate, seed = float(n.attr("rate")), int(n.attr("seed"))  # type: ignore[arg-type,call-overload]
    rows = shape[0]
    per = int(np.prod(shape[1:], dtype=np.int64))
    i = np.arange(rows, dtype=np.uint64)[:, None]
    e = np.arange(per, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        first = (np.uint64(CONTEXT["round"]) << np.uint64(32)) + np.uint64(CONTEXT["leaf"] * rows)
        index = ((first + i) * np.uint64(per) + e).reshape(shape)
    keep = activations.dropout_keep(A, seed, index, rate)
    if _f32(mode):
        scaled = ins[0] * activations.dropout_scale(A, rate)
    else:
        scaled = ins[0] * (1.0 / (1.0 - float(np.float32(rate))))
    return np.where(keep, scaled, mode.dtype(0.0)).astype(mode.dtype)


def extreme(n: Node, ins: list[Array], shape: tuple[int, ...], mode: Any) -> Array:
    x = ins[0]
    axis = n.attr("axis")
    moved = x.reshape(1, -1, 1) if axis is None else x
    k = 1 if axis is None else int(axis)  # type: ignore[call-overload]
    lines = np.moveaxis(moved, k, -1)
    m = lines[..., 0].copy()
    arg = np.zeros(m.shape, dtype=np.int64)
    for j in range(lines.shape[-1]):
        hit = lines[..., j] > m if n.op.startswith("max") else lines[..., j] < m
        m = np.where(hit, lines[..., j], m)
        arg = np.where(hit, j, arg)
    if not n.op.endswith("_grad"):
        return m.reshape(shape)
    d = ins[1].reshape(m.shape)
    g = np.zeros(lines.shape, dtype=mode.dtype)
    np.put_along_axis(g, arg[..., None], d[..., None], axis=-1)
    return np.ascontiguousarray(np.moveaxis(g, -1, k)).reshape(shape)


LAYER: dict[str, Callable[[Node, list[Array], tuple[int, ...], Any], Array]] = {
    **{op: unary for op in activations.UNARY},
    **{op: grad for op in activations.GRADS},
    "maximum": pick,
    "minimum": pick,
    "pick_grad": pick,
    "softmax": softmax,
    "log_softmax": softmax,
    "reshape": reshape,
    "bmatmul": bmatmul,
    "causal_mask": causal_mask,
    "embed": embed,
    "embed_grad": embed_grad,
    "swap_axes": lambda n, ins, shape, mode: np.ascontiguousarray(
        np.swapaxes(ins[0], int(n.attr("a")), int(n.attr("b")))  # type: ignore[call-overload]
    ),
    "slice": slice_,
    "slice_grad": slice_,
    "dropout": dropout,
    **{op: extreme for op in ("max", "min", "max_grad", "min_grad")},
    "sigmoid_xent": sigmoid_xent,
    "sigmoid_xent_grad": sigmoid_xent,
    "xent_smooth": xent_smooth,
    "xent_smooth_grad": xent_smooth,
    **CONV,
}
