"""A GPU role's kernels and the launches that make its four entry points.

The host runtime calls the same four entry points on every role (runtime/alpha_program.h):
init, leaf gradient, learner update, forward. On a GPU role each is a fixed sequence of
launches over device buffers, described here as data (`GpuLayout`) that program C turns into
tables for runtime/gpu_role.c. Every launch computes one node (or one learner step) with one
thread per output (gpu_nodes), so the role's bits are the host's.

The kernels' module is built once per device kind: for the GPU each body sits under a
`ptx_kernel` that finds its output from the block and thread index; for the host shadow under
an ordinary function that runtime/gpu_shadow.c calls with the same geometry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from alpha_core.autodiff.reverse import StepGraph
from alpha_core.check.program import Program
from alpha_core.codegen import learner_emit
from alpha_core.codegen.gpu_nodes import NodeBodies, UnsupportedOnGpu
from alpha_core.codegen.gpu_products import PRODUCT_OPS, product_of
from alpha_core.codegen.gpu_tiles import (
    BLOCK,
    Product,
    Tile,
    TiledKernel,
    launched_in_blocks,
    sreg,
    table_arg,
    tile_for,
)
from alpha_core.codegen.kernels import emit_apply_element, init_arguments
from alpha_core.codegen.loops import F32, I32, I64, PTR, entry_alloca, i64, load, store
from alpha_core.ir.graph import Graph, concrete, size
from alpha_core.lower.gpu_support import unsupported_ops
from alpha_core.lower.live import live_nodes
from alpha_core.ops import BOUND
from alpha_core.semantics import learners, rng
from alpha_core.semantics.llvm_arith import LlvmArith

PTX_TRIPLE = "nvptx64-nvidia-cuda"
# the scalars buffer of the learner update: start, count, step (u64 each), then the round's
# values (learners.Round, f32 from float index 6)
SCALAR_START, SCALAR_COUNT, SCALAR_STEP, SCALAR_ROUND = 0, 1, 2, 6
ROUND_FIELDS = 5
SCALAR_SQSUM = SCALAR_ROUND + ROUND_FIELDS  # clipping: the round's sum of squares (f32)
# the norm buffer of a gradient-norm node: lo, hi (u64), then its value (f32 at index 4)
NORM_LO, NORM_HI, NORM_VALUE = 0, 1, 4
SCALAR_WORDS = 8
DYNAMIC = 0  # a launch whose thread count is the update's element count


@dataclass(frozen=True)
class Buffer:
    what: str
    bytes: int


@dataclass(frozen=True)
class Launch:
    kernel: int
    args: tuple[tuple[int, int], ...]  # (buffer, byte offset) per argument
    threads: int  # DYNAMIC: the update's element count


@dataclass(frozen=True)
class GradPiece:
    """Where a parameter's leaf gradient is read back from: a buffer, or a constant."""

    offset: int  # first float in the flat gradient
    count: int
    buffer: int  # -1: every element is `value`
    value: float = 0.0


@dataclass
class GpuLayout:
    kernels: list[str] = field(default_factory=list)
    # per kernel: 1 when it is a block-tiled product (gpu_tiles), which the host shadow calls
    # once per block rather than once per output
    blockwise: list[int] = field(default_factory=list)
    # the block-tiled products: (kernel name, product, tile), for the static counts
    products: list[tuple[str, Product, Tile]] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    init: list[Launch] = field(default_factory=list)
    leaf: list[Launch] = field(default_factory=list)
    apply: list[Launch] = field(default_factory=list)
    forward: list[Launch] = field(default_factory=list)
    sqsum: list[Launch] = field(default_factory=list)  # clipping: one gradient-norm node
    # the canonical tree over a role's leaves on the device (gpu_role.c alpha_leaves_grad):
    # launch d adds sum slot d + 1 into slot d, every element (n_params + 1: the loss last)
    adds: list[Launch] = field(default_factory=list)
    grads: list[GradPiece] = field(default_factory=list)
    params: int = 0
    x: int = 0
    y_class: int = 0
    y_reg: int = 0
    state: int = 0
    grad_sum: int = 0
    scalars: int = 0
    leaf_scalars: int = 0  # the round and the leaf of the gradient in progress (dropout)
    norm: int = 0  # clipping: the node [lo, hi) asked for and its value
    loss: int = 0
    out: int = 0
    sums: int = 0  # the tree's partial sums: tree_depth + 1 slots of n_params + 1 floats
    # the inputs of every leaf of a node at once (features, labels, targets, (round, leaf)),
    # copied over in one go and into the leaf buffers on the device, leaf by leaf
    x_all: int = 0
    y_class_all: int = 0
    y_reg_all: int = 0
    leaf_all: int = 0
    constants: int = 0  # the constant gradient pieces' values, in place (GradPiece buffer -1)
    tree_depth: int = 0  # the deepest addition of a node of the role's leaves; 0: no tree

    def buffer(self, what: str, floats: int) -> int:
        self.buffers.append(Buffer(what, 4 * max(1, floats)))
        return len(self.buffers) - 1

    @property
    def device_bytes(self) -> int:
        return sum(b.bytes for b in self.buffers)


class GpuKernels:
    """Builds the kernels' module for one device kind ("ptx" or "host") and the layout."""

    def __init__(
        self,
        program: Program,
        step: StepGraph,
        device: str,
        triple: str = "",
        multiprocessors: int = 132,
    ) -> None:
        self.program = program
        self.multiprocessors = multiprocessors  # the card's, for the products' tiles
        self.step = step
        self.device = device
        self.module = ir.Module(name=f"alpha.gpu.{program.name}")
        self.module.triple = PTX_TRIPLE if device == "ptx" else triple
        self.layout = GpuLayout()
        self._tid: ir.Function | None = None

    # -- kernels ---------------------------------------------------------------------------

    def _kernel(self, body: ir.Function, name: str) -> int:
        """The launchable function `name(args, threads)` around `body(args, t)`."""
        if self.device == "ptx":
            fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64]), name)
            fn.calling_convention = "ptx_kernel"
            launched_in_blocks(self.module, fn)
            args, threads = fn.args
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            t = b.add(
                b.mul(b.zext(sreg(b, "ctaid.x"), I64), b.zext(sreg(b, "ntid.x"), I64)),
                b.zext(sreg(b, "tid.x"), I64),
            )
            run = b.append_basic_block("run")
            done = b.append_basic_block("done")
            b.cbranch(b.icmp_unsigned("<", t, threads), run, done)
            b.position_at_end(run)
            b.call(body, [args, t])
            b.branch(done)
            b.position_at_end(done)
            b.ret_void()
        else:  # the shadow calls it once per output, in the GPU's geometry
            fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64]), name)
            args, t = fn.args
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            b.call(body, [args, t])
            b.ret_void()
        fn.attributes.add("nounwind")
        self.layout.kernels.append(name)
        self.layout.blockwise.append(0)
        return len(self.layout.kernels) - 1

    def _tiled(self, graph: Graph, i: int, name: str) -> tuple[int, int] | None:
        """Node i as a block-tiled product kernel (gpu_tiles): its index and thread count, or
        None when it is not a product of two tensors."""
        node = graph[i]
        if node.op not in PRODUCT_OPS or any(graph[j].op == "const" for j in node.inputs):
            return None
        leaf = self.program.leaf_size
        shapes = [concrete(graph[j].shape, leaf) for j in node.inputs]
        product = product_of(node, concrete(node.shape, leaf), shapes)
        if product is None:
            return None
        tile = tile_for(product.batch, product.m, product.n, self.multiprocessors, product.k)
        kernel = TiledKernel(self.module, product, tile, self.device == "ptx", self.program.fused)
        kernel.emit(name, table_arg)
        self.layout.kernels.append(name)
        self.layout.blockwise.append(1)
        self.layout.products.append((name, product, tile))
        return len(self.layout.kernels) - 1, kernel.blocks * BLOCK

    def _body(self, name: str) -> tuple[ir.Function, ir.IRBuilder, ir.Value, ir.Value]:
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64]), name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("alwaysinline")
        args, t = fn.args
        return fn, ir.IRBuilder(fn.append_basic_block("entry")), args, t

    @staticmethod
    def _arg(b: ir.IRBuilder, args: ir.Value, k: int) -> ir.Value:
        return b.inttoptr(b.load(b.gep(args, [i64(k)], source_etype=I64), typ=I64), PTR)

    # -- entry points ----------------------------------------------------------------------

    def build(self) -> GpuLayout:
        p = self.program
        lay = self.layout
        lay.params = lay.buffer("parameters", p.n_params)
        lay.x = lay.buffer("leaf inputs", p.leaf_size * p.data.features)
        lay.y_class = lay.buffer("leaf labels", p.leaf_size * max(1, p.data.positions))
        lay.y_reg = lay.buffer("leaf targets", p.leaf_size * p.data.outputs)
        lay.grad_sum = lay.buffer("gradient sum", p.n_params)
        lay.state = lay.buffer("learner state", p.state_slots * p.n_params + p.state_scalars)
        lay.scalars = lay.buffer("update scalars", 2 * SCALAR_WORDS)
        lay.leaf_scalars = lay.buffer("leaf round and index", 2)
        lay.norm = lay.buffer("gradient-norm node", 8)
        self._init()
        self._leaf()
        self._tree()
        self._apply()
        self._forward()
        if p.learner.clip is not None:
            self._sqsum()
        return lay

    def _init(self) -> None:
        for spec in self.program.params:
            kind, values, seed = init_arguments(spec.init)
            fn, b, args, t = self._body(f"alpha.gpu.init.{len(self.layout.init)}")
            A = LlvmArith(b)
            key = rng.seed_key(A, i64(seed))
            store(b, rng.init_value(A, kind, values, key, t), self._arg(b, args, 0), t)
            b.ret_void()
            k = self._kernel(fn, f"alpha_init_{len(self.layout.init)}")
            self.layout.init.append(Launch(k, ((self.layout.params, 4 * spec.offset),), spec.count))

    def _graph(
        self, graph: Graph, roots: list[int], prefix: str, bound: dict[int, tuple[int, int]]
    ) -> tuple[list[Launch], dict[int, int]]:
        """A launch per live node not bound to a buffer; returns them and each node's buffer."""
        live = live_nodes(graph, roots)
        missing = unsupported_ops(graph, live)
        if missing:
            raise UnsupportedOnGpu(", ".join(missing))
        bodies = NodeBodies(
            self.module,
            graph,
            self.program.leaf_size,
            f"alpha.gpu.{prefix}",
            self.device == "ptx",
            training=prefix == "step",
            fused=self.program.fused,
        )
        where: dict[int, tuple[int, int]] = dict(bound)
        owned: dict[int, int] = {}
        launches: list[Launch] = []
        for i in live:
            node = graph[i]
            if node.op == "const" or i in where:
                continue
            if node.op in BOUND:
                raise AssertionError(f"{node.op} %{i} is not bound")
            buf = self.layout.buffer(
                f"{prefix} %{i} {node.op}", size(concrete(node.shape, self.program.leaf_size))
            )
            where[i] = (buf, 0)
            owned[i] = buf
            tiled = self._tiled(graph, i, f"alpha_{prefix}_{i}")
            if tiled is not None:
                k, threads = tiled
                launches.append(Launch(k, (where[i], *(where[j] for j in node.inputs)), threads))
                continue
            nk = bodies.kernel(i)
            k = self._kernel(nk.body, f"alpha_{prefix}_{i}")
            extra = ((self.layout.leaf_scalars, 0),) if nk.leaf else ()
            args = (where[i], *(where[j] for j in nk.inputs), *extra)
            launches.append(Launch(k, args, nk.threads))
        return launches, owned

    def _bound(self, graph: Graph) -> dict[int, tuple[int, int]]:
        lay = self.layout
        bound: dict[int, tuple[int, int]] = {}
        for i, node in enumerate(graph.nodes):
            if node.op == "param":
                index = node.attr("index")
                assert isinstance(index, int)
                bound[i] = (lay.params, 4 * self.program.params[index].offset)
            elif node.op == "input_x":
                bound[i] = (lay.x, 0)
            elif node.op == "label_class":
                bound[i] = (lay.y_class, 0)
            elif node.op == "label_reg":
                bound[i] = (lay.y_reg, 0)
        return bound

    def _leaf(self) -> None:
        st = self.step
        bound = self._bound(st.graph)
        launches, owned = self._graph(st.graph, [st.loss_sum, *st.grads], "step", bound)
        self.layout.leaf = launches
        self.layout.loss = owned[st.loss_sum] if st.loss_sum in owned else -1
        for spec, g in zip(self.program.params, st.grads, strict=True):
            node = st.graph[g]
            if node.op == "const":
                self.layout.grads.append(GradPiece(spec.offset, spec.count, -1, node.value()))
            elif g in owned:
                self.layout.grads.append(GradPiece(spec.offset, spec.count, owned[g]))
            else:  # a gradient that is a parameter or an input itself: copied on the device
                raise UnsupportedOnGpu("gradient bound to an input")
        if self.layout.loss < 0:
            raise UnsupportedOnGpu("loss bound to an input")

    def _tree(self) -> None:
        """The canonical tree's additions over leaves on the device: the slots of its partial
        sums, and one launch per depth d adding slot d + 1 into slot d, left + right, every
        element (the gradient, then the loss), as the host's tree adds two pieces."""
        p, lay = self.program, self.layout
        depth = (p.leaves - 1).bit_length()  # a node of the canonical tree splits this deep
        stride = p.n_params + 1
        lay.tree_depth = depth
        lay.sums = lay.buffer("leaf sums", (depth + 1) * stride if depth else 1)
        rows = p.leaf_size * p.leaves if depth else 1
        lay.x_all = lay.buffer("a node's leaf inputs", rows * p.data.features)
        lay.y_class_all = lay.buffer("a node's leaf labels", rows * max(1, p.data.positions))
        lay.y_reg_all = lay.buffer("a node's leaf targets", rows * p.data.outputs)
        lay.leaf_all = lay.buffer("a node's rounds and leaves", 2 * p.leaves if depth else 1)
        constant = any(g.buffer < 0 for g in lay.grads)
        lay.constants = lay.buffer("constant gradients", p.n_params if constant else 1)
        if not depth:
            return
        fn, b, a, t = self._body("alpha.gpu.tree_add")
        A = LlvmArith(b)
        left, right = self._arg(b, a, 0), self._arg(b, a, 1)
        store(b, A.add(load(b, left, t), load(b, right, t)), left, t)
        b.ret_void()
        k = self._kernel(fn, "alpha_tree_add")
        for d in range(depth):
            args = ((lay.sums, 4 * d * stride), (lay.sums, 4 * (d + 1) * stride))
            lay.adds.append(Launch(k, args, stride))

    def _forward(self) -> None:
        p = self.program
        bound = self._bound(p.model)
        # what evaluation reads: the model's output, or the value it is judged by (one logit's
        # probability), as kernels.emit_forward
        result = p.output if p.forward_output is None else p.forward_output
        launches, owned = self._graph(p.model, [result], "fwd", bound)
        self.layout.forward = launches
        if result not in owned:
            raise UnsupportedOnGpu("output bound to an input")
        self.layout.out = owned[result]

    def _apply(self) -> None:
        """The learner update: one thread computes the round's values (the rate of a schedule,
        AdamW's factor, Adam's powers, which it stores back into the state) as the host's
        alpha_apply does at its top, then one thread per element [start, start + count)
        applies emit_apply_element with them."""
        p = self.program
        lay = self.layout
        args = ((lay.params, 0), (lay.state, 0), (lay.grad_sum, 0), (lay.scalars, 0))
        fn, b, a, _ = self._body("alpha.gpu.round")
        state, scalars = self._arg(b, a, 1), self._arg(b, a, 3)
        count = load(b, scalars, i64(SCALAR_COUNT), I64)
        step = b.trunc(load(b, scalars, i64(SCALAR_STEP), I64), I32)
        sqsum = load(b, scalars, i64(SCALAR_SQSUM)) if p.learner.clip is not None else None
        r = learner_emit.emit_round_values(self.module, b, p, state, step, count, sqsum)
        for k, value in enumerate(astuple_round(r)):
            store(b, value, scalars, i64(SCALAR_ROUND + k))
        b.ret_void()
        lay.apply.append(Launch(self._kernel(fn, "alpha_round"), args, 1))
        fn, b, a, t = self._body("alpha.gpu.update")
        A = LlvmArith(b)
        params, state, gsum, scalars = (self._arg(b, a, k) for k in range(4))
        start = load(b, scalars, i64(SCALAR_START), I64)
        count = load(b, scalars, i64(SCALAR_COUNT), I64)
        r = learners.Round(*(load(b, scalars, i64(SCALAR_ROUND + k)) for k in range(ROUND_FIELDS)))
        emit_apply_element(b, A, p, params, state, gsum, start, count, t, r.b1t, r.b2t, r)
        b.ret_void()
        lay.apply.append(Launch(self._kernel(fn, "alpha_update"), args, DYNAMIC))

    def _sqsum(self) -> None:
        """The canonical tree over elements [lo, hi) of the squared mean gradient
        (learners.clip_square), level by level across threads, with the bits of the host's
        recursion (learner_emit).

        A node of n elements splits at the largest power of two strictly below n; its left
        child is a perfect tree, and a right child whose size is a power of two is one too. So
        [lo, hi) is a run of perfect trees, one per set bit of n from the highest (each starting
        at a multiple of its size), and its value is c1 + (c2 + (... + cm)). One launch squares
        every element into a scratch array; launch L (1, 2, ...) adds, in every perfect tree of
        at least 2^L elements, each pair of 2^(L-1)-element nodes, left + right, into the left
        one's place: the trees' own pairings, a level at a time. A last single thread adds the
        trees' values from the right."""
        p = self.program
        lay = self.layout
        n_max = max(1, p.n_params)
        scratch = lay.buffer("gradient-norm squares", n_max)
        args = ((lay.grad_sum, 0), (lay.norm, 0), (scratch, 0))

        def bounds(b: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
            gsum, norm, sq = (self._arg(b, a, k) for k in range(3))
            lo = load(b, norm, i64(NORM_LO), I64)
            return gsum, sq, lo, b.sub(load(b, norm, i64(NORM_HI), I64), lo)

        fn, b, a, t = self._body("alpha.gpu.sqsum.square")
        gsum, sq, lo, n = bounds(b, a)
        with b.if_then(b.icmp_unsigned("<", t, n)):
            value = learners.clip_square(LlvmArith(b), load(b, gsum, b.add(lo, t)), p.batch)
            store(b, value, sq, t)
        b.ret_void()
        lay.sqsum.append(Launch(self._kernel(fn, "alpha_sqsum_square"), args, n_max))
        level = 1
        while (1 << level) <= n_max:
            width = 1 << level
            fn, b, a, t = self._body(f"alpha.gpu.sqsum.level{level}")
            _, sq, _, n = bounds(b, a)
            x = b.mul(t, i64(width))
            covered = b.and_(n, i64(~(width - 1) & (2**64 - 1)))  # the trees of >= 2^L
            with b.if_then(b.icmp_unsigned("<=", b.add(x, i64(width)), covered)):
                right = b.add(x, i64(width // 2))
                store(b, LlvmArith(b).add(load(b, sq, x), load(b, sq, right)), sq, x)
            b.ret_void()
            kernel = self._kernel(fn, f"alpha_sqsum_level{level}")
            lay.sqsum.append(Launch(kernel, args, -(-n_max // width)))
            level += 1
        fn, b, a, _ = self._body("alpha.gpu.sqsum.trees")
        A = LlvmArith(b)
        _, sq, _, n = bounds(b, a)
        norm = self._arg(b, a, 1)
        # from the lowest set bit of n up: acc = its tree; then each higher tree + acc. The
        # tree of bit j starts where the higher bits end: n with bits 0..j cleared.
        acc = entry_alloca(b, F32)
        seen = entry_alloca(b, ir.IntType(1))
        b.store(A.const(0.0), acc)
        b.store(ir.Constant(ir.IntType(1), 0), seen)
        for j in range(64):
            bit = 1 << j
            with b.if_then(b.icmp_unsigned("!=", b.and_(n, i64(bit)), i64(0))):
                start = b.and_(n, i64(~(2 * bit - 1) & (2**64 - 1)))
                tree = load(b, sq, start)
                first = b.load(seen, typ=ir.IntType(1))
                b.store(A.select(first, A.add(tree, b.load(acc, typ=F32)), tree), acc)
                b.store(ir.Constant(ir.IntType(1), 1), seen)
        store(b, b.load(acc, typ=F32), norm, i64(NORM_VALUE))
        b.ret_void()
        lay.sqsum.append(Launch(self._kernel(fn, "alpha_sqsum"), args, 1))


def astuple_round(r: learners.Round[ir.Value]) -> tuple[ir.Value, ...]:
    return (r.lr, r.factor, r.b1t, r.b2t, r.scale)


def build_gpu_kernels(
    program: Program, step: StepGraph, device: str, triple: str = "", multiprocessors: int = 132
) -> tuple[ir.Module, GpuLayout]:
    """The module of a GPU role's kernels for `device` ("ptx", or "host" for the shadow, with
    the host's `triple`) and its layout; raises UnsupportedOnGpu naming the ops without one."""
    kernels = GpuKernels(program, step, device, triple, multiprocessors)
    layout = kernels.build()
    return kernels.module, layout
