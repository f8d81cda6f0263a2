"""Reverse mode on the tensor graph: forward, per-example loss, and the leaf's gradient.

The gradient of a parameter is the sum over the leaf's examples in index order: every op that
takes a per-example tensor to a parameter-shaped one (a matmul over the batch axis, a reduction
over broadcast axes) adds from +0.0 in index order. When a node feeds several consumers, their
contributions are added in reverse graph order, so the step is one fixed expression.

Each differentiable op names its adjoint rule in the operation table (alpha_core/ops): ADJOINTS
below, by that name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from alpha_core.check.program import Program
from alpha_core.ir.graph import BATCH, Graph, GraphBuilder, Node, Shape
from alpha_core.ops import LEAF, OPS


@dataclass(frozen=True)
class StepGraph:
    """One leaf's step: `loss_sum` (a scalar) and one gradient node per parameter."""

    graph: Graph
    loss_sum: int
    grads: tuple[int, ...]
    output: int  # the model output, for the forward (evaluation) kernel


def training_step(program: Program) -> StepGraph:
    b = GraphBuilder()
    for node in program.model.nodes:
        b.add(node.op, node.inputs, node.shape, node.attrs)
    out = program.output
    classes = program.data.outputs
    positions = program.data.positions
    # label smoothing: the smoothed cross-entropy and its gradient, the same rows
    xent, xent_grad = "xent", "xent_grad"
    attrs: tuple[tuple[str, object], ...] = ()
    if program.smoothing:
        xent, xent_grad = "xent_smooth", "xent_smooth_grad"
        attrs = (("smoothing", program.smoothing),)
    if program.loss == "sigmoid_cross_entropy":
        labels = b.add("label_class", (), (BATCH,))
        per_example = b.add("sigmoid_xent", (out, labels), (BATCH,))
        seed = b.add("sigmoid_xent_grad", (out, labels), (BATCH, 1))
    elif program.loss == "softmax_cross_entropy" and positions > 1:
        # one label per position: the positions of every example are the rows of one
        # cross-entropy, example-major; an example's loss is the sum over its positions
        labels = b.add("label_class", (), (BATCH, positions))
        rows = b.add("reshape", (out,), (-positions, classes))
        flat = b.add("reshape", (labels,), (-positions,))
        per_example = b.add(xent, (rows, flat), (-positions,), attrs)
        grad = b.add(xent_grad, (rows, flat), (-positions, classes), attrs)
        seed = b.add("reshape", (grad,), (BATCH, positions, classes))
    elif program.loss == "softmax_cross_entropy":
        labels = b.add("label_class", (), (BATCH,))
        per_example = b.add(xent, (out, labels), (BATCH,), attrs)
        seed = b.add(xent_grad, (out, labels), (BATCH, classes), attrs)
    else:
        labels = b.add("label_reg", (), (BATCH, classes))
        per_example = b.add("mse", (out, labels), (BATCH,))
        seed = b.add("mse_grad", (out, labels), (BATCH, classes))
    loss_sum = b.add("sum", (per_example,), (), (("axis", 0),))
    grads = _backward(b, out, seed, len(program.model.nodes))
    param_grads = []
    for index, spec in enumerate(program.params):
        pnode = b.add("param", (), spec.shape, (("index", index),))
        g = grads.get(pnode)
        param_grads.append(g if g is not None else b.add("zeros", (), spec.shape))
    return StepGraph(b.graph(), loss_sum, tuple(param_grads), out)


class _Adjoints:
    """The adjoints of one step as reverse mode accumulates them: node -> its adjoint's node."""

    def __init__(self, b: GraphBuilder, out: int, seed: int) -> None:
        self.b = b
        self.grads: dict[int, int] = {out: seed}

    def acc(self, node: int, g: int) -> None:
        """Add `g` to the adjoint of `node` (contributions in reverse graph order)."""
        if node in self.grads:
            self.grads[node] = self.b.add("add", (self.grads[node], g), self.b.shape(node))
        else:
            self.grads[node] = g

    def reduce_to(self, g: int, shape: Shape) -> int:
        """`g` summed down to `shape`, over the axes a broadcast made."""
        if self.b.shape(g) == shape:
            return g
        return self.b.add("reduce_to", (g,), shape)


# An adjoint rule: given node i and its adjoint d, add each input's contribution (ops/table.py
# names one per differentiable op).
Rule = Callable[[_Adjoints, int, Node, int], None]


def _add_sub(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    x, c = node.inputs
    a.acc(x, a.reduce_to(d, b.shape(x)))
    dc = d if node.op == "add" else b.add("neg", (d,), b.shape(d))
    a.acc(c, a.reduce_to(dc, b.shape(c)))


def _mul(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    x, c = node.inputs
    a.acc(x, a.reduce_to(b.add("mul", (d, c), node.shape), b.shape(x)))
    a.acc(c, a.reduce_to(b.add("mul", (d, x), node.shape), b.shape(c)))


def _div(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    x, c = node.inputs
    a.acc(x, a.reduce_to(b.add("div", (d, c), node.shape), b.shape(x)))
    if b.nodes[c].op != "const":
        # d(x/c)/dc = -(d * (x/c)) / c
        t = b.add("div", (b.add("mul", (d, i), node.shape), c), node.shape)
        a.acc(c, a.reduce_to(b.add("neg", (t,), node.shape), b.shape(c)))


def _matmul(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    x, c = node.inputs
    sx, sc = b.shape(x), b.shape(c)
    ct = b.add("transpose", (c,), (sc[1], sc[0]))
    a.acc(x, b.add("matmul", (d, ct), sx))
    xt = b.add("transpose", (x,), (sx[1], sx[0]))
    a.acc(c, b.add("matmul", (xt, d), sc))


def _bmatmul(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    x, c = node.inputs
    sx, sc = b.shape(x), b.shape(c)
    ct = b.add("transpose", (c,), sc[:-2] + (sc[-1], sc[-2]))
    a.acc(x, b.add("bmatmul", (d, ct), sx))
    xt = b.add("transpose", (x,), sx[:-2] + (sx[-1], sx[-2]))
    a.acc(c, b.add("bmatmul", (xt, d), sc))


def _transpose(a: _Adjoints, i: int, node: Node, d: int) -> None:
    (x,) = node.inputs
    a.acc(x, a.b.add("transpose", (d,), a.b.shape(x)))


def _neg(a: _Adjoints, i: int, node: Node, d: int) -> None:
    a.acc(node.inputs[0], a.b.add("neg", (d,), node.shape))


def _unary(a: _Adjoints, i: int, node: Node, d: int) -> None:
    """An activation: its adjoint op (the table's `grad`) of the input or the output, and d."""
    entry = OPS[node.op]
    assert entry.grad is not None
    reads = i if entry.grad_reads == "y" else node.inputs[0]
    a.acc(node.inputs[0], a.b.add(entry.grad, (reads, d), node.shape))


def _exp(a: _Adjoints, i: int, node: Node, d: int) -> None:
    a.acc(node.inputs[0], a.b.add("mul", (d, i), node.shape))


def _log(a: _Adjoints, i: int, node: Node, d: int) -> None:
    a.acc(node.inputs[0], a.b.add("div", (d, node.inputs[0]), node.shape))


def _pick(a: _Adjoints, i: int, node: Node, d: int) -> None:
    """maximum/minimum: d to the operand chosen, +0 to the other."""
    x, c = node.inputs
    for side, operand in enumerate((x, c)):
        attrs = (("kind", node.op), ("side", side))
        g = a.b.add("pick_grad", (x, c, d), node.shape, attrs)
        a.acc(operand, a.reduce_to(g, a.b.shape(operand)))


def _softmax(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    axis = node.attr("axis")
    assert isinstance(axis, int)
    dy = b.add("mul", (d, i), node.shape)
    total = _kept_sum(b, dy, axis)
    a.acc(node.inputs[0], b.add("mul", (i, b.add("sub", (d, total), node.shape)), node.shape))


def _log_softmax(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    axis = node.attr("axis")
    assert isinstance(axis, int)
    soft = b.add("softmax", (node.inputs[0],), node.shape, node.attrs)
    total = _kept_sum(b, d, axis)
    scaled = b.add("mul", (soft, total), node.shape)
    a.acc(node.inputs[0], b.add("sub", (d, scaled), node.shape))


def _reshape_back(a: _Adjoints, i: int, node: Node, d: int) -> None:
    a.acc(node.inputs[0], _reshape(a.b, d, a.b.shape(node.inputs[0])))


def _causal_mask(a: _Adjoints, i: int, node: Node, d: int) -> None:
    a.acc(node.inputs[0], a.b.add("causal_mask", (d,), node.shape, (("fill", 0.0),)))


def _embed(a: _Adjoints, i: int, node: Node, d: int) -> None:
    table, tokens = node.inputs
    a.acc(table, a.b.add("embed_grad", (d, tokens), a.b.shape(table)))


def _dropout(a: _Adjoints, i: int, node: Node, d: int) -> None:
    """The same mask and scale, applied to the adjoint."""
    a.acc(node.inputs[0], a.b.add("dropout", (d,), node.shape, node.attrs))


def _extreme(a: _Adjoints, i: int, node: Node, d: int) -> None:
    """max/min: to the first extreme element along the axis."""
    grad = OPS[node.op].grad
    assert grad is not None
    x = node.inputs[0]
    a.acc(x, a.b.add(grad, (x, d), a.b.shape(x), node.attrs))


def _swap_axes(a: _Adjoints, i: int, node: Node, d: int) -> None:
    """Its own inverse."""
    x = node.inputs[0]
    a.acc(x, a.b.add("swap_axes", (d,), a.b.shape(x), node.attrs))


def _slice(a: _Adjoints, i: int, node: Node, d: int) -> None:
    x = node.inputs[0]
    a.acc(x, a.b.add("slice_grad", (d,), a.b.shape(x), node.attrs))


def _conv2d(a: _Adjoints, i: int, node: Node, d: int) -> None:
    b = a.b
    x, w = node.inputs
    a.acc(x, b.add("conv2d_dx", (d, w), b.shape(x), node.attrs))
    a.acc(w, b.add("conv2d_dw", (x, d), b.shape(w), node.attrs))


def _max_pool(a: _Adjoints, i: int, node: Node, d: int) -> None:
    x = node.inputs[0]
    a.acc(x, a.b.add("max_pool_grad", (x, d), a.b.shape(x), node.attrs))


def _avg_pool(a: _Adjoints, i: int, node: Node, d: int) -> None:
    x = node.inputs[0]
    a.acc(x, a.b.add("avg_pool_grad", (d,), a.b.shape(x), node.attrs))


def _reduce(a: _Adjoints, i: int, node: Node, d: int) -> None:
    """sum/mean: the adjoint spread back over the reduced axes (divided by the count)."""
    b = a.b
    (x,) = node.inputs
    axis = node.attr("axis")
    g = b.add("broadcast", (d,), b.shape(x), (("axis", axis),))
    if node.op == "mean":
        sx = b.shape(x)
        n = sx[axis] if isinstance(axis, int) else _count(sx)
        g = b.add("div", (g, b.add("const", (), (), (("value", float(n)),))), sx)
    a.acc(x, g)


#: the adjoint rules, by the name ops/table.py gives each differentiable op
ADJOINTS: dict[str, Rule] = {
    "add": _add_sub,
    "sub": _add_sub,
    "mul": _mul,
    "div": _div,
    "matmul": _matmul,
    "bmatmul": _bmatmul,
    "transpose": _transpose,
    "neg": _neg,
    "unary": _unary,
    "exp": _exp,
    "log": _log,
    "pick": _pick,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "reshape": _reshape_back,
    "causal_mask": _causal_mask,
    "embed": _embed,
    "dropout": _dropout,
    "extreme": _extreme,
    "swap_axes": _swap_axes,
    "slice": _slice,
    "conv2d": _conv2d,
    "max_pool": _max_pool,
    "avg_pool": _avg_pool,
    "reduce": _reduce,
}


def _backward(b: GraphBuilder, out: int, seed: int, n_forward: int) -> dict[int, int]:
    adjoints = _Adjoints(b, out, seed)
    grads = adjoints.grads
    for i in range(n_forward - 1, -1, -1):
        if i not in grads:
            continue
        node = b.nodes[i]
        entry = OPS.get(node.op)
        if entry is not None and entry.adjoint == LEAF:
            continue
        rule = ADJOINTS.get(entry.adjoint) if entry is not None else None
        if rule is None:
            raise AssertionError(f"no derivative for {node.op}")
        rule(adjoints, i, node, grads[i])
    return grads


def _reshape(b: GraphBuilder, x: int, shape: Shape) -> int:
    return x if b.shape(x) == shape else b.add("reshape", (x,), shape)


def _kept_sum(b: GraphBuilder, x: int, axis: int) -> int:
    """sum(x, axis) with the axis kept as a 1, to broadcast back along it."""
    shape = b.shape(x)
    total = b.add("sum", (x,), shape[:axis] + shape[axis + 1 :], (("axis", axis),))
    return _reshape(b, total, shape[:axis] + (1,) + shape[axis + 1 :])


def _count(shape: Shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
