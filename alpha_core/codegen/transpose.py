"""The last two axes of a tensor swapped: out[l, c, r] = a[l, r, c] for each leading index l.

A copy moves no bits through arithmetic, so only speed is at stake. Element by element, one of
the two sides is read or written a row apart at every step (attention's heads: 64 x 64 and
64 x 32 matrices, about 3 cycles an element). Where both axes are multiples of 8 the matrix
goes in 8 x 8 blocks instead: eight rows of eight read as vectors, transposed in registers by
three rounds of shuffles (pairs of rows interleaved, then pairs of pairs, then the halves), and
stored as eight vectors along the output's rows.
"""

from __future__ import annotations

from llvmlite import ir

from alpha_core.codegen.loops import F32, I32, for_range, gep, i64, linear, load, nest, store

BLOCK = 8
_V = ir.VectorType(F32, BLOCK)


def _mix(b: ir.IRBuilder, x: ir.Value, y: ir.Value, mask: list[int]) -> ir.Value:
    return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, BLOCK), mask))


def _block(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The columns of an 8 x 8 block given as its rows (each shuffle mask picks, per 4-wide
    half, elements of x as 0-7 and of y as 8-15)."""
    low, high = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
    t = []
    for i in range(0, BLOCK, 2):  # rows 2i, 2i + 1 interleaved
        t += [_mix(b, rows[i], rows[i + 1], low), _mix(b, rows[i], rows[i + 1], high)]
    pair_lo, pair_hi = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
    u = []
    for base in (0, 4):  # rows 0-3, then rows 4-7: columns (c, c + 4) of four rows
        ta, tb, tc, td = t[base], t[base + 1], t[base + 2], t[base + 3]
        u += [
            _mix(b, ta, tc, pair_lo),  # columns 0, 4
            _mix(b, ta, tc, pair_hi),  # 1, 5
            _mix(b, tb, td, pair_lo),  # 2, 6
            _mix(b, tb, td, pair_hi),  # 3, 7
        ]
    first, second = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]
    return [_mix(b, u[c], u[c + 4], first) for c in range(4)] + [
        _mix(b, u[c], u[c + 4], second) for c in range(4)
    ]


def emit_transpose(b: ir.IRBuilder, a: ir.Value, out: ir.Value, lead: int, m: int, n: int) -> None:
    """out (lead x n x m) = a (lead x m x n) with its last two axes swapped."""
    if m % BLOCK or n % BLOCK:
        nest(
            b,
            (lead, m, n),
            lambda idx: store(
                b, load(b, a, linear(b, idx, (m * n, n, 1))), out, linear(b, idx, (m * n, 1, m))
            ),
        )
        return

    def tile(idx: list[ir.Value]) -> None:
        g, bi, bj = idx
        r0, c0 = b.mul(bi, i64(BLOCK)), b.mul(bj, i64(BLOCK))
        base = b.mul(g, i64(m * n))
        src = b.add(base, b.add(b.mul(r0, i64(n)), c0))
        rows = [
            b.load(gep(b, a, b.add(src, i64(r * n)), _V), typ=_V, align=4) for r in range(BLOCK)
        ]
        dst = b.add(base, b.add(b.mul(c0, i64(m)), r0))
        for c, col in enumerate(_block(b, rows)):
            b.store(col, gep(b, out, b.add(dst, i64(c * m)), _V), align=4)

    for_range(
        b,
        lead,
        lambda g: nest(b, (m // BLOCK, n // BLOCK), lambda idx: tile([g, *idx])),
        "tg",
    )
