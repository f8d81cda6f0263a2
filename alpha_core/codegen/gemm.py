"""Large matrix products in the BLIS shape, with the bits of the plain loop.

C[i, j] = Σ_p A[i, p] * B[p, j], each sum from +0.0 in ascending p, each term in the system's
arithmetic: a separate multiply and add, or (`arithmetic fused`) one fused multiply-add. That order
is all the exactness contract fixes, so everything else is free: A and B are read through strides
(so Aᵀ·B and A·Bᵀ need no transposed copy), copied into packed panels (MR rows of A, NR columns of
B, k-major, zero-padded at the edges; a row-major A whose rows spread over L1 is read where it is,
`_in_place`), and the output is computed in tasks of MC x NC elements, each
a loop over blocks of KC values of p. A register micro-kernel keeps an MR x NR tile of accumulators
in vector registers for a whole block of p; between blocks the partial sums go to C and come back
unchanged (a float32 store and load are exact), so each output still adds its products one at a time
in ascending p. Lanes and tasks only ever hold different outputs, never parts of one sum: the bits
do not depend on the vector width, the blocking or how many threads run the tasks.

Two additions ride on the store of a finished sum, never inside it: a chain of arrays whose
elements are added to each output (the combine tree's pending values, `call`), and a tree of
products (`call_tree`): one product per leaf, each over its own rows of p, added by the
canonical tree block by block in the task's scratch, so that only the root reaches C.

The code is one function per module, called with the shapes and strides of each product, so a
model's build time grows with its distinct code rather than with its matrix products.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.loops import F32, I32, I64, PTR, entry_alloca, for_count, gep, i64, splat
from alpha_core.codegen.packing import ceil_div, copy_tile, min_i64, pack_panels, pack_rows
from alpha_core.codegen.tree_tiles import (
    TREE_TILE_MAX_K,
    emit_blocked_tree_task,
    emit_tree_tiles_task,
)
from alpha_core.lower.blocking import TREE_MC, Blocking
from alpha_core.lower.tree import tree_walk
from alpha_core.semantics.llvm_arith import emit_muladd, intrinsic

TASK_BLOCKS_FUSED = 4  # blocks of MC rows a fused product's task computes on one packing of B
DIRECT_ROWS = 96  # B is read in place by one row of tasks of at most this many rows
# ... a global the runtime lowers to 0 in a role that shares its machine with other roles
DIRECT_ROWS_SYMBOL = "alpha_direct_rows"
# Steps ahead the micro-kernel asks for B's row when it reads B in place: on a Sapphire Rapids
# core the leaf products of the 784-1024-1024-10 model (32 x 1024 x 784, B read in place) went
# from 115-140 to 146-165 GFLOP/s fused at 8 (4: 129-139, 12 and 16: 147-163, 32: 135-145).
PREFETCH_ROWS = 8
LINE_FLOATS = 16  # floats in a 64-byte cache line: one prefetch each
VOID = ir.VoidType()
# the pointer it is given, as a value the optimiser knows nothing about (no instruction)
OPAQUE_PTR = ir.InlineAsm(ir.FunctionType(PTR, [PTR]), "", "=r,0", side_effect=False)
# With fold_b, whether every row of the tile reads all of B's vectors again (1, the initial
# value) or two of them are held in registers, the other two folded (0): set at start-up by
# the runtime from the CPU (runtime/cpu_level.c), read once per kernel call
FOLD_SYMBOL = "alpha_gemm_fold"
HELD_VECTORS = 2  # B's vectors a step holds in registers when not folding them all
CHAIN_MAX = 8  # the longest chain added as a product is stored (runtime/schedule.c, CHAIN)
SCRATCH_SYMBOL = "alpha_scratch_floats"  # floats of scratch each worker needs (runtime/pool.c)
PARALLEL_SYMBOL = "alpha_parallel"  # runs tasks 0..n-1, each once, on the role's threads
WORKERS_SYMBOL = "alpha_workers"  # how many threads take tasks
HOOK_SYMBOL = "alpha_threads_hook"  # the runtime's thread starter, or null (runtime/pool.h)
SPAWN_SYMBOL = "alpha_pool_spawn"
# Row strides of A a module reads in place along its rows, each with kernels of its own: the
# first ones its products ask for (code size: two blocks and kernels a stride a CPU level)
IN_PLACE_STRIDES = 4
L1_SETS = 64  # sets of 64-byte lines in the L1 data caches tuned for (48 KiB 12-way, 32 KiB 8-way)
ROWS_PER_SET = 4  # rows of a tile read in place that may fall in one L1 set (B's lines share it)
IN_PLACE_FROM = 64  # floats a row from which A is read in place: a narrower A is cheap to copy


class GemmEmitter:
    """Declares the product's functions in a module once and emits calls to them."""

    def __init__(self, module: ir.Module, blocking: Blocking, fused: bool = False) -> None:
        """`fused`: the system's arithmetic (`arithmetic fused`, docs/semantics.md): each term
        one correctly rounded fused multiply-add, `acc = fma(a, b, acc)`, p ascending."""
        self.module = module
        self.k = blocking
        self.fused = fused
        self.vec = ir.VectorType(F32, blocking.width)
        # c, a, b, m, n, k, a's strides, b's strides, the task's columns (a multiple of NR),
        # then the chain and the row added to each output as it is stored, then the column
        # sums of B its packing adds up (see `call`), then the task's rows
        self._ctx = ir.LiteralStructType([PTR, PTR, PTR] + [I64] * 8 + [PTR, I64, PTR, PTR, I64])
        self._tree_ctx = ir.LiteralStructType([PTR, PTR, PTR] + [I64] * 8 + [PTR, I64, I64, I64])
        self._gemm: ir.Function | None = None  # emitted with the first large product
        self._narrow: ir.Function | None = None  # MC-row tasks, where task_rows is more
        self._trees: dict[tuple[int, int], ir.Function] = {}  # call_tree's, by leaves (and k)
        self.tree_buffers = 0  # block buffers a tree task needs beside the panels
        # floats a convolution's task gathers its operands into beside the panels
        # (codegen/conv_gemm.py; never at once with a tree task's blocks)
        self.gather_floats = 0
        self.conv_tasks: dict[tuple[object, ...], ir.Function] = {}  # conv_gemm.py's, by node
        self._parallel: ir.Function | None = None  # declared with the first task
        # Rows of a product's task: MC, or (fused) four blocks of MC on one packing of B. A
        # task packs its own panels of both operands, so all tasks together pack A once per
        # column of tasks and B once per row of them; with a fused kernel (twice as fast per
        # product) that packing was a quarter of a 1024^3 product (docs/performance.md).
        self.task_rows = blocking.mc * (TASK_BLOCKS_FUSED if fused else 1)
        # row strides of an A read in place along its rows -> the tallest tile that reads it
        # so (`call`, `_in_place`), and per tile height the by-rows block that dispatches on
        # them (filled in by `finish`)
        self.row_strides: dict[int, int] = {}
        self._by_rows: dict[int, tuple[ir.Function, ir.Function]] = {}
        self._packers: dict[tuple[str, int, int], ir.Function] = {}  # `_packer`'s, by kind

    def finish(self) -> None:
        """Defines the scratch each worker needs and the runtime's hook that starts the
        workers: none and null when the module has no large product, so that an executable
        without one links no thread code at all. And the by-rows blocks' dispatch on A's row
        stride, now that every product has asked for its own."""
        blocks: dict[int, ir.Function] = {}
        for mr, (entry, packed) in self._by_rows.items():
            b = ir.IRBuilder(entry.append_basic_block("entry"))
            other = entry.append_basic_block("packed")
            strides = entry.append_basic_block("strides")
            b.cbranch(entry.args[11], other, strides)  # B read in place: A copied, as before
            b.position_at_end(strides)
            switch = b.switch(entry.args[7], other)
            # one block a stride, at its tallest tile: the tall tile's products take the short
            # one where the tall one's rows would collide; the short tile's keep their copy
            # of a stride the tall tile reads (few rows: little to copy, and build time)
            for stride, tallest in self.row_strides.items():
                if tallest > mr:
                    continue
                case = entry.append_basic_block(f"s{stride}")
                switch.add_case(i64(stride), case)
                b.position_at_end(case)
                if stride not in blocks:
                    blocks[stride] = self._emit_block(tallest, True, stride)
                b.call(blocks[stride], entry.args)
                b.ret_void()
            b.position_at_end(other)
            b.call(packed, entry.args)
            b.ret_void()
        scratch = ir.GlobalVariable(self.module, I64, SCRATCH_SYMBOL)
        floats = self.scratch_floats if self._gemm is not None else 0
        scratch.initializer = ir.Constant(I64, floats)
        scratch.global_constant = True
        hook = ir.GlobalVariable(self.module, PTR, HOOK_SYMBOL)
        hook.global_constant = True
        if self._parallel is None:
            hook.initializer = ir.Constant(PTR, None)
        else:
            spawn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I32]), SPAWN_SYMBOL)
            hook.initializer = spawn

    @property
    def scratch_floats(self) -> int:
        """Floats of scratch each worker needs: the packed panels, then a tree task's blocks
        or a convolution's gathered operands (different calls: the larger of the two)."""
        return self.k.scratch_floats + max(
            self.tree_buffers * TREE_MC * self.k.nc, self.gather_floats
        )

    def parallel(self) -> ir.Function:
        """alpha_parallel(task, ctx, count), declared (and the threads' hook set) on first use."""
        if self._parallel is None:
            parallel_ty = ir.FunctionType(ir.VoidType(), [PTR, PTR, I32])
            self._parallel = ir.Function(self.module, parallel_ty, PARALLEL_SYMBOL)
            workers_ty = ir.FunctionType(I32, [])
            self._workers = ir.Function(self.module, workers_ty, WORKERS_SYMBOL)
        return self._parallel

    def workers(self, b: ir.IRBuilder) -> ir.Value:
        """How many threads take tasks (an i64, at run time)."""
        self.parallel()
        return b.zext(b.call(self._workers, []), I64)

    def declare(self) -> None:
        """The blocks and the entry, for a caller that runs its own tasks on them
        (codegen/conv_gemm.py): `call_block` from a task of `parallel()`."""
        self._declare()

    def _declare(self) -> ir.Function:
        if self._gemm is None:
            self.parallel()
            self._block = self._emit_block(self.k.mr)
            self._block_rows = self._dispatching(self.k.mr)
            if self.k.small_mr:
                self._small_block = self._emit_block(self.k.small_mr)
                self._small_block_rows = self._dispatching(self.k.small_mr)
            self._task = self._emit_task("alpha.gemm.task", self.task_rows)
            if self.task_rows != self.k.mc:  # a product as narrow as one NC: MC-row tasks
                self._narrow = self._emit_task("alpha.gemm.task.mc", self.k.mc)
            self._gemm = self._emit_gemm(mc=self.task_rows)
        return self._gemm

    def _dispatching(self, mr: int) -> ir.Function:
        """The by-rows block of mr-row tiles as callers see it: one that reads A in place when
        its row stride is one of `row_strides` (with the short tile where the stride's rows
        allow no taller), else packs it (its body: `finish`)."""
        packed = self._emit_block(mr, by_rows=True)
        entry = ir.Function(self.module, packed.ftype, f"alpha.gemm.rows{mr}")
        entry.linkage = "internal"
        entry.attributes.add("nounwind")
        self._by_rows[mr] = (entry, packed)
        return entry

    def _in_place(self, stride: int) -> int:
        """The tallest tile (MR, the short tile, or 0: none) that reads an A whose rows lie
        `stride` floats apart where it is rather than from a copy: its rows fall at most
        ROWS_PER_SET to an L1 set (a multiple of 4 KiB puts every row in one set, where they
        evict each other and B's panel), a last partial panel packed at that stride fits the
        scratch's A, and a row is long enough (IN_PLACE_FROM) for its copy to cost."""
        K = self.k
        lines = stride // LINE_FLOATS
        sets = L1_SETS // math.gcd(lines, L1_SETS) if stride % LINE_FLOATS == 0 else L1_SETS
        for mr in (K.mr, K.small_mr):
            fits = mr * stride <= K.mc * K.kc
            if mr and mr <= ROWS_PER_SET * sets and fits and stride >= IN_PLACE_FROM:
                return mr
        return 0

    def rows_in_place(self, stride: int) -> None:
        """Asks that an A whose rows lie `stride` floats apart be read where it is, where the
        tiles allow it (`_in_place`) and the module has a block to spare (IN_PLACE_STRIDES)."""
        room = len(self.row_strides) < IN_PLACE_STRIDES
        if stride not in self.row_strides and room and self._in_place(stride):
            self.row_strides[stride] = self._in_place(stride)

    def call_tree(
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
        leaves: int,
        steps: tuple[int, int],
    ) -> None:
        """c[m, n] = the canonical tree's sum over `leaves` leaves of leaf l's product
        (a + l * steps[0]) · (b + l * steps[1]), each an m x k by k x n product as `call`
        computes it: every leaf's sum from +0.0 in ascending p, the leaves added in the tree's
        grouping, per block of C in the task's scratch (the leaves' values never reach C)."""
        self._declare()
        # leaves of few examples: the whole tree in registers, a tile at a time (tree_tiles)
        short = k <= TREE_TILE_MAX_K and b_strides[1] == 1
        key = (leaves, k if short else 0)
        entry = self._trees.get(key)
        if entry is None:
            if short:
                name = f"alpha.gemm.rtree{leaves}k{k}"
                task, mc = emit_tree_tiles_task(self, leaves, k, TREE_MC)
                entry = self._emit_gemm(name, task, mc)
            else:
                name = f"alpha.gemm.tree{leaves}"
                entry = self._emit_gemm(
                    name, emit_blocked_tree_task(self, leaves, TREE_MC), TREE_MC
                )
                self.tree_buffers = max(self.tree_buffers, tree_walk(leaves)[1])
            self._trees[key] = entry
        args = [c, a, bm, i64(m), i64(n), i64(k), *map(i64, a_strides), *map(i64, b_strides)]
        b.call(entry, [*args, *map(i64, steps)])

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
        chain: tuple[ir.Value, ir.Value] | None = None,
        row: ir.Value | None = None,
        sums: ir.Value | None = None,
    ) -> None:
        """c[m, n] (row-major) = a · b, a[i, p] at a[i * as0 + p * as1], b likewise.

        With a chain (an array of `count` pointers to m x n row-major arrays, and count), each
        output is stored as chain[0] + (chain[1] + (... + (chain[count-1] + sum))): the
        additions a combine tree makes to it, or the residual and other same-shaped addends of
        `x + a @ w`, made while the sum is still in a register. With a `row` (n floats: a
        bias), row[j] is added to output (i, j) last, after the chain: `a @ w + b`. Each is one
        float32 addition of the program's, in its order; the sum itself is as without them.

        With `sums` (n floats, +0.0 on entry; b row-major, n a multiple of NR, and m more
        than DIRECT_ROWS, so that B is always packed), sums[j] += b[p, j] for p ascending as
        B's panels are packed: column j's sum over the rows of B, the bias gradient a
        reduce_to makes of the same tensor (column_sums.py), without a pass of its own."""
        where, count = chain if chain is not None else (ir.Constant(PTR, None), i64(0))
        args = [c, a, bm, i64(m), i64(n), i64(k), *map(i64, a_strides), *map(i64, b_strides)]
        bias = row if row is not None else ir.Constant(PTR, None)
        if sums is not None:
            assert b_strides == (n, 1) and n % self.k.nr == 0 and m > DIRECT_ROWS
        a0, a1 = a_strides
        if a1 == 1 and a0 != 1:
            self.rows_in_place(a0)
        column = sums if sums is not None else ir.Constant(PTR, None)
        b.call(self._declare(), [*args, where, count, bias, column])

    # -- packing, one function per kind of panel ------------------------------------------
    def _packer(self, kind: str, lanes: int, stride: int = 0) -> ir.Function:
        """The packing of one kind, a function of the module called wherever a block packs:
        `panels` (packing.pack_panels) takes (dst, src, extent, kc, s_lane, s_k, sums), sums
        null for none (B's column sums, added as it is packed); `rows` (packing.pack_rows, rows
        `stride` floats apart) takes (dst, src, extent, kc, s_lane). Written inline, every
        block had copies of its own, each unswitched and vectorised by LLVM again: a fifth of
        a model's kernels' build time (docs/performance.md)."""
        key = (kind, lanes, stride)
        fn = self._packers.get(key)
        if fn is not None:
            return fn
        params = {"panels": [PTR, PTR, I64, I64, I64, I64, PTR], "rows": [PTR, PTR, I64, I64, I64]}
        name = f"alpha.gemm.pack.{kind}{lanes}" + (f"s{stride}" if stride else "")
        fn = ir.Function(self.module, ir.FunctionType(VOID, params[kind]), name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("noinline")
        for arg in fn.args[:2]:  # the scratch never overlaps an operand: no run-time checks
            arg.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        if kind == "rows":
            dst, src, extent, kc, s_lane = fn.args
            pack_rows(b, dst, src, extent, kc, s_lane, lanes, stride)
        else:
            dst, src, extent, kc, s_lane, s_k, sums = fn.args
            pack_panels(b, dst, src, extent, kc, s_lane, s_k, lanes, sums)
        b.ret_void()
        self._packers[key] = fn
        return fn

    # -- the micro-kernel ----------------------------------------------------------------------
    def _emit_kernel(self, mr: int, by_rows: bool = False, a_row: int = 0) -> ir.Function:
        """kernel(ap, bp, c, ldc, kc, first, ldb, chain, count, at, ldk, row): the mr x NR tile
        at c (row stride ldc) gets Σ over kc steps of the packed A panel and the B panel at bp
        (row stride ldb: NR when packed), starting from +0.0 when `first`, else from its own
        value; then the chain's tiles at element `at` of each (row stride ldk) are added to it,
        the last first (count 0: none), then the NR floats at `row` to each of its rows (null:
        none), before it is stored. `by_rows`: the A panel is its mr rows, KC floats apart
        (packing.pack_rows), not k-major; a_row floats apart where given (A in place)."""
        K = self.k
        nv = K.nr // K.width
        fnty = ir.FunctionType(
            ir.VoidType(),
            [PTR, PTR, PTR, I64, I64, ir.IntType(1), I64, PTR, I64, I64, I64, PTR],
        )
        kind = ("r" if by_rows else "") + (f"{a_row}" if a_row else "")
        fn = ir.Function(self.module, fnty, f"alpha.gemm.kernel{mr}{kind}")
        stride = a_row or K.kc  # from a row of the A panel to the next
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        # one copy, called for whole and edge tiles alike: inlined at both, it was compiled
        # twice in every block (a call per tile of MR x NR x KC products costs nothing)
        fn.attributes.add("noinline")
        ap, bp, c, ldc, kc, first, ldb, chain, count, at0, ldk, bias = fn.args
        for arg in (ap, bp, c):
            arg.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        zero = ir.Constant(self.vec, None)
        slots = [[entry_alloca(b, self.vec) for _ in range(nv)] for _ in range(mr)]
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

        # With fold_b each row of the tile loads B's vectors again, through a copy of bp of
        # its own that LLVM cannot see through (an empty asm returning its operand): it would
        # otherwise load them once a step into registers the accumulators need. Each load has
        # one use and is folded into its multiply (`vmulps mem, a, t`), which takes no share
        # of the floating-point unit's intake of operations: the limit of CPUs that split each
        # 256-bit operation in two (Zen 1). Where 256-bit units make the load ports the limit
        # instead (15 loads a step against 6 cycles of multiplies and adds), two of the four
        # vectors are held in registers and only two folded (`alpha_gemm_fold` 0: 11 loads).
        b_rows = [b.call(OPAQUE_PTR, [bp]) for _ in range(mr)] if K.fold_b else []

        def step(p: ir.Value, fold_all: bool = True) -> None:
            def b_vectors(base: ir.Value, first: int = 0, last: int = nv) -> list[ir.Value]:
                return [
                    b.load(
                        gep(b, base, b.add(b.mul(p, ldb), i64(v * K.width)), self.vec),
                        typ=self.vec,
                        align=4,
                    )
                    for v in range(first, last)
                ]

            brow = [] if K.fold_b else b_vectors(bp)
            held = [] if fold_all or not K.fold_b else b_vectors(bp, 0, HELD_VECTORS)
            for r in range(mr):
                if K.fold_b:
                    brow = held + b_vectors(b_rows[r], len(held))
                at_a = b.add(p, i64(r * stride)) if by_rows else b.add(b.mul(p, i64(mr)), i64(r))
                av = b.load(gep(b, ap, at_a), typ=F32, align=4)
                a_all = splat(b, av, K.width)
                for v in range(nv):
                    acc = b.load(slots[r][v], typ=self.vec)
                    b.store(emit_muladd(b, self.fused, acc, a_all, brow[v]), slots[r][v])

        # B read in place (ldb its row stride, not NR): the panel's rows lie a row of B apart,
        # often a multiple of 4 KiB, where they share an L1 set and no prefetcher follows
        # them, so each step asks for the row it will read PREFETCH_ROWS steps later.
        in_place = b.icmp_unsigned("!=", ldb, i64(K.nr))
        if a_row:  # an A read in place takes B packed (finish's dispatch): one loop less
            in_place = ir.Constant(ir.IntType(1), 0)
        # llvm.prefetch(address, read or write, cache levels, data): a hint
        prefetch = intrinsic(self.module, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])

        def loops(fold_all: bool) -> None:
            self._kernel_loops(b, step, fold_all, in_place, prefetch, mr, bp, c, kc, ldb, ldc)

        if K.fold_b:  # the loops twice: B's vectors all folded, or two held
            flag = self._runtime_i64(FOLD_SYMBOL, 1)
            with b.if_else(b.icmp_unsigned("!=", b.load(flag, typ=I64), i64(0))) as (yes, no):
                with yes:
                    loops(True)
                with no:
                    loops(False)
        else:
            loops(True)

        def link(t: ir.Value) -> None:  # chain[count - 1 - t], the innermost first
            base = b.load(gep(b, chain, b.sub(b.sub(count, i64(1)), t), PTR), typ=PTR)
            for r in range(mr):
                for v in range(nv):
                    at = b.add(at0, b.add(b.mul(i64(r), ldk), i64(v * K.width)))
                    add = b.load(gep(b, base, at, self.vec), typ=self.vec, align=4)
                    b.store(b.fadd(b.load(slots[r][v], typ=self.vec), add), slots[r][v])

        for_count(b, count, link, "link")
        with b.if_then(b.icmp_unsigned("!=", bias, ir.Constant(PTR, None))):  # `+ b`, last
            for v in range(nv):
                add = b.load(gep(b, bias, i64(v * K.width), self.vec), typ=self.vec, align=4)
                for r in range(mr):
                    b.store(b.fadd(b.load(slots[r][v], typ=self.vec), add), slots[r][v])
        for r in range(mr):
            for v in range(nv):
                at = b.add(b.mul(i64(r), ldc), i64(v * K.width))
                b.store(b.load(slots[r][v], typ=self.vec), gep(b, c, at, self.vec), align=4)
        b.ret_void()
        return fn

    def _kernel_loops(
        self,
        b: ir.IRBuilder,
        step: Callable[[ir.Value, bool], None],
        fold_all: bool,
        in_place: ir.Value,
        prefetch: ir.Function,
        mr: int,
        bp: ir.Value,
        c: ir.Value,
        kc: ir.Value,
        ldb: ir.Value,
        ldc: ir.Value,
    ) -> None:
        """The kernel's loop over kc steps, `step(p, fold_all)` each: B read in place asks for
        the row it will read PREFETCH_ROWS steps later; packed B asks for the next tile of C."""
        K = self.k
        with b.if_else(in_place) as (far, near):
            with far:
                # rows past the panel's last cost nothing but the hint (a prefetch never faults)
                hint = [ir.Constant(I32, v) for v in (0, 3, 1)]  # read, every level, data

                def step_ahead(p: ir.Value) -> None:
                    row = b.mul(b.add(p, i64(PREFETCH_ROWS)), ldb)
                    for line in range(0, K.nr, LINE_FLOATS):
                        where = b.gep(bp, [b.add(row, i64(line))], source_etype=F32)
                        b.call(prefetch, [where, *hint])
                    step(p, fold_all)

                for_count(b, kc, step_ahead, "pd")
            with near:
                # Packed B: the next call's tile of C (the tile below: the block's row panels
                # run down a column panel) is asked for, one row every two steps of the first
                # 2 x mr, for writing. Its rows lie ldc apart, often 4 KiB, where no prefetcher
                # follows them, and a block of C larger than L2 comes back from L3 for each
                # block of p: loaded at the kernel's start it cost 6% of a 1024^3 product.
                # Measured on a Sapphire Rapids core (bench/gemm.py, 1024^3, share of the
                # measured peak): fused v4 77-81% -> 80-84%, fused v3 83% -> 88-92%, unfused
                # v4 94% -> 96-97%. Asked all at once at entry it gained nothing (24 requests
                # in flight ahead of the first step's loads); one a step, 7% of the loop.
                for_write = [ir.Constant(I32, v) for v in (1, 3, 1)]
                pairs = min_i64(b, b.lshr(kc, i64(1)), i64(mr))

                def two_steps(j: ir.Value) -> None:
                    row = b.mul(b.add(j, i64(mr)), ldc)
                    for line in range(0, K.nr, LINE_FLOATS):
                        where = b.gep(c, [b.add(row, i64(line))], source_etype=F32)
                        b.call(prefetch, [where, *for_write])
                    p = b.shl(j, i64(1))
                    step(p, fold_all)
                    step(b.add(p, i64(1)), fold_all)

                for_count(b, pairs, two_steps, "pc")
                start = b.shl(pairs, i64(1))
                for_count(b, b.sub(kc, start), lambda q: step(b.add(q, start), fold_all), "p")

    def _runtime_i64(self, name: str, initial: int) -> ir.GlobalVariable:
        """The module's i64 variable `name`, defined with `initial` on first use: one the
        runtime may set at start-up, and which every level's copy reads (codegen/levels.py,
        SHARED). alpha_gemm_fold (1 until the runtime says otherwise); alpha_direct_rows (the
        most rows of a product whose B is read in place; the runtime sets it to 0 for a role
        with a local link; only where an output is read from, never its bits, depends on it)."""
        found = self.module.globals.get(name)
        if isinstance(found, ir.GlobalVariable):
            return found
        variable = ir.GlobalVariable(self.module, I64, name)
        variable.initializer = ir.Constant(I64, initial)
        return variable

    # -- one block of C: the loops over k, then the panels of B and of A -----------------------
    def _emit_block(self, mr: int, by_rows: bool = False, a_row: int = 0) -> ir.Function:
        """block(dst, ld, a, bm, mc, nc, k, a0, a1, b0, b1, direct, chain, count, ldk, scratch,
        resume, row, sums), on panels of mr rows of A:
        dst[i, j] (row stride ld) = Σ_p a[i, p] · bm[p, j] for i < mc, j < nc, a and bm at the
        block's origin (strides a0, a1 and b0, b1), then plus the chain: `count` pointers at
        the block's origin, row stride ldk, then row[j] (nc floats from the block's first
        column; null: none). `direct`: B is read in place where it can be.
        `resume`: each sum continues from dst's value (the partial sum an earlier call stored
        over earlier p, as a later block of p does here) instead of from +0.0. `by_rows`: A's
        panels are its rows copied as they are (A read along p: a1 = 1), KC floats apart,
        where k-major panels took a 4 x 4 transpose for every 16 floats. `a_row`: A's rows
        are that many floats apart (a0), and its whole panels are read where they are; only a
        last, partial one is packed (zero rows after it) at that stride; B is always packed."""
        K = self.k
        fnty = ir.FunctionType(
            ir.VoidType(),
            [PTR, I64, PTR, PTR, I64, I64, I64, I64, I64, I64, I64, ir.IntType(1)]
            + [PTR, I64, I64, PTR, ir.IntType(1), PTR, PTR],
        )
        kind = ("r" if by_rows else "") + (f"{a_row}" if a_row else "")
        fn = ir.Function(self.module, fnty, f"alpha.gemm.block{mr}{kind}")
        kernel = self._emit_kernel(mr, by_rows, a_row)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        dst, ld, a, bm, mc, nc, k, a0, a1, b0, b1, direct, chain, links, ldk, scratch = fn.args[:16]
        if a_row:  # B is packed (finish's dispatch sends a B read in place to the copy of A)
            direct = ir.Constant(ir.IntType(1), 0)
        resume, row, sums = fn.args[16:]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        # scratch is 64-byte aligned by the runtime
        bp = scratch
        ap = gep(b, scratch, i64(K.kc * K.nc))
        tile = b.alloca(F32, size=i64(mr * K.nr))  # the edge tile
        tile.align = 64
        blocks = ceil_div(b, k, K.kc)
        panel_at = entry_alloca(b, PTR)
        panel_ld = entry_alloca(b, I64)

        def k_block(q: ir.Value) -> None:
            p0 = b.mul(q, i64(K.kc))
            kc = min_i64(b, i64(K.kc), b.sub(k, p0))
            b_src = gep(b, bm, b.mul(p0, b0))
            with b.if_then(b.not_(direct)):
                b.call(self._packer("panels", K.nr), [bp, b_src, nc, kc, b1, b0, sums])
            first = b.and_(b.icmp_unsigned("==", q, i64(0)), b.not_(resume))
            # the chain is added once, to the finished sums: in the last block of p
            last = b.icmp_unsigned("==", q, b.sub(blocks, i64(1)))
            count = b.select(last, links, i64(0))
            adds_row = b.and_(last, b.icmp_unsigned("!=", row, ir.Constant(PTR, None)))

            # Rows in sub-blocks of MC, each with its own panels of A, all on this block's
            # panels of B: a task of many rows packs B once for them all, not once per MC.
            def row_block(ic: ir.Value) -> None:
                i_at = b.mul(ic, i64(K.mc))
                rows_here = min_i64(b, i64(K.mc), b.sub(mc, i_at))
                a_src = gep(b, a, b.add(b.mul(p0, a1), b.mul(i_at, a0)))
                whole_panels = b.udiv(rows_here, i64(mr))
                if a_row:  # only a partial last panel is copied
                    rest = b.sub(rows_here, b.mul(whole_panels, i64(mr)))
                    with b.if_then(b.icmp_signed(">", rest, i64(0))):
                        last = gep(b, a_src, b.mul(b.mul(whole_panels, i64(mr)), a0))
                        b.call(self._packer("rows", mr, a_row), [ap, last, rest, kc, a0])
                elif by_rows:
                    b.call(self._packer("rows", mr, K.kc), [ap, a_src, rows_here, kc, a0])
                else:
                    none = ir.Constant(PTR, None)
                    b.call(self._packer("panels", mr), [ap, a_src, rows_here, kc, a0, a1, none])

                def col_panel(jr: ir.Value) -> None:
                    jj = b.mul(jr, i64(K.nr))
                    cols = min_i64(b, i64(K.nr), b.sub(nc, jj))
                    b.store(gep(b, bp, b.mul(jj, kc)), panel_at)
                    b.store(i64(K.nr), panel_ld)
                    with b.if_then(direct):
                        here = gep(b, b_src, b.mul(jj, b1))
                        with b.if_else(b.icmp_signed("==", cols, i64(K.nr))) as (whole_cols, edge):
                            with whole_cols:  # read in place: a panel's row is NR adjacent floats
                                b.store(here, panel_at)
                                b.store(b0, panel_ld)
                            with edge:  # the last, partial panel packed (zero beyond n)
                                packer = self._packer("panels", K.nr)
                                b.call(packer, [bp, here, cols, kc, b1, b0, ir.Constant(PTR, None)])
                                b.store(bp, panel_at)
                    b_panel = b.load(panel_at, typ=PTR)
                    ldb = b.load(panel_ld, typ=I64)
                    row_here = b.select(adds_row, gep(b, row, jj), ir.Constant(PTR, None))

                    def row_panel(ir_: ir.Value) -> None:
                        ii = b.mul(ir_, i64(mr))
                        rows = min_i64(b, i64(mr), b.sub(rows_here, ii))
                        if a_row:
                            kept = b.icmp_unsigned("<", ir_, whole_panels)  # not the copied one
                            a_panel = b.select(kept, gep(b, a_src, b.mul(ii, a0)), ap)
                        else:
                            a_panel = gep(b, ap, b.mul(ii, i64(K.kc) if by_rows else kc))
                        row = b.add(i_at, ii)  # the tile's first row in the block
                        c_tile = gep(b, dst, b.add(b.mul(row, ld), jj))
                        at = b.add(b.mul(row, ldk), jj)  # the tile's place in the chain's arrays
                        whole = b.and_(
                            b.icmp_signed("==", rows, i64(mr)),
                            b.icmp_signed("==", cols, i64(K.nr)),
                        )
                        with b.if_else(whole) as (then, other):
                            with then:
                                b.call(
                                    kernel,
                                    [a_panel, b_panel, c_tile, ld, kc, first, ldb]
                                    + [chain, count, at, ldk, row_here],
                                )
                            with other:
                                with b.if_then(b.not_(first)):  # the earlier blocks' sums
                                    copy_tile(b, c_tile, ld, tile, i64(K.nr), rows, cols)
                                none = ir.Constant(PTR, None)
                                b.call(
                                    kernel,
                                    [a_panel, b_panel, tile, i64(K.nr), kc, first, ldb]
                                    + [none, i64(0), i64(0), i64(0), none],
                                )
                                copy_tile(
                                    b,
                                    tile,
                                    i64(K.nr),
                                    c_tile,
                                    ld,
                                    rows,
                                    cols,
                                    (chain, count, at, ldk),
                                    row_here,
                                )

                    for_count(b, ceil_div(b, rows_here, mr), row_panel, "ir")

                for_count(b, ceil_div(b, nc, K.nr), col_panel, "jr")

            for_count(b, ceil_div(b, mc, K.mc), row_block, "ic")

        for_count(b, blocks, k_block, "kb")
        b.ret_void()
        return fn

    # -- one task: an MC x NC block of C (also the tree tasks' frame, tree_tiles.py) ----------
    def task_frame(
        self, name: str, tree: bool, mc: int
    ) -> tuple[ir.Function, ir.IRBuilder, list[ir.Value], ir.Value, dict[str, ir.Value]]:
        """A task function(ctx, index, scratch) and its block of C: the ctx's fields (a tree
        task's, `tree`, or a product's), and i0, j0, mc, nc and whether B may be read in
        place. A tree task's rows are `mc`; a product's are its ctx's (at most `mc`)."""
        fnty = ir.FunctionType(ir.VoidType(), [PTR, I32, PTR])
        fn = ir.Function(self.module, fnty, name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        ctx, index, scratch = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx_ty = self._tree_ctx if tree else self._ctx
        tys = list(ctx_ty.elements)
        values = [
            b.load(
                b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=ctx_ty), typ=t
            )
            for i, t in enumerate(tys)
        ]
        m, n, task_nc, b1 = values[3], values[4], values[10], values[9]
        tiles_n = b.udiv(b.add(n, b.sub(task_nc, i64(1))), task_nc)
        t = b.zext(index, I64)
        ti, tj = b.udiv(t, tiles_n), b.urem(t, tiles_n)
        rows = i64(mc) if tree else values[15]
        i0, j0 = b.mul(ti, rows), b.mul(tj, task_nc)
        direct_rows = self._runtime_i64(DIRECT_ROWS_SYMBOL, DIRECT_ROWS)
        block = {
            "i0": i0,
            "j0": j0,
            "mc": min_i64(b, rows, b.sub(m, i0)),
            "nc": min_i64(b, task_nc, b.sub(n, j0)),
            # With one row of tasks of few rows (m <= DIRECT_ROWS) each element of a row-major
            # B serves only the few row panels of this task: the micro-kernel reads it where it
            # is, not from a copy. Many row panels would each read the panel's rows one row of
            # B apart again (rows a page apart share an L1 set), so they take packed panels.
            # Where other roles share the machine's memory (alpha_direct_rows 0), B read in
            # place down its columns, a line per row, starves: packing streams its rows.
            "direct": b.and_(
                b.icmp_signed("==", b1, i64(1)),
                b.and_(
                    b.icmp_signed("<=", m, i64(mc)),
                    b.icmp_signed("<=", m, b.load(direct_rows, typ=I64)),
                ),
            ),
        }
        return fn, b, values, scratch, block

    def call_block(
        self,
        b: ir.IRBuilder,
        mc: ir.Value,
        args: list[ir.Value],
        resume: ir.Value | None = None,
        row: ir.Value | None = None,
        sums: ir.Value | None = None,
    ) -> None:
        """The block on panels of MR rows, or of the small MR where that pads a twentieth fewer
        rows of A (a block of few rows: a leaf's examples, a small batch, a convolution's 32 or
        64 channels). The taller tile is the faster per product by a few percent, less than
        the padding it computes in vain: the MNIST-shaped CNN's 64-channel products padded to
        72 rows on the 24-row tile, and took 8% longer a step than on the 8-row one. `resume`
        (an i1; false without it): the sums continue from the values at dst. `row`: a bias
        added to each row as the finished sums are stored (null or None: none). `sums`: the
        columns of B added up as they are packed (GemmEmitter.call; null or None: none)."""
        args = [*args, resume if resume is not None else ir.Constant(ir.IntType(1), 0)]
        args.append(row if row is not None else ir.Constant(PTR, None))
        args.append(sums if sums is not None else ir.Constant(PTR, None))
        a0, a1 = args[7], args[8]
        along = b.and_(b.icmp_signed("==", a1, i64(1)), b.icmp_signed("!=", a0, i64(1)))

        def call(block: ir.Function, by_rows: ir.Function) -> None:
            with b.if_else(along) as (yes, no):
                with yes:
                    b.call(by_rows, args)
                with no:
                    b.call(block, args)

        small = self.k.small_mr
        if not small:
            call(self._block, self._block_rows)
            return

        def padded(mr: int) -> ir.Value:
            return b.mul(ceil_div(b, mc, mr), i64(mr))

        fewer = b.icmp_unsigned(
            "<", b.mul(padded(small), i64(20)), b.mul(padded(self.k.mr), i64(19))
        )
        with b.if_else(fewer) as (few, many):
            with few:
                call(self._small_block, self._small_block_rows)
            with many:
                call(self._block, self._block_rows)

    def _emit_task(self, name: str, rows: int) -> ir.Function:
        fn, b, f, scratch, blk = self.task_frame(name, False, rows)
        c, a, bm, _, n, k, a0, a1, b0, b1, _, chain, links, row, sums, _ = f
        i0, j0 = blk["i0"], blk["j0"]
        origin = b.add(b.mul(i0, n), j0)
        shifted = entry_alloca(b, ir.ArrayType(PTR, CHAIN_MAX))
        shifted.type = PTR

        def shift(t: ir.Value) -> None:
            vector = b.load(gep(b, chain, t, PTR), typ=PTR)
            b.store(gep(b, vector, origin), gep(b, shifted, t, PTR))

        for_count(b, links, shift, "shift")
        self.call_block(
            b,
            blk["mc"],
            [gep(b, c, origin), n, gep(b, a, b.mul(i0, a0)), gep(b, bm, b.mul(j0, b1))]
            + [blk["mc"], blk["nc"], k, a0, a1, b0, b1, blk["direct"], shifted, links, n, scratch],
            row=b.select(b.icmp_unsigned("==", row, ir.Constant(PTR, None)), row, gep(b, row, j0)),
            # the first row of tasks packs each column's B: it adds the column sums
            sums=b.select(
                b.and_(
                    b.icmp_unsigned("!=", sums, ir.Constant(PTR, None)),
                    b.icmp_unsigned("==", i0, i64(0)),
                ),
                gep(b, sums, j0),
                ir.Constant(PTR, None),
            ),
        )
        b.ret_void()
        return fn

    # -- the entry: split C into tasks and run them ----------------------------------------------
    def _emit_gemm(
        self, name: str = "alpha.gemm", task: ir.Function | None = None, mc: int = 0
    ) -> ir.Function:
        """alpha.gemm(c, a, b, m, n, k, strides..., chain, count, row, sums), or with a tree task
        alpha.gemm.treeN(c, a, b, m, n, k, strides..., a_step, b_step)."""
        K = self.k
        tree = task is not None
        extra = [I64, I64] if tree else [PTR, I64, PTR, PTR]
        fnty = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR] + [I64] * 7 + extra)
        fn = ir.Function(self.module, fnty, name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx_ty = self._tree_ctx if tree else self._ctx
        ctx = b.alloca(ctx_ty)
        ctx.type = PTR  # opaque, as every pointer here: fields are reached by typed geps

        def put(i: int, value: ir.Value) -> None:
            at = b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=ctx_ty)
            b.store(value, at)

        for i, arg in enumerate(fn.args[:10]):
            put(i, arg)
        if tree:  # no chain; the leaves' steps through A and B
            put(11, ir.Constant(PTR, None))
            put(12, i64(0))
            put(13, fn.args[10])
            put(14, fn.args[11])
        else:
            put(11, fn.args[10])  # the chain, after the task's columns (10)
            put(12, fn.args[11])
            put(13, fn.args[12])  # the row added last
            put(14, fn.args[13])  # the column sums of B
        m, n = fn.args[3], fn.args[4]
        run = task or self._task
        if not tree and self._narrow is not None:
            # A product no wider than one NC (attention's projections, 1024 x 128 by 128 x
            # 128) takes tasks of MC rows: tasks of four MC blocks (fused kernels) made one
            # row of tasks of it, split by columns, and each task packed all of A again.
            narrow = b.icmp_unsigned("<=", n, i64(K.nc))
            run = b.select(narrow, self._narrow, self._task)
            rows = b.select(narrow, i64(K.mc), i64(mc or K.mc))
        else:
            rows = i64(mc or K.mc)
        if not tree:
            # The rows shared evenly among the rows of tasks, each a whole number of tiles:
            # 1,024 rows in blocks of 192 left a last task of 64, and with two threads one
            # of them idle a sixth of each of the transformer's 1,024 x 128 products.
            tiles_m = b.udiv(b.add(m, b.sub(rows, i64(1))), rows)
            even = ceil_div(b, b.udiv(b.add(m, b.sub(tiles_m, i64(1))), tiles_m), K.mr)
            rows = min_i64(b, rows, b.mul(even, i64(K.mr)))
            put(15, rows)
        # Columns per task: at most NC, and few enough panels that every worker gets about as
        # many as the others (a whole number of rounds of tasks), since small m gives one
        # row of tasks. Only when an output is computed depends on this, never its bits.
        tiles_m = b.udiv(b.add(m, b.sub(rows, i64(1))), rows)
        panels = ceil_div(b, n, K.nr)
        workers = b.zext(b.call(self._workers, []), I64)
        most = i64(K.nc // K.nr)
        tiles_n = ceil_div(b, panels, K.nc // K.nr)
        want = b.udiv(b.add(b.mul(workers, i64(2)), b.sub(tiles_m, i64(1))), tiles_m)
        # One thread balances nothing: a column of tasks more only packs A again (a weight
        # gradient's 128 rows by 1,024 of the transformer's dw products: twice, 1 ms a step)
        want = b.select(b.icmp_unsigned("==", workers, i64(1)), i64(1), want)
        rounds = b.udiv(b.add(tiles_n, b.sub(want, i64(1))), want)
        tiles_n = min_i64(b, b.mul(rounds, want), panels)
        per_task = min_i64(b, most, b.udiv(b.add(panels, b.sub(tiles_n, i64(1))), tiles_n))
        task_nc = b.mul(per_task, i64(K.nr))
        put(10, task_nc)
        tasks = b.mul(tiles_m, b.udiv(b.add(n, b.sub(task_nc, i64(1))), task_nc))
        b.call(self.parallel(), [run, ctx, b.trunc(tasks, I32)])
        b.ret_void()
        return fn
