"""Loops for the losses added for layers: one logit's sigmoid cross-entropy and the softmax
cross-entropy with label smoothing, each per example in the order docs/language.md gives."""

from __future__ import annotations

from llvmlite import ir

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
