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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir

from alpha_core.codegen.conv_ops import CONV_OPS
from alpha_core.codegen.gpu_conv import ConvBody
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
from alpha_core.codegen.loss_ops import LOSS_OPS
from alpha_core.codegen.tensor_ops import EXTREME_OPS, LAYER_OPS, token_index
from alpha_core.ir.graph import Graph, Node, concrete, size
from alpha_core.semantics import activations
from alpha_core.semantics import learners as recipes
from alpha_core.semantics.llvm_arith import LlvmArith
from alpha_core.semantics.mathfuncs import emit_math_functions

ELEMENTWISE = ("add", "sub", "mul", "div")
# the layer operations (tensor_ops.py on the host) that have a GPU body here, from the same
# recipes; named one by one, so an op the host learns later is refused until it has one
LAYER = (
    *activations.UNARY,
    *activations.GRADS,
    "maximum",
    "minimum",
    "pick_grad",
    "reshape",
    "softmax",
    "log_softmax",
    "bmatmul",
    "causal_mask",
    "embed",
    "embed_grad",
    "slice",
    "slice_grad",
    "dropout",
    "swap_axes",
)
assert set(LAYER) <= set(LAYER_OPS)
EXTREMES = EXTREME_OPS  # max/min along an axis, or every axis, and their adjoints
UNARY = ("neg", "relu", "tanh", "sigmoid", "exp", "log")
GRADS = ("relu_grad", "tanh_grad", "sigmoid_grad")
BOUND = ("param", "input_x", "label_class", "label_reg")
# every op a GPU role computes; any other is refused `unsupported-on-target` at compile time
SUPPORTED = frozenset(
    (
        "const",
        "zeros",
        "matmul",
        "transpose",
        "sum",
        "mean",
        "reduce_to",
        "broadcast",
        "xent",
        "xent_grad",
        "mse",
        "mse_grad",
        *ELEMENTWISE,
        *UNARY,
        *GRADS,
        *BOUND,
        *LAYER,
        *CONV_OPS,
        *LOSS_OPS,
        *EXTREMES,
    )
)


class UnsupportedOnGpu(Exception):
    """A graph node with no GPU kernel: the op's name."""


@dataclass(frozen=True)
class NodeKernel:
    """The body of one node's kernel and how many threads it runs."""

    body: ir.Function
    threads: int
    inputs: tuple[int, ...]  # graph nodes whose addresses follow the output's in args
    leaf: bool = False  # then the leaf's round and index (2 x u32) follow them (dropout)


def unsupported_ops(graph: Graph, live: Sequence[int]) -> list[str]:
    """The ops of the live nodes that have no GPU kernel, each once, in graph order."""
    seen: list[str] = []
    for i in live:
        op = graph[i].op
        if op not in SUPPORTED and op not in seen:
            seen.append(op)
    return seen


def _unravel(b: ir.IRBuilder, t: ir.Value, shape: Sequence[int]) -> list[ir.Value]:
    """The row-major coordinates of element t of `shape`."""
    coords: list[ir.Value] = []
    rest = t
    for d in reversed(shape):
        coords.append(b.urem(rest, i64(d)))
        rest = b.udiv(rest, i64(d))
    return list(reversed(coords))


def _linear(b: ir.IRBuilder, coords: Sequence[ir.Value], strides: Sequence[int]) -> ir.Value:
    at: ir.Value = i64(0)
    for c, s in zip(coords, strides, strict=True):
        if s:
            at = b.add(at, b.mul(c, i64(s)))
    return at


def _loop(b: ir.IRBuilder, n: int, body: Callable[[ir.Value], None], name: str) -> None:
    """for j in 0..n (a static count, at least 1 iteration when n > 0)."""
    if n <= 0:
        return
    pre = b.block
    loop = b.append_basic_block(f"{name}.loop")
    done = b.append_basic_block(f"{name}.done")
    b.branch(loop)
    b.position_at_end(loop)
    j = b.phi(I64, name=name)
    j.add_incoming(i64(0), pre)
    body(j)
    nxt = b.add(j, i64(1))
    j.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, i64(n)), loop, done)
    b.position_at_end(done)


def _nest(
    b: ir.IRBuilder, dims: Sequence[int], body: Callable[[list[ir.Value]], None], name: str
) -> None:
    """Nested loops over `dims`, the last innermost (row-major order)."""

    def level(k: int, outer: list[ir.Value]) -> None:
        if k == len(dims):
            body(outer)
            return
        _loop(b, dims[k], lambda j: level(k + 1, [*outer, j]), f"{name}{k}")

    level(0, [])


class _OpaqueZero(LlvmArith):
    """The host's arithmetic, but +0.0 comes from an instruction LLVM cannot see through.

    LLVM turns `x > 0 ? x : 0` into `max.f32 x, 0` on NVPTX; whether that instruction orders
    -0.0 below +0.0 as the select does is the hardware's rule, not the program's. With the zero
    opaque, the select stays a compare and a select, as on the host.
    """

    def const(self, x: float) -> ir.Value:
        if x != 0.0:
            return super().const(x)
        asm = ir.InlineAsm(ir.FunctionType(F32, []), "mov.b32 $0, 0;", "=f")
        return self.b.call(asm, [])


class NodeBodies:
    """Emits the body of each node's kernel into one module."""

    def __init__(
        self,
        module: ir.Module,
        graph: Graph,
        batch: int,
        prefix: str,
        ptx: bool = False,
        training: bool = True,
    ) -> None:
        self.module = module
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
        threads = self._body(b, LlvmArith(b), node, i, out, ptrs, t)
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
        """Emit output t of node i; returns the thread count."""
        shape = self.shape(i)
        n = max(1, size(shape))
        op = node.op
        if op == "zeros":
            store(b, ir.Constant(F32, 0.0), out, t)
        elif op in ELEMENTWISE:
            coords = _unravel(b, t, shape)
            ja, jc = node.inputs
            va = self._read(
                b, ptrs, ja, _linear(b, coords, broadcast_strides(self.shape(ja), shape))
            )
            vc = self._read(
                b, ptrs, jc, _linear(b, coords, broadcast_strides(self.shape(jc), shape))
            )
            fn = {"add": A.add, "sub": A.sub, "mul": A.mul, "div": A.div}[op]
            store(b, fn(va, vc), out, t)
        elif op in UNARY:
            v = self._read(b, ptrs, node.inputs[0], t)
            if op == "neg":
                r = A.neg(v)
            elif op == "relu":
                r = recipes.relu(_OpaqueZero(b) if self.ptx else A, v)
            else:
                r = b.call(self.math[op], [v])
            store(b, r, out, t)
        elif op in GRADS:
            rec = {
                "relu_grad": recipes.relu_grad,
                "tanh_grad": recipes.tanh_grad,
                "sigmoid_grad": recipes.sigmoid_grad,
            }[op]
            x = self._read(b, ptrs, node.inputs[0], t)
            d = self._read(b, ptrs, node.inputs[1], t)
            store(b, rec(A, x, d), out, t)
        elif op == "matmul":
            self._matmul(b, A, node, out, ptrs, t)
        elif op == "transpose":
            # the last two axes swapped, for every index before them: output (g, c, r) of the
            # n x m transposes is input (g, r, c)
            (m, cols) = self.shape(node.inputs[0])[-2:]
            g, within = b.udiv(t, i64(m * cols)), b.urem(t, i64(m * cols))
            c, r = b.udiv(within, i64(m)), b.urem(within, i64(m))
            at = b.add(b.mul(g, i64(m * cols)), b.add(b.mul(r, i64(cols)), c))
            store(b, self._read(b, ptrs, node.inputs[0], at), out, t)
        elif op in ("sum", "mean", "reduce_to"):
            self._reduce(b, A, node, shape, out, ptrs, t)
        elif op == "broadcast":
            axis = node.axis()
            if axis is None:
                strides = [0] * len(shape)
            else:
                own = row_major_strides(shape[:axis] + shape[axis + 1 :])
                strides = own[:axis] + [0] + own[axis:]
            coords = _unravel(b, t, shape)
            store(b, self._read(b, ptrs, node.inputs[0], _linear(b, coords, strides)), out, t)
        elif op in ("xent", "xent_grad"):
            self._xent(b, A, node, out, ptrs, t, grad=op == "xent_grad")
            return self.shape(node.inputs[0])[0]
        elif op in ("mse", "mse_grad"):
            if op == "mse_grad":
                _, width = self.shape(node.inputs[0])
                d = A.sub(
                    self._read(b, ptrs, node.inputs[0], t), self._read(b, ptrs, node.inputs[1], t)
                )
                store(b, A.div(A.add(d, d), A.const(float(width))), out, t)
            else:
                self._mse(b, A, node, out, ptrs, t)
                return self.shape(node.inputs[0])[0]
        elif op in LAYER:
            return self._layer(b, A, node, i, shape, out, ptrs, t)
        elif op in LOSS_OPS:
            return self._loss(b, A, node, out, ptrs, t)
        elif op in EXTREMES:
            return self._extreme(b, A, node, out, ptrs, t)
        elif op in CONV_OPS:
            conv = ConvBody(
                b,
                A,
                node,
                [self.shape(j) for j in node.inputs],
                lambda k, at: self._read(b, ptrs, node.inputs[k], at),
                lambda n, body, name: _loop(b, n, body, name),
                lambda at, dims: _unravel(b, at, dims),
            )
            return conv.emit(shape, out, t)
        else:  # pragma: no cover - SUPPORTED lists exactly the ops above
            raise UnsupportedOnGpu(op)
        return n

    def _layer(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        i: int,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int:
        """Output t of a layer operation, as tensor_ops computes it on the host."""
        op = node.op
        n = max(1, size(shape))
        if op in activations.UNARY:
            store(b, activations.UNARY[op](A, self._read(b, ptrs, node.inputs[0], t)), out, t)
        elif op in activations.GRADS:
            x = self._read(b, ptrs, node.inputs[0], t)
            d = self._read(b, ptrs, node.inputs[1], t)
            store(b, activations.GRADS[op](A, x, d), out, t)
        elif op in ("maximum", "minimum", "pick_grad"):
            coords = _unravel(b, t, shape)
            vals = [
                self._read(b, ptrs, j, _linear(b, coords, broadcast_strides(self.shape(j), shape)))
                for j in node.inputs
            ]
            if op == "pick_grad":
                kind, side = str(node.attr("kind")), int(str(node.attr("side")))
                v = activations.pick_grad(A, kind, side, *vals)
            else:
                pick = activations.maximum if op == "maximum" else activations.minimum
                v = pick(A, vals[0], vals[1])
            store(b, v, out, t)
        elif op == "reshape" or (op == "dropout" and self._leaf is None):
            store(b, self._read(b, ptrs, node.inputs[0], t), out, t)  # evaluation: no mask
        elif op == "dropout":
            # element e of example i of leaf l in round t, as tensor_ops._dropout numbers it
            assert self._leaf is not None
            rate, seed = float(str(node.attr("rate"))), int(str(node.attr("seed")))
            rows, per = shape[0], n // max(shape[0], 1)
            rnd = b.zext(load(b, self._leaf, i64(0), I32), I64)
            leaf_index = b.zext(load(b, self._leaf, i64(1), I32), I64)
            first = b.add(b.shl(rnd, i64(32)), b.mul(leaf_index, i64(rows)))
            ex, e = b.udiv(t, i64(per)), b.urem(t, i64(per))
            index = b.add(b.mul(b.add(first, ex), i64(per)), e)
            keep = activations.dropout_keep(A, seed, index, rate)
            v = self._read(b, ptrs, node.inputs[0], t)
            scale = activations.dropout_scale(A, rate)
            store(b, A.select(keep, A.mul(v, scale), A.const(0.0)), out, t)
        elif op == "causal_mask":
            coords = _unravel(b, t, shape)
            keep = b.icmp_unsigned("<=", coords[-1], coords[-2])
            fill = A.const(float(str(node.attr("fill"))))
            store(b, b.select(keep, self._read(b, ptrs, node.inputs[0], t), fill), out, t)
        elif op in ("softmax", "log_softmax"):
            return self._softmax(b, A, node, shape, out, ptrs, t)
        elif op == "bmatmul":
            ja, jc = node.inputs
            sa, sc = self.shape(ja), self.shape(jc)
            m, k, cols = sa[-2], sa[-1], sc[-1]
            g = b.udiv(t, i64(m * cols))
            r = b.urem(b.udiv(t, i64(cols)), i64(m))
            c = b.urem(t, i64(cols))
            a_row = b.add(b.mul(g, i64(m * k)), b.mul(r, i64(k)))
            c_col = b.add(b.mul(g, i64(k * cols)), c)
            acc = entry_alloca(b)
            b.store(ir.Constant(F32, 0.0), acc)

            def step(kk: ir.Value) -> None:
                av = self._read(b, ptrs, ja, b.add(a_row, kk))
                cv = self._read(b, ptrs, jc, b.add(c_col, b.mul(kk, i64(cols))))
                b.store(A.add(b.load(acc, typ=F32), A.mul(av, cv)), acc)

            _loop(b, k, step, "k")
            store(b, b.load(acc, typ=F32), out, t)
        elif op == "embed":
            rows, width = self.shape(node.inputs[0])
            p, j = b.udiv(t, i64(width)), b.urem(t, i64(width))
            row = token_index(b, A, self._read(b, ptrs, node.inputs[1], p), rows)
            v = self._read(b, ptrs, node.inputs[0], b.add(b.mul(row, i64(width)), j))
            store(b, v, out, t)
        elif op == "embed_grad":
            rows, width = shape
            positions = size(self.shape(node.inputs[1]))
            row, j = b.udiv(t, i64(width)), b.urem(t, i64(width))
            acc = entry_alloca(b)
            b.store(ir.Constant(F32, 0.0), acc)

            def position(p: ir.Value) -> None:
                mine = b.icmp_unsigned(
                    "==", token_index(b, A, self._read(b, ptrs, node.inputs[1], p), rows), row
                )
                v = self._read(b, ptrs, node.inputs[0], b.add(b.mul(p, i64(width)), j))
                now = b.load(acc, typ=F32)
                b.store(b.select(mine, A.add(now, v), now), acc)

            _loop(b, positions, position, "p")
            store(b, b.load(acc, typ=F32), out, t)
        elif op == "swap_axes":
            a, c = int(str(node.attr("a"))), int(str(node.attr("b")))
            st_in = row_major_strides(self.shape(node.inputs[0]))
            st_in[a], st_in[c] = st_in[c], st_in[a]  # out[..i..j..] = in[..j..i..]
            coords = _unravel(b, t, shape)
            store(b, self._read(b, ptrs, node.inputs[0], _linear(b, coords, st_in)), out, t)
        elif op in ("slice", "slice_grad"):
            axis, start = int(str(node.attr("axis"))), int(str(node.attr("start")))
            src = node.inputs[0]
            coords = _unravel(b, t, shape)
            if op == "slice":
                moved = [b.add(v, i64(start)) if k == axis else v for k, v in enumerate(coords)]
                at = _linear(b, moved, row_major_strides(self.shape(src)))
                store(b, self._read(b, ptrs, src, at), out, t)
            else:
                small = self.shape(src)
                inside = b.sub(coords[axis], i64(start))
                within = b.icmp_unsigned("<", inside, i64(small[axis]))  # wraps below start
                back = [inside if k == axis else v for k, v in enumerate(coords)]
                safe = b.select(within, _linear(b, back, row_major_strides(small)), i64(0))
                v = self._read(b, ptrs, src, safe)
                store(b, b.select(within, v, ir.Constant(F32, 0.0)), out, t)
        else:  # pragma: no cover - LAYER lists exactly the ops above
            raise UnsupportedOnGpu(op)
        return n

    def _loss(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        r: ir.Value,
    ) -> int:
        """Example r of one logit's sigmoid cross-entropy or of the label-smoothed softmax
        cross-entropy (loss_ops.py's recipes)."""
        jz, jy = node.inputs
        rows = self.shape(jz)[0]
        y = load(b, ptrs[jy], r, I32)
        if node.op in ("sigmoid_xent", "sigmoid_xent_grad"):
            v, c = self._read(b, ptrs, jz, r), A.itof(y)
            if node.op == "sigmoid_xent":  # max(z, 0) as a select: an opaque zero (relu)
                arith = _OpaqueZero(b) if self.ptx else A
                store(b, activations.sigmoid_xent(arith, v, c), out, r)
            else:
                store(b, A.sub(b.call(self.math["sigmoid"], [v]), c), out, r)
            return rows
        classes = self.shape(jz)[1]
        eps = float(str(node.attr("smoothing")))
        keep = A.sub(A.const(1.0), A.const(eps))
        share = A.div(A.const(eps), A.const(float(classes)))
        base = b.mul(r, i64(classes))

        def zj(j: ir.Value) -> ir.Value:
            return self._read(b, ptrs, jz, b.add(base, j))

        m, s = self._max_and_sum(b, A, zj, classes)
        label = b.sext(y, I64)
        exp = self.math["exp"]
        if node.op == "xent_smooth":
            lse = b.call(self.math["log"], [s])
            t_slot = entry_alloca(b)
            b.store(A.const(0.0), t_slot)

            def term(j: ir.Value) -> None:
                b.store(A.add(b.load(t_slot, typ=F32), A.sub(lse, A.sub(zj(j), m))), t_slot)

            _loop(b, classes, term, "tx")
            hit = A.mul(keep, A.sub(lse, A.sub(zj(label), m)))
            store(b, A.add(hit, A.mul(share, b.load(t_slot, typ=F32))), out, r)
            return rows

        def cls(j: ir.Value) -> None:
            p = A.div(b.call(exp, [A.sub(zj(j), m)]), s)
            hot = b.icmp_unsigned("==", j, label)
            q = A.add(A.select(hot, keep, A.const(0.0)), share)
            store(b, A.sub(p, q), out, b.add(base, j))

        _loop(b, classes, cls, "g")
        return rows

    def _extreme(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int:
        """Line t of a max/min along an axis (tensor_ops._extreme): m = the first element,
        then m = v > m ? v : m (v < m for min) ascending; the adjoint writes the whole line,
        d at the first element holding m and +0 at the others."""
        src = node.inputs[0]
        src_shape = self.shape(src)
        axis = node.axis()
        if axis is None:
            outer, n, inner = 1, size(src_shape), 1
        else:
            outer, n, inner = size(src_shape[:axis]), src_shape[axis], size(src_shape[axis + 1 :])
        more = A.gt if node.op.startswith("max") else A.lt
        o, c = b.udiv(t, i64(inner)), b.urem(t, i64(inner))
        base = b.add(b.mul(o, i64(n * inner)), c)
        best, where = entry_alloca(b), entry_alloca(b, I64)
        b.store(self._read(b, ptrs, src, base), best)
        b.store(base, where)

        def scan(k: ir.Value) -> None:
            at = b.add(base, b.mul(k, i64(inner)))
            v, m = self._read(b, ptrs, src, at), b.load(best, typ=F32)
            hit = more(v, m)
            b.store(A.select(hit, v, m), best)
            b.store(b.select(hit, at, b.load(where, typ=I64)), where)

        _loop(b, n, scan, "mx")
        if not node.op.endswith("_grad"):
            store(b, b.load(best, typ=F32), out, t)
            return outer * inner
        d = self._read(b, ptrs, node.inputs[1], t)
        chosen = b.load(where, typ=I64)

        def put(k: ir.Value) -> None:
            at = b.add(base, b.mul(k, i64(inner)))
            hit = b.icmp_unsigned("==", at, chosen)
            store(b, b.select(hit, d, ir.Constant(F32, 0.0)), out, at)

        _loop(b, n, put, "put")
        return outer * inner

    def _max_and_sum(
        self, b: ir.IRBuilder, A: LlvmArith, read: Callable[[ir.Value], ir.Value], n: int
    ) -> tuple[ir.Value, ir.Value]:
        """Over the n values read(0..n): m = the first, then m = v > m ? v : m ascending; and
        s = Σ exp(v - m) ascending from +0.0 (the host's softmax and cross-entropy)."""
        m_slot, s_slot = entry_alloca(b), entry_alloca(b)
        b.store(read(i64(0)), m_slot)

        def top(k: ir.Value) -> None:
            v, m = read(k), b.load(m_slot, typ=F32)
            b.store(A.select(A.gt(v, m), v, m), m_slot)

        _loop(b, n, top, "mx")
        m = b.load(m_slot, typ=F32)
        b.store(A.const(0.0), s_slot)
        exp = self.math["exp"]

        def add(k: ir.Value) -> None:
            e = b.call(exp, [A.sub(read(k), m)])
            b.store(A.add(b.load(s_slot, typ=F32), e), s_slot)

        _loop(b, n, add, "sx")
        return m, b.load(s_slot, typ=F32)

    def _softmax(
        self,
        b: ir.IRBuilder,
        A: LlvmArith,
        node: Node,
        shape: tuple[int, ...],
        out: ir.Value,
        ptrs: dict[int, ir.Value],
        t: ir.Value,
    ) -> int:
        """One thread per line along the axis, the host's recipe (tensor_ops._softmax)."""
        axis = int(str(node.attr("axis")))
        outer, n, inner = size(shape[:axis]), shape[axis], size(shape[axis + 1 :])
        jx = node.inputs[0]
        o, c = b.udiv(t, i64(inner)), b.urem(t, i64(inner))
        base = b.add(b.mul(o, i64(n * inner)), c)

        def at(k: ir.Value) -> ir.Value:
            return b.add(base, b.mul(k, i64(inner)))

        m, s = self._max_and_sum(b, A, lambda k: self._read(b, ptrs, jx, at(k)), n)
        exp = self.math["exp"]
        if node.op == "softmax":

            def soft(k: ir.Value) -> None:
                e = b.call(exp, [A.sub(self._read(b, ptrs, jx, at(k)), m)])
                store(b, A.div(e, s), out, at(k))

            _loop(b, n, soft, "o")
        else:
            ls = b.call(self.math["log"], [s])

            def logsoft(k: ir.Value) -> None:
                store(b, A.sub(A.sub(self._read(b, ptrs, jx, at(k)), m), ls), out, at(k))

            _loop(b, n, logsoft, "o")
        return outer * inner

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
            b.store(A.add(b.load(acc, typ=F32), A.mul(av, wv)), acc)

        _loop(b, k, step, "k")
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
    ) -> None:
        """Output t: the sum, from +0.0, of the inputs that reduce into it, in ascending
        row-major order of the input (the order the host's loop adds them in)."""
        src = node.inputs[0]
        src_shape = self.shape(src)
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
        out_coords = _unravel(b, t, out_shape) if out_shape else []
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
        acc = entry_alloca(b)
        b.store(ir.Constant(F32, 0.0), acc)

        def add(idx: list[ir.Value]) -> None:
            at = base
            for d, j in zip(varying, idx, strict=True):
                at = b.add(at, b.mul(j, i64(st_src[d])))
            b.store(A.add(b.load(acc, typ=F32), self._read(b, ptrs, src, at)), acc)

        _nest(b, [src_shape[d] for d in varying], add, "r")
        total = b.load(acc, typ=F32)
        if node.op == "mean":
            axis = node.axis()
            count = size(src_shape) if axis is None else src_shape[axis]
            total = A.div(total, A.const(float(count)))
        store(b, total, out, t)

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
        grad = exp(z - m) / s - [j = y] (the host's recipe, graph_emit._xent)."""
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

        _loop(b, classes, cls, "g")

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

        _loop(b, width, term, "sq")
        store(b, A.div(b.load(s_slot, typ=F32), A.const(float(width))), out, r)
