"""Block-tiled product kernels of a GPU role: the structure of a fast SGEMM with the host's bits.

Every product-like node (`@`, batched `@`, conv2d and both its adjoints as implicit products)
is one sum per output over a fixed sequence of terms: out[g, m, n] = Σ_k term(A[g, m, k],
B[g, k, n]), k ascending from +0.0 (docs/semantics.md). A block of 256 threads computes a
BM x BN tile of outputs: for each run (stage) of BK values of k it stages A's BM x BK tile and
B's BK x BN tile in shared memory (each thread loading a few elements), and every thread adds
those BK terms to each of its TM x TN outputs, which it keeps in registers. Each tile has two
shared buffers, stage s in buffer s % 2: a thread reads its elements of stage s + 1 from global
memory into registers before it computes stage s, so the loads' latency passes under the
arithmetic, stores them into the other buffer after, and one barrier a stage fences both.
An output is still added by one thread, over k ascending, with the same term as the host's
loop (`LlvmArith.muladd`, or conv_ops' masked term for a padded position), so the tile sizes,
the block count and the card cannot change a bit: only the number of times an operand is read
from global memory changes, from 8 bytes per multiply-add to 4 (BM + BN) / (BM BN).

The K tail (K not a multiple of BK) is a last run of K mod BK terms, never padded terms: adding
a padded term (0 · 0) would turn a -0.0 sum into +0.0. Rows and columns past the edges are
computed from zeros and never stored.

One generator emits both devices' code. For the GPU the phases are one thread's code between
`bar.sync` barriers and the tile lives in `.shared` memory. For the host shadow (gpu_shadow.c)
the kernel is called once per block and runs each phase for the block's 256 threads in turn,
its shared tiles and every thread's register tile in stack arrays: the same loads, the same
terms in the same order for every output, which is what makes the shadow a control.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from alpha_core.codegen.gpu_ir import loop
from alpha_core.codegen.loops import F32, I32, I64, PTR, i64
from alpha_core.semantics.llvm_arith import LlvmArith

BLOCK = 256  # threads per block: runtime/gpu.h ALPHA_GPU_BLOCK
I8 = ir.IntType(8)
SHARED = 3  # NVPTX's address space of .shared memory


@dataclass(frozen=True)
class Tile:
    """A block tile: BM x BN outputs, TM x TN per thread, BK terms per shared stage."""

    name: str
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    def __post_init__(self) -> None:
        assert (self.bm // self.tm) * (self.bn // self.tn) == BLOCK, self
        assert (self.bm * self.bk) % BLOCK == 0 and (self.bk * self.bn) % BLOCK == 0, self

    @property
    def global_bytes_per_muladd(self) -> float:
        """Global-memory bytes a full tile loads per multiply-add: 4 (BM + BN) BK / (BM BN BK)."""
        return 4 * (self.bm + self.bn) / (self.bm * self.bn)


T16K = Tile("t16k", 16, 16, 64, 1, 1)
# largest first (tile_for picks one per product and card); t16k is t16 with stages four times
# as deep, for long sums over few outputs (see tile_for)
TILES: tuple[Tile, ...] = (
    Tile("t128", 128, 128, 8, 8, 8),
    Tile("t64", 64, 64, 16, 4, 4),
    Tile("t32", 32, 32, 16, 2, 2),
    Tile("t16", 16, 16, 16, 1, 1),
    T16K,
)
LONG_K = 1024  # a sum at least this long over too few blocks to fill the card takes t16k


def tile_for(batch: int, m: int, n: int, multiprocessors: int, k: int = 0) -> Tile:
    """The tile a product takes on a card of `multiprocessors`: the best by a small model,
    (the share of multiprocessors its blocks occupy, at most 1) x (its outputs per shared
    load: TM TN / (TM + TN)) x (the share of its tiles' outputs that exist, not padding),
    the tile with less padding on a tie. When that is t16 and its blocks do not fill the card
    while each sums `k` >= LONG_K terms (a convolution's weight gradient, an MLP's narrow
    products), the block's time is the global loads' latency once a stage: t16k's stages
    are four times as deep, so a thread has four times the loads in flight each time. Any
    tile gives the same bits; this only guesses which is fastest, from the structure
    (scripts/qualify-gpu measures on a card)."""

    def score(tile: Tile) -> tuple[float, float]:
        blocks = blocks_of(tile, batch, m, n)
        useful = batch * m * n / (blocks * tile.bm * tile.bn)
        busy = min(1.0, blocks / multiprocessors)
        return busy * tile.tm * tile.tn / (tile.tm + tile.tn) * useful, useful

    best = max((tile for tile in TILES if tile is not T16K), key=score)
    if best.name == "t16" and k >= LONG_K and blocks_of(best, batch, m, n) < multiprocessors:
        return T16K
    return best


def declared(module: ir.Module, name: str, ret: ir.Type) -> ir.Function:
    """The module's function `name() -> ret` (an intrinsic), declared on first use."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, []), name)
    assert isinstance(fn, ir.Function)
    return fn


def sreg(b: ir.IRBuilder, reg: str) -> ir.Value:
    """A PTX special register of the running thread (`tid.x`, `ctaid.x`, `ntid.x`)."""
    return b.call(declared(b.module, f"llvm.nvvm.read.ptx.sreg.{reg}", I32), [])


def blocks_of(tile: Tile, batch: int, m: int, n: int) -> int:
    return batch * -(-m // tile.bm) * -(-n // tile.bn)


Sources = tuple[ir.Value, ir.Value]  # the addresses of the node's inputs 0 and 1
# (builder, sources, batch g, row m, term k) -> A's value; m and k within the product's bounds
ReadA = Callable[[ir.IRBuilder, Sources, ir.Value, ir.Value, ir.Value], ir.Value]
# (builder, sources, batch g, term k, column n) -> B's value and whether the term is kept
# (None: always)
ReadB = Callable[
    [ir.IRBuilder, Sources, ir.Value, ir.Value, ir.Value], tuple[ir.Value, ir.Value | None]
]
# (builder, sources, batch g, row m, column n) -> the output's offset
OutAt = Callable[[ir.IRBuilder, Sources, ir.Value, ir.Value, ir.Value], ir.Value]


@dataclass(frozen=True)
class Product:
    """One product-like node as a sum over k per output (see the module docstring)."""

    op: str
    batch: int
    m: int
    n: int
    k: int
    read_a: ReadA
    read_b: ReadB
    out_at: OutAt
    masked: bool  # read_b gives a keep flag (a convolution's padded positions)
    b_first: bool  # the host's term multiplies B's value by A's (the operand order it uses)

    @property
    def muladds(self) -> int:
        return self.batch * self.m * self.n * self.k

    @property
    def shape(self) -> str:
        """ "m x n x k", "batch x m x n x k" for a batched product (as reports name it)."""
        mnk = f"{self.m}x{self.n}x{self.k}"
        return f"{self.batch}x{mnk}" if self.batch > 1 else mnk


def term(A: LlvmArith, acc: ir.Value, x: ir.Value, y: ir.Value, keep: ir.Value | None) -> ir.Value:
    """acc plus the term x · y, as conv_ops.add_product adds it (a value, not a slot): unfused,
    the product or +0.0 where not kept; fused, fma(x, y, acc) or acc as it was."""
    if keep is None:
        return A.muladd(acc, x, y)
    if not A.fused:
        return A.add(acc, A.b.select(keep, A.mul(x, y), A.const(0.0)))
    return A.b.select(keep, A.muladd(acc, x, y), acc)


class _Threads:
    """How a phase runs for each thread: on the GPU, once with the thread's index; in the
    shadow, once per thread of the block, in order."""

    def __init__(self, b: ir.IRBuilder, ptx: bool, tid: ir.Value | None) -> None:
        self.b, self.ptx, self.tid = b, ptx, tid

    def each(self, phase: Callable[[ir.Value], None], name: str) -> None:
        if self.ptx:
            assert self.tid is not None
            phase(self.tid)
        else:
            loop(self.b, BLOCK, phase, name)


class TiledKernel:
    """Emits one product's kernel `name(args, x)` into `module`: args[0] the output's address,
    args[1] and args[2] the node's inputs 0 and 1 (the product's reads know which is A); x the
    block (the shadow) or the launch's thread count (the GPU, which reads its block)."""

    def __init__(
        self, module: ir.Module, product: Product, tile: Tile, ptx: bool, fused: bool
    ) -> None:
        self.module, self.p, self.tile, self.ptx, self.fused = module, product, tile, ptx, fused
        # what emit issued, in order, for the tests: ("fetch", k0), ("put", buffer),
        # ("compute", buffer), ("barrier", None), and ("loop", count) ... ("end", None) around
        # the steady loop's body, each operand the IR value emitted (the loop's are
        # expressions of its counter)
        self.schedule: list[tuple[str, Any]] = []

    @property
    def blocks(self) -> int:
        return blocks_of(self.tile, self.p.batch, self.p.m, self.p.n)

    def _array(self, b: ir.IRBuilder, name: str, ty: ir.Type, n: int) -> ir.Value:
        """A block's shared array: .shared memory on the GPU, a stack array in the shadow."""
        if self.ptx:
            gv = ir.GlobalVariable(self.module, ir.ArrayType(ty, n), name, addrspace=SHARED)
            gv.linkage = "internal"
            gv.initializer = ir.Constant(ir.ArrayType(ty, n), ir.Undefined)
            gv.align = 16
            gv.type = ir.PointerType(addrspace=SHARED)  # opaque: accesses name their types
            return gv
        with b.goto_entry_block():
            slot = b.alloca(ir.ArrayType(ty, n), name=name)
        slot.align = 16
        slot.type = PTR  # opaque, as entry_alloca's
        return slot

    def emit(
        self, name: str, args_of: Callable[[ir.IRBuilder, ir.Value, int], ir.Value]
    ) -> ir.Function:
        p, tile = self.p, self.tile
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64]), name)
        if self.ptx:
            fn.calling_convention = "ptx_kernel"
            launched_in_blocks(self.module, fn)
        fn.attributes.add("nounwind")
        args, x = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        A = LlvmArith(b, self.fused)
        out, src0, src1 = (args_of(b, args, k) for k in range(3))
        src = (src0, src1)
        if self.ptx:
            block = b.zext(sreg(b, "ctaid.x"), I64)
            tid: ir.Value | None = b.zext(sreg(b, "tid.x"), I64)
        else:
            block, tid = x, None
        tiles_m, tiles_n = -(-p.m // tile.bm), -(-p.n // tile.bn)
        g = b.udiv(block, i64(tiles_m * tiles_n))
        rest = b.urem(block, i64(tiles_m * tiles_n))
        m0 = b.mul(b.udiv(rest, i64(tiles_n)), i64(tile.bm))
        n0 = b.mul(b.urem(rest, i64(tiles_n)), i64(tile.bn))
        na, nb = tile.bk * tile.bm, tile.bk * tile.bn
        la, lb = na // BLOCK, nb // BLOCK  # the elements of A's and B's tiles a thread loads
        # two buffers of each tile: a stage computes from one while the next is stored into the
        # other (buffer s % 2 holds stage s)
        sa = self._array(b, f"{name}.a", F32, 2 * na)  # 2 x [BK][BM]: k-major
        sb = self._array(b, f"{name}.b", F32, 2 * nb)  # 2 x [BK][BN]
        sk = self._array(b, f"{name}.keep", I8, 2 * nb) if p.masked else None

        def base(buf: ir.Value, n: int) -> ir.Value:
            return b.mul(buf, i64(n))

        per = tile.tm * tile.tn
        staged = la + lb + (lb if p.masked else 0)  # what a thread holds between load and store
        if self.ptx:  # a thread's outputs and staged loads: registers (SROA keeps these slots
            # out of memory)
            with b.goto_entry_block():
                slots = [b.alloca(F32, name=f"acc{j}") for j in range(per)]
                held_in = [
                    b.alloca(F32 if j < la + lb else I8, name=f"ld{j}") for j in range(staged)
                ]

            def acc_slot(t: ir.Value, j: int) -> ir.Value:
                return slots[j]

            def load_slot(t: ir.Value, j: int) -> ir.Value:
                return held_in[j]

        else:  # every thread's outputs, one row of `per` floats each; its staged loads likewise
            accs = self._array(b, f"{name}.accs", F32, BLOCK * per)
            lds = self._array(b, f"{name}.lds", F32, BLOCK * (la + lb))
            lks = self._array(b, f"{name}.lks", I8, BLOCK * lb) if p.masked else None

            def acc_slot(t: ir.Value, j: int) -> ir.Value:
                return self._at(b, accs, b.add(b.mul(t, i64(per)), i64(j)), F32, BLOCK * per)

            def load_slot(t: ir.Value, j: int) -> ir.Value:
                if j < la + lb:
                    at = b.add(b.mul(t, i64(la + lb)), i64(j))
                    return self._at(b, lds, at, F32, BLOCK * (la + lb))
                assert lks is not None
                at = b.add(b.mul(t, i64(lb)), i64(j - la - lb))
                return self._at(b, lks, at, I8, BLOCK * lb)

        threads = _Threads(b, self.ptx, tid)

        def start(t: ir.Value) -> None:
            for j in range(per):
                b.store(A.const(0.0), acc_slot(t, j))

        threads.each(start, "zero")

        def a_at(e: ir.Value) -> tuple[ir.Value, ir.Value]:  # A: k fastest (rows' runs)
            return b.udiv(e, i64(tile.bk)), b.urem(e, i64(tile.bk))  # (mm, kk)

        def b_at(e: ir.Value) -> tuple[ir.Value, ir.Value]:  # B: n fastest (coalesced)
            return b.udiv(e, i64(tile.bn)), b.urem(e, i64(tile.bn))  # (kk, nn)

        def fetch(k0: ir.Value, count: int) -> None:
            """Every thread reads its elements of the stage at k0 from global memory into its
            staged slots (in flight while the previous stage is computed)."""

            def phase(t: ir.Value) -> None:
                for u in range(la):
                    mm, kk = a_at(b.add(t, i64(u * BLOCK)))
                    row, k = b.add(m0, mm), b.add(k0, kk)
                    ok = b.and_(
                        b.icmp_unsigned("<", row, i64(p.m)), b.icmp_unsigned("<", kk, i64(count))
                    )
                    v = p.read_a(b, src, g, b.select(ok, row, i64(0)), b.select(ok, k, i64(0)))
                    b.store(b.select(ok, v, A.const(0.0)), load_slot(t, u))
                for u in range(lb):
                    kk, nn = b_at(b.add(t, i64(u * BLOCK)))
                    col, k = b.add(n0, nn), b.add(k0, kk)
                    ok = b.and_(
                        b.icmp_unsigned("<", col, i64(p.n)), b.icmp_unsigned("<", kk, i64(count))
                    )
                    v, keep = p.read_b(
                        b, src, g, b.select(ok, k, i64(0)), b.select(ok, col, i64(0))
                    )
                    b.store(b.select(ok, v, A.const(0.0)), load_slot(t, la + u))
                    if p.masked:
                        kept = b.and_(ok, keep) if keep is not None else ok
                        b.store(b.zext(kept, I8), load_slot(t, la + lb + u))

            threads.each(phase, "fetch")
            self.schedule.append(("fetch", k0))

        def put(buf: ir.Value) -> None:
            """Every thread stores its staged elements into the shared tiles `buf`."""

            def phase(t: ir.Value) -> None:
                for u in range(la):
                    mm, kk = a_at(b.add(t, i64(u * BLOCK)))
                    v = b.load(load_slot(t, u), typ=F32)
                    at = b.add(base(buf, na), b.add(b.mul(kk, i64(tile.bm)), mm))
                    b.store(v, self._at(b, sa, at, F32, 2 * na))
                for u in range(lb):
                    kk, nn = b_at(b.add(t, i64(u * BLOCK)))
                    at = b.add(base(buf, nb), b.add(b.mul(kk, i64(tile.bn)), nn))
                    b.store(b.load(load_slot(t, la + u), typ=F32), self._at(b, sb, at, F32, 2 * nb))
                    if sk is not None:
                        kept = b.load(load_slot(t, la + lb + u), typ=I8)
                        b.store(kept, self._at(b, sk, at, I8, 2 * nb))

            threads.each(phase, "put")
            self.schedule.append(("put", buf))

        def compute(buf: ir.Value, count: int) -> None:
            """Every thread adds the stage's `count` terms in `buf` to its outputs."""

            def phase(t: ir.Value) -> None:
                ty, tx = b.udiv(t, i64(tile.bn // tile.tn)), b.urem(t, i64(tile.bn // tile.tn))
                ra = b.add(b.mul(ty, i64(tile.tm)), base(buf, na))
                rb = b.add(b.mul(tx, i64(tile.tn)), base(buf, nb))
                held = [b.load(acc_slot(t, j), typ=F32) for j in range(per)]
                for kk in range(count):  # unrolled: the stage's terms, k ascending
                    a = [
                        b.load(
                            self._at(
                                b, sa, b.add(i64(kk * tile.bm), b.add(ra, i64(i))), F32, 2 * na
                            ),
                            typ=F32,
                        )
                        for i in range(tile.tm)
                    ]
                    cols = [b.add(i64(kk * tile.bn), b.add(rb, i64(j))) for j in range(tile.tn)]
                    bv = [b.load(self._at(b, sb, c, F32, 2 * nb), typ=F32) for c in cols]
                    keep = [
                        b.icmp_unsigned(
                            "!=", b.load(self._at(b, sk, c, I8, 2 * nb), typ=I8), ir.Constant(I8, 0)
                        )
                        if sk is not None
                        else None
                        for c in cols
                    ]
                    for i in range(tile.tm):
                        for j in range(tile.tn):
                            x, y = (bv[j], a[i]) if p.b_first else (a[i], bv[j])
                            held[i * tile.tn + j] = term(A, held[i * tile.tn + j], x, y, keep[j])
                for j in range(per):
                    b.store(held[j], acc_slot(t, j))

            threads.each(phase, "compute")
            self.schedule.append(("compute", buf))

        # Stage s covers k in [s BK, s BK + count): BK terms, the K tail's K mod BK last (never
        # padded terms: adding 0 · 0 would turn a -0.0 sum into +0.0). Stage s + 1 is read from
        # global memory before stage s is computed and stored after it, into the other buffer;
        # one barrier after the store then fences both (every thread has finished reading the
        # buffer that the next store overwrites, and has written the one the next stage reads).
        full, tail = divmod(p.k, tile.bk)
        stages = full + (1 if tail else 0)
        fetch(i64(0), tile.bk if full else tail)
        put(i64(0))
        self._barrier(b)

        def steady(s: ir.Value) -> None:  # stage s, full, and the next one full too
            fetch(b.mul(b.add(s, i64(1)), i64(tile.bk)), tile.bk)
            buf = b.and_(s, i64(1))
            compute(buf, tile.bk)
            put(b.xor(buf, i64(1)))
            self._barrier(b)

        self.schedule.append(("loop", max(0, full - 1)))
        loop(b, full - 1, steady, "kt")  # none when full <= 1
        self.schedule.append(("end", None))
        last = stages - 1
        if full and tail:  # the last full stage, then the tail
            fetch(i64(full * tile.bk), tail)
            compute(i64((full - 1) % 2), tile.bk)
            put(i64(full % 2))
            self._barrier(b)
        compute(i64(last % 2), tile.bk if last < full else tail)

        def finish(t: ir.Value) -> None:
            ty, tx = b.udiv(t, i64(tile.bn // tile.tn)), b.urem(t, i64(tile.bn // tile.tn))
            for i in range(tile.tm):
                row = b.add(m0, b.add(b.mul(ty, i64(tile.tm)), i64(i)))
                for j in range(tile.tn):
                    col = b.add(n0, b.add(b.mul(tx, i64(tile.tn)), i64(j)))
                    inside = b.and_(
                        b.icmp_unsigned("<", row, i64(p.m)), b.icmp_unsigned("<", col, i64(p.n))
                    )
                    with b.if_then(inside):
                        at = b.gep(out, [p.out_at(b, src, g, row, col)], source_etype=F32)
                        b.store(b.load(acc_slot(t, i * tile.tn + j), typ=F32), at)

        threads.each(finish, "store")
        b.ret_void()
        return fn

    def _barrier(self, b: ir.IRBuilder) -> None:
        self.schedule.append(("barrier", None))
        if self.ptx:
            b.call(declared(self.module, "llvm.nvvm.barrier0", ir.VoidType()), [])

    def _at(self, b: ir.IRBuilder, arr: ir.Value, at: ir.Value, ty: ir.Type, n: int) -> ir.Value:
        """Element `at` of a shared (or stack) array of n elements of `ty`."""
        return b.gep(arr, [i64(0), at], source_etype=ir.ArrayType(ty, n))


def launched_in_blocks(module: ir.Module, kernel: ir.Function) -> None:
    """Tell ptxas (and the driver's JIT) that `kernel` runs in blocks of BLOCK threads (PTX
    `.maxntid 256`): it may then give each thread up to 255 registers knowing the block fits
    the register file, and a launch can never be refused for too many registers."""
    module.add_named_metadata(
        "nvvm.annotations",
        [kernel, ir.MetaDataString(module, "maxntidx"), ir.Constant(I32, BLOCK)],
    )


def table_arg(b: ir.IRBuilder, args: ir.Value, k: int) -> ir.Value:
    """Address k of a launch's argument table (64-bit device addresses)."""
    return b.inttoptr(b.load(b.gep(args, [i64(k)], source_etype=I64), typ=I64), PTR)


def product_module(
    product: Product, tile: Tile, ptx: bool, fused: bool, triple: str = ""
) -> ir.Module:
    """A module of one kernel, `alpha_product(args, x)`, computing `product` with `tile`: the
    GPU's (triple nvptx64) or the host shadow's (x the block). For measuring a kernel by itself:
    bench/gpu_kernels.py and the tests."""
    module = ir.Module(name="alpha.gpu.product")
    module.triple = "nvptx64-nvidia-cuda" if ptx else triple
    TiledKernel(module, product, tile, ptx, fused).emit("alpha_product", table_arg)
    return module
