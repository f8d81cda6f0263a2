"""A long sum on a GPU by one warp, still added in its declared order.

A reduction node's output is one sum of its terms, from +0.0, in ascending order. One thread
adding tens of thousands of terms (a convolution's bias gradient: 43,264) waits on its loads
one at a time, and only one thread per output works. Here the 32 lanes of a warp load 32
consecutive terms at once (coalesced), then every lane adds them in order, term j taken from
lane j with `shfl.sync.idx`, so each lane holds the same sum, added as the one thread would
have: the same terms, the same order, the same bits. A lane loads its terms of GROUP chunks
of 32 at once before they are added, so one load's latency is paid per GROUP chunks rather than
per chunk. Lane 0 stores the sum.

The host shadow keeps the one-thread loop (gpu_nodes._reduce): a warp's exchange has no
per-thread equivalent, and the order, which is all the bits depend on, is the same.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.gpu_ir import loop
from alpha_core.codegen.loops import F32, I32, entry_alloca, i64
from alpha_core.semantics.llvm_arith import LlvmArith, intrinsic

WARP = 32
WARP_SUM_MIN = 128  # a reduction of at least this many terms per output takes a warp
GROUP = 8  # chunks of 32 terms whose loads a lane issues together


def _shuffle(b: ir.IRBuilder, value: ir.Value, lane: int) -> ir.Value:
    """Lane `lane`'s `value`, in every lane of the (full, converged) warp."""
    fn = intrinsic(b.module, "llvm.nvvm.shfl.sync.idx.f32", F32, [I32, F32, I32, I32])
    full = ir.Constant(I32, 0xFFFFFFFF)
    return b.call(fn, [full, value, ir.Constant(I32, lane), ir.Constant(I32, 0x1F)])


def warp_sum(
    b: ir.IRBuilder, A: LlvmArith, terms: int, lane: ir.Value, read: Callable[[ir.Value], ir.Value]
) -> ir.Value:
    """The sum from +0.0 of read(0), ..., read(terms - 1), in that order, in every lane of the
    warp; `lane` is the thread's lane (0-31), `read(i)` loads term i (i < terms)."""
    chunks, tail = divmod(terms, WARP)
    groups, left = divmod(chunks, GROUP)
    acc = entry_alloca(b)
    b.store(A.const(0.0), acc)

    def add(value: ir.Value, count: int) -> None:
        total = b.load(acc, typ=F32)
        for j in range(count):
            total = A.add(total, _shuffle(b, value, j))
        b.store(total, acc)

    def chunks_from(first: ir.Value, count: int) -> None:
        """Chunks first .. first + count - 1: every load, then every addition in order."""
        held = [read(b.add(b.mul(b.add(first, i64(u)), i64(WARP)), lane)) for u in range(count)]
        for value in held:
            add(value, WARP)

    loop(b, groups, lambda g: chunks_from(b.mul(g, i64(GROUP)), GROUP), "warp")
    if left:
        chunks_from(i64(groups * GROUP), left)
    if tail:
        inside = b.icmp_unsigned("<", lane, i64(tail))
        i = b.add(i64(chunks * WARP), b.select(inside, lane, i64(0)))
        add(read(i), tail)
    return b.load(acc, typ=F32)
