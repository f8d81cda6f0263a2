"""GPU bodies of the convolution and pooling ops: output t by one thread, in the orders of
conv_ops.py (docs/semantics.md).

The convolution and its two adjoints already gather: each output is one sum over a fixed set of
terms, added from +0.0 in the host's loop order. The pools' adjoints scatter on the host (each
window adds into the positions it covers, windows in row-major order); here the thread of a
position walks the windows in that same order and adds what each gives it, so every position
receives the same additions in the same order.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.conv_ops import _at, _source, _target, add_product, add_term
from alpha_core.codegen.loops import F32, I64, entry_alloca, i64, store
from alpha_core.ir.conv import Window, window_of
from alpha_core.ir.graph import Node, size
from alpha_core.semantics.llvm_arith import LlvmArith

Read = Callable[[int, ir.Value], ir.Value]  # (input k of the node, offset) -> its value
Loop = Callable[[int, Callable[[ir.Value], None], str], None]
Unravel = Callable[[ir.Value, tuple[int, ...]], list[ir.Value]]


class ConvBody:
    """Emits output t of one conv or pool node (the caller owns loops and reads)."""

    def __init__(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        shapes: list[tuple[int, ...]],
        read: Read,
        loop: Loop,
        unravel: Unravel,
    ) -> None:
        self.b, self.A, self.node = b, A, node
        self.shapes = shapes  # the inputs' shapes
        self.read, self.loop, self.unravel = read, loop, unravel
        self.win: Window = window_of(node.attrs)
        self.acc = entry_alloca(b)

    def _nest(self, dims: tuple[int, ...], body: Callable[[list[ir.Value]], None]) -> None:
        def level(k: int, idx: list[ir.Value]) -> None:
            if k == len(dims):
                body(idx)
                return
            self.loop(dims[k], lambda j: level(k + 1, [*idx, j]), f"c{k}")

        level(0, [])

    def _add_product(self, x: ir.Value, y: ir.Value, keep: ir.Value) -> None:
        add_product(self.b, self.A, self.acc, x, y, keep)  # the CPU loops' term, the same bits

    def _add(self, v: ir.Value, keep: ir.Value | None = None) -> None:
        add_term(self.b, self.A, self.acc, v, keep)

    def emit(self, shape: tuple[int, ...], out: ir.Value, t: ir.Value) -> int:
        """Output t of the node; returns the thread count."""
        b, win, op = self.b, self.win, self.node.op
        b.store(ir.Constant(F32, 0.0), self.acc)
        if op == "conv2d":
            xs, ws = self.shapes
            bi, o, oh, ow = self.unravel(t, shape)

            def term(k: list[ir.Value]) -> None:
                c, kh, kw = k
                ih, okh = _source(b, win, oh, kh, xs[2])
                iw, okw = _source(b, win, ow, kw, xs[3])
                xv = self.read(0, _at(b, [bi, c, ih, iw], xs))
                wv = self.read(1, _at(b, [o, c, kh, kw], ws))
                self._add_product(xv, wv, b.and_(okh, okw))

            self._nest((ws[1], ws[2], ws[3]), term)
        elif op == "conv2d_dx":
            ds, ws = self.shapes
            bi, c, ih, iw = self.unravel(t, shape)

            def term_x(k: list[ir.Value]) -> None:
                o, kh, kw = k
                oh, okh = _target(b, win, ih, kh, ds[2])
                ow, okw = _target(b, win, iw, kw, ds[3])
                wv = self.read(1, _at(b, [o, c, kh, kw], ws))
                dv = self.read(0, _at(b, [bi, o, oh, ow], ds))
                self._add_product(wv, dv, b.and_(okh, okw))

            self._nest((ws[0], ws[2], ws[3]), term_x)
        elif op == "conv2d_dw":
            xs, ds = self.shapes
            o, c, kh, kw = self.unravel(t, shape)

            def term_w(k: list[ir.Value]) -> None:
                bi, oh, ow = k
                ih, okh = _source(b, win, oh, kh, xs[2])
                iw, okw = _source(b, win, ow, kw, xs[3])
                xv = self.read(0, _at(b, [bi, c, ih, iw], xs))
                dv = self.read(1, _at(b, [bi, o, oh, ow], ds))
                self._add_product(xv, dv, b.and_(okh, okw))

            self._nest((ds[0], ds[2], ds[3]), term_w)
        else:
            return self._pool(shape, out, t)
        store(b, b.load(self.acc, typ=F32), out, t)
        return max(1, size(shape))

    def _argmax(self, g: ir.Value, oh: ir.Value, ow: ir.Value, plane: tuple[int, ...]) -> ir.Value:
        """The input offset of window (oh, ow)'s maximum: the first position, then a later one
        only where it is greater (max_pool's scan on the host)."""
        b, A, win = self.b, self.A, self.win
        best, where = entry_alloca(b), entry_alloca(b, I64)

        def pos(kh: ir.Value, kw: ir.Value) -> ir.Value:
            r = b.add(b.mul(oh, i64(win.stride)), kh)
            c = b.add(b.mul(ow, i64(win.stride)), kw)
            return _at(b, [g, r, c], plane)

        first = pos(i64(0), i64(0))
        b.store(self.read(0, first), best)
        b.store(first, where)

        def scan(k: list[ir.Value]) -> None:
            p = pos(k[0], k[1])
            v, m = self.read(0, p), b.load(best, typ=F32)
            more = A.gt(v, m)
            b.store(A.select(more, v, m), best)
            b.store(b.select(more, p, b.load(where, typ=I64)), where)

        self._nest((win.kh, win.kw), scan)
        self._best = b.load(best, typ=F32)
        return b.load(where, typ=I64)

    def _pool(self, shape: tuple[int, ...], out: ir.Value, t: ir.Value) -> int:
        b, A, win, op = self.b, self.A, self.win, self.node.op
        grad = op.endswith("_grad")
        xs = shape if grad else self.shapes[0]
        h, w = xs[-2:]
        lead = size(xs[:-2])
        plane = (lead, h, w)
        oh_n, ow_n = win.out_size(h, w)
        count = A.const(float(win.kh * win.kw))
        if not grad:  # one thread per window
            g, oh, ow = self.unravel(t, (lead, oh_n, ow_n))
            if op == "max_pool":
                self._argmax(g, oh, ow, plane)
                store(b, self._best, out, t)
            else:

                def add(k: list[ir.Value]) -> None:
                    r = b.add(b.mul(oh, i64(win.stride)), k[0])
                    c = b.add(b.mul(ow, i64(win.stride)), k[1])
                    self._add(self.read(0, _at(b, [g, r, c], plane)))

                self._nest((win.kh, win.kw), add)
                store(b, A.div(b.load(self.acc, typ=F32), count), out, t)
            return lead * oh_n * ow_n
        # one thread per input position: the windows in row-major order, each adding its share
        g, r, c = self.unravel(t, plane)
        d = 1 if op == "max_pool_grad" else 0  # the input holding the adjoint

        def window(k: list[ir.Value]) -> None:
            oh, ow = k
            o_at = _at(b, [g, oh, ow], (lead, oh_n, ow_n))
            if op == "max_pool_grad":
                mine = b.icmp_unsigned("==", self._argmax(g, oh, ow, plane), t)
                self._add(self.read(d, o_at), mine)
            else:
                r0, c0 = b.mul(oh, i64(win.stride)), b.mul(ow, i64(win.stride))
                inside = b.and_(
                    b.and_(
                        b.icmp_unsigned(">=", r, r0),
                        b.icmp_unsigned("<", r, b.add(r0, i64(win.kh))),
                    ),
                    b.and_(
                        b.icmp_unsigned(">=", c, c0),
                        b.icmp_unsigned("<", c, b.add(c0, i64(win.kw))),
                    ),
                )
                self._add(A.div(self.read(d, o_at), count), inside)

        self._nest((oh_n, ow_n), window)
        store(b, b.load(self.acc, typ=F32), out, t)
        return lead * h * w
