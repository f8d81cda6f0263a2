"""Packing for the GEMM (gemm.py): operand panels copied k-major into a worker's scratch.

A panel is `lanes` rows (of A) or columns (of B) by kc steps of k, stored so that the micro-kernel
reads one step's `lanes` values at consecutive addresses, with zeros past the operand's edge.
Three ways in, the same values out: a vector copy when the lanes are adjacent in memory, 4 x 4
in-register transposes when each lane is a row along k (a transposed operand), and one value at a
time otherwise (the partial panels at the edges). A read along k (a row-major A) is instead
packed as its rows, KC floats apart (`pack_rows`), for the kernels that broadcast a[r * KC + p]:
a copy where the k-major panel took a transpose.
"""

from __future__ import annotations

from llvmlite import ir

from alpha_core.codegen.loops import F32, I32, PTR, entry_alloca, for_count, gep, i64


def min_i64(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def ceil_div(b: ir.IRBuilder, x: ir.Value, d: int) -> ir.Value:
    return b.udiv(b.add(x, i64(d - 1)), i64(d))


def pack_panels(
    b: ir.IRBuilder,
    dst: ir.Value,
    src: ir.Value,
    extent: ir.Value,
    kc: ir.Value,
    s_lane: ir.Value,
    s_k: ir.Value,
    lanes: int,
    sums: ir.Value | None = None,
) -> None:
    """dst ← panels of `lanes` rows (of `extent`) by kc, k-major: dst[panel][p][l] =
    src[(panel * lanes + l) * s_lane + p * s_k], zero beyond `extent`.

    `sums` (a pointer, null at run time for none): sums[l] += src[l * s_lane + p * s_k] for
    p ascending, each lane's values added in the order of k as they are copied. Only for
    lanes adjacent in the source (s_lane 1) and whole panels (extent a multiple of `lanes`),
    as GemmEmitter.call checks."""
    panels = ceil_div(b, extent, lanes)
    vec = ir.VectorType(F32, lanes)  # a panel's row at once, when the lanes are adjacent

    def panel(q: ir.Value) -> None:
        base_lane = b.mul(q, i64(lanes))
        out = gep(b, dst, b.mul(base_lane, kc))
        full = b.icmp_signed("<=", b.add(base_lane, i64(lanes)), extent)
        contiguous = b.and_(full, b.icmp_signed("==", s_lane, i64(1)))
        along_k = b.and_(full, b.icmp_signed("==", s_k, i64(1)))
        fast = b.function.append_basic_block("pack.fast")
        other = b.function.append_basic_block("pack.other")
        across = b.function.append_basic_block("pack.across")
        slow = b.function.append_basic_block("pack.slow")
        done = b.function.append_basic_block("pack.done")
        b.cbranch(contiguous, fast, other)
        b.position_at_end(other)
        b.cbranch(along_k if lanes % 4 == 0 else ir.Constant(ir.IntType(1), 0), across, slow)

        b.position_at_end(across)
        pack_across(b, out, gep(b, src, b.mul(base_lane, s_lane)), kc, s_lane, lanes)
        b.branch(done)

        b.position_at_end(fast)
        src_q = gep(b, src, base_lane)

        def row_fast(p: ir.Value) -> None:
            v = b.load(gep(b, src_q, b.mul(p, s_k), vec), typ=vec, align=4)
            b.store(v, gep(b, out, b.mul(p, i64(lanes)), vec), align=4)

        for_count(b, kc, row_fast, "pf")
        b.branch(done)

        b.position_at_end(slow)
        last = b.sub(extent, i64(1))

        def lane_major(lane: ir.Value) -> None:
            at = b.add(base_lane, lane)
            ok = b.icmp_signed("<", at, extent)
            row = gep(b, src, b.mul(min_i64(b, at, last), s_lane))

            def one(p: ir.Value) -> None:
                v = b.load(gep(b, row, b.mul(p, s_k)), typ=F32, align=4)
                v = b.select(ok, v, ir.Constant(F32, 0.0))
                b.store(v, gep(b, out, b.add(b.mul(p, i64(lanes)), lane)), align=4)

            for_count(b, kc, one, "ps")

        for_count(b, i64(lanes), lane_major, "pl")
        b.branch(done)
        b.position_at_end(done)

    # Lanes adjacent in the source (B's columns): every full panel row by row, so that the
    # source is read along its rows (a run of `extent` floats per row) rather than down a
    # panel's column strip one row apart, which no prefetcher follows once a row is a page.
    by_rows = b.icmp_signed("==", s_lane, i64(1))
    whole = b.select(by_rows, b.udiv(extent, i64(lanes)), i64(0))  # the panels packed by rows

    def row(p: ir.Value, summing: bool) -> None:
        src_p = gep(b, src, b.mul(p, s_k))
        out_p = gep(b, dst, b.mul(p, i64(lanes)))

        def one(q: ir.Value) -> None:
            v = b.load(gep(b, src_p, b.mul(q, i64(lanes)), vec), typ=vec, align=4)
            b.store(v, gep(b, out_p, b.mul(b.mul(q, i64(lanes)), kc), vec), align=4)
            if summing and sums is not None:
                at = gep(b, sums, b.mul(q, i64(lanes)), vec)
                b.store(b.fadd(b.load(at, typ=vec, align=4), v), at, align=4)

        for_count(b, whole, one, "pwq")

    with b.if_then(by_rows):
        if sums is None:
            for_count(b, kc, lambda p: row(p, False), "pwp")
        else:
            with b.if_else(b.icmp_unsigned("==", sums, ir.Constant(PTR, None))) as (plain, adds):
                with plain:
                    for_count(b, kc, lambda p: row(p, False), "pwp")
                with adds:
                    for_count(b, kc, lambda p: row(p, True), "pws")
    # the rest panel by panel: all of them, or the last, partial one
    for_count(b, b.sub(panels, whole), lambda t: panel(b.add(whole, t)), "pq")


def pack_rows(
    b: ir.IRBuilder,
    dst: ir.Value,
    src: ir.Value,
    extent: ir.Value,
    kc: ir.Value,
    s_lane: ir.Value,
    lanes: int,
    stride: int,
) -> None:
    """dst ← panels of `lanes` rows (of `extent`) by kc, each row as it is: dst[panel][l][p]
    = src[(panel * lanes + l) * s_lane + p] at (panel * lanes + l) * stride + p, zero rows
    beyond `extent`. A row-major operand is copied along its rows, a vector at a time."""
    vec = ir.VectorType(F32, 16)
    whole = b.udiv(kc, i64(16))
    zero = ir.Constant(F32, 0.0)

    def row(r: ir.Value) -> None:
        out = gep(b, dst, b.mul(r, i64(stride)))
        with b.if_else(b.icmp_signed("<", r, extent)) as (inside, beyond):
            with inside:
                line = gep(b, src, b.mul(r, s_lane))

                def chunk(q: ir.Value) -> None:
                    at = b.mul(q, i64(16))
                    v = b.load(gep(b, line, at, vec), typ=vec, align=4)
                    b.store(v, gep(b, out, at, vec), align=4)

                def rest(t: ir.Value) -> None:
                    at = b.add(b.mul(whole, i64(16)), t)
                    b.store(b.load(gep(b, line, at), typ=F32, align=4), gep(b, out, at), align=4)

                for_count(b, whole, chunk, "prv")
                for_count(b, b.sub(kc, b.mul(whole, i64(16))), rest, "prt")
            with beyond:
                for_count(b, kc, lambda p: b.store(zero, gep(b, out, p), align=4), "prz")

    for_count(b, b.mul(ceil_div(b, extent, lanes), i64(lanes)), row, "prr")


def pack_across(
    b: ir.IRBuilder,
    out: ir.Value,
    src: ir.Value,
    kc: ir.Value,
    s_lane: ir.Value,
    lanes: int,
) -> None:
    """A full panel whose lanes are rows of a row-major source (a transposed operand):
    4 x 4 blocks read as four vectors along k and transposed in registers, then the last
    kc mod 4 steps one by one."""
    q4 = ir.VectorType(F32, 4)
    quads = b.udiv(kc, i64(4))

    def group(g: ir.Value) -> None:
        lane0 = b.mul(g, i64(4))
        rows = [gep(b, src, b.mul(b.add(lane0, i64(i)), s_lane)) for i in range(4)]

        def quad(qd: ir.Value) -> None:
            p = b.mul(qd, i64(4))
            r = [b.load(gep(b, row, p, q4), typ=q4, align=4) for row in rows]
            t0 = b.shuffle_vector(r[0], r[1], ir.Constant(ir.VectorType(I32, 4), [0, 4, 1, 5]))
            t1 = b.shuffle_vector(r[0], r[1], ir.Constant(ir.VectorType(I32, 4), [2, 6, 3, 7]))
            t2 = b.shuffle_vector(r[2], r[3], ir.Constant(ir.VectorType(I32, 4), [0, 4, 1, 5]))
            t3 = b.shuffle_vector(r[2], r[3], ir.Constant(ir.VectorType(I32, 4), [2, 6, 3, 7]))
            lo = ir.Constant(ir.VectorType(I32, 4), [0, 1, 4, 5])
            hi = ir.Constant(ir.VectorType(I32, 4), [2, 3, 6, 7])
            cols = [
                b.shuffle_vector(t0, t2, lo),
                b.shuffle_vector(t0, t2, hi),
                b.shuffle_vector(t1, t3, lo),
                b.shuffle_vector(t1, t3, hi),
            ]
            for j, col in enumerate(cols):
                at = b.add(b.mul(b.add(p, i64(j)), i64(lanes)), lane0)
                b.store(col, gep(b, out, at, q4), align=4)

        for_count(b, quads, quad, "pt")
        start = b.mul(quads, i64(4))

        def rest(t: ir.Value) -> None:
            p = b.add(start, t)
            for i, row in enumerate(rows):
                v = b.load(gep(b, row, p), typ=F32, align=4)
                at = b.add(b.mul(p, i64(lanes)), b.add(lane0, i64(i)))
                b.store(v, gep(b, out, at), align=4)

        for_count(b, b.sub(kc, start), rest, "pr")

    for_count(b, i64(lanes // 4), group, "pg")


def copy_tile(
    b: ir.IRBuilder,
    src: ir.Value,
    src_ld: ir.Value,
    dst: ir.Value,
    dst_ld: ir.Value,
    rows: ir.Value,
    cols: ir.Value,
    chain: tuple[ir.Value, ir.Value, ir.Value, ir.Value] | None = None,
    bias: ir.Value | None = None,
) -> None:
    """rows x cols floats from src to dst (row strides src_ld, dst_ld): a partial tile's
    valid part, between C and the stack tile the micro-kernel works on. With a chain
    (pointers, count, the tile's element in them, their row stride) each value is stored
    plus the chain's elements at the same place, the last first, as the kernel adds, then
    plus bias[j] where `bias` (cols floats, null: none) is given."""
    has_bias = None if bias is None else b.icmp_unsigned("!=", bias, ir.Constant(PTR, None))

    def row(r: ir.Value) -> None:
        def col(j: ir.Value) -> None:
            v = b.load(gep(b, src, b.add(b.mul(r, src_ld), j)), typ=F32, align=4)
            if chain is not None:
                links, count, at0, ldk = chain
                slot = entry_alloca(b, F32)
                b.store(v, slot)
                at = b.add(at0, b.add(b.mul(r, ldk), j))

                def link(t: ir.Value) -> None:
                    where = gep(b, links, b.sub(b.sub(count, i64(1)), t), PTR)
                    add = b.load(gep(b, b.load(where, typ=PTR), at), typ=F32, align=4)
                    b.store(b.fadd(b.load(slot, typ=F32), add), slot)

                for_count(b, count, link, "tl")
                if bias is not None and has_bias is not None:
                    with b.if_then(has_bias):
                        add = b.load(gep(b, bias, j), typ=F32, align=4)
                        b.store(b.fadd(b.load(slot, typ=F32), add), slot)
                v = b.load(slot, typ=F32)
            b.store(v, gep(b, dst, b.add(b.mul(r, dst_ld), j)), align=4)

        for_count(b, cols, col, "tc")

    for_count(b, rows, row, "tr")
