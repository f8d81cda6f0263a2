"""Trees of short products in registers: a weight gradient over leaves of a few examples each.

A leaf of k examples contributes a rank-k product to a weight's gradient, and the leaves are
added by the canonical tree. When k is small the blocked GEMM (gemm.py) spends its time on
everything but the products: per leaf it packs panels, starts and stores every tile, and the
tree's pending values travel through block buffers in the task's scratch. Here a tile of C
instead stays in registers for the whole tree: each leaf's sum from +0.0 in ascending p (k
steps, unrolled), the tree's pending values held beside it (lower/tree.py's tree_walk, the same
walk, so the same additions of the same operands in the same order), and only the root stored,
once. A and B are read in place (B's rows must be contiguous: one vector of lanes per row).

Leaves of more examples keep the blocked GEMM's way (`emit_blocked_tree_task`, below): each
leaf's block into a buffer of the task's scratch, the tree's pending buffers added as it is
stored, the root's into C.

The bits are the blocked GEMM's: a lane is one output, and each output sees the same multiplies
and additions in the same order; tasks and tiles only decide when. One addition is moved: a sum
starts from its first product rather than from +0.0 + that product, and the root gets + 0.0
once, as it is stored. In round-to-nearest the two differ only in the sign of a zero: +0.0 + x
is x except that -0.0 becomes +0.0, and a sum of two operands is -0.0 only if both are, so at
every node of the tree the value without the +0.0 starts either equals the value with them or
is -0.0 where that is +0.0; the root's + 0.0 maps -0.0 to +0.0 and leaves every other value
(NaN payloads included) as it is. A leaf of one example then costs a multiply and the tree's
additions, not a multiply and two additions.
"""

from __future__ import annotations

from typing import Protocol

from llvmlite import ir

from alpha_core.codegen.loops import F32, I64, PTR, entry_alloca, for_count, gep, i64, splat
from alpha_core.lower.blocking import Blocking
from alpha_core.lower.tree import tree_walk
from alpha_core.semantics.llvm_arith import emit_muladd


class TaskFrames(Protocol):
    """What a tree task takes from the GEMM (gemm.py's GemmEmitter): its module and blocking,
    the frame of a task over a block of C, and the call of a block's micro-kernel loops."""

    module: ir.Module
    k: Blocking
    fused: bool  # the system's arithmetic (LlvmArith.muladd)

    def task_frame(
        self, name: str, tree: bool, mc: int
    ) -> tuple[ir.Function, ir.IRBuilder, list[ir.Value], ir.Value, dict[str, ir.Value]]: ...

    def call_block(self, b: ir.IRBuilder, mc: ir.Value, args: list[ir.Value]) -> None: ...


# Leaves of at most this many examples take the register tree (each leaf's steps are unrolled);
# longer leaves amortise the blocked GEMM's packing and tile stores.
TREE_TILE_MAX_K = 8


def tile_rows(registers: int, leaves: int) -> int:
    """Rows of a tile: the tile's accumulators times the walk's pending values (and the value
    being computed), a row of B and a broadcast element within the registers, at most 8."""
    held = tree_walk(leaves)[1] + 1
    return max(1, min(8, (registers - 2) // held))


def emit_tile(
    module: ir.Module, name: str, leaves: int, k: int, rows: int, lanes: int, fused: bool
) -> ir.Function:
    """tile(c, ldc, a, a0, a1, bm, b0, a_step, b_step): the rows x lanes tile at c (row stride
    ldc) = the canonical tree's sum over the leaves of Σ_p a[r, p] · bm[p, lane], leaf l's
    operands at a + l * a_step and bm + l * b_step, a[r, p] at r * a0 + p * a1 and bm[p, lane]
    at p * b0 + lane."""
    ty: ir.Type = F32 if lanes == 1 else ir.VectorType(F32, lanes)
    fnty = ir.FunctionType(ir.VoidType(), [PTR, I64, PTR, I64, I64, PTR, I64, I64, I64])
    fn = ir.Function(module, fnty, name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("alwaysinline")
    c, ldc, a, a0, a1, bm, b0, a_step, b_step = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero = ir.Constant(ty, None)  # +0.0 in every lane
    steps, _ = tree_walk(leaves)
    pending: dict[int, list[ir.Value]] = {}
    for leaf, into, links in steps:
        a_leaf = gep(b, a, b.mul(i64(leaf), a_step))
        b_leaf = gep(b, bm, b.mul(i64(leaf), b_step))
        acc: list[ir.Value] = []
        for p in range(k):
            brow = b.load(gep(b, b_leaf, b.mul(i64(p), b0), ty), typ=ty, align=4)
            row_values = []
            for r in range(rows):
                at = b.add(b.mul(i64(r), a0), b.mul(i64(p), a1))
                row_values.append(splat(b, b.load(gep(b, a_leaf, at), typ=F32, align=4), lanes))
            if p == 0:
                acc = [b.fmul(av, brow) for av in row_values]
            else:  # acc + a · b, fused or not (LlvmArith.muladd)
                pairs = zip(acc, row_values, strict=True)
                acc = [emit_muladd(b, fused, v, av, brow) for v, av in pairs]
        for j in reversed(links):  # the chain's last first, as the blocked kernel adds it
            acc = [b.fadd(v, w) for v, w in zip(acc, pending.pop(j), strict=True)]
        if into is None:  # + 0.0: the root as if every sum had started from +0.0
            for r in range(rows):
                b.store(b.fadd(acc[r], zero), gep(b, c, b.mul(i64(r), ldc), ty), align=4)
        else:
            pending[into] = acc
    b.ret_void()
    return fn


def emit_tree_tiles_task(
    emitter: TaskFrames, leaves: int, k: int, most_rows: int
) -> tuple[ir.Function, int]:
    """The task of a tree product over leaves of k examples, and its rows (whole tiles, about
    most_rows): its block of C in tiles of tile_rows x one vector, the rows left over a row at a
    time, the columns left over a lane at a time, each tile the whole tree in registers."""
    K = emitter.k
    module = emitter.module
    stem = f"alpha.gemm.rtree{leaves}k{k}"
    rows = tile_rows(K.registers, leaves)
    task_rows = rows * max(1, most_rows // rows)
    fused = emitter.fused
    full = emit_tile(module, f"{stem}.tile", leaves, k, rows, K.width, fused)
    row = emit_tile(module, f"{stem}.row", leaves, k, 1, K.width, fused) if rows > 1 else full
    lane = emit_tile(module, f"{stem}.lane", leaves, k, 1, 1, fused)
    fn, b, f, _, blk = emitter.task_frame(f"{stem}.task", True, task_rows)
    c, a, bm, _, n, _, a0, a1, b0, _, _, _, _, a_step, b_step = f
    i0, j0, mc, nc = blk["i0"], blk["j0"], blk["mc"], blk["nc"]
    c_block = gep(b, c, b.add(b.mul(i0, n), j0))
    a_block = gep(b, a, b.mul(i0, a0))
    b_block = gep(b, bm, j0)  # B's rows are contiguous (call_tree checks)
    width = i64(K.width)
    vectors = b.udiv(nc, width)
    tall = b.udiv(mc, i64(rows))

    def call(tile: ir.Function, i: ir.Value, j: ir.Value) -> None:
        b.call(
            tile,
            [gep(b, c_block, b.add(b.mul(i, n), j)), n, gep(b, a_block, b.mul(i, a0)), a0, a1]
            + [gep(b, b_block, j), b0, a_step, b_step],
        )

    def tile_row(t: ir.Value) -> None:
        i = b.mul(t, i64(rows))
        for_count(b, vectors, lambda v: call(full, i, b.mul(v, width)), "rv")

    for_count(b, tall, tile_row, "rt")
    first_left = b.mul(tall, i64(rows))

    def left_row(t: ir.Value) -> None:
        i = b.add(first_left, t)
        for_count(b, vectors, lambda v: call(row, i, b.mul(v, width)), "lv")

    for_count(b, b.sub(mc, first_left), left_row, "lr")
    first_lane = b.mul(vectors, width)

    def lane_row(i: ir.Value) -> None:
        for_count(b, b.sub(nc, first_lane), lambda j: call(lane, i, b.add(first_lane, j)), "lj")

    for_count(b, mc, lane_row, "li")
    b.ret_void()
    return fn, task_rows


def emit_blocked_tree_task(emitter: TaskFrames, leaves: int, rows: int) -> ir.Function:
    """The task of a product summed over `leaves` leaves by the canonical tree: each leaf's
    block (its own rows of p) into a block buffer of the task's scratch, with the chain of
    the tree's pending values added as it is stored (tree_walk), the root's into C; tasks of
    `rows` rows. The blocked GEMM's way, for leaves of more than TREE_TILE_MAX_K examples."""
    K = emitter.k
    fn, b, f, scratch, blk = emitter.task_frame(f"alpha.gemm.tree{leaves}.task", True, rows)
    c, a, bm, _, n, k, a0, a1, b0, b1, _, _, _, a_step, b_step = f
    i0, j0 = blk["i0"], blk["j0"]
    steps, buffers = tree_walk(leaves)
    block = rows * K.nc
    buf = [gep(b, scratch, i64(K.scratch_floats + i * block)) for i in range(buffers)]
    a_block = gep(b, a, b.mul(i0, a0))
    b_block = gep(b, bm, b.mul(j0, b1))
    # a leaf's rows of a row-major B are few (its examples): read in place by every task
    direct = b.icmp_signed("==", b1, i64(1))
    for leaf, into, links in steps:
        chain = entry_alloca(b, ir.ArrayType(PTR, max(1, len(links))))
        chain.type = PTR
        for t, j in enumerate(links):
            b.store(buf[j], gep(b, chain, i64(t), PTR))
        dst, ld = (
            (gep(b, c, b.add(b.mul(i0, n), j0)), n) if into is None else (buf[into], i64(K.nc))
        )
        emitter.call_block(
            b,
            blk["mc"],
            [dst, ld, gep(b, a_block, b.mul(i64(leaf), a_step))]
            + [gep(b, b_block, b.mul(i64(leaf), b_step)), blk["mc"], blk["nc"], k]
            + [a0, a1, b0, b1, direct, chain, i64(len(links)), i64(K.nc), scratch],
        )
    b.ret_void()
    return fn
