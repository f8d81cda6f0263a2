"""A NumPy reference that evaluates a Program's training run with the same operations in the
same order as the generated code, op by op, in float32 (for exactness) or float64 (for
finite-difference checks of the autodiff).

It shares with the compiler only the written-once per-element recipes (alpha_core.semantics:
exp/log/tanh/sigmoid, the learners, the init generator) and the batch schedule; every loop
order, reduction, matmul, loss, the canonical tree and the run itself are written here again.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import reference_layers
from reference_layers import LAYER
from reference_learners import apply_round

from alpha_core.autodiff.reverse import StepGraph, training_step
from alpha_core.check.program import Program
from alpha_core.codegen.kernels import init_arguments
from alpha_core.data import synthetic
from alpha_core.ir.graph import Graph, concrete
from alpha_core.link.batch_reference import example_rows
from alpha_core.semantics.mathfuncs import numpy_math
from alpha_core.semantics.numpy_fma import fma32
from alpha_core.semantics.rng import numpy_init

Array = Any


@dataclass
class Mode:
    dtype: Any
    fused: bool = False  # the system's arithmetic: how a sum of products adds each term

    def muladd(self, acc: Array, x: Array, y: Array, keep: Array | None = None) -> Array:
        """acc + x · y, the product rounded first, or fma(x, y, acc) rounded once (fused);
        where `keep` is false the term is skipped (acc + +0.0, or acc as it is)."""
        dt = self.dtype
        if self.fused:
            assert dt == np.float32
            summed = fma32(x, y, acc)
            return summed if keep is None else np.where(keep, summed, acc).astype(dt)
        term = (x * y).astype(dt)
        if keep is not None:
            term = np.where(keep, term, dt(0.0))
        return (acc + term).astype(dt)

    def math(self, name: str, x: Array) -> Array:
        if self.dtype == np.float32:
            return numpy_math(name, x.astype(np.float32))
        return {
            "exp": np.exp,
            "log": np.log,
            "tanh": np.tanh,
            "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
        }[name](x)


F32 = Mode(np.float32)
F64 = Mode(np.float64)


def _reduce(src: Array, out_shape: tuple[int, ...], axes: list[int], dtype: Any) -> Array:
    """Add src over `axes` in row-major (lexicographic) order of those axes, from +0.0."""
    keep = [1 if k in axes else n for k, n in enumerate(src.shape)]
    acc = np.zeros(keep, dtype=dtype)
    for index in itertools.product(*(range(src.shape[k]) for k in axes)):
        sl: list[Any] = [slice(None)] * src.ndim
        for k, i in zip(axes, index, strict=True):
            sl[k] = slice(i, i + 1)
        acc = (acc + src[tuple(sl)]).astype(dtype)
    return acc.reshape(out_shape)


def evaluate(
    graph: Graph, roots: list[int], params: list[Array], x: Array, y: Array, batch: int, mode: Mode
) -> dict[int, Array]:
    """Values of every node needed for `roots`."""
    dt = mode.dtype
    need = set(roots)
    for i in range(len(graph) - 1, -1, -1):
        if i in need:
            need.update(graph[i].inputs)
    v: dict[int, Array] = {}
    for i in sorted(need):
        n = graph[i]
        shape = concrete(n.shape, batch)
        ins = [v[j] for j in n.inputs]
        op = n.op
        if op == "param":
            r = params[int(n.attr("index"))].astype(dt)  # type: ignore[call-overload]
        elif op == "input_x":
            r = x.astype(dt).reshape(shape)
        elif op == "label_class":
            r = y.astype(np.int64).reshape(shape)
        elif op == "label_reg":
            r = y.astype(dt)
        elif op == "const":
            r = np.array(n.attr("value"), dtype=dt)
        elif op == "zeros":
            r = np.zeros(shape, dtype=dt)
        elif op in ("add", "sub", "mul", "div"):
            f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
            with np.errstate(all="ignore"):
                r = f(ins[0], ins[1]).astype(dt)
        elif op == "neg":
            r = -ins[0]
        elif op == "relu":
            r = np.where(ins[0] > 0, ins[0], dt(0.0)).astype(dt)
        elif op == "relu_grad":
            r = np.where(ins[0] > 0, ins[1], dt(0.0)).astype(dt)
        elif op in ("tanh", "sigmoid", "exp", "log"):
            with np.errstate(all="ignore"):
                r = mode.math(op, ins[0]).astype(dt)
        elif op == "tanh_grad":
            r = (ins[1] * (dt(1.0) - ins[0] * ins[0]).astype(dt)).astype(dt)
        elif op == "sigmoid_grad":
            r = (ins[1] * (ins[0] * (dt(1.0) - ins[0]).astype(dt)).astype(dt)).astype(dt)
        elif op == "matmul":
            a, c = ins
            r = np.zeros(shape, dtype=dt)
            for k in range(a.shape[1]):
                r = mode.muladd(r, a[:, k : k + 1], c[k : k + 1, :])
        elif op == "transpose":
            r = np.ascontiguousarray(np.swapaxes(ins[0], -1, -2))
        elif op in LAYER:
            r = LAYER[op](n, ins, shape, mode)
        elif op in ("sum", "mean"):
            axis = n.attr("axis")
            axes = list(range(ins[0].ndim)) if axis is None else [int(axis)]  # type: ignore
            r = _reduce(ins[0], shape, axes, dt)
            if op == "mean":
                count = int(np.prod([ins[0].shape[k] for k in axes]))
                r = (r / dt(count)).astype(dt)
        elif op == "reduce_to":
            src = ins[0]
            padded = (1,) * (src.ndim - len(shape)) + shape
            axes = [k for k in range(src.ndim) if padded[k] == 1 and src.shape[k] != 1]
            r = _reduce(src, shape, axes, dt)
        elif op == "broadcast":
            axis = n.attr("axis")
            src = ins[0] if axis is None else np.expand_dims(ins[0], int(axis))  # type: ignore
            r = np.ascontiguousarray(np.broadcast_to(src, shape)).astype(dt)
        elif op in ("xent", "xent_grad"):
            z, labels = ins
            m = z[:, 0].copy()
            for j in range(z.shape[1]):
                m = np.where(z[:, j] > m, z[:, j], m)
            s = np.zeros(z.shape[0], dtype=dt)
            for j in range(z.shape[1]):
                s = (s + mode.math("exp", (z[:, j] - m).astype(dt))).astype(dt)
            rows = np.arange(z.shape[0])
            if op == "xent":
                r = (mode.math("log", s) - (z[rows, labels] - m).astype(dt)).astype(dt)
            else:
                p = (mode.math("exp", (z - m[:, None]).astype(dt)) / s[:, None]).astype(dt)
                hot = (np.arange(z.shape[1])[None, :] == labels[:, None]).astype(dt)
                r = (p - hot).astype(dt)
        elif op in ("mse", "mse_grad"):
            d = (ins[0] - ins[1]).astype(dt)
            width = dt(d.shape[1])
            if op == "mse_grad":
                r = ((d + d).astype(dt) / width).astype(dt)
            else:
                s = np.zeros(d.shape[0], dtype=dt)
                for j in range(d.shape[1]):
                    s = (s + (d[:, j] * d[:, j]).astype(dt)).astype(dt)
                r = (s / width).astype(dt)
        else:
            raise AssertionError(op)
        v[i] = np.asarray(r)
    return v


def tree_sum(parts: list[Array]) -> Array:
    """The canonical tree: split at the largest power of two below the count, left + right."""
    if len(parts) == 1:
        return parts[0]
    p = 1
    while p * 2 < len(parts):
        p *= 2
    return tree_sum(parts[:p]) + tree_sum(parts[p:])


def load_data(program: Program) -> tuple[Array, Array]:
    d = program.data
    if d.kind == "synthetic":
        return synthetic.generate(d)
    assert d.path is not None
    table = np.loadtxt(d.path, delimiter=",", dtype=np.float64, ndmin=2)
    return table[:, : d.features].astype(np.float32), table[:, d.features :].astype(np.float32)


def init_params(program: Program) -> list[Array]:
    out = []
    for spec in program.params:
        if spec.init.loaded is not None:  # `load`: the file's values
            loaded = np.frombuffer(spec.init.loaded.values, dtype="<f4")
            out.append(loaded.astype(np.float32).reshape(spec.shape))
            continue
        kind, args, seed = init_arguments(spec.init)
        out.append(numpy_init(kind, args, seed, spec.count).reshape(spec.shape))
    return out


def leaf_step(
    program: Program, step: StepGraph, params: list[Array], x: Array, y: Array, mode: Mode
) -> tuple[Array, list[Array]]:
    v = evaluate(step.graph, [step.loss_sum, *step.grads], params, x, y, program.leaf_size, mode)
    return v[step.loss_sum], [v[g] for g in step.grads]


@dataclass
class RunResult:
    params: Array  # flat float32
    losses: list[float]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.params.astype("<f4").tobytes()).hexdigest()


def train(program: Program, steps: int | None = None) -> RunResult:
    """The whole single-process run, as the executable performs it, in float32."""
    step = training_step(program)
    X, Y = load_data(program)
    params = init_params(program)
    flat = np.concatenate([p.ravel() for p in params]).astype(np.float32)
    state = np.zeros(program.n_state, dtype=np.float32)
    losses = []
    mode = Mode(np.float32, fused=program.fused)
    for t in range(program.steps if steps is None else steps):
        shaped = [flat[s.offset : s.offset + s.count].reshape(s.shape) for s in program.params]
        leaf_grads, leaf_losses = [], []
        for leaf in range(program.leaves):
            rows = example_rows(
                rows=program.data.rows,
                holdout=program.data.holdout,
                batch=program.batch,
                leaves=program.leaves,
                shuffle=int(program.shuffle_seed is not None),
                shuffle_seed=program.shuffle_seed or 0,
                t=t,
                leaf=leaf,
            )
            reference_layers.CONTEXT.update(round=t, leaf=leaf)
            loss, grads = leaf_step(program, step, shaped, X[rows], Y[rows], mode)
            leaf_losses.append(np.float32(loss))
            leaf_grads.append(np.concatenate([g.ravel() for g in grads]).astype(np.float32))
        gsum = tree_sum(leaf_grads)
        losses.append(float(tree_sum(leaf_losses) / np.float32(program.batch)))
        flat = apply_round(program, flat, state, gsum, t)
    return RunResult(flat, losses)
