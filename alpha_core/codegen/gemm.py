"""Large matrix products in the BLIS shape, with the bits of the plain loop.

C[i, j] = Σ_p A[i, p] * B[p, j], each sum from +0.0 in ascending p with a separate multiply and
add (never a fused one). That order is all the exactness contract fixes, so everything else is
free: A and B are read through strides (so Aᵀ·B and A·Bᵀ need no transposed copy), copied into
packed panels (MR rows of A, NR columns of B, k-major, zero-padded at the edges), and the output
is computed in tasks of MC x NC elements, each a loop over blocks of KC values of p. A register
micro-kernel keeps an MR x NR tile of accumulators in vector registers for a whole block of p;
between blocks the partial sums go to C and come back unchanged (a float32 store and load are
exact), so each output still adds its products one at a time in ascending p. Lanes and tasks only
ever hold different outputs, never parts of one sum: the bits do not depend on the vector width,
the blocking or how many threads run the tasks.

The code is one function per module, called with the shapes and strides of each product, so a
model's build time grows with its distinct code rather than with its matrix products.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from alpha_core.codegen.loops import F32, I32, I64, PTR, entry_alloca, for_count, gep, i64, splat

# A product below this many multiply-adds runs the plain loop in place (no packing, no tasks):
# for the small layers of small models the packing would cost more than it saves.
GEMM_MIN_WORK = 1 << 18

SCRATCH_SYMBOL = "alpha_scratch_floats"  # floats of scratch each worker needs (runtime/pool.c)
PARALLEL_SYMBOL = "alpha_parallel"  # runs tasks 0..n-1, each once, on the role's threads
WORKERS_SYMBOL = "alpha_workers"  # how many threads take tasks
HOOK_SYMBOL = "alpha_threads_hook"  # the runtime's thread starter, or null (runtime/pool.h)
SPAWN_SYMBOL = "alpha_pool_spawn"


@dataclass(frozen=True)
class Blocking:
    """Register tile MR x NR (NR a multiple of the vector width) and cache blocks."""

    width: int  # float lanes per vector register
    mr: int
    nr: int
    kc: int
    mc: int  # a multiple of mr
    nc: int  # a multiple of nr

    @property
    def scratch_floats(self) -> int:
        """One worker's packed panels: B (KC x NC), then A (MC x KC), 64-byte aligned."""
        return self.kc * self.nc + self.mc * self.kc + 16


def blocking_for(width: int, registers: int) -> Blocking:
    """The tile for `registers` vector registers of `width` lanes: as many accumulators as leave
    room for a row of B, a broadcast element of A and a product."""
    if width >= 16:
        return Blocking(16, 8, 48, 128, 96, 240)
    if width == 8:
        return Blocking(8, 4, 24, 256, 96, 240)
    if registers >= 32:  # AArch64 NEON: 32 registers of 4 lanes
        return Blocking(4, 8, 12, 256, 96, 252)
    return Blocking(4, 4, 8, 256, 96, 256)  # SSE: 16 registers of 4 lanes


_PROBE = """
define void @probe(ptr %p) {
  %v = load <16 x float>, ptr %p, align 64
  %w = fadd <16 x float> %v, %v
  store <16 x float> %w, ptr %p, align 64
  ret void
}
"""


@functools.cache
def vector_width(triple: str, cpu: str, features: str) -> int:
    """Float lanes of the widest vector register LLVM uses for this CPU: the width of the
    registers a 16-lane add compiles to (zmm 16, ymm 8, otherwise 4)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    tm = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=2, reloc="pic", codemodel="default"
    )
    mod = llvm.parse_assembly(_PROBE)
    mod.triple = triple
    asm = tm.emit_assembly(mod)
    if "zmm" in asm:
        return 16
    if "ymm" in asm:
        return 8
    return 4


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _ceil_div(b: ir.IRBuilder, x: ir.Value, d: int) -> ir.Value:
    return b.udiv(b.add(x, i64(d - 1)), i64(d))


class GemmEmitter:
    """Declares the product's functions in a module once and emits calls to them."""

    def __init__(self, module: ir.Module, blocking: Blocking, fused: bool = False) -> None:
        """`fused` (bench/gemm.py --fma only, never a build): each step one correctly rounded
        fused multiply-add, the contract an `fma` system would choose, to measure its gain."""
        self.module = module
        self.k = blocking
        self.fused = fused
        self.vec = ir.VectorType(F32, blocking.width)
        # c, a, b, m, n, k, a's strides, b's strides, then the task's columns (a multiple of NR)
        self._ctx = ir.LiteralStructType([PTR, PTR, PTR] + [I64] * 8)
        self._gemm: ir.Function | None = None  # emitted with the first large product
        self._parallel: ir.Function | None = None  # declared with the first task

    def finish(self) -> None:
        """Defines the scratch each worker needs and the runtime's hook that starts the
        workers: none and null when the module has no large product, so that an executable
        without one links no thread code at all."""
        scratch = ir.GlobalVariable(self.module, I64, SCRATCH_SYMBOL)
        floats = self.k.scratch_floats if self._gemm is not None else 0
        scratch.initializer = ir.Constant(I64, floats)
        scratch.global_constant = True
        hook = ir.GlobalVariable(self.module, PTR, HOOK_SYMBOL)
        hook.global_constant = True
        if self._parallel is None:
            hook.initializer = ir.Constant(PTR, None)
        else:
            spawn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I32]), SPAWN_SYMBOL)
            hook.initializer = spawn

    def parallel(self) -> ir.Function:
        """alpha_parallel(task, ctx, count), declared (and the threads' hook set) on first use."""
        if self._parallel is None:
            parallel_ty = ir.FunctionType(ir.VoidType(), [PTR, PTR, I32])
            self._parallel = ir.Function(self.module, parallel_ty, PARALLEL_SYMBOL)
            workers_ty = ir.FunctionType(I32, [])
            self._workers = ir.Function(self.module, workers_ty, WORKERS_SYMBOL)
        return self._parallel

    def _declare(self) -> ir.Function:
        if self._gemm is None:
            self.parallel()
            self._kernel = self._emit_kernel()
            self._task = self._emit_task()
            self._gemm = self._emit_gemm()
        return self._gemm

    def call(
        self,
        b: ir.IRBuilder,
        c: ir.Value,
        a: ir.Value,
        bm: ir.Value,
        m: int,
        n: int,
        k: int,
        a_strides: tuple[int, int],
        b_strides: tuple[int, int],
    ) -> None:
        """c[m, n] (row-major) = a · b, a[i, p] at a[i * as0 + p * as1], b likewise."""
        args = [c, a, bm, i64(m), i64(n), i64(k), *map(i64, a_strides), *map(i64, b_strides)]
        b.call(self._declare(), args)

    # -- the micro-kernel ----------------------------------------------------------------------
    def _emit_kernel(self) -> ir.Function:
        """kernel(ap, bp, c, ldc, kc, first, ldb): the MR x NR tile at c (row stride ldc) gets
        Σ over kc steps of the packed A panel and the B panel at bp (row stride ldb: NR when
        packed), starting from +0.0 when `first`, else from its own value."""
        K = self.k
        nv = K.nr // K.width
        fnty = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, I64, I64, ir.IntType(1), I64])
        fn = ir.Function(self.module, fnty, "alpha.gemm.kernel")
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        ap, bp, c, ldc, kc, first, ldb = fn.args
        for arg in (ap, bp, c):
            arg.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        zero = ir.Constant(self.vec, None)
        slots = [[entry_alloca(b, self.vec) for _ in range(nv)] for _ in range(K.mr)]
        with b.if_else(first) as (fresh, resumed):
            with fresh:
                for row in slots:
                    for slot in row:
                        b.store(zero, slot)
            with resumed:  # the partial sums of the earlier blocks of p, as stored
                for r, row in enumerate(slots):
                    for v, slot in enumerate(row):
                        at = b.add(b.mul(i64(r), ldc), i64(v * K.width))
                        b.store(b.load(gep(b, c, at, self.vec), typ=self.vec, align=4), slot)

        def step(p: ir.Value) -> None:
            brow = [
                b.load(
                    gep(b, bp, b.add(b.mul(p, ldb), i64(v * K.width)), self.vec),
                    typ=self.vec,
                    align=4,
                )
                for v in range(nv)
            ]
            for r in range(K.mr):
                av = b.load(gep(b, ap, b.add(b.mul(p, i64(K.mr)), i64(r))), typ=F32, align=4)
                a_all = splat(b, av, K.width)
                for v in range(nv):
                    acc = b.load(slots[r][v], typ=self.vec)
                    if self.fused:
                        name = f"llvm.fma.v{K.width}f32"
                        fma = self.module.globals.get(name) or ir.Function(
                            self.module, ir.FunctionType(self.vec, [self.vec] * 3), name
                        )
                        b.store(b.call(fma, [a_all, brow[v], acc]), slots[r][v])
                    else:
                        b.store(b.fadd(acc, b.fmul(a_all, brow[v])), slots[r][v])

        for_count(b, kc, step, "p")
        for r in range(K.mr):
            for v in range(nv):
                at = b.add(b.mul(i64(r), ldc), i64(v * K.width))
                b.store(b.load(slots[r][v], typ=self.vec), gep(b, c, at, self.vec), align=4)
        b.ret_void()
        return fn

    # -- packing ---------------------------------------------------------------------------------
    def _pack(
        self,
        b: ir.IRBuilder,
        dst: ir.Value,
        src: ir.Value,
        extent: ir.Value,
        kc: ir.Value,
        s_lane: ir.Value,
        s_k: ir.Value,
        lanes: int,
    ) -> None:
        """dst ← panels of `lanes` rows (of `extent`) by kc, k-major: dst[panel][p][l] =
        src[(panel * lanes + l) * s_lane + p * s_k], zero beyond `extent`."""
        panels = _ceil_div(b, extent, lanes)
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
            self._pack_across(b, out, gep(b, src, b.mul(base_lane, s_lane)), kc, s_lane, lanes)
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
                row = gep(b, src, b.mul(_min(b, at, last), s_lane))

                def one(p: ir.Value) -> None:
                    v = b.load(gep(b, row, b.mul(p, s_k)), typ=F32, align=4)
                    v = b.select(ok, v, ir.Constant(F32, 0.0))
                    b.store(v, gep(b, out, b.add(b.mul(p, i64(lanes)), lane)), align=4)

                for_count(b, kc, one, "ps")

            for_count(b, i64(lanes), lane_major, "pl")
            b.branch(done)
            b.position_at_end(done)

        for_count(b, panels, panel, "pq")

    def _pack_across(
        self,
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

    # -- one task: an MC x NC block of C ---------------------------------------------------------
    def _emit_task(self) -> ir.Function:
        K = self.k
        fnty = ir.FunctionType(ir.VoidType(), [PTR, I32, PTR])
        fn = ir.Function(self.module, fnty, "alpha.gemm.task")
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        ctx, index, scratch = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def field(i: int, ty: ir.Type) -> ir.Value:
            at = b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=self._ctx)
            return b.load(at, typ=ty)

        c, a, bm = field(0, PTR), field(1, PTR), field(2, PTR)
        m, n, k, a0, a1, b0, b1, task_nc = (field(3 + i, I64) for i in range(8))
        tiles_n = b.udiv(b.add(n, b.sub(task_nc, i64(1))), task_nc)
        t = b.zext(index, I64)
        ti, tj = b.udiv(t, tiles_n), b.urem(t, tiles_n)
        i0, j0 = b.mul(ti, i64(K.mc)), b.mul(tj, task_nc)
        mc = _min(b, i64(K.mc), b.sub(m, i0))
        nc = _min(b, task_nc, b.sub(n, j0))
        # scratch is 64-byte aligned by the runtime
        bp = scratch
        ap = gep(b, scratch, i64(K.kc * K.nc))
        here = b.block  # the edge tile: a stack array in the entry block
        b.position_at_start(fn.entry_basic_block)
        tile = b.alloca(F32, size=i64(K.mr * K.nr))
        tile.align = 64
        b.position_at_end(here)
        blocks = _ceil_div(b, k, K.kc)
        # With one row of tasks (m <= MC) each element of a row-major B serves only the few row
        # panels of this task: the micro-kernel reads it where it is rather than from a copy.
        direct = b.and_(b.icmp_signed("==", b1, i64(1)), b.icmp_signed("<=", m, i64(K.mc)))
        panel_at = entry_alloca(b, PTR)
        panel_ld = entry_alloca(b, I64)

        def k_block(q: ir.Value) -> None:
            p0 = b.mul(q, i64(K.kc))
            kc = _min(b, i64(K.kc), b.sub(k, p0))
            b_src = gep(b, bm, b.add(b.mul(p0, b0), b.mul(j0, b1)))
            with b.if_then(b.not_(direct)):
                self._pack(b, bp, b_src, nc, kc, b1, b0, K.nr)
            a_src = gep(b, a, b.add(b.mul(i0, a0), b.mul(p0, a1)))
            self._pack(b, ap, a_src, mc, kc, a0, a1, K.mr)
            first = b.icmp_unsigned("==", q, i64(0))

            def col_panel(jr: ir.Value) -> None:
                jj = b.mul(jr, i64(K.nr))
                cols = _min(b, i64(K.nr), b.sub(nc, jj))
                b.store(gep(b, bp, b.mul(jj, kc)), panel_at)
                b.store(i64(K.nr), panel_ld)
                with b.if_then(direct):
                    here = gep(b, b_src, b.mul(jj, b1))
                    with b.if_else(b.icmp_signed("==", cols, i64(K.nr))) as (whole_cols, edge):
                        with whole_cols:  # read in place: a row of the panel is NR adjacent floats
                            b.store(here, panel_at)
                            b.store(b0, panel_ld)
                        with edge:  # the last, partial panel packed (zero beyond n)
                            self._pack(b, bp, here, cols, kc, b1, b0, K.nr)
                            b.store(bp, panel_at)
                b_panel = b.load(panel_at, typ=PTR)
                ldb = b.load(panel_ld, typ=I64)

                def row_panel(ir_: ir.Value) -> None:
                    ii = b.mul(ir_, i64(K.mr))
                    rows = _min(b, i64(K.mr), b.sub(mc, ii))
                    a_panel = gep(b, ap, b.mul(ii, kc))
                    at = b.add(b.mul(b.add(i0, ii), n), b.add(j0, jj))
                    c_tile = gep(b, c, at)
                    whole = b.and_(
                        b.icmp_signed("==", rows, i64(K.mr)), b.icmp_signed("==", cols, i64(K.nr))
                    )
                    with b.if_else(whole) as (then, other):
                        with then:
                            b.call(self._kernel, [a_panel, b_panel, c_tile, n, kc, first, ldb])
                        with other:
                            self._edge(b, tile, c_tile, n, rows, cols, first)
                            b.call(
                                self._kernel, [a_panel, b_panel, tile, i64(K.nr), kc, first, ldb]
                            )
                            self._edge_out(b, tile, c_tile, n, rows, cols)

                for_count(b, _ceil_div(b, mc, K.mr), row_panel, "ir")

            for_count(b, _ceil_div(b, nc, K.nr), col_panel, "jr")

        for_count(b, blocks, k_block, "kb")
        b.ret_void()
        return fn

    def _edge(
        self,
        b: ir.IRBuilder,
        tile: ir.Value,
        c: ir.Value,
        ldc: ir.Value,
        rows: ir.Value,
        cols: ir.Value,
        first: ir.Value,
    ) -> None:
        """The valid part of a partial tile copied into `tile` (row stride NR), unless first."""
        K = self.k
        with b.if_then(b.not_(first)):

            def row(r: ir.Value) -> None:
                def col(j: ir.Value) -> None:
                    v = b.load(gep(b, c, b.add(b.mul(r, ldc), j)), typ=F32, align=4)
                    b.store(v, gep(b, tile, b.add(b.mul(r, i64(K.nr)), j)), align=4)

                for_count(b, cols, col, "ec")

            for_count(b, rows, row, "er")

    def _edge_out(
        self,
        b: ir.IRBuilder,
        tile: ir.Value,
        c: ir.Value,
        ldc: ir.Value,
        rows: ir.Value,
        cols: ir.Value,
    ) -> None:
        K = self.k

        def row(r: ir.Value) -> None:
            def col(j: ir.Value) -> None:
                v = b.load(gep(b, tile, b.add(b.mul(r, i64(K.nr)), j)), typ=F32, align=4)
                b.store(v, gep(b, c, b.add(b.mul(r, ldc), j)), align=4)

            for_count(b, cols, col, "oc")

        for_count(b, rows, row, "or")

    # -- the entry: split C into tasks and run them ----------------------------------------------
    def _emit_gemm(self) -> ir.Function:
        K = self.k
        fnty = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR] + [I64] * 7)
        fn = ir.Function(self.module, fnty, "alpha.gemm")
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = b.alloca(self._ctx)
        ctx.type = PTR  # opaque, as every pointer here: fields are reached by typed geps

        def put(i: int, value: ir.Value) -> None:
            at = b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=self._ctx)
            b.store(value, at)

        for i, arg in enumerate(fn.args):
            put(i, arg)
        m, n = fn.args[3], fn.args[4]
        # Columns per task: at most NC, and few enough panels that every worker gets about as
        # many as the others (a whole number of rounds of tasks), since small m gives one
        # row of tasks. Only when an output is computed depends on this, never its bits.
        tiles_m = _ceil_div(b, m, K.mc)
        panels = _ceil_div(b, n, K.nr)
        workers = b.zext(b.call(self._workers, []), I64)
        most = i64(K.nc // K.nr)
        tiles_n = _ceil_div(b, panels, K.nc // K.nr)
        want = b.udiv(b.add(b.mul(workers, i64(2)), b.sub(tiles_m, i64(1))), tiles_m)
        rounds = b.udiv(b.add(tiles_n, b.sub(want, i64(1))), want)
        tiles_n = _min(b, b.mul(rounds, want), panels)
        per_task = _min(b, most, b.udiv(b.add(panels, b.sub(tiles_n, i64(1))), tiles_n))
        task_nc = b.mul(per_task, i64(K.nr))
        put(10, task_nc)
        tasks = b.mul(tiles_m, b.udiv(b.add(n, b.sub(task_nc, i64(1))), task_nc))
        b.call(self.parallel(), [self._task, ctx, b.trunc(tasks, I32)])
        b.ret_void()
        return fn
