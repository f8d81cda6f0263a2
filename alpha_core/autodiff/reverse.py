"""Reverse mode on the tensor graph: forward, per-example loss, and the leaf's gradient.

The gradient of a parameter is the sum over the leaf's examples in index order: every op that
takes a per-example tensor to a parameter-shaped one (a matmul over the batch axis, a reduction
over broadcast axes) adds from +0.0 in index order. When a node feeds several consumers, their
contributions are added in reverse graph order, so the step is one fixed expression.
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.check.program import Program
from alpha_core.ir.graph import BATCH, Graph, GraphBuilder, Shape
from alpha_core.semantics.activations import GRAD_READS


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


def _backward(b: GraphBuilder, out: int, seed: int, n_forward: int) -> dict[int, int]:
    grads: dict[int, int] = {out: seed}

    def acc(node: int, g: int) -> None:
        if node in grads:
            grads[node] = b.add("add", (grads[node], g), b.shape(node))
        else:
            grads[node] = g

    def reduce_to(g: int, shape: Shape) -> int:
        if b.shape(g) == shape:
            return g
        return b.add("reduce_to", (g,), shape)

    for i in range(n_forward - 1, -1, -1):
        if i not in grads:
            continue
        node = b.nodes[i]
        d = grads[i]
        op, ins = node.op, node.inputs
        if op in ("param", "input_x", "const"):
            continue
        if op in ("add", "sub"):
            a, c = ins
            acc(a, reduce_to(d, b.shape(a)))
            dc = d if op == "add" else b.add("neg", (d,), b.shape(d))
            acc(c, reduce_to(dc, b.shape(c)))
        elif op == "mul":
            a, c = ins
            acc(a, reduce_to(b.add("mul", (d, c), node.shape), b.shape(a)))
            acc(c, reduce_to(b.add("mul", (d, a), node.shape), b.shape(c)))
        elif op == "div":
            a, c = ins
            acc(a, reduce_to(b.add("div", (d, c), node.shape), b.shape(a)))
            if b.nodes[c].op != "const":
                # d(a/c)/dc = -(d * (a/c)) / c
                t = b.add("div", (b.add("mul", (d, i), node.shape), c), node.shape)
                acc(c, reduce_to(b.add("neg", (t,), node.shape), b.shape(c)))
        elif op == "matmul":
            a, c = ins
            sa, sc = b.shape(a), b.shape(c)
            ct = b.add("transpose", (c,), (sc[1], sc[0]))
            acc(a, b.add("matmul", (d, ct), sa))
            at = b.add("transpose", (a,), (sa[1], sa[0]))
            acc(c, b.add("matmul", (at, d), sc))
        elif op == "transpose":
            (a,) = ins
            acc(a, b.add("transpose", (d,), b.shape(a)))
        elif op == "neg":
            acc(ins[0], b.add("neg", (d,), node.shape))
        elif op == "relu":
            acc(ins[0], b.add("relu_grad", (ins[0], d), node.shape))
        elif op == "tanh":
            acc(ins[0], b.add("tanh_grad", (i, d), node.shape))
        elif op == "sigmoid":
            acc(ins[0], b.add("sigmoid_grad", (i, d), node.shape))
        elif op == "exp":
            acc(ins[0], b.add("mul", (d, i), node.shape))
        elif op == "log":
            acc(ins[0], b.add("div", (d, ins[0]), node.shape))
        elif op in GRAD_READS:
            reads = i if GRAD_READS[op] == "y" else ins[0]
            acc(ins[0], b.add(f"{op}_grad", (reads, d), node.shape))
        elif op in ("maximum", "minimum"):
            a, c = ins
            for side, operand in enumerate((a, c)):
                g = b.add("pick_grad", (a, c, d), node.shape, (("kind", op), ("side", side)))
                acc(operand, reduce_to(g, b.shape(operand)))
        elif op == "softmax":
            axis = node.attr("axis")
            assert isinstance(axis, int)
            dy = b.add("mul", (d, i), node.shape)
            total = _kept_sum(b, dy, axis)
            acc(ins[0], b.add("mul", (i, b.add("sub", (d, total), node.shape)), node.shape))
        elif op == "log_softmax":
            axis = node.attr("axis")
            assert isinstance(axis, int)
            soft = b.add("softmax", (ins[0],), node.shape, node.attrs)
            total = _kept_sum(b, d, axis)
            scaled = b.add("mul", (soft, total), node.shape)
            acc(ins[0], b.add("sub", (d, scaled), node.shape))
        elif op == "reshape":
            acc(ins[0], _reshape(b, d, b.shape(ins[0])))
        elif op == "bmatmul":
            a, c = ins
            sa, sc = b.shape(a), b.shape(c)
            ct = b.add("transpose", (c,), sc[:-2] + (sc[-1], sc[-2]))
            acc(a, b.add("bmatmul", (d, ct), sa))
            at = b.add("transpose", (a,), sa[:-2] + (sa[-1], sa[-2]))
            acc(c, b.add("bmatmul", (at, d), sc))
        elif op == "causal_mask":
            acc(ins[0], b.add("causal_mask", (d,), node.shape, (("fill", 0.0),)))
        elif op == "embed":
            table, tokens = ins
            acc(table, b.add("embed_grad", (d, tokens), b.shape(table)))
        elif op == "dropout":  # the same mask and scale, applied to the adjoint
            acc(ins[0], b.add("dropout", (d,), node.shape, node.attrs))
        elif op in ("max", "min"):  # to the first extreme element along the axis
            grad = b.add(f"{op}_grad", (ins[0], d), b.shape(ins[0]), node.attrs)
            acc(ins[0], grad)
        elif op == "swap_axes":  # its own inverse
            acc(ins[0], b.add("swap_axes", (d,), b.shape(ins[0]), node.attrs))
        elif op == "slice":
            acc(ins[0], b.add("slice_grad", (d,), b.shape(ins[0]), node.attrs))
        elif op == "conv2d":
            x, w = ins
            acc(x, b.add("conv2d_dx", (d, w), b.shape(x), node.attrs))
            acc(w, b.add("conv2d_dw", (x, d), b.shape(w), node.attrs))
        elif op == "max_pool":
            acc(ins[0], b.add("max_pool_grad", (ins[0], d), b.shape(ins[0]), node.attrs))
        elif op == "avg_pool":
            acc(ins[0], b.add("avg_pool_grad", (d,), b.shape(ins[0]), node.attrs))
        elif op in ("sum", "mean"):
            (a,) = ins
            axis = node.attr("axis")
            g = b.add("broadcast", (d,), b.shape(a), (("axis", axis),))
            if op == "mean":
                sa = b.shape(a)
                n = sa[axis] if isinstance(axis, int) else _count(sa)
                g = b.add("div", (g, b.add("const", (), (), (("value", float(n)),))), sa)
            acc(a, g)
        else:
            raise AssertionError(f"no derivative for {op}")
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
