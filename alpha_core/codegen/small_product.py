"""Products too small for the packed GEMM (gemm.py): out[m, n] = Σ_k a[m, k] · c[k, n], k
ascending from +0.0, each output's terms added one at a time.

Lanes run over n and a block of ROWS rows by VECTORS vectors of the CPU level's width goes
together (all independent outputs): each output keeps its accumulator in a register for the
whole k loop and is stored once, each row of c loaded serves ROWS rows, and the ROWS x VECTORS
accumulators are independent chains, as many as the multiply-adds in flight need (four were
latency-bound: attention's products ran at 43 GFLOP/s). The plain matmul of a small layer uses
it, and so does each matrix of a batched product (attention's scores and its product with the
values), at the offsets of its group. No sum changes its order.
"""

from __future__ import annotations

from llvmlite import ir

from alpha_core.codegen.loops import F32, LANES, entry_alloca, for_range, i64, load, splat, store
from alpha_core.semantics.llvm_arith import LlvmArith

ROWS = 4  # rows of a product computed together
VECTORS = 2  # vectors of columns computed together


def emit_small_product(
    b: ir.IRBuilder,
    A: LlvmArith,
    out: ir.Value,
    a: ir.Value,
    c: ir.Value,
    m: int,
    n: int,
    k: int,
    offsets: tuple[ir.Value, ir.Value, ir.Value] | None = None,
    lanes: int = LANES,
) -> None:
    """out = a · c for row-major a (m x k), c (k x n), out (m x n), each read from its
    `offsets` (elements; none: 0) when they are one matrix of a batch; `lanes`: the CPU
    level's vector width."""
    zero = i64(0)
    a0, c0, o0 = offsets or (zero, zero, zero)
    blocks, rest = divmod(n, lanes)
    groups, single = divmod(blocks, VECTORS)

    def accumulate(m0: ir.Value, rows: int, col: ir.Value, width: int, vecs: int) -> None:
        ty = ir.VectorType(F32, width) if width > 1 else F32
        slots = [[entry_alloca(b, ty) for _ in range(vecs)] for _ in range(rows)]
        for row_slots in slots:
            for slot in row_slots:
                b.store(ir.Constant(ty, None), slot)

        def step(ki: ir.Value) -> None:
            at = b.add(c0, b.add(b.mul(ki, i64(n)), col))
            cvs = [load(b, c, b.add(at, i64(v * width)), ty) for v in range(vecs)]
            for r, row_slots in enumerate(slots):
                row_k = b.add(a0, b.add(b.mul(b.add(m0, i64(r)), i64(k)), ki))
                av = splat(b, load(b, a, row_k), width)
                for slot, cv in zip(row_slots, cvs, strict=True):
                    b.store(A.muladd(b.load(slot, typ=ty), av, cv), slot)

        for_range(b, k, step, "k")
        for r, row_slots in enumerate(slots):
            at = b.add(o0, b.add(b.mul(b.add(m0, i64(r)), i64(n)), col))
            for v, slot in enumerate(row_slots):
                store(b, b.load(slot, typ=ty), out, b.add(at, i64(v * width)))

    def rows_from(m0: ir.Value, rows: int) -> None:
        step = VECTORS * lanes
        for_range(
            b, groups, lambda g: accumulate(m0, rows, b.mul(g, i64(step)), lanes, VECTORS), "ng"
        )
        for v in range(single):
            accumulate(m0, rows, i64(groups * step + v * lanes), lanes, 1)
        for r in range(rest):
            accumulate(m0, rows, i64(blocks * lanes + r), 1, 1)

    full, tail = divmod(m, ROWS)
    for_range(b, full, lambda rb: rows_from(b.mul(rb, i64(ROWS)), ROWS), "mb")
    for r in range(tail):
        rows_from(i64(full * ROWS + r), 1)
