"""Loops for the losses, each per example in the order docs/language.md gives: the softmax
cross-entropy and squared error (`emit_xent`, `emit_mse`), and those added for layers, one
logit's sigmoid cross-entropy and the softmax cross-entropy with label smoothing."""

from __future__ import annotations

from llvmlite import ir

from alpha_core.codegen.line_blocks import MAX, SUM, Block, LineBlocks, softmax_sums
from alpha_core.codegen.loops import F32, I32, entry_alloca, for_range, i64, load, store
from alpha_core.codegen.node_context import NodeContext
from alpha_core.ir.graph import Node
from alpha_core.semantics import activations
from alpha_core.semantics.llvm_arith import LlvmArith


def emit_loss_op(
    em: NodeContext, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value
) -> None:
    z, labels = em.ptrs[node.inputs[0]], em.ptrs[node.inputs[1]]
    rows = em.shape(node.inputs[0])[0]
    if node.op in ("sigmoid_xent", "sigmoid_xent_grad"):

        def example(r: ir.Value) -> None:
            v = load(b, z, r)
            c = A.itof(load(b, labels, r, I32))
            if node.op == "sigmoid_xent":
                store(b, activations.sigmoid_xent(A, v, c), out, r)
            else:
                store(b, A.sub(b.call(em.math["sigmoid"], [v]), c), out, r)

        for_range(b, rows, example, "ex")
        return
    _smooth(em, b, A, node, out, z, labels, rows)


def _smooth(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    out: ir.Value,
    z: ir.Value,
    labels: ir.Value,
    rows: int,
) -> None:
    """m, s as softmax_cross_entropy; lse = log(s); loss = (1 - e)(lse - (z[c] - m)) +
    (e / K) Σ_j (lse - (z[j] - m)); grad[j] = exp(z[j] - m) / s - ((j == c ? 1 - e : 0) + e / K).
    """
    classes = em.shape(node.inputs[0])[1]
    eps = float(node.attr("smoothing"))  # type: ignore[arg-type]
    keep = A.sub(A.const(1.0), A.const(eps))
    share = A.div(A.const(eps), A.const(float(classes)))
    exp, log = em.math["exp"], em.math["log"]
    m_slot, s_slot, t_slot = entry_alloca(b), entry_alloca(b), entry_alloca(b)

    def example(r: ir.Value) -> None:
        base = b.mul(r, i64(classes))

        def zj(j: ir.Value) -> ir.Value:
            return load(b, z, b.add(base, j))

        b.store(load(b, z, base), m_slot)

        def top(j: ir.Value) -> None:
            v, m = zj(j), b.load(m_slot, typ=F32)
            b.store(A.select(A.gt(v, m), v, m), m_slot)

        for_range(b, classes, top, "mx")
        m = b.load(m_slot, typ=F32)
        b.store(A.const(0.0), s_slot)
        for_range(
            b,
            classes,
            lambda j: b.store(
                A.add(b.load(s_slot, typ=F32), b.call(exp, [A.sub(zj(j), m)])), s_slot
            ),
            "sx",
        )
        s = b.load(s_slot, typ=F32)
        y = b.sext(load(b, labels, r, I32), ir.IntType(64))
        if node.op == "xent_smooth":
            lse = b.call(log, [s])
            b.store(A.const(0.0), t_slot)
            for_range(
                b,
                classes,
                lambda j: b.store(
                    A.add(b.load(t_slot, typ=F32), A.sub(lse, A.sub(zj(j), m))), t_slot
                ),
                "tx",
            )
            hit = A.mul(keep, A.sub(lse, A.sub(load(b, z, b.add(base, y)), m)))
            store(b, A.add(hit, A.mul(share, b.load(t_slot, typ=F32))), out, r)
            return

        def cls(j: ir.Value) -> None:
            p = A.div(b.call(exp, [A.sub(zj(j), m)]), s)
            hot = b.icmp_unsigned("==", j, y)
            q = A.add(A.select(hot, keep, A.const(0.0)), share)
            store(b, A.sub(p, q), out, b.add(base, j))

        for_range(b, classes, cls, "g")

    for_range(b, rows, example, "ex")


XENT_LINES = 32  # examples of a softmax cross-entropy computed side by side


def emit_xent(
    em: NodeContext, b: ir.IRBuilder, A: LlvmArith, node: Node, out: ir.Value, grad: bool
) -> None:
    """Per example: m = max z (from the first class, then v > m ? v : m ascending);
    s = Σ exp(z - m) ascending from +0.0; loss = log s - (z[y] - m);
    grad = exp(z - m) / s - [j = y].

    Examples go in blocks of XENT_LINES, each pass a loop over the block's examples inside
    the loop over classes, so vector lanes are independent examples; each example's
    operations and their order are the ones above."""
    rows, classes = em.shape(node.inputs[0])
    z, labels = em.ptrs[node.inputs[0]], em.ptrs[node.inputs[1]]
    exp, log = em.math["exp"], em.math["log"]

    def one_block(blk: Block) -> None:
        def at(j: ir.Value, c: ir.Value) -> ir.Value:
            return b.add(b.mul(b.add(blk.first, j), i64(classes)), c)

        def label(j: ir.Value) -> ir.Value:
            return b.sext(load(b, labels, b.add(blk.first, j), I32), ir.IntType(64))

        softmax_sums(blk, A, z, classes, at, exp)
        if not grad:

            def loss(j: ir.Value) -> None:
                m, s = blk.get(MAX, j), blk.get(SUM, j)
                zy = load(b, z, at(j, label(j)))
                store(b, A.sub(b.call(log, [s]), A.sub(zy, m)), out, b.add(blk.first, j))

            blk.lanes(loss)
            return

        def cls(j: ir.Value, c: ir.Value) -> None:
            m, s = blk.get(MAX, j), blk.get(SUM, j)
            p = A.div(b.call(exp, [A.sub(load(b, z, at(j, c)), m)]), s)
            hot = b.icmp_unsigned("==", c, label(j))
            store(b, A.sub(p, A.select(hot, A.const(1.0), A.const(0.0))), out, at(j, c))

        blk.over(classes, cls)

    LineBlocks(b, rows, XENT_LINES, 2).run(one_block)


def emit_mse(
    em: NodeContext, b: ir.IRBuilder, A: LlvmArith, node: Node, out: ir.Value, grad: bool
) -> None:
    """Per example: d = p - t; loss = (Σ d*d) / n; grad = (d + d) / n."""
    rows, width = em.shape(node.inputs[0])
    p, t = em.ptrs[node.inputs[0]], em.ptrs[node.inputs[1]]
    n = A.const(float(width))
    if grad:
        for_range(
            b,
            rows * width,
            lambda j: store(
                b, A.div(A.add(d := A.sub(load(b, p, j), load(b, t, j)), d), n), out, j
            ),
        )
        return
    s_slot = entry_alloca(b)

    def example(r: ir.Value) -> None:
        base = b.mul(r, i64(width))
        b.store(A.const(0.0), s_slot)

        def term(j: ir.Value) -> None:
            d = A.sub(load(b, p, b.add(base, j)), load(b, t, b.add(base, j)))
            b.store(A.add(b.load(s_slot, typ=F32), A.mul(d, d)), s_slot)

        for_range(b, width, term, "sq")
        store(b, A.div(b.load(s_slot, typ=F32), n), out, r)

    for_range(b, rows, example, "ex")


#: the emitter of each host family the operation table names (alpha_core/ops: Op.host)
