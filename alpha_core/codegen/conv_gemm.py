"""Convolutions as products on the packed GEMM (gemm.py), with the bits of the loops.

docs/semantics.md §5 writes each of the three sums as a product over a gathered operand:

    out[b] (O x OH·OW)    = w (O x C·KH·KW)          · X_b (C·KH·KW x OH·OW)
    dx[b]  (C x H·W)      = Wᵀ (C x O·KH·KW)         · D_b (O·KH·KW x H·W)
    dw     (O x C·KH·KW)  = Σ_b d[b] (O x OH·OW)     · X_bᵀ (OH·OW x C·KH·KW)

with X_b[(c, kh, kw), (oh, ow)] = x[b, c, oh·s + kh - p, ow·s + kw - p] and D_b[(o, kh, kw),
(ih, iw)] = d[b, o, oh, ow] for the oh, ow that read (ih, iw) (§5's dx), and +0.0 at a padded
or absent position. The GEMM's k runs over the row index of the gathered operand ascending —
(c, kh, kw) for out, (o, kh, kw) for dx, and for dw (oh, ow) within an example, the examples in
turn — which is exactly §5's order of each sum; every output adds its products one at a time
(a separate multiply and add) from +0.0. A task gathers one KC x NC block of the operand at a
time into its worker's scratch (the panels' neighbour, gemm.GemmEmitter.gather_floats) and runs
the GEMM's block on it; the next block of k, or the next example of dw, resumes from the
partial sums stored in the output (`resume`), as the GEMM's own blocks of k do: a float32 store
and load are exact, so the sequence of additions is that of one long loop.

Padding. A padded term is the product of a gathered +0.0 and a finite value, ±0.0, added to a
sum that started at +0.0. A sum from +0.0 is never -0.0 (+0.0 + -0.0 is +0.0, and x + -x is
+0.0 in round-to-nearest), and adding ±0.0 to any value that is not -0.0 leaves it unchanged,
so the term adds nothing: the bits of skipping it, which is what the loops (conv_ops.py) and the
reference do. (A weight or adjoint that is an infinity or NaN makes the product NaN: the loops
select the padded term away before adding, so there the sums differ; such a step's parameters
are NaN either way.)

Lanes and tasks hold different outputs, never parts of one sum: a task is an example's block of
columns (out, dx) or a block of dw (all examples in it, in order), so the bits depend neither on
the vector width nor on the number of threads.
"""

from __future__ import annotations

from llvmlite import ir

from alpha_core.codegen.conv_gather import Gather, max_i64
from alpha_core.codegen.gemm import GemmEmitter
from alpha_core.codegen.loops import F32, I32, I64, PTR, entry_alloca, for_count, gep, i64
from alpha_core.codegen.packing import min_i64
from alpha_core.ir.conv import window_of
from alpha_core.ir.graph import Node
from alpha_core.lower.conv_gemm import GATHER_PAD, gather_floats

Shape = tuple[int, ...]
# out, the two inputs, the task's columns (a multiple of NR), the tasks across columns
_CTX = ir.LiteralStructType([PTR, PTR, PTR, I64, I64])


def _cdiv(a: int, d: int) -> int:
    return -(-a // d)


def _columns(k_nr: int, k_nc: int, n: int) -> int:
    """Columns of a task: blocks of at most NC, as even as whole panels of NR make them."""
    panels = _cdiv(n, k_nr)
    return k_nr * _cdiv(panels, _cdiv(n, k_nc))


def emit_conv_product(
    gemm: GemmEmitter,
    b: ir.IRBuilder,
    node: Node,
    shapes: tuple[Shape, Shape, Shape],
    ptrs: tuple[ir.Value, ir.Value, ir.Value],
) -> None:
    """Node (conv2d, conv2d_dx or conv2d_dw) computed into ptrs[0] from ptrs[1:], its output
    and input shapes `shapes`, by tasks on the role's threads."""
    gemm.declare()
    K = gemm.k
    gemm.gather_floats = max(gemm.gather_floats, gather_floats(K))
    key = (node.op, node.attrs, shapes)
    task = gemm.conv_tasks.get(key)
    if task is None:
        task = _emit_task(gemm, node, shapes)
        gemm.conv_tasks[key] = task
    out_s, s0, s1 = shapes
    ctx = entry_alloca(b, _CTX)
    ctx.type = PTR  # opaque, as every pointer here: fields are reached by typed geps

    def put(i: int, value: ir.Value) -> None:
        b.store(value, b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=_CTX))

    for i, p in enumerate(ptrs):
        put(i, p)
    if node.op == "conv2d_dw":
        gemm.rows_in_place(K.kc)  # the gathered rows of X, its A (_emit_task)
        # Columns per task: whole rounds of tasks for the workers, each round's tasks of
        # (nearly) equal panels. A task sums over every example, so one task more than the
        # workers costs a whole task's time: 9 panels (the CNN's 288 columns) in tasks of 3
        # left one of two threads a third of the node idle; in 2 of 5 and 4 the longer task
        # is 5 (only when an output is computed depends on this, never its bits).
        o, c, kh, kw = out_s
        n = c * kh * kw
        tiles_m = _cdiv(o, K.mc)
        panels = _cdiv(n, K.nr)
        workers = gemm.workers(b)
        per_round = max_i64(b, b.udiv(b.add(workers, i64(tiles_m - 1)), i64(tiles_m)), i64(1))
        most = K.nc // K.nr  # panels a task may take
        rounds = b.udiv(
            b.add(b.mul(per_round, i64(most)), i64(panels - 1)), b.mul(per_round, i64(most))
        )
        tiles = b.mul(per_round, rounds)
        per_task = b.udiv(b.add(tiles, i64(panels - 1)), tiles)
        cols = b.mul(per_task, i64(K.nr))
        tiles_n = b.udiv(b.add(i64(n), b.sub(cols, i64(1))), cols)
        put(3, cols)
        put(4, tiles_n)
        count = b.mul(tiles_n, i64(tiles_m))
    else:
        p = out_s[2] * out_s[3]
        cols_c = _columns(K.nr, K.nc, p)
        put(3, i64(cols_c))
        put(4, i64(_cdiv(p, cols_c)))
        count = i64(out_s[0] * _cdiv(p, cols_c))
    b.call(gemm.parallel(), [task, ctx, b.trunc(count, I32)])


def _emit_task(gemm: GemmEmitter, node: Node, shapes: tuple[Shape, Shape, Shape]) -> ir.Function:
    K = gemm.k
    module = gemm.module
    fnty = ir.FunctionType(ir.VoidType(), [PTR, I32, PTR])
    fn = ir.Function(module, fnty, module.get_unique_name(f"alpha.conv.{node.op}.task"))
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    ctx, index, scratch = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fields = [
        b.load(b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=_CTX), typ=t)
        for i, t in enumerate([PTR, PTR, PTR, I64, I64])
    ]
    out, in0, in1, cols, tiles_n = fields
    t = b.zext(index, I64)
    win = window_of(node.attrs)
    gathered = gep(b, scratch, i64(K.scratch_floats))  # a KC x NC block, 64-byte aligned
    a_gathered = gep(b, gathered, i64(K.kc * (K.nc + GATHER_PAD) + 16))  # an MC x KC block (dx)
    null = ir.Constant(PTR, None)
    yes, no = ir.Constant(ir.IntType(1), 1), ir.Constant(ir.IntType(1), 0)
    out_s, s0, s1 = shapes

    def block(
        dst: ir.Value,
        ld: int,
        a: ir.Value,
        bm: ir.Value,
        mc: ir.Value,
        nc: ir.Value,
        kc: ir.Value,
        a_st: tuple[ir.Value, ir.Value],
        b_st: tuple[ir.Value, ir.Value],
        direct: ir.Value,
        resume: ir.Value,
    ) -> None:
        gemm.call_block(
            b,
            mc,
            [dst, i64(ld), a, bm, mc, nc, kc, *a_st, *b_st, direct, null, i64(0), i64(0)]
            + [scratch],
            resume,
        )

    if node.op in ("conv2d", "conv2d_dx"):
        # a task: example `bi`, columns j0 … j0 + nc - 1 of its output planes; the rows of the
        # product (o, or c for dx) in blocks of MC, each block of k gathered once for them all
        bi, jb = b.udiv(t, tiles_n), b.urem(t, tiles_n)
        if node.op == "conv2d":
            (_, c, h, w_), (o, _, kh, kw) = s0, s1
            rows_m, kdim = o, c * kh * kw
            plane, grid = (h, w_), (out_s[2], out_s[3])
            src = gep(b, in0, b.mul(bi, i64(c * h * w_)))
        else:
            (_, o, oh, ow), (_, c, kh, kw) = s0, s1
            rows_m, kdim = c, o * kh * kw
            plane, grid = (oh, ow), (out_s[2], out_s[3])
            src = gep(b, in0, b.mul(bi, i64(o * oh * ow)))
        p = grid[0] * grid[1]
        gather = Gather(b, win, plane, grid, node.op == "conv2d_dx", K.width)
        j0 = b.mul(jb, cols)
        nc = min_i64(b, cols, b.sub(i64(p), j0))
        dst_b = gep(b, out, b.add(b.mul(bi, i64(rows_m * p)), j0))
        ld_g = b.add(cols, i64(GATHER_PAD))  # the gathered block's row stride

        def k_block(q: ir.Value) -> None:
            k0 = b.mul(q, i64(K.kc))
            kc = min_i64(b, i64(K.kc), b.sub(i64(kdim), k0))
            gather.rows(src, gathered, ld_g, k0, kc, j0, nc)
            resume = b.icmp_unsigned("!=", q, i64(0))
            for i0 in range(0, rows_m, K.mc):
                mc = i64(min(K.mc, rows_m - i0))
                if node.op == "conv2d":  # w[o, (c, kh, kw)] read in place
                    a = gep(b, in1, b.add(i64(i0 * kdim), k0))
                    a_st = (i64(kdim), i64(1))
                else:  # wᵀ[c, (o, kh, kw)] gathered: element (i, r) at i·KC + r
                    _transposed_kernels(b, in1, a_gathered, K.kc, (c, kh * kw), i0, mc, k0, kc)
                    a, a_st = a_gathered, (i64(K.kc), i64(1))
                dst = gep(b, dst_b, i64(i0 * p))
                block(dst, p, a, gathered, mc, nc, kc, a_st, (ld_g, i64(1)), yes, resume)

        for_count(b, i64(_cdiv(kdim, K.kc)), k_block, "kq")
    else:
        # conv2d_dw: a task is a block of dw (rows of o by columns of (c, kh, kw)); its sums run
        # over every example's (oh, ow) in turn, a block of KC positions at a time. The GEMM
        # computes the block's transpose, dwᵀ = Σ_b X_b · d[b]ᵀ, into the task's scratch: the
        # gathered rows of X are then its A, read where they lie (KC floats apart), and B the
        # block of d, 64 channels to pack where X's 288 rows were (the MNIST-shaped CNN's
        # second convolution). A product is the same float either way round, and each sum's
        # terms come in the same order, so the bits are those of dw = Σ_b d[b] · X_bᵀ.
        (bn, c, h, w_), (_, o, oh, ow) = s0, s1
        n = c * win.kh * win.kw
        p = oh * ow
        gather = Gather(b, win, (h, w_), (oh, ow), False, K.width)
        ti, tj = b.udiv(t, tiles_n), b.urem(t, tiles_n)
        i0 = b.mul(ti, i64(K.mc))
        mc = min_i64(b, i64(K.mc), b.sub(i64(o), i0))
        j0 = b.mul(tj, cols)
        nc = min_i64(b, cols, b.sub(i64(n), j0))
        dwt = a_gathered  # dwᵀ's block: row j - j0, column o - i0 at (j - j0)·MC + o - i0

        def example(bi: ir.Value) -> None:
            src = gep(b, in0, b.mul(bi, i64(c * h * w_)))
            d_rows = gep(b, in1, b.add(b.mul(bi, i64(o * p)), b.mul(i0, i64(p))))

            def k_block(q: ir.Value) -> None:
                k0 = b.mul(q, i64(K.kc))
                kc = min_i64(b, i64(K.kc), b.sub(i64(p), k0))
                # X's rows j0 … (columns of dw) over positions k0 …, KC floats apart
                gather.rows(src, gathered, i64(K.kc), j0, nc, k0, kc)
                first = b.and_(b.icmp_unsigned("==", bi, i64(0)), b.icmp_unsigned("==", q, i64(0)))
                d_block = gep(b, d_rows, k0)  # B[pos, o] = d[o, pos]: o p floats apart
                a_st, b_st = (i64(K.kc), i64(1)), (i64(1), i64(p))
                block(dwt, K.mc, gathered, d_block, nc, mc, kc, a_st, b_st, no, b.not_(first))

            for_count(b, i64(_cdiv(p, K.kc)), k_block, "kq")

        for_count(b, i64(bn), example, "ex")
        dst = gep(b, out, b.add(b.mul(i0, i64(n)), j0))

        def out_row(i: ir.Value) -> None:  # dw[i0 + i, j0 …] = dwᵀ[…, i]
            row = gep(b, dst, b.mul(i, i64(n)))
            for_count(
                b,
                nc,
                lambda j: b.store(
                    b.load(gep(b, dwt, b.add(b.mul(j, i64(K.mc)), i)), typ=F32, align=4),
                    gep(b, row, j),
                    align=4,
                ),
                "tj",
            )

        for_count(b, mc, out_row, "ti")
    b.ret_void()
    return fn


def _transposed_kernels(
    b: ir.IRBuilder,
    w: ir.Value,
    dst: ir.Value,
    ld: int,
    dims: tuple[int, int],
    i0: int,
    mc: ir.Value,
    k0: ir.Value,
    kc: ir.Value,
) -> None:
    """dst[i·ld + r] = w[o, i0 + i, kh, kw] for (o, kh, kw) = k0 + r, i < mc, r < kc: rows
    i0 … of wᵀ, each channel's kernels along (o, kh, kw)."""
    c_n, kk = dims

    def col(r: ir.Value) -> None:
        k = b.add(k0, r)
        o, rest = b.udiv(k, i64(kk)), b.urem(k, i64(kk))
        at = b.add(b.mul(o, i64(c_n * kk)), b.add(i64(i0 * kk), rest))

        def one(i: ir.Value) -> None:
            v = b.load(gep(b, w, b.add(at, b.mul(i, i64(kk)))), typ=F32, align=4)
            b.store(v, gep(b, dst, b.add(b.mul(i, i64(ld)), r)), align=4)

        for_count(b, mc, one, "wi")

    for_count(b, kc, col, "wr")
