"""One GPU kernel per graph node: the body that computes one output of the node.

A GPU role runs each node of a graph as one launch. Thread t computes output t by itself, with
the operations, and in the order, that docs/semantics.md fixes and the host loops use: a sum
starts from +0.0 and adds its terms in ascending row-major order of the input, a product adds
over k ascending, each with a separate multiply and add. No thread ever adds into another's
output, so the launch geometry cannot change a bit. (The softmax and squared-error losses are
computed by one thread per example, which writes that example's outputs.)

A body is `void body(ptr args, i64 t)`: args[0] is the output's address, args[1..] the inputs'
(64-bit addresses), t the output. The same body is compiled for the GPU (under a kernel that
finds t from its block and thread) and, for the host shadow, for the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from alpha_core.codegen.gpu_conv import ConvBody
from alpha_core.codegen.gpu_ir import (
    OpaqueZero,
    UnsupportedOnGpu,
    linear_at,
    loop,
    nest,
    unravel,
)
from alpha_core.codegen.gpu_layers import LayerBodies
from alpha_core.codegen.gpu_warp_sum import WARP, WARP_SUM_MIN, warp_sum
from alpha_core.codegen.loops import (
    F32,
    I32,
    I64,
    PTR,
    broadcast_strides,
    entry_alloca,
    i64,
    load,
    row_major_strides,
    store,
)
from alpha_core.ir.graph import Graph, Node, concrete, size
from alpha_core.ops import BOUND, GPU_REFUSAL, GPU_SUPPORTED, OPS
from alpha_core.semantics import learners as recipes
from alpha_core.semantics.llvm_arith import LlvmArith, emit_math_functions

# every op a GPU role computes (bound and constant nodes included): the operation table's
# (alpha_core/ops); any other is refused `unsupported-on-target` at compile time
SUPPORTED = GPU_SUPPORTED
# the body of one family of ops: (bodies, builder, arith, node, index, shape, output buffer,
# input buffers, output index t) -> the thread count (None: one per output)
Body = Callable[
    [
        "NodeBodies",
        ir.IRBuilder,
        LlvmArith,
        Node,
        int,
        tuple[int, ...],
        ir.Value,
        dict[int, ir.Value],
        ir.Value,
    ],
    int | None,
]


def gpu_family(op: str) -> str:
    """The GPU body family the operation table gives `op` (GPU_REFUSAL: none)."""
    entry = OPS.get(op)
    return GPU_REFUSAL if entry is None else entry.gpu


@dataclass(frozen=True)
class NodeKernel:
    """The body of one node's kernel and how many threads it runs."""

    body: ir.Function
    threads: int
    inputs: tuple[int, ...]  # graph nodes whose addresses follow the output's in args
    leaf: bool = False  # then the leaf's round and index (2 x u32) follow them (dropout)


class NodeBodies(LayerBodies):
    """Emits the body of each node's kernel into one module."""

    def __init__(
        self,
        module: ir.Module,
        graph: Graph,
        batch: int,
        prefix: str,
        ptx: bool = False,
        training: bool = True,
        fused: bool = False,
    ) -> None:
        self.module = module
        self.fused = fused  # the system's arithmetic: its products' terms (LlvmArith.muladd)
        self.ptx = ptx
        self.training = training  # the step graph: dropout masks; the forward: the identity
        self._leaf: ir.Value | None = None  # the leaf scalars' address, in a dropout body
        self.graph = graph
        self.batch = batch
        self.prefix = prefix
        self.math = emit_math_functions(module)

    def shape(self, i: int) -> tuple[int, ...]:
        return concrete(self.graph[i].shape, self.batch)

    def kernel(self, i: int) -> NodeKernel:
        node = self.graph[i]
        if node.op not in SUPPORTED or node.op in BOUND or node.op == "const":
            raise UnsupportedOnGpu(node.op)
        fn = ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR, I64]), f"{self.prefix}.n{i}"
        )
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("alwaysinline")
        args, t = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        inputs = tuple(j for j in node.inputs if self.graph[j].op != "const")
        ptrs: dict[int, ir.Value] = {}
        out = self._arg(b, args, 0)
        for k, j in enumerate(inputs):
            ptrs[j] = self._arg(b, args, k + 1)
        leaf = node.op == "dropout" and self.training
        self._leaf = self._arg(b, args, len(inputs) + 1) if leaf else None
        threads = self._body(b, LlvmArith(b, self.fused), node, i, out, ptrs, t)
        b.ret_void()
        return NodeKernel(fn, threads, inputs, leaf)

    def _arg(self, b: ir.IRBuilder, args: ir.Value, k: int) -> ir.Value:
        addr = b.load(b.gep(args, [i64(k)], source_etype=I64), typ=I64)
        return b.inttoptr(addr, PTR)

    def _read(
        self, b: ir.IRBuilder, ptrs: dict[int, ir.Value], j: int, at: ir.Value, ty: ir.Type = F32
    ) -> ir.Value:
        """Element `at` of input node j: a constant node is its value everywhere."""
        node = self.graph[j]
        if node.op == "const":
            return ir.Constant(F32, node.value())
        return load(b, ptrs[j], at, ty)

    def _body(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int:
        """Emit output t of node i by the body of its family in the operation table
        (alpha_core/ops); returns the thread count."""
        shape = self.shape(i)
        n = max(1, size(shape))
        body = NodeBodies.FAMILIES.get(gpu_family(node.op))
        if body is None:  # bound, constant or refused: no kernel (kernel() refuses it first)
            raise UnsupportedOnGpu(node.op)
        threads = body(self, b, A, node, i, shape, out, ptrs, t)
        return n if threads is None else threads

    def _zeros(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        store(b, ir.Constant(F32, 0.0), out, t)
        return None

    def _arith(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        coords = unravel(b, t, shape)
        ja, jc = node.inputs
        va = self._read(b, ptrs, ja, linear_at(b, coords, broadcast_strides(self.shape(ja), shape)))
        vc = self._read(b, ptrs, jc, linear_at(b, coords, broadcast_strides(self.shape(jc), shape)))
        fn = {"add": A.add, "sub": A.sub, "mul": A.mul, "div": A.div}[node.op]
        store(b, fn(va, vc), out, t)
        return None

    def _math(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        op = node.op
        v = self._read(b, ptrs, node.inputs[0], t)
        if op == "neg":
            r = A.neg(v)
        elif op == "relu":
            r = recipes.relu(OpaqueZero(b) if self.ptx else A, v)
        else:
            r = b.call(self.math[op], [v])
        store(b, r, out, t)
        return None

    def _math_grad(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        rec = {
            "relu_grad": recipes.relu_grad,
            "tanh_grad": recipes.tanh_grad,
            "sigmoid_grad": recipes.sigmoid_grad,
        }[node.op]
        x = self._read(b, ptrs, node.inputs[0], t)
        d = self._read(b, ptrs, node.inputs[1], t)
        store(b, rec(A, x, d), out, t)
        return None

    def _matmul_node(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        self._matmul(b, A, node, out, ptrs, t)
        return None

    def _transpose(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        # the last two axes swapped, for every index before them: output (g, c, r) of the
        # n x m transposes is input (g, r, c)
        (m, cols) = self.shape(node.inputs[0])[-2:]
        g, within = b.udiv(t, i64(m * cols)), b.urem(t, i64(m * cols))
        c, r = b.udiv(within, i64(m)), b.urem(within, i64(m))
        at_in = b.add(b.mul(g, i64(m * cols)), b.add(b.mul(r, i64(cols)), c))
        store(b, self._read(b, ptrs, node.inputs[0], at_in), out, t)
        return None

    def _reduce_node(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        return self._reduce(b, A, node, shape, out, ptrs, t)

    def _broadcast(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        axis = node.axis()
        if axis is None:
            strides = [0] * len(shape)
        else:
            own = row_major_strides(shape[:axis] + shape[axis + 1 :])
            strides = own[:axis] + [0] + own[axis:]
        coords = unravel(b, t, shape)
        store(b, self._read(b, ptrs, node.inputs[0], linear_at(b, coords, strides)), out, t)
        return None

    def _xent_node(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        self._xent(b, A, node, out, ptrs, t, grad=node.op == "xent_grad")
        return self.shape(node.inputs[0])[0]

    def _mse_node(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        if node.op == "mse_grad":
            _, width = self.shape(node.inputs[0])
            d = A.sub(
                self._read(b, ptrs, node.inputs[0], t), self._read(b, ptrs, node.inputs[1], t)
            )
            store(b, A.div(A.add(d, d), A.const(float(width))), out, t)
            return None
        self._mse(b, A, node, out, ptrs, t)
        return self.shape(node.inputs[0])[0]

    def _layer_node(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        return self._layer(b, A, node, i, shape, out, ptrs, t)  # gpu_layers.py

    def _loss_node(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        return self._loss(b, A, node, out, ptrs, t)  # gpu_layers.py

    def _extreme_node(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        return self._extreme(b, A, node, out, ptrs, t)  # gpu_layers.py

    def _conv(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        conv = ConvBody(  # gpu_conv.py
            b,
            A,
            node,
            [self.shape(j) for j in node.inputs],
            lambda k, at: self._read(b, ptrs, node.inputs[k], at),
            lambda n, body, name: loop(b, n, body, name),
            lambda at, dims: unravel(b, at, dims),
        )
        return conv.emit(shape, out, t)

    def _matmul(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> None:
        """out[r, c] = Σ_k a[r, k] * w[k, c], k ascending from +0.0."""
        ja, jw = node.inputs
        (_, k), (_, n) = self.shape(ja), self.shape(jw)
        r, c = b.udiv(t, i64(n)), b.urem(t, i64(n))
        acc = entry_alloca(b)
        b.store(ir.Constant(F32, 0.0), acc)

        def step(kk: ir.Value) -> None:
            av = self._read(b, ptrs, ja, b.add(b.mul(r, i64(k)), kk))
            wv = self._read(b, ptrs, jw, b.add(b.mul(kk, i64(n)), c))
            b.store(A.muladd(b.load(acc, typ=F32), av, wv), acc)

        loop(b, k, step, "k")
        store(b, b.load(acc, typ=F32), out, t)

    def _reduce(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        out_shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int | None:
        """Output t: the sum, from +0.0, of the inputs that reduce into it, in ascending
        row-major order of the input (the order the host's loop adds them in). On the GPU a
        sum of at least WARP_SUM_MIN terms takes a warp (gpu_warp_sum: the same order): then
        thread t is lane t % 32 of output t / 32, and the kernel runs 32 threads an output."""
        src = node.inputs[0]
        src_shape = self.shape(src)
        n_out = max(1, size(out_shape))
        terms = size(src_shape) // n_out if src_shape else 1
        lane = None  # the thread's lane when a warp takes the sum
        if self.ptx and terms >= WARP_SUM_MIN:
            t, lane = b.udiv(t, i64(WARP)), b.urem(t, i64(WARP))
        if node.op == "reduce_to":
            to_out = broadcast_strides(out_shape, src_shape)
        else:
            axis = node.axis()
            if axis is None:
                to_out = [0] * len(src_shape)
            else:
                own = row_major_strides(out_shape)
                to_out = own[:axis] + [0] + own[axis:]
        # a source dimension with stride 0 into the output is summed over; the others are
        # fixed by t's coordinates
        out_coords = unravel(b, t, out_shape) if out_shape else []
        lead = len(src_shape) - len(out_shape) if node.op == "reduce_to" else 0
        st_src = row_major_strides(src_shape)
        base: ir.Value = i64(0)
        varying: list[int] = []
        for d, s in enumerate(to_out):
            if s == 0:
                varying.append(d)
                continue
            if node.op == "reduce_to":
                coord = out_coords[d - lead]
            else:
                axis = node.axis()
                assert isinstance(axis, int)
                coord = out_coords[d if d < axis else d - 1]
            base = b.add(base, b.mul(coord, i64(st_src[d])))

        def term_at(idx: list[ir.Value]) -> ir.Value:
            at = base
            for d, j in zip(varying, idx, strict=True):
                at = b.add(at, b.mul(j, i64(st_src[d])))
            return at

        dims = [src_shape[d] for d in varying]
        if lane is not None:
            total = warp_sum(
                b, A, terms, lane, lambda k: self._read(b, ptrs, src, term_at(unravel(b, k, dims)))
            )
        else:
            acc = entry_alloca(b)
            b.store(ir.Constant(F32, 0.0), acc)

            def add(idx: list[ir.Value]) -> None:
                term = self._read(b, ptrs, src, term_at(idx))
                b.store(A.add(b.load(acc, typ=F32), term), acc)

            nest(b, dims, add, "r")
            total = b.load(acc, typ=F32)
        if node.op == "mean":
            axis = node.axis()
            count = size(src_shape) if axis is None else src_shape[axis]
            total = A.div(total, A.const(float(count)))
        if lane is None:
            store(b, total, out, t)
            return None
        with b.if_then(b.icmp_unsigned("==", lane, i64(0))):
            store(b, total, out, t)
        return n_out * WARP

    def _xent(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        r: ir.Value,
        grad: bool,
    ) -> None:
        """Example r: m = max z; s = Σ exp(z - m); loss = log s - (z[y] - m);
        grad = exp(z - m) / s - [j = y] (the host's recipe, loss_ops.emit_xent)."""
        jz, jy = node.inputs
        _, classes = self.shape(jz)
        base = b.mul(r, i64(classes))
        m, s = self._max_and_sum(b, A, lambda j: self._read(b, ptrs, jz, b.add(base, j)), classes)
        exp = self.math["exp"]
        y = b.sext(load(b, ptrs[jy], r, I32), I64)
        if not grad:
            zy = self._read(b, ptrs, jz, b.add(base, y))
            store(b, A.sub(b.call(self.math["log"], [s]), A.sub(zy, m)), out, r)
            return

        def cls(j: ir.Value) -> None:
            p = A.div(b.call(exp, [A.sub(self._read(b, ptrs, jz, b.add(base, j)), m)]), s)
            hot = b.icmp_unsigned("==", j, y)
            store(b, A.sub(p, A.select(hot, A.const(1.0), A.const(0.0))), out, b.add(base, j))

        loop(b, classes, cls, "g")

    def _mse(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        r: ir.Value,
    ) -> None:
        """Example r: loss = (Σ d*d) / n with d = p - t, j ascending from +0.0."""
        jp, jt = node.inputs
        _, width = self.shape(jp)
        base = b.mul(r, i64(width))
        s_slot = entry_alloca(b)
        b.store(A.const(0.0), s_slot)

        def term(j: ir.Value) -> None:
            at = b.add(base, j)
            d = A.sub(self._read(b, ptrs, jp, at), self._read(b, ptrs, jt, at))
            b.store(A.add(b.load(s_slot, typ=F32), A.mul(d, d)), s_slot)

        loop(b, width, term, "sq")
        store(b, A.div(b.load(s_slot, typ=F32), A.const(float(width))), out, r)

    #: the body of each GPU family the operation table names (alpha_core/ops: Op.gpu); bound
    #: and constant nodes have none: gpu_kernels.py binds them to buffers or reads the value
    FAMILIES: ClassVar[dict[str, Body | None]] = {
        "bound": None,
        "const": None,
        "zeros": _zeros,
        "arith": _arith,
        "math": _math,
        "math_grad": _math_grad,
        "matmul": _matmul_node,
        "transpose": _transpose,
        "reduce": _reduce_node,
        "broadcast": _broadcast,
        "xent": _xent_node,
        "mse": _mse_node,
        "layer": _layer_node,
        "loss": _loss_node,
        "extreme": _extreme_node,
        "conv": _conv,
    }
