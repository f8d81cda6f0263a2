"""Type and shape expressions, lowering them into the tensor graph as they check.

Shapes are static; a leading BATCH axis marks per-example tensors. Calls of user functions are
inlined (a function is a named piece of the model, not a unit of execution).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from alpha_core.check.context import CheckContext, show_shape
from alpha_core.diagnostics import Related
from alpha_core.ir.graph import BATCH, GraphBuilder, Shape, broadcast_shapes
from alpha_core.syntax import ast

UNARY = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "exp": "exp", "log": "log"}
REDUCE = ("sum", "mean")
BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div"}


@dataclass(frozen=True)
class Binding:
    node: int
    span: ast.Span  # where the name is defined


class ExprLowering:
    def __init__(
        self, ctx: CheckContext, builder: GraphBuilder, fns: dict[str, ast.FnItem]
    ) -> None:
        self.ctx = ctx
        self.b = builder
        self.fns = fns
        self._active: list[str] = []

    def const(self, value: float) -> int:
        return self.b.add("const", (), (), (("value", float(np.float32(value))),))

    def expr(self, e: ast.Expr, env: dict[str, Binding]) -> int | None:
        node = self._expr(e, env)
        if node is not None:
            self.ctx.types[e.span] = self.b.shape(node)
        return node

    def _expr(self, e: ast.Expr, env: dict[str, Binding]) -> int | None:
        if isinstance(e, ast.Number):
            return self.const(e.value)
        if isinstance(e, ast.Name):
            bound = env.get(e.id)
            if bound is None:
                self.ctx.unknown("name", e.id, e.span, list(env) + list(self.fns))
                return None
            self.ctx.definitions[e.span] = bound.span
            return bound.node if bound.node >= 0 else None  # < 0: refused where declared
        if isinstance(e, ast.String):
            self.ctx.refuse("type-mismatch", "a string is not a tensor", e.span)
            return None
        if isinstance(e, ast.Neg):
            x = self.expr(e.operand, env)
            return None if x is None else self.b.add("neg", (x,), self.b.shape(x))
        if isinstance(e, ast.BinOp):
            return self._binop(e, env)
        return self._call(e, env)

    def _binop(self, e: ast.BinOp, env: dict[str, Binding]) -> int | None:
        a = self.expr(e.left, env)
        c = self.expr(e.right, env)
        if a is None or c is None:
            return None
        sa, sc = self.b.shape(a), self.b.shape(c)
        related = (
            Related(e.left.span, f"this is {show_shape(sa)}"),
            Related(e.right.span, f"this is {show_shape(sc)}"),
        )
        if e.op == "@":
            if len(sa) != 2 or len(sc) != 2 or sa[1] != sc[0] or sc[0] == BATCH:
                self.ctx.refuse(
                    "shape-mismatch",
                    f"cannot multiply {show_shape(sa)} by {show_shape(sc)}",
                    e.op_span,
                    related=related,
                    help="`a @ b` needs a: [m, k] and b: [k, n] with the same k"
                    if len(sa) == 2 and len(sc) == 2
                    else "`@` takes two matrices",
                )
                return None
            return self.b.add("matmul", (a, c), (sa[0], sc[1]))
        out = broadcast_shapes(sa, sc)
        if out is None or (BATCH in out and (out[0] != BATCH or out.count(BATCH) > 1)):
            self.ctx.refuse(
                "shape-mismatch",
                f"shapes {show_shape(sa)} and {show_shape(sc)} do not broadcast for `{e.op}`",
                e.op_span,
                related=related,
            )
            return None
        return self.b.add(BINARY[e.op], (a, c), out)

    def _call(self, e: ast.Call, env: dict[str, Binding]) -> int | None:
        if e.func in UNARY:
            if len(e.args) != 1 or e.kwargs:
                self.ctx.refuse("bad-argument", f"`{e.func}` takes one tensor", e.span)
                return None
            x = self.expr(e.args[0], env)
            return None if x is None else self.b.add(UNARY[e.func], (x,), self.b.shape(x))
        if e.func in REDUCE:
            return self._reduce(e, env)
        fn = self.fns.get(e.func)
        if fn is None:
            self.ctx.unknown(
                "function", e.func, e.func_span, list(self.fns) + list(UNARY) + list(REDUCE)
            )
            return None
        return self.inline(fn, e, env)

    def _reduce(self, e: ast.Call, env: dict[str, Binding]) -> int | None:
        if len(e.args) != 1 or any(k.name != "axis" for k in e.kwargs):
            self.ctx.refuse("bad-argument", f"`{e.func}` takes one tensor and `axis:`", e.span)
            return None
        x = self.expr(e.args[0], env)
        if x is None:
            return None
        shape = self.b.shape(x)
        kw = e.kwarg("axis")
        if kw is None:
            if shape and shape[0] == BATCH:
                self.ctx.refuse(
                    "batch-axis-reduced",
                    f"`{e.func}` of all of {show_shape(shape)} adds across examples",
                    e.span,
                    help="give an `axis:` other than 0",
                )
                return None
            out: Shape = ()
            axis = None
        else:
            if not (isinstance(kw.value, ast.Number) and kw.value.is_int):
                self.ctx.refuse("bad-argument", "`axis:` takes an integer", kw.value.span)
                return None
            axis = int(kw.value.text)  # exact: the float value of a long integer is inf
            if axis >= len(shape):
                self.ctx.refuse(
                    "bad-argument",
                    f"axis {axis} is out of range for {show_shape(shape)}",
                    kw.value.span,
                )
                return None
            if shape[axis] == BATCH:
                self.ctx.refuse(
                    "batch-axis-reduced",
                    f"`{e.func}` over axis {axis} adds across the examples of a leaf",
                    kw.value.span,
                    help="the system declares the only sum across examples: "
                    "leaves, then the canonical tree",
                )
                return None
            out = shape[:axis] + shape[axis + 1 :]
        return self.b.add(e.func, (x,), out, (("axis", axis),))

    def declared(self, t: ast.TensorType) -> Shape | None:
        """A declared tensor type's shape, refused unless it is `f32` with sizes and `B`."""
        if t.dtype != "f32":
            self.ctx.refuse(
                "type-mismatch", f"tensors in a model are `f32`, not `{t.dtype}`", t.dtype_span
            )
            return None
        shape = declared_shape(t)
        if shape is None:
            bad = next(
                d
                for i, d in enumerate(t.dims)
                if isinstance(d.value, str) and (d.value != "B" or i != 0)
            )
            self.ctx.refuse(
                "shape-mismatch",
                f"`{bad.value}` is not a size; the only named dimension is `B`, the "
                "leading batch axis",
                bad.span,
            )
        return shape

    def inline(self, fn: ast.FnItem, call: ast.Call, env: dict[str, Binding]) -> int | None:
        if fn.name in self._active:
            self.ctx.refuse(
                "bad-argument",
                f"`{fn.name}` calls itself",
                call.span,
                help="functions are inlined into the model; recursion has no end",
            )
            return None
        if len(call.args) != len(fn.params) or call.kwargs:
            self.ctx.refuse(
                "bad-argument",
                f"`{fn.name}` takes {len(fn.params)} argument(s), {len(call.args)} given",
                call.span,
                related=(Related(fn.name_span, "declared here"),),
            )
            return None
        self.ctx.definitions[call.func_span] = fn.name_span
        inner = {k: v for k, v in env.items() if k not in ("x", "y")}
        for arg, param in zip(call.args, fn.params, strict=True):
            node = self.expr(arg, env)
            if node is None:
                return None
            want = self.declared(param.type)
            if want is None:
                return None
            got = self.b.shape(node)
            if want != got:
                self.ctx.refuse(
                    "shape-mismatch",
                    f"`{param.name}` is declared {show_shape(want)} but is given {show_shape(got)}",
                    arg.span,
                    related=(Related(param.type.span, "declared here"),),
                )
                return None
            inner[param.name] = Binding(node, param.name_span)
        self._active.append(fn.name)
        try:
            return self._body(fn, inner)
        finally:
            self._active.pop()

    def _body(self, fn: ast.FnItem, env: dict[str, Binding]) -> int | None:
        result: int | None = None
        returned = False
        for stmt in fn.body:
            if returned:
                self.ctx.refuse("syntax-error", "statement after `return`", stmt.span)
                return None
            if isinstance(stmt, ast.Let):
                if stmt.name in env:
                    self.ctx.refuse(
                        "duplicate-name",
                        f"`{stmt.name}` is already defined",
                        stmt.name_span,
                        related=(Related(env[stmt.name].span, "first defined here"),),
                    )
                    return None
                node = self.expr(stmt.value, env)
                if node is None:
                    return None
                self.ctx.types[stmt.name_span] = self.b.shape(node)
                env = {**env, stmt.name: Binding(node, stmt.name_span)}
            else:
                result = self.expr(stmt.value, env)
                returned = True
                if result is None:
                    return None
        if not returned:
            self.ctx.refuse("missing-item", f"function `{fn.name}` has no `return`", fn.name_span)
            return None
        assert result is not None
        want = self.declared(fn.result)
        if want is None:
            return None
        got = self.b.shape(result)
        if want != got:
            last = fn.body[-1]
            self.ctx.refuse(
                "shape-mismatch",
                f"`{fn.name}` returns {show_shape(got)} but declares {show_shape(want)}",
                last.value.span if isinstance(last, ast.Return) else fn.name_span,
                related=(Related(fn.result.span, "declared here"),),
            )
            return None
        return result


def declared_shape(t: ast.TensorType) -> Shape | None:
    """A declared type's shape, the symbolic first dimension `B` read as the batch axis."""
    dims: list[int] = []
    for i, d in enumerate(t.dims):
        if isinstance(d.value, str):
            if d.value != "B" or i != 0:
                return None
            dims.append(BATCH)
        else:
            dims.append(d.value)
    return tuple(dims)
