"""Loops for 2-D convolution and pooling, and their adjoints, in the orders of
docs/semantics.md. A padded position is selected away as +0.0, which adds nothing to a sum
that starts at +0.0 (such a sum is never -0.0), so it gives the bits of skipping it.

A convolution large enough (lower/conv_gemm.on_gemm) is instead a product on the packed GEMM
over an operand gathered in the same order (conv_gemm.py, whose docstring argues the bits); the
small ones keep these loops, as small matmuls keep theirs."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.conv_gemm import emit_conv_product
from alpha_core.codegen.loops import F32, I64, entry_alloca, for_range, i64, load, store
from alpha_core.codegen.node_context import NodeContext
from alpha_core.codegen.pool_lanes import covers, emit_max_pool_lanes
from alpha_core.ir.conv import Window, window_of
from alpha_core.ir.graph import Node, size
from alpha_core.lower.conv_gemm import on_gemm
from alpha_core.semantics.llvm_arith import LlvmArith

Loop = Callable[[ir.Value], None]


def _loops(b: ir.IRBuilder, dims: tuple[int, ...], body: Callable[[list[ir.Value]], None]) -> None:
    def level(k: int, idx: list[ir.Value]) -> None:
        if k == len(dims):
            body(idx)
            return
        for_range(b, dims[k], lambda i: level(k + 1, [*idx, i]), f"c{k}")

    level(0, [])


def _at(b: ir.IRBuilder, idx: list[ir.Value], dims: tuple[int, ...]) -> ir.Value:
    """Row-major offset of idx in a tensor of `dims`."""
    off: ir.Value = idx[0]
    for i, n in zip(idx[1:], dims[1:], strict=True):
        off = b.add(b.mul(off, i64(n)), i)
    return off


def add_term(
    b: ir.IRBuilder, A: LlvmArith, slot: ir.Value, v: ir.Value, keep: ir.Value | None = None
) -> None:
    """slot += v, or + +0.0 where not `keep` (a padded position)."""
    if keep is not None:
        v = b.select(keep, v, A.const(0.0))
    b.store(A.add(b.load(slot, typ=F32), v), slot)


def add_product(
    b: ir.IRBuilder, A: LlvmArith, slot: ir.Value, x: ir.Value, y: ir.Value, keep: ir.Value
) -> None:
    """A term x · y of the sum at `slot` in the system's arithmetic, skipped where not `keep` (a
    padded position): unfused, the product or +0.0 is added; fused, fma(x, y, sum) or the sum as
    it was (the bits of fma(+0.0, y, sum) for a finite y, as conv_gemm.py gathers). The CPU
    loops here and the GPU bodies (gpu_conv.py) both add their terms with it."""
    if not A.fused:
        add_term(b, A, slot, A.mul(x, y), keep)
        return
    held = b.load(slot, typ=F32)
    b.store(b.select(keep, A.muladd(held, x, y), held), slot)


class _Sum:
    """A float accumulator in a stack slot, from +0.0."""

    def __init__(self, b: ir.IRBuilder, A: LlvmArith) -> None:
        self.b, self.A = b, A
        self.slot = entry_alloca(b)

    def start(self) -> None:
        self.b.store(self.A.const(0.0), self.slot)

    def add(self, v: ir.Value, keep: ir.Value | None = None) -> None:
        add_term(self.b, self.A, self.slot, v, keep)

    def add_product(self, x: ir.Value, y: ir.Value, keep: ir.Value) -> None:
        add_product(self.b, self.A, self.slot, x, y, keep)

    def value(self) -> ir.Value:
        return self.b.load(self.slot, typ=F32)


def _inside(b: ir.IRBuilder, v: ir.Value, n: int) -> ir.Value:
    return b.and_(b.icmp_signed(">=", v, i64(0)), b.icmp_signed("<", v, i64(n)))


def _clamped(b: ir.IRBuilder, v: ir.Value, ok: ir.Value) -> ir.Value:
    return b.select(ok, v, i64(0))


def _source(
    b: ir.IRBuilder, win: Window, o: ir.Value, k: int | ir.Value, n: int
) -> tuple[ir.Value, ir.Value]:
    """The input index o * stride + k - padding of an output index, and whether it is inside."""
    kk = i64(k) if isinstance(k, int) else k
    v = b.sub(b.add(b.mul(o, i64(win.stride)), kk), i64(win.padding))
    ok = _inside(b, v, n)
    return _clamped(b, v, ok), ok


def _target(
    b: ir.IRBuilder, win: Window, i: ir.Value, k: ir.Value, n: int
) -> tuple[ir.Value, ir.Value]:
    """The output index that reads input index i at kernel offset k, and whether there is one."""
    t = b.sub(b.add(i, i64(win.padding)), k)
    ok = b.icmp_signed(">=", t, i64(0))
    t = _clamped(b, t, ok)
    if win.stride > 1:
        ok = b.and_(ok, b.icmp_unsigned("==", b.urem(t, i64(win.stride)), i64(0)))
        t = b.udiv(t, i64(win.stride))
    ok = b.and_(ok, b.icmp_signed("<", t, i64(n)))
    return _clamped(b, t, ok), ok


def emit_conv_op(
    em: NodeContext, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value
) -> None:
    win = window_of(node.attrs)
    shape = em.shape(i)
    ins = [em.ptrs[j] for j in node.inputs]
    op = node.op
    if len(node.inputs) == 2:
        shapes = (shape, em.shape(node.inputs[0]), em.shape(node.inputs[1]))
        if on_gemm(op, shapes[0], shapes[1:]):
            emit_conv_product(em.gemm, b, node, shapes, (out, ins[0], ins[1]))
            return
    acc = _Sum(b, A)
    if op == "conv2d":
        x, w = ins
        xs, ws = em.shape(node.inputs[0]), em.shape(node.inputs[1])

        def forward(idx: list[ir.Value]) -> None:
            bi, o, oh, ow = idx
            acc.start()

            def term(k: list[ir.Value]) -> None:
                c, kh, kw = k
                ih, okh = _source(b, win, oh, kh, xs[2])
                iw, okw = _source(b, win, ow, kw, xs[3])
                xv = load(b, x, _at(b, [bi, c, ih, iw], xs))
                wv = load(b, w, _at(b, [o, c, kh, kw], ws))
                acc.add_product(xv, wv, b.and_(okh, okw))

            _loops(b, (ws[1], ws[2], ws[3]), term)
            store(b, acc.value(), out, _at(b, idx, shape))

        _loops(b, shape, forward)
    elif op == "conv2d_dx":
        d, w = ins
        ds, ws = em.shape(node.inputs[0]), em.shape(node.inputs[1])

        def back_x(idx: list[ir.Value]) -> None:
            bi, c, ih, iw = idx
            acc.start()

            def term(k: list[ir.Value]) -> None:
                o, kh, kw = k
                oh, okh = _target(b, win, ih, kh, ds[2])
                ow, okw = _target(b, win, iw, kw, ds[3])
                wv = load(b, w, _at(b, [o, c, kh, kw], ws))
                dv = load(b, d, _at(b, [bi, o, oh, ow], ds))
                acc.add_product(wv, dv, b.and_(okh, okw))

            _loops(b, (ws[0], ws[2], ws[3]), term)
            store(b, acc.value(), out, _at(b, idx, shape))

        _loops(b, shape, back_x)
    elif op == "conv2d_dw":
        x, d = ins
        xs, ds = em.shape(node.inputs[0]), em.shape(node.inputs[1])

        def back_w(idx: list[ir.Value]) -> None:
            o, c, kh, kw = idx
            acc.start()

            def term(k: list[ir.Value]) -> None:
                bi, oh, ow = k
                ih, okh = _source(b, win, oh, kh, xs[2])
                iw, okw = _source(b, win, ow, kw, xs[3])
                xv = load(b, x, _at(b, [bi, c, ih, iw], xs))
                dv = load(b, d, _at(b, [bi, o, oh, ow], ds))
                acc.add_product(xv, dv, b.and_(okh, okw))

            _loops(b, (ds[0], ds[2], ds[3]), term)
            store(b, acc.value(), out, _at(b, idx, shape))

        _loops(b, shape, back_w)
    else:
        _pool(em, b, A, node, win, shape, ins, out, acc)


def _pool(
    em: NodeContext,
    b: ir.IRBuilder,
    A: LlvmArith,
    node: Node,
    win: Window,
    shape: tuple[int, ...],
    ins: list[ir.Value],
    out: ir.Value,
    acc: _Sum,
) -> None:
    op = node.op
    xs = shape if op.endswith("_grad") else em.shape(node.inputs[0])
    h, w = xs[-2:]
    lead = size(xs[:-2])
    if covers(op, win):  # the 2 x 2 max pool of stride 2, across lanes
        emit_max_pool_lanes(b, A, op.endswith("_grad"), lead, (h, w), ins, out, em.gemm.k.width)
        return
    oh_n, ow_n = win.out_size(h, w)
    count = A.const(float(win.kh * win.kw))

    def at(g: ir.Value, r: ir.Value, c: ir.Value) -> ir.Value:
        return _at(b, [g, r, c], (lead, h, w))

    def window_pos(oh: ir.Value, ow: ir.Value, kh: ir.Value, kw: ir.Value) -> tuple[ir.Value, ...]:
        r = b.add(b.mul(oh, i64(win.stride)), kh)
        c = b.add(b.mul(ow, i64(win.stride)), kw)
        return r, c

    if op.endswith("_grad"):
        for_range(b, size(shape), lambda j: store(b, ir.Constant(F32, 0.0), out, j), "z")
    best = entry_alloca(b)
    where = entry_alloca(b, I64)

    def window(idx: list[ir.Value]) -> None:
        g, oh, ow = idx
        o_at = _at(b, idx, (lead, oh_n, ow_n))
        if op in ("max_pool", "max_pool_grad"):
            x = ins[0]
            first = at(g, *window_pos(oh, ow, i64(0), i64(0)))
            b.store(load(b, x, first), best)
            b.store(first, where)

            def scan(k: list[ir.Value]) -> None:
                p = at(g, *window_pos(oh, ow, k[0], k[1]))
                v, m = load(b, x, p), b.load(best, typ=F32)
                more = A.gt(v, m)
                b.store(A.select(more, v, m), best)
                b.store(b.select(more, p, b.load(where, typ=I64)), where)

            _loops(b, (win.kh, win.kw), scan)
            if op == "max_pool":
                store(b, b.load(best, typ=F32), out, o_at)
            else:
                p = b.load(where, typ=I64)
                store(b, A.add(load(b, out, p), load(b, ins[1], o_at)), out, p)
        elif op == "avg_pool":
            acc.start()
            _loops(
                b,
                (win.kh, win.kw),
                lambda k: acc.add(load(b, ins[0], at(g, *window_pos(oh, ow, k[0], k[1])))),
            )
            store(b, A.div(acc.value(), count), out, o_at)
        else:  # avg_pool_grad: each window's share d / count added to its positions
            share = A.div(load(b, ins[0], o_at), count)

            def spread(k: list[ir.Value]) -> None:
                p = at(g, *window_pos(oh, ow, k[0], k[1]))
                store(b, A.add(load(b, out, p), share), out, p)

            _loops(b, (win.kh, win.kw), spread)

    _loops(b, (lead, oh_n, ow_n), window)
