"""GPU bodies of the layer operations and losses (tensor_ops.py, loss_ops.py on the host):
output t, or line t, by one thread, from the host's recipes and in the host's order."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.gpu_ir import OpaqueZero, UnsupportedOnGpu, linear_at, loop, unravel
from alpha_core.codegen.loops import (
    F32,
    I32,
    I64,
    broadcast_strides,
    entry_alloca,
    i64,
    load,
    row_major_strides,
    store,
)
from alpha_core.codegen.tensor_ops import token_index
from alpha_core.ir.graph import Node, size
from alpha_core.semantics import activations
from alpha_core.semantics.llvm_arith import LlvmArith


class LayerBodies:
    """The layer operations' bodies, mixed into gpu_nodes.NodeBodies."""

    # provided by NodeBodies, the class this is mixed into
    ptx: bool
    training: bool
    math: dict[str, ir.Function]
    _leaf: ir.Value | None
    shape: Callable[[int], tuple[int, ...]]
    _read: Callable[..., ir.Value]

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
            coords = unravel(b, t, shape)
            vals = [
                self._read(
                    b, ptrs, j, linear_at(b, coords, broadcast_strides(self.shape(j), shape))
                )
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
            coords = unravel(b, t, shape)
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
                b.store(A.muladd(b.load(acc, typ=F32), av, cv), acc)

            loop(b, k, step, "k")
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

            loop(b, positions, position, "p")
            store(b, b.load(acc, typ=F32), out, t)
        elif op == "swap_axes":
            a, c = int(str(node.attr("a"))), int(str(node.attr("b")))
            st_in = row_major_strides(self.shape(node.inputs[0]))
            st_in[a], st_in[c] = st_in[c], st_in[a]  # out[..i..j..] = in[..j..i..]
            coords = unravel(b, t, shape)
            store(b, self._read(b, ptrs, node.inputs[0], linear_at(b, coords, st_in)), out, t)
        elif op in ("slice", "slice_grad"):
            axis, start = int(str(node.attr("axis"))), int(str(node.attr("start")))
            src = node.inputs[0]
            coords = unravel(b, t, shape)
            if op == "slice":
                moved = [b.add(v, i64(start)) if k == axis else v for k, v in enumerate(coords)]
                at = linear_at(b, moved, row_major_strides(self.shape(src)))
                store(b, self._read(b, ptrs, src, at), out, t)
            else:
                small = self.shape(src)
                inside = b.sub(coords[axis], i64(start))
                within = b.icmp_unsigned("<", inside, i64(small[axis]))  # wraps below start
                back = [inside if k == axis else v for k, v in enumerate(coords)]
                safe = b.select(within, linear_at(b, back, row_major_strides(small)), i64(0))
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
                arith = OpaqueZero(b) if self.ptx else A
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

            loop(b, classes, term, "tx")
            hit = A.mul(keep, A.sub(lse, A.sub(zj(label), m)))
            store(b, A.add(hit, A.mul(share, b.load(t_slot, typ=F32))), out, r)
            return rows

        def cls(j: ir.Value) -> None:
            p = A.div(b.call(exp, [A.sub(zj(j), m)]), s)
            hot = b.icmp_unsigned("==", j, label)
            q = A.add(A.select(hot, keep, A.const(0.0)), share)
            store(b, A.sub(p, q), out, b.add(base, j))

        loop(b, classes, cls, "g")
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

        loop(b, n, scan, "mx")
        if not node.op.endswith("_grad"):
            store(b, b.load(best, typ=F32), out, t)
            return outer * inner
        d = self._read(b, ptrs, node.inputs[1], t)
        chosen = b.load(where, typ=I64)

        def put(k: ir.Value) -> None:
            at = b.add(base, b.mul(k, i64(inner)))
            hit = b.icmp_unsigned("==", at, chosen)
            store(b, b.select(hit, d, ir.Constant(F32, 0.0)), out, at)

        loop(b, n, put, "put")
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

        loop(b, n, top, "mx")
        m = b.load(m_slot, typ=F32)
        b.store(A.const(0.0), s_slot)
        exp = self.math["exp"]

        def add(k: ir.Value) -> None:
            e = b.call(exp, [A.sub(read(k), m)])
            b.store(A.add(b.load(s_slot, typ=F32), e), s_slot)

        loop(b, n, add, "sx")
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

            loop(b, n, soft, "o")
        else:
            ls = b.call(self.math["log"], [s])

            def logsoft(k: ir.Value) -> None:
                store(b, A.sub(A.sub(self._read(b, ptrs, jx, at(k)), m), ls), out, at(k))

            loop(b, n, logsoft, "o")
        return outer * inner
