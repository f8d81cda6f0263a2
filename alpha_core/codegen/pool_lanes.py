"""The max pool CNNs use (2 x 2 windows, stride 2, no padding) and its adjoint, across vector
lanes: a lane is a window, a vector a run of windows along one output row.

Each lane does what the loop over windows (conv_ops.py) does for its window, in the same order:
the window's first value is the best so far, then each later position in (kh, kw) order
replaces it where it is greater (an ordered compare: a NaN never replaces, and a tie keeps
the earlier position). The two input rows of a run are 2·L adjacent floats each, loaded whole
and split into their even and odd columns by shuffles.

The adjoint. Windows of stride 2 and size 2 never overlap, so an input position receives at
most one window's gradient: the loop adds it to a +0.0 stored beforehand (+0.0 + d), and every
other position keeps that +0.0. Here each position is written once: +0.0 + d where it is its
window's best, +0.0 elsewhere, the two columns of a row interleaved back by a shuffle. Only
where the windows do not cover the plane (an odd height or width) is the output zeroed first,
for the last row or column no window reads."""

from __future__ import annotations

from llvmlite import ir

from alpha_core.codegen.loops import F32, I32, for_range, gep, i64
from alpha_core.ir.conv import Window
from alpha_core.semantics.llvm_arith import LlvmArith

SIZE = 2  # the window (and stride) this covers


def covers(op: str, win: Window) -> bool:
    """Whether the pool node runs across lanes here."""
    sized = win.kh == win.kw == win.stride == SIZE
    return op in ("max_pool", "max_pool_grad") and sized and win.padding == 0


def emit_max_pool_lanes(
    b: ir.IRBuilder,
    A: LlvmArith,
    grad: bool,
    lead: int,
    plane: tuple[int, int],
    ins: list[ir.Value],
    out: ir.Value,
    lanes: int,
) -> None:
    """max_pool (out: lead x OH x OW from ins[0]: lead x H x W) or, with `grad`, its adjoint
    (out: lead x H x W from x = ins[0] and the output's adjoint ins[1])."""
    h, w = plane
    oh_n, ow_n = h // SIZE, w // SIZE
    if grad and (h != SIZE * oh_n or w != SIZE * ow_n):
        count = lead * h * w
        for_range(b, count, lambda j: b.store(ir.Constant(F32, 0.0), gep(b, out, j)), "z")
    x = ins[0]

    def run(g: ir.Value, oh: ir.Value, ow0: ir.Value, n: int) -> None:
        """Windows ow0 … ow0 + n - 1 of output row oh of plane g."""
        pair = ir.VectorType(F32, SIZE * n)
        one = ir.VectorType(F32, n)
        first = b.add(
            b.mul(b.add(b.mul(g, i64(h)), b.mul(oh, i64(SIZE))), i64(w)), b.mul(ow0, i64(SIZE))
        )
        rows = [b.add(first, i64(kh * w)) for kh in range(SIZE)]
        lines = [b.load(gep(b, x, at, pair), typ=pair, align=4) for at in rows]
        undef = ir.Constant(pair, ir.Undefined)

        def column(v: ir.Value, kw: int) -> ir.Value:
            pick = ir.Constant(ir.VectorType(I32, n), [SIZE * i + kw for i in range(n)])
            return b.shuffle_vector(v, undef, pick)

        terms = [column(lines[kh], kw) for kh in range(SIZE) for kw in range(SIZE)]
        best = terms[0]
        code_ty = ir.VectorType(I32, n)
        code: ir.Value = ir.Constant(code_ty, [0] * n)
        for t, v in enumerate(terms[1:], start=1):
            more = A.gt(v, best)
            best = A.select(more, v, best)
            code = b.select(more, ir.Constant(code_ty, [t] * n), code)
        at = b.add(b.mul(b.add(b.mul(g, i64(oh_n)), oh), i64(ow_n)), ow0)
        if not grad:
            b.store(best, gep(b, out, at, one), align=4)
            return
        zero = ir.Constant(one, None)
        d = b.load(gep(b, ins[1], at, one), typ=one, align=4)
        value = A.add(zero, d)  # the loop's +0.0 + d
        weave = ir.Constant(
            ir.VectorType(I32, SIZE * n), [i + n * kw for i in range(n) for kw in range(SIZE)]
        )
        for kh in range(SIZE):
            cols = []
            for kw in range(SIZE):
                mine = b.icmp_signed("==", code, ir.Constant(code_ty, [kh * SIZE + kw] * n))
                cols.append(b.select(mine, value, zero))
            b.store(b.shuffle_vector(cols[0], cols[1], weave), gep(b, out, rows[kh], pair), align=4)

    whole, rest = divmod(ow_n, lanes)
    tails = []  # the rest of a row in vectors of halving widths
    width, at = lanes // 2, whole * lanes
    while rest:
        if rest >= width:
            tails.append((at, width))
            at, rest = at + width, rest - width
        width //= 2

    def row(g: ir.Value, oh: ir.Value) -> None:
        for_range(b, whole, lambda q: run(g, oh, b.mul(q, i64(lanes)), lanes), "pw")
        for start, n in tails:
            run(g, oh, i64(start), n)

    for_range(b, lead, lambda g: for_range(b, oh_n, lambda oh: row(g, oh), "ph"), "pg")
