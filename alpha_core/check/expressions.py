"""Type and shape expressions, lowering them into the tensor graph as they check.

Shapes are static; a leading BATCH axis marks per-example tensors. Calls of user functions are
inlined (a function is a named piece of the model, not a unit of execution).
"""

from __future__ import annotations

from collections import ChainMap

import numpy as np

from alpha_core.check import block_lowering, builtins
from alpha_core.check.block_values import Binding
from alpha_core.check.builtins import CALLS, REDUCE, UNARY, Env
from alpha_core.check.calls import HANDLERS
from alpha_core.check.context import CheckContext, show_shape
from alpha_core.check.signature import Sizes, bind_sizes, declared_text, result_shape
from alpha_core.diagnostics import Related
from alpha_core.ir.graph import BATCH, GraphBuilder, Shape
from alpha_core.ops import BINARY_OPERATORS
from alpha_core.syntax import ast

__all__ = ["UNARY", "REDUCE", "CALLS", "Binding", "ExprLowering", "declared_shape"]
BINARY = BINARY_OPERATORS  # `a + b` and the others to their ops (alpha_core/ops)


class ExprLowering:
    def __init__(
        self, ctx: CheckContext, builder: GraphBuilder, fns: dict[str, ast.FnItem]
    ) -> None:
        self.ctx = ctx
        self.b = builder
        self.fns = fns
        self._active: list[str] = []
        # the names every function body sees: the system's parameters (None: the caller's
        # names, minus x and y)
        self.system_names: dict[str, Binding] | None = None
        self.loop_passes = 0  # passes of `for` bodies so far (block_lowering.MAX_LOOP_PASSES)

    def const(self, value: float) -> int:
        return self.b.add("const", (), (), (("value", float(np.float32(value))),))

    def expr(self, e: ast.Expr, env: Env) -> int | None:
        node = self._expr(e, env)
        if node is not None:
            self.ctx.types[e.span] = self.b.shape(node)
        return node

    def _expr(self, e: ast.Expr, env: Env) -> int | None:
        if isinstance(e, ast.Number):
            return self.const(e.value)
        if isinstance(e, ast.Name):
            bound = env.get(e.id)
            if bound is None:
                self.ctx.unknown("name", e.id, e.span, list(env) + list(self.fns))
                return None
            if bound.other is not None:  # a block array, a block or a loop's index
                block_lowering.not_a_tensor(self, e, bound)
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
        if isinstance(e, ast.Index | ast.Member):
            return block_lowering.expr(self, e, env)
        return self._call(e, env)

    def _binop(self, e: ast.BinOp, env: Env) -> int | None:
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
            out = builtins.matmul(self, a, c)
            if out is None:
                self.ctx.refuse(
                    "shape-mismatch",
                    f"cannot multiply {show_shape(sa)} by {show_shape(sc)}",
                    e.op_span,
                    related=related,
                    help="`a @ b` needs a: [m, k] and b: [k, n] with the same k"
                    if len(sa) == 2 and len(sc) == 2
                    else "`a @ b` needs a: [..., m, k] and b: [k, n] (no batch axis), or "
                    "b: [..., k, n] with the leading axes of a"
                    if len(sa) >= 2 and len(sc) >= 2
                    else "`@` takes two matrices",
                )
            return out
        return builtins.pairwise(self, BINARY[e.op], a, c, e.op_span, e.op, related)

    def _call(self, e: ast.Call, env: Env) -> int | None:
        handler = HANDLERS.get(e.func)
        if handler is not None:
            return handler(self, e, env)
        if e.func in REDUCE:
            return self._reduce(e, env)
        fn = self.fns.get(e.func)
        if fn is None:
            self.ctx.unknown(
                "function",
                e.func,
                e.func_span,
                list(self.fns) + list(UNARY) + list(REDUCE) + list(CALLS),
            )
            return None
        return self.inline(fn, e, env)

    def _reduce(self, e: ast.Call, env: Env) -> int | None:
        if len(e.args) != 1 or any(k.name not in ("axis", "keepdims") for k in e.kwargs):
            self.ctx.refuse(
                "bad-argument", f"`{e.func}` takes one tensor, `axis:` and `keepdims:`", e.span
            )
            return None
        keep = e.kwarg("keepdims")
        keepdims = False
        if keep is not None:
            if not (isinstance(keep.value, ast.Name) and keep.value.id in ("true", "false")):
                self.ctx.refuse("bad-argument", "`keepdims:` is `true` or `false`", keep.value.span)
                return None
            keepdims = keep.value.id == "true"
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
        reduced = self.b.add(e.func, (x,), out, (("axis", axis),))
        if not keepdims:
            return reduced
        kept = tuple(1 for _ in shape) if axis is None else shape[:axis] + (1,) + shape[axis + 1 :]
        return builtins.reshape(self, reduced, kept)

    def inline(self, fn: ast.FnItem, call: ast.Call, env: Env) -> int | None:
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
        # the body's own names (its parameters, then its lets) in a fresh map over the names
        # it sees from outside, which are not copied: a call costs its own names, not the
        # system's parameters again
        inner: Env
        if self.system_names is not None:  # a body sees no `let` of its caller
            inner = ChainMap({}, self.system_names)
        else:
            inner = {k: v for k, v in env.items() if k not in ("x", "y")}
        sizes = Sizes()
        for arg, param in zip(call.args, fn.params, strict=True):
            if isinstance(param.type, ast.BlockType):  # `p: blocks`: one block
                block = block_lowering.block_argument(self, arg, param, env)
                if block is None:
                    return None
                inner[param.name] = block
                continue
            node = self.expr(arg, env)
            if node is None:
                return None
            if not bind_sizes(self.ctx, param, self.b.shape(node), sizes, arg):
                return None
            inner[param.name] = Binding(node, param.name_span)
        self._active.append(fn.name)
        try:
            return self._body(fn, inner, sizes)
        finally:
            self._active.pop()

    def _body(self, fn: ast.FnItem, env: Env, sizes: Sizes) -> int | None:
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
                env[stmt.name] = Binding(node, stmt.name_span)  # `env` is this body's own
            elif isinstance(stmt, ast.Assign | ast.ForLoop):
                if not block_lowering.statement(self, stmt, env):
                    return None
            else:
                result = self.expr(stmt.value, env)
                returned = True
                if result is None:
                    return None
        if not returned:
            self.ctx.refuse("missing-item", f"function `{fn.name}` has no `return`", fn.name_span)
            return None
        assert result is not None
        got = self.b.shape(result)
        want = result_shape(self.ctx, fn, sizes, got)
        if want is None:
            return None
        if want != got:
            last = fn.body[-1]
            self.ctx.refuse(
                "shape-mismatch",
                f"`{fn.name}` returns {show_shape(got)} but declares "
                f"{show_shape(want) if 0 not in want else declared_text(fn.result)}",
                last.value.span if isinstance(last, ast.Return) else fn.name_span,
                related=(Related(fn.result.span, "declared here"),),
            )
            return None
        return result


def parameter_shape(
    ctx: CheckContext, t: ast.TensorType, is_what: str, needs_what: str
) -> Shape | None:
    """A trained tensor's declared shape, or None after refusing it: a type other than `f32`
    (`{is_what} `i64`; parameters are `f32``) or a shape that is not fixed and positive
    (`{needs_what} needs a fixed shape ...`). A `param` item and a block array's member."""
    shape = declared_shape(t)
    if t.dtype != "f32":
        ctx.refuse("type-mismatch", f"{is_what} `{t.dtype}`; parameters are `f32`", t.dtype_span)
        return None
    if shape is None or BATCH in shape or any(d < 1 for d in shape):
        ctx.refuse("shape-mismatch", f"{needs_what} needs a fixed shape of positive sizes", t.span)
        return None
    return shape


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
