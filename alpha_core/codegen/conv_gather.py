"""The gathered operand of a convolution as a product (conv_gemm.py): rows of §5's X_b or D_b
written into a worker's scratch, in the order the GEMM's k runs.

A row of the operand is a run of grid rows, each a few dozen floats (24-26 in an
MNIST-shaped CNN), so what a grid row costs beyond its floats decides the gather's speed. With
a stride of 1 every grid row that lies wholly inside the source plane reads the same columns,
so the lengths of its three runs (zeros, the plane's floats, zeros) are worked out once per row
of the operand, and each run is whole vectors: a run's last vector may spill past its end, the
next run (or the next grid row) starts there and overwrites it, and past a row's last run the
gathered block has room (lower/conv_gemm.GATHER_PAD). Its rows are that pad apart beyond their
columns, so that a block's rows spread over every L1 set while the kernels read them in place.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.loops import F32, I32, PTR, for_count, gep, i64, splat
from alpha_core.codegen.packing import min_i64
from alpha_core.ir.conv import Window
from alpha_core.semantics.llvm_arith import intrinsic

# Widest window whose gather loop is emitted once per kernel column (`Gather._grid_rows`)
CONSTANT_KW = 5


def max_i64(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _clamp(b: ir.IRBuilder, v: ir.Value, lo: ir.Value, hi: ir.Value) -> ir.Value:
    return min_i64(b, max_i64(b, v, lo), hi)


def _for(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value, body: Callable[[ir.Value], None]) -> None:
    """for (t = lo; t < hi; t++) body(t), signed bounds (none when hi <= lo)."""
    count = max_i64(b, b.sub(hi, lo), i64(0))
    for_count(b, count, lambda j: body(b.add(lo, j)), "g")


class Gather:
    """Writes rows of a gathered operand: row r of dst (row stride ld) is the operand's row
    r0 + r over its columns p0 … p0 + n - 1, a grid of `grid_w` columns per grid row.

    The operand's row index decomposes as (plane, kh, kw); its value at grid position
    (g, t) is src[plane, g·s + dh, t·s + dw] with dh, dw from kh, kw (`affine`), or, for
    conv2d_dx with a stride, the adjoint's element whose window reads (g, t) (`strided_dx`)."""

    def __init__(
        self,
        b: ir.IRBuilder,
        win: Window,
        plane: tuple[int, int],  # rows and columns of one source plane
        grid: tuple[int, int],  # rows and columns of the grid the operand's columns walk
        dx: bool,
        lanes: int,
    ) -> None:
        self.b, self.win, self.plane, self.grid, self.dx = b, win, plane, grid, dx
        self.lanes = lanes  # the target's vector width

    def rows(
        self,
        src: ir.Value,
        dst: ir.Value,
        ld: ir.Value,
        r0: ir.Value,
        nrows: ir.Value,
        p0: ir.Value,
        n: ir.Value,
    ) -> None:
        b, win = self.b, self.win
        kk = win.kh * win.kw
        sh, sw = self.plane

        def row(r: ir.Value) -> None:
            k = b.add(r0, r)
            plane = b.udiv(k, i64(kk))
            rest = b.urem(k, i64(kk))
            kh, kw = b.udiv(rest, i64(win.kw)), b.urem(rest, i64(win.kw))
            base = gep(b, src, b.mul(plane, i64(sh * sw)))
            out = gep(b, dst, b.mul(r, ld))
            self._grid_rows(base, out, kh, kw, p0, n)

        for_count(b, nrows, row, "gr")

    def _grid_rows(
        self, src: ir.Value, out: ir.Value, kh: ir.Value, kw: ir.Value, p0: ir.Value, n: ir.Value
    ) -> None:
        """out[q - p0] for grid positions q in p0 … p0 + n - 1, a grid row at a time. With a
        stride of 1 and a narrow window, the loop over grid rows is emitted once per kw, so
        that its runs' lengths are constants (the copies straight lines of whole vectors).
        As values worked out per row of the operand, they left each 26-float grid row of an
        MNIST-shaped CNN's conv2d_dx ~33 cycles of loop control around its 4-5 stores."""
        b = self.b
        if self.win.stride != 1 or self.win.kw > CONSTANT_KW:
            self._grid_rows_at(src, out, kh, kw, p0, n)
            return
        done = b.append_basic_block("kw.done")
        switch = b.switch(kw, done)  # kw < KW: the default is never taken
        for c in range(self.win.kw):
            case = b.append_basic_block(f"kw{c}")
            switch.add_case(i64(c), case)
            b.position_at_end(case)
            self._grid_rows_at(src, out, kh, i64(c), p0, n)
            b.branch(done)
        b.position_at_end(done)

    def _grid_rows_at(
        self, src: ir.Value, out: ir.Value, kh: ir.Value, kw: ir.Value, p0: ir.Value, n: ir.Value
    ) -> None:
        b = self.b
        gw = self.grid[1]
        first = b.udiv(p0, i64(gw))
        last = b.udiv(b.sub(b.add(p0, n), i64(1)), i64(gw))
        if self.win.stride == 1:
            # a whole grid row inside the plane reads the same columns in every row: its
            # three runs' lengths are the k row's, worked out once here
            sh, sw = self.plane
            dh, dw = self._offsets(kh, kw)
            lo0 = _clamp(b, b.sub(i64(0), dw), i64(0), i64(gw))
            hi0 = _clamp(b, b.sub(i64(sw), dw), lo0, i64(gw))

        def grid_row(j: ir.Value) -> None:
            g = b.add(first, j)
            at = b.mul(g, i64(gw))  # the grid row's first position
            a = max_i64(b, b.sub(p0, at), i64(0))
            e = min_i64(b, b.sub(b.add(p0, n), at), i64(gw))
            shift = b.sub(at, p0)  # out index of column t: shift + t
            if self.win.stride > 1:
                if self.dx:
                    self._strided_dx(src, out, shift, g, kh, kw, a, e)
                else:
                    self._affine(src, out, shift, g, kh, kw, a, e)
                return
            srow = b.add(g, dh)
            whole = b.and_(
                b.and_(b.icmp_signed("==", a, i64(0)), b.icmp_signed("==", e, i64(gw))),
                b.and_(b.icmp_signed(">=", srow, i64(0)), b.icmp_signed("<", srow, i64(sh))),
            )
            with b.if_else(whole) as (then, other):
                with then:
                    line = gep(b, src, b.add(b.mul(srow, i64(sw)), dw))
                    self._runs(line, gep(b, out, shift), (i64(0), lo0, hi0, i64(gw)))
                with other:
                    self._affine(src, out, shift, g, kh, kw, a, e)

        for_count(b, b.add(b.sub(last, first), i64(1)), grid_row, "gg")

    def _run(self, src: ir.Value | None, dst: ir.Value, n: ir.Value) -> None:
        """dst[0 … n-1] = src[0 … n-1] (src None: +0.0), n >= 0, in whole vectors: the last
        one may write up to lanes - 1 floats past n. A row's runs are written in ascending
        order, each starting where the one before it ends, so a later run overwrites what the
        one before spilled; past the row's last run there is room (GATHER_PAD floats beyond a
        row's columns, or the next row, written after it). The grid's rows are short (24-26
        floats in an MNIST-shaped CNN): a scalar loop or a masked store (slow on AMD) at each
        end cost more than the floats. A source is never read past n: its last partial
        vector is one masked load."""
        b, lanes = self.b, self.lanes
        vec = ir.VectorType(F32, lanes)
        if src is None:
            zero = ir.Constant(vec, None)
            whole = b.udiv(b.add(n, i64(lanes - 1)), i64(lanes))
            for_count(b, whole, lambda j: self._put(zero, dst, b.mul(j, i64(lanes))), "zv")
            return
        whole = b.udiv(n, i64(lanes))

        def one(j: ir.Value) -> None:
            at = b.mul(j, i64(lanes))
            self._put(b.load(gep(b, src, at, vec), typ=vec, align=4), dst, at)

        for_count(b, whole, one, "cv")
        done = b.mul(whole, i64(lanes))
        rest = b.trunc(b.sub(n, done), I32)
        with b.if_then(b.icmp_unsigned("!=", rest, ir.Constant(I32, 0))):
            lane = ir.Constant(ir.VectorType(I32, lanes), list(range(lanes)))
            mask = b.icmp_unsigned("<", lane, splat(b, rest, lanes))
            mask_ty = ir.VectorType(ir.IntType(1), lanes)
            name = f"llvm.masked.load.v{lanes}f32.p0"
            load_fn = intrinsic(b.module, name, vec, [PTR, I32, mask_ty, vec])
            zero = ir.Constant(vec, None)
            v = b.call(load_fn, [gep(b, src, done), ir.Constant(I32, 4), mask, zero])
            self._put(v, dst, done)

    def _runs(self, line: ir.Value, dst: ir.Value, bounds: tuple[ir.Value, ...]) -> None:
        """dst[t] for t in a … e - 1, bounds (a, lo, hi, e): +0.0, then line[t] from lo, then
        +0.0 from hi; three runs, each overwriting what the one before spilled."""
        b = self.b
        a, lo, hi, e = bounds
        self._run(None, gep(b, dst, a), b.sub(lo, a))
        self._run(gep(b, line, lo), gep(b, dst, lo), b.sub(hi, lo))
        self._run(None, gep(b, dst, hi), b.sub(e, hi))

    def _put(self, v: ir.Value, dst: ir.Value, at: ir.Value) -> None:
        self.b.store(v, gep(self.b, dst, at, v.type), align=4)

    def _zero(self, out: ir.Value, shift: ir.Value, lo: ir.Value, hi: ir.Value) -> None:
        b = self.b
        _for(b, lo, hi, lambda t: b.store(ir.Constant(F32, 0.0), gep(b, out, b.add(shift, t))))

    def _offsets(self, kh: ir.Value, kw: ir.Value) -> tuple[ir.Value, ir.Value]:
        """dh, dw: the source row of grid row g is g·s + dh, its column of t is t·s + dw."""
        b, pad = self.b, self.win.padding
        if self.dx:  # stride 1
            return b.sub(i64(pad), kh), b.sub(i64(pad), kw)
        return b.sub(kh, i64(pad)), b.sub(kw, i64(pad))

    def _affine(
        self,
        src: ir.Value,
        out: ir.Value,
        shift: ir.Value,
        g: ir.Value,
        kh: ir.Value,
        kw: ir.Value,
        a: ir.Value,
        e: ir.Value,
    ) -> None:
        """Source row g·s + dh, columns t·s + dw: x for out and dw (d = k - p), the adjoint for
        a dx of stride 1 (d = p - k). Zeros where that is outside the plane."""
        b = self.b
        s = self.win.stride
        sh, sw = self.plane
        dh, dw = self._offsets(kh, kw)
        srow = b.add(b.mul(g, i64(s)), dh)
        inside = b.and_(b.icmp_signed(">=", srow, i64(0)), b.icmp_signed("<", srow, i64(sh)))
        with b.if_else(inside) as (then, other):
            with then:
                # columns t with 0 <= t·s + dw <= sw - 1
                neg = b.sub(i64(0), dw)
                lo = b.select(
                    b.icmp_signed(">", neg, i64(0)), b.sdiv(b.add(neg, i64(s - 1)), i64(s)), i64(0)
                )
                top = b.sub(i64(sw - 1), dw)
                hi = b.select(
                    b.icmp_signed(">=", top, i64(0)), b.add(b.sdiv(top, i64(s)), i64(1)), i64(0)
                )
                lo = _clamp(b, lo, a, e)
                hi = _clamp(b, hi, lo, e)
                line = gep(b, src, b.add(b.mul(srow, i64(sw)), dw))  # column t at t·s
                dst = gep(b, out, shift)
                if s == 1:
                    self._runs(line, dst, (a, lo, hi, e))
                else:
                    self._zero(out, shift, a, lo)
                    _for(
                        b,
                        lo,
                        hi,
                        lambda t: b.store(
                            b.load(gep(b, line, b.mul(t, i64(s))), typ=F32, align=4),
                            gep(b, dst, t),
                            align=4,
                        ),
                    )
                    self._zero(out, shift, hi, e)
            with other:
                if s == 1:
                    self._run(None, gep(b, out, b.add(shift, a)), b.sub(e, a))
                else:
                    self._zero(out, shift, a, e)

    def _strided_dx(
        self,
        src: ir.Value,
        out: ir.Value,
        shift: ir.Value,
        g: ir.Value,
        kh: ir.Value,
        kw: ir.Value,
        a: ir.Value,
        e: ir.Value,
    ) -> None:
        """dx with a stride: input position (g, t) is read at (kh, kw) by output
        ((g + p - kh) / s, (t + p - kw) / s) where both divide exactly and are inside."""
        from alpha_core.codegen.conv_ops import _target  # the loops' own geometry

        b, win = self.b, self.win
        oh_n, ow_n = self.plane
        oh, okh = _target(b, win, g, kh, oh_n)

        def one(t: ir.Value) -> None:
            ow, okw = _target(b, win, t, kw, ow_n)
            v = b.load(gep(b, src, b.add(b.mul(oh, i64(ow_n)), ow)), typ=F32, align=4)
            v = b.select(b.and_(okh, okw), v, ir.Constant(F32, 0.0))
            b.store(v, gep(b, out, b.add(shift, t)), align=4)

        _for(b, a, e, one)
