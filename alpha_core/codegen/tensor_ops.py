"""Loops for the layer operations: softmax, batched products, masks, embeddings, pairwise
maximum/minimum, and the activations of semantics/activations.py.

Every sum keeps the order docs/semantics.md gives it (from +0.0, its index ascending); loops
that run over independent outputs may be vectorised by LLVM, which never changes a bit.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.line_blocks import MAX, SUM, Block, LineBlocks, line_max, softmax_sums
from alpha_core.codegen.loops import (
    F32,
    I32,
    I64,
    RECIPE_VECTORS,
    broadcast_strides,
    entry_alloca,
    for_range,
    i64,
    linear,
    load,
    nest,
    row_major_strides,
    store,
)
from alpha_core.codegen.node_context import NodeContext
from alpha_core.codegen.small_product import emit_small_product
from alpha_core.ir.graph import Node, size
from alpha_core.semantics import activations
from alpha_core.semantics.llvm_arith import LlvmArith


def emit_layer_op(
    em: NodeContext, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value
) -> None:
    """A node of the host family `layer` (alpha_core/ops), into `out`."""
    op = node.op
    shape = em.shape(i)
    if op in activations.UNARY:
        rec = activations.UNARY[op]
        a = em.ptrs[node.inputs[0]]
        n = size(shape)
        for_range(b, n, lambda j: store(b, rec(A, load(b, a, j)), out, j), "u", RECIPE_VECTORS)
    elif op in activations.GRADS:
        grad = activations.GRADS[op]
        x, d = em.ptrs[node.inputs[0]], em.ptrs[node.inputs[1]]
        for_range(
            b,
            size(shape),
            lambda j: store(b, grad(A, load(b, x, j), load(b, d, j)), out, j),
            "g",
            RECIPE_VECTORS,
        )
    elif op in ("maximum", "minimum"):
        pick = activations.maximum if op == "maximum" else activations.minimum
        _broadcast_map(em, b, node, shape, out, lambda v: pick(A, v[0], v[1]))
    elif op == "pick_grad":
        kind, side = str(node.attr("kind")), int(node.attr("side"))  # type: ignore[call-overload]
        _broadcast_map(em, b, node, shape, out, lambda v: activations.pick_grad(A, kind, side, *v))
    elif op in ("softmax", "log_softmax"):
        _softmax(em, b, A, node, shape, out)
    elif op == "reshape":
        n = size(shape)
        src = em.ptrs[node.inputs[0]]
        for_range(b, n, lambda j: store(b, load(b, src, j), out, j), "cp")
    elif op == "bmatmul":
        _bmatmul(em, b, A, node, shape, out)
    elif op == "causal_mask":
        _causal_mask(em, b, A, node, shape, out)
    elif op == "embed":
        _embed(em, b, A, node, shape, out)
    elif op == "embed_grad":
        _embed_grad(em, b, A, node, shape, out)
    elif op in ("slice", "slice_grad"):
        _slice(em, b, node, shape, out)
    elif op == "dropout":
        _dropout(em, b, A, node, shape, out)
    elif op in ("max", "min", "max_grad", "min_grad"):
        _extreme(em, b, A, node, out)
    elif op == "swap_axes":
        a, c = int(node.attr("a")), int(node.attr("b"))  # type: ignore[call-overload]
        src = em.ptrs[node.inputs[0]]
        st_in = row_major_strides(em.shape(node.inputs[0]))
        st_in[a], st_in[c] = st_in[c], st_in[a]  # out[..i..j..] = in[..j..i..]
        st_out = row_major_strides(shape)
        nest(
            b,
            shape,
            lambda idx: store(b, load(b, src, linear(b, idx, st_in)), out, linear(b, idx, st_out)),
        )
    else:
        raise AssertionError(f"no code for {op}")


def _broadcast_map(
    em: NodeContext,
    b: ir.IRBuilder,
    node: Node,
    shape: tuple[int, ...],
    out: ir.Value,
    f: Callable[[list[ir.Value]], ir.Value],
) -> None:
    """out[idx] = f(inputs read at idx with NumPy broadcasting)."""
    srcs = [(em.ptrs[j], broadcast_strides(em.shape(j), shape)) for j in node.inputs]
    st_o = row_major_strides(shape)

    def body(idx: list[ir.Value]) -> None:
        vals = [load(b, p, linear(b, idx, st)) for p, st in srcs]
        store(b, f(vals), out, linear(b, idx, st_o))

    nest(b, shape, body)


# Softmax lines computed side by side: each pass over a line's elements is a loop over the
# block's lines inside the loop over elements, so the lanes of a vector are independent lines
# (each line still sees its own elements in ascending order, one at a time).
SOFTMAX_LINES = 32


def _softmax(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    shape: tuple[int, ...],
    out: ir.Value,
) -> None:
    """Along the axis, for each other index (a line): m = the first element, then m = v > m ?
    v : m ascending; s = Σ exp(v - m) ascending from +0.0; softmax = exp(v - m) / s,
    log_softmax = (v - m) - log(s).

    The lines go in blocks of SOFTMAX_LINES, and each pass runs over a block's lines inside the
    loop over the axis, so LLVM computes lines side by side in vector lanes (their elements are
    gathered). A line's operations and their order are the ones above; softmax keeps exp(v - m)
    in `out` from the sum's pass and divides it there, one exp per element instead of two (the
    same value: exp is a function of its argument alone)."""
    axis = int(node.attr("axis"))  # type: ignore[call-overload]
    outer, n, inner = size(shape[:axis]), shape[axis], size(shape[axis + 1 :])
    lines = outer * inner
    if lines == 0 or n == 0:
        return
    x = em.ptrs[node.inputs[0]]
    exp, log = em.math["exp"], em.math["log"]

    def one_block(blk: Block) -> None:
        def start(j: ir.Value) -> ir.Value:
            r = b.add(blk.first, j)  # the line: o = r / inner, c = r % inner
            if inner == 1:
                return b.mul(r, i64(n))
            o, c = b.udiv(r, i64(inner)), b.urem(r, i64(inner))
            return b.add(b.mul(o, i64(n * inner)), c)

        def at(j: ir.Value, k: ir.Value) -> ir.Value:
            return b.add(start(j), b.mul(k, i64(inner)))

        # Passes whose order matters (the maximum, the sum) run over the block's lines side by
        # side; along the last axis the passes that touch each element once, independently
        # (exp(v - m), the division, the shift), run along each line instead: lanes are then
        # adjacent floats, with no gathered loads or scattered stores. exp(v - m) waits in
        # `out` for the sum there.
        each = blk.along if inner == 1 else blk.over

        def keep(j: ir.Value, k: ir.Value, e: ir.Value) -> None:  # exp(v - m), for the division
            store(b, e, out, at(j, k))

        if inner == 1:
            line_max(blk, A, x, n, at)
            each(
                n,
                lambda j, k: keep(
                    j, k, b.call(exp, [A.sub(load(b, x, at(j, k)), blk.get(MAX, j))])
                ),
            )
            blk.lanes(lambda j: blk.set(SUM, j, A.const(0.0)))
            blk.over(
                n, lambda j, k: blk.set(SUM, j, A.add(blk.get(SUM, j), load(b, out, at(j, k))))
            )
        else:
            softmax_sums(blk, A, x, n, at, exp, keep if node.op == "softmax" else None)
        if node.op == "softmax":

            def scale(j: ir.Value, k: ir.Value) -> None:
                store(b, A.div(load(b, out, at(j, k)), blk.get(SUM, j)), out, at(j, k))

            each(n, scale)
            return
        blk.lanes(lambda j: blk.set(SUM, j, b.call(log, [blk.get(SUM, j)])))

        def shift(j: ir.Value, k: ir.Value) -> None:
            m, ls = blk.get(MAX, j), blk.get(SUM, j)
            store(b, A.sub(A.sub(load(b, x, at(j, k)), m), ls), out, at(j, k))

        each(n, shift)

    LineBlocks(b, lines, SOFTMAX_LINES, 2).run(one_block)


def _bmatmul(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    shape: tuple[int, ...],
    out: ir.Value,
) -> None:
    """out[..., r, j] = Σ_k a[..., r, k] c[..., k, j], k ascending from +0.0: each matrix of
    the batch a small product (small_product.py: outputs in registers over the k loop, lanes
    over j), at its group's offsets."""
    sa, sc = em.shape(node.inputs[0]), em.shape(node.inputs[1])
    lead, (m, k), n = size(sa[:-2]), sa[-2:], sc[-1]
    a, c = em.ptrs[node.inputs[0]], em.ptrs[node.inputs[1]]

    def group(g: ir.Value) -> None:
        offsets = (b.mul(g, i64(m * k)), b.mul(g, i64(k * n)), b.mul(g, i64(m * n)))
        emit_small_product(b, A, out, a, c, m, n, k, offsets, em.gemm.k.width)

    for_range(b, lead, group, "g")


def _causal_mask(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    shape: tuple[int, ...],
    out: ir.Value,
) -> None:
    """Element [..., r, c] is kept where c <= r, else the fill (-inf forward, +0 backward)."""
    fill = A.const(float(node.attr("fill")))  # type: ignore[arg-type]
    src = em.ptrs[node.inputs[0]]
    st = row_major_strides(shape)

    def body(idx: list[ir.Value]) -> None:
        at = linear(b, idx, st)
        keep = b.icmp_unsigned("<=", idx[-1], idx[-2])
        store(b, b.select(keep, load(b, src, at), fill), out, at)

    nest(b, shape, body)


def token_index(b: ir.IRBuilder, A: LlvmArith, v: ir.Value, rows: int) -> ir.Value:
    """The table row a token value names: truncated toward zero (NaN -> 0), then clamped to
    [0, rows - 1]."""
    t = A.ftoi(v)
    zero, top = ir.Constant(I32, 0), ir.Constant(I32, rows - 1)
    t = b.select(b.icmp_signed("<", t, zero), zero, t)
    t = b.select(b.icmp_signed(">", t, top), top, t)
    return b.sext(t, I64)


def _embed(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    shape: tuple[int, ...],
    out: ir.Value,
) -> None:
    table, tokens = em.ptrs[node.inputs[0]], em.ptrs[node.inputs[1]]
    rows, width = em.shape(node.inputs[0])
    positions = size(em.shape(node.inputs[1]))

    def position(p: ir.Value) -> None:
        row = b.mul(token_index(b, A, load(b, tokens, p), rows), i64(width))
        base = b.mul(p, i64(width))
        for_range(
            b, width, lambda j: store(b, load(b, table, b.add(row, j)), out, b.add(base, j)), "e"
        )

    for_range(b, positions, position, "p")


def _embed_grad(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    shape: tuple[int, ...],
    out: ir.Value,
) -> None:
    """The table's gradient: from +0.0, each position's row of d added to its token's row,
    positions in row-major order."""
    d, tokens = em.ptrs[node.inputs[0]], em.ptrs[node.inputs[1]]
    rows, width = shape
    positions = size(em.shape(node.inputs[1]))
    for_range(b, rows * width, lambda j: store(b, ir.Constant(F32, 0.0), out, j), "z")

    def position(p: ir.Value) -> None:
        row = b.mul(token_index(b, A, load(b, tokens, p), rows), i64(width))
        base = b.mul(p, i64(width))

        def col(j: ir.Value) -> None:
            at = b.add(row, j)
            store(b, A.add(load(b, out, at), load(b, d, b.add(base, j))), out, at)

        for_range(b, width, col, "e")

    for_range(b, positions, position, "p")


def _slice(
    em: NodeContext, b: ir.IRBuilder, node: Node, shape: tuple[int, ...], out: ir.Value
) -> None:
    """slice: out = x[..., start:start+n, ...] along the axis; slice_grad: the adjoint, +0.0
    outside the range."""
    axis, start = int(node.attr("axis")), int(node.attr("start"))  # type: ignore[call-overload]
    src = em.ptrs[node.inputs[0]]
    small = em.shape(node.inputs[0]) if node.op == "slice_grad" else shape
    big = shape if node.op == "slice_grad" else em.shape(node.inputs[0])
    st_small, st_big = row_major_strides(small), row_major_strides(big)
    if node.op == "slice_grad":
        for_range(b, size(shape), lambda j: store(b, ir.Constant(F32, 0.0), out, j), "z")

    def body(idx: list[ir.Value]) -> None:
        at_small = linear(b, idx, st_small)
        moved = [b.add(v, i64(start)) if k == axis else v for k, v in enumerate(idx)]
        at_big = linear(b, moved, st_big)
        if node.op == "slice":
            store(b, load(b, src, at_big), out, at_small)
        else:
            store(b, load(b, src, at_small), out, at_big)

    nest(b, small, body)


def _leaf_context(module: ir.Module) -> tuple[ir.GlobalVariable, ir.GlobalVariable]:
    """The runtime's alpha_leaf_round and alpha_leaf_index (alpha_program.h)."""
    found = []
    for name in ("alpha_leaf_round", "alpha_leaf_index"):
        g = module.globals.get(name)
        if g is None:
            g = ir.GlobalVariable(module, I32, name)
            g.linkage = "external"
        found.append(g)
    return found[0], found[1]


def _dropout(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    shape: tuple[int, ...],
    out: ir.Value,
) -> None:
    """Training: element e of example i of leaf l in round t is kept where
    uniform01(seed, ((t · 2^32 + l · leafsize + i) · per_example + e) mod 2^64, 0) >= rate, and
    scaled by 1 / (1 - rate); else +0. Evaluation (the forward kernel): the identity."""
    src = em.ptrs[node.inputs[0]]
    n = size(shape)
    if not em.training:
        for_range(b, n, lambda j: store(b, load(b, src, j), out, j), "cp")
        return
    rate, seed = float(node.attr("rate")), int(node.attr("seed"))  # type: ignore[arg-type,call-overload]
    rows, per = shape[0], n // max(shape[0], 1)
    round_g, leaf_g = _leaf_context(em.module)
    t = b.zext(b.load(round_g, typ=I32), I64)
    leaf = b.zext(b.load(leaf_g, typ=I32), I64)
    first = b.add(b.shl(t, i64(32)), b.mul(leaf, i64(rows)))
    scale = activations.dropout_scale(A, rate)

    def element(j: ir.Value) -> None:
        i, e = b.udiv(j, i64(per)), b.urem(j, i64(per))
        index = b.add(b.mul(b.add(first, i), i64(per)), e)
        keep = activations.dropout_keep(A, seed, index, rate)
        v = load(b, src, j)
        store(b, A.select(keep, A.mul(v, scale), A.const(0.0)), out, j)

    for_range(b, n, element, "dr")


def _extreme(em: NodeContext, b: ir.IRBuilder, A: LlvmArith, node: Node, out: ir.Value) -> None:
    """max/min along an axis (every axis when it is None): m = the first element, then
    m = v > m ? v : m (v < m for min) ascending; the adjoint gives d to the first element
    holding m and +0 to the others."""
    src_shape = em.shape(node.inputs[0])
    axis = node.axis()
    if axis is None:
        outer, n, inner = 1, size(src_shape), 1
    else:
        outer, n, inner = size(src_shape[:axis]), src_shape[axis], size(src_shape[axis + 1 :])
    x = em.ptrs[node.inputs[0]]
    more = A.gt if node.op.startswith("max") else A.lt
    grad = node.op.endswith("_grad")
    if grad:
        for_range(b, size(src_shape), lambda j: store(b, ir.Constant(F32, 0.0), out, j), "z")
    best, where = entry_alloca(b), entry_alloca(b, I64)

    def line(o: ir.Value, c: ir.Value) -> None:
        base = b.add(b.mul(o, i64(n * inner)), c)
        b.store(load(b, x, base), best)
        b.store(base, where)

        def scan(k: ir.Value) -> None:
            at = b.add(base, b.mul(k, i64(inner)))
            v, m = load(b, x, at), b.load(best, typ=F32)
            hit = more(v, m)
            b.store(A.select(hit, v, m), best)
            b.store(b.select(hit, at, b.load(where, typ=I64)), where)

        for_range(b, n, scan, "mx")
        o_at = b.add(b.mul(o, i64(inner)), c)
        if grad:
            store(b, load(b, em.ptrs[node.inputs[1]], o_at), out, b.load(where, typ=I64))
        else:
            store(b, b.load(best, typ=F32), out, o_at)

    for_range(b, outer, lambda o: for_range(b, inner, lambda c: line(o, c), "in"), "out")
