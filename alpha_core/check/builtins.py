"""The built-in functions of expressions: their arguments, result shapes and lowering.

Each built-in lowers to graph nodes whose order of evaluation docs/semantics.md fixes. Shapes
keep the batch axis first and only there: no built-in mixes the examples of a leaf.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING

from alpha_core.check.context import show_shape
from alpha_core.diagnostics import Related
from alpha_core.ir.graph import BATCH, Shape, broadcast_shapes
from alpha_core.ops import BUILTINS, builtins_of
from alpha_core.syntax import ast

if TYPE_CHECKING:
    from alpha_core.check.expressions import Binding, ExprLowering

# the built-ins by kind, in the operation table's order (alpha_core/ops: BUILTINS)
# one tensor in, the same shape out: source name -> graph op
UNARY = {n: BUILTINS[n].ops[0] for n in builtins_of("unary")}
REDUCE = builtins_of("reduce")
PAIRWISE = builtins_of("pairwise")
# the other built-ins and how they are called (for messages)
CALLS = {n: b.call for n, b in BUILTINS.items() if b.kind in ("pairwise", "call")}

# the names an expression sees: a function body's own over the system's (expressions.inline)
Env = MutableMapping[str, "Binding"]
# lowers one call of a built-in: the graph node of its result, or None (refused)
Handler = Callable[["ExprLowering", ast.Call, Env], "int | None"]


def per_example_ok(shape: Shape) -> bool:
    """The batch axis, if any, is the first axis and the only one."""
    return all(d != BATCH for d in shape[1:])


def int_arg(lw: ExprLowering, e: ast.Expr) -> int | None:
    if isinstance(e, ast.Number) and e.is_int:
        return int(e.text)
    lw.ctx.refuse("bad-argument", "this must be an integer literal", e.span)
    return None


def _axis(lw: ExprLowering, e: ast.Call, shape: Shape, default: int | None) -> int | None | str:
    """The call's `axis:` (negative counts from the end), `default` without one; "bad" when
    refused."""
    kw = e.kwarg("axis")
    if kw is None:
        return default
    negative = isinstance(kw.value, ast.Neg) and isinstance(kw.value.operand, ast.Number)
    value = kw.value.operand if isinstance(kw.value, ast.Neg) else kw.value
    if not (isinstance(value, ast.Number) and value.is_int):
        lw.ctx.refuse("bad-argument", "`axis:` takes an integer", kw.value.span)
        return "bad"
    axis = -int(value.text) if negative else int(value.text)
    if not -len(shape) <= axis < len(shape):
        lw.ctx.refuse(
            "bad-argument", f"axis {axis} is out of range for {show_shape(shape)}", kw.value.span
        )
        return "bad"
    return axis % len(shape)


def _only(lw: ExprLowering, e: ast.Call, args: int, kwargs: tuple[str, ...]) -> bool:
    if len(e.args) != args or any(k.name not in kwargs for k in e.kwargs):
        lw.ctx.refuse("bad-argument", f"`{e.func}` is called `{CALLS[e.func]}`", e.span)
        return False
    return True


def _unary(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    if len(e.args) != 1 or e.kwargs:
        lw.ctx.refuse("bad-argument", f"`{e.func}` takes one tensor", e.span)
        return None
    x = lw.expr(e.args[0], env)
    return None if x is None else lw.b.add(UNARY[e.func], (x,), lw.b.shape(x))


def pairwise(
    lw: ExprLowering,
    op: str,
    a: int,
    c: int,
    where: ast.Span,
    shown: str | None = None,
    related: tuple[Related, ...] = (),
) -> int | None:
    """An elementwise operation of two tensors, NumPy broadcasting, the batch axis first."""
    sa, sc = lw.b.shape(a), lw.b.shape(c)
    out = broadcast_shapes(sa, sc)
    if out is None or (BATCH in out and (out[0] != BATCH or out.count(BATCH) > 1)):
        lw.ctx.refuse(
            "shape-mismatch",
            f"shapes {show_shape(sa)} and {show_shape(sc)} do not broadcast for `{shown or op}`",
            where,
            related=related,
        )
        return None
    return lw.b.add(op, (a, c), out)


def _pairwise(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    if not _only(lw, e, 2, ()):
        return None
    a, c = lw.expr(e.args[0], env), lw.expr(e.args[1], env)
    if a is None or c is None:
        return None
    return pairwise(lw, e.func, a, c, e.func_span)


def _clamp(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    """clamp(t, low, high) = minimum(maximum(t, low), high)."""
    if not _only(lw, e, 3, ()):
        return None
    t, lo, hi = (lw.expr(a, env) for a in e.args)
    if t is None or lo is None or hi is None:
        return None
    low = pairwise(lw, "maximum", t, lo, e.func_span)
    return None if low is None else pairwise(lw, "minimum", low, hi, e.func_span)


def _softmax(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    if not _only(lw, e, 1, ("axis",)):
        return None
    x = lw.expr(e.args[0], env)
    if x is None:
        return None
    shape = lw.b.shape(x)
    if not shape:
        lw.ctx.refuse("bad-argument", f"`{e.func}` of a scalar", e.span)
        return None
    axis = _axis(lw, e, shape, len(shape) - 1)
    if axis == "bad" or axis is None:
        return None
    assert isinstance(axis, int)
    if shape[axis] == BATCH:
        lw.ctx.refuse(
            "batch-axis-reduced",
            f"`{e.func}` over axis {axis} adds across the examples of a leaf",
            e.span,
        )
        return None
    return lw.b.add(e.func, (x,), shape, (("axis", axis),))


def _dims(lw: ExprLowering, args: tuple[ast.Expr, ...]) -> Shape | None:
    """The sizes of a `reshape`: integers, and `B` first for the batch axis."""
    dims: list[int] = []
    for i, a in enumerate(args):
        if isinstance(a, ast.Name) and a.id == "B" and i == 0:
            dims.append(BATCH)
            continue
        if not (isinstance(a, ast.Number) and a.is_int and int(a.text) >= 1):
            lw.ctx.refuse(
                "bad-argument",
                "a size of `reshape` is a positive integer, or `B` first for the batch axis",
                a.span,
            )
            return None
        dims.append(int(a.text))
    return tuple(dims)


def _count(shape: Shape) -> int:
    n = 1
    for d in shape:
        n *= d if d != BATCH else 1
    return n


def _reshape(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    if len(e.args) < 1 or e.kwargs:
        lw.ctx.refuse("bad-argument", f"`reshape` is called `{CALLS['reshape']}`", e.span)
        return None
    x = lw.expr(e.args[0], env)
    want = _dims(lw, e.args[1:])
    if x is None or want is None:
        return None
    got = lw.b.shape(x)
    batched = bool(got) and got[0] == BATCH
    if batched != (bool(want) and want[0] == BATCH) or _count(got) != _count(want):
        lw.ctx.refuse(
            "shape-mismatch",
            f"cannot reshape {show_shape(got)} to {show_shape(want)}",
            e.span,
            help="the batch axis stays first, and the sizes of one example multiply to the "
            "same count",
        )
        return None
    return reshape(lw, x, want)


def reshape(lw: ExprLowering, x: int, shape: Shape) -> int:
    """The same elements in row-major order seen with another shape (no arithmetic)."""
    if lw.b.shape(x) == shape:
        return x
    return lw.b.add("reshape", (x,), shape)


def transpose(lw: ExprLowering, x: int) -> int:
    s = lw.b.shape(x)
    return lw.b.add("transpose", (x,), s[:-2] + (s[-1], s[-2]))


def _transpose(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    """transpose(t): the last two axes swapped; transpose(t, a, b): axes a and b swapped."""
    if e.kwargs or len(e.args) not in (1, 3):
        lw.ctx.refuse("bad-argument", f"`transpose` is called `{CALLS['transpose']}`", e.span)
        return None
    x = lw.expr(e.args[0], env)
    if x is None:
        return None
    if len(e.args) == 1:
        return checked_transpose(lw, x, e.span)
    shape = lw.b.shape(x)
    axes = [int_arg(lw, a) for a in e.args[1:]]
    a, c = axes
    if a is None or c is None:
        return None
    if not (0 <= a < len(shape) and 0 <= c < len(shape)) or a == c:
        lw.ctx.refuse(
            "bad-argument", f"axes {a} and {c} are not two axes of {show_shape(shape)}", e.span
        )
        return None
    if BATCH in (shape[a], shape[c]):
        lw.ctx.refuse(
            "shape-mismatch",
            f"`transpose` would move the batch axis of {show_shape(shape)}",
            e.span,
            help="the batch axis stays first",
        )
        return None
    a, c = min(a, c), max(a, c)
    if (a, c) == (len(shape) - 2, len(shape) - 1):
        return transpose(lw, x)
    out = list(shape)
    out[a], out[c] = out[c], out[a]
    return lw.b.add("swap_axes", (x,), tuple(out), (("a", a), ("b", c)))


def checked_transpose(lw: ExprLowering, x: int, where: ast.Span) -> int | None:
    shape = lw.b.shape(x)
    if len(shape) < 2 or BATCH in shape[-2:]:
        lw.ctx.refuse(
            "shape-mismatch",
            f"cannot transpose {show_shape(shape)}",
            where,
            help="`transpose` swaps the last two axes of a tensor of rank 2 or more; the "
            "batch axis stays first",
        )
        return None
    return transpose(lw, x)


def _causal_mask(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    if not _only(lw, e, 1, ()):
        return None
    x = lw.expr(e.args[0], env)
    if x is None:
        return None
    shape = lw.b.shape(x)
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] == BATCH:
        lw.ctx.refuse(
            "shape-mismatch",
            f"`causal_mask` needs square last axes, not {show_shape(shape)}",
            e.span,
        )
        return None
    return lw.b.add("causal_mask", (x,), shape, (("fill", float("-inf")),))


def _embed(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    if not _only(lw, e, 2, ()):
        return None
    table, tokens = lw.expr(e.args[0], env), lw.expr(e.args[1], env)
    if table is None or tokens is None:
        return None
    st, sk = lw.b.shape(table), lw.b.shape(tokens)
    if len(st) != 2 or BATCH in st:
        lw.ctx.refuse(
            "shape-mismatch",
            f"the table of `embed` is a matrix f32[V, D], not {show_shape(st)}",
            e.args[0].span,
        )
        return None
    if not sk:
        lw.ctx.refuse("shape-mismatch", "`embed` needs a tensor of token indices", e.args[1].span)
        return None
    return lw.b.add("embed", (table, tokens), sk + (st[1],))


def matmul(lw: ExprLowering, a: int, c: int) -> int | None:
    """`a @ c`, or None when the shapes do not multiply (the caller refuses)."""
    sa, sc = lw.b.shape(a), lw.b.shape(c)
    if len(sa) < 2 or len(sc) < 2 or sa[-1] != sc[-2] or sc[-2] == BATCH:
        return None
    if len(sc) == 2:
        if BATCH in sc:
            return None
        if len(sa) == 2:
            return lw.b.add("matmul", (a, c), (sa[0], sc[1]))
        # every row of a, over all its leading axes, times c: one product of a matrix of rows
        rows = _count(sa[:-1])
        lead = -rows if sa[0] == BATCH else rows
        flat = reshape(lw, a, (lead, sa[-1]))
        out = lw.b.add("matmul", (flat, c), (lead, sc[1]))
        return reshape(lw, out, sa[:-1] + (sc[1],))
    if sa[:-2] != sc[:-2]:
        return None
    return lw.b.add("bmatmul", (a, c), sa[:-1] + (sc[-1],))


_CORE: dict[str, Handler] = {
    **{n: _unary for n in UNARY},
    **{n: _pairwise for n in PAIRWISE},
    "clamp": _clamp,
    "softmax": _softmax,
    "log_softmax": _softmax,
    "reshape": _reshape,
    "transpose": _transpose,
    "causal_mask": _causal_mask,
    "embed": _embed,
}


def _slice(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    """slice(t, axis: k, start: a, stop: b): indices a <= i < b of axis k."""
    if len(e.args) != 1:
        lw.ctx.refuse("bad-argument", f"`slice` is called `{CALLS['slice']}`", e.span)
        return None
    x = lw.expr(e.args[0], env)
    if x is None:
        return None
    shape = lw.b.shape(x)
    axis = _axis(lw, e, shape, None) if shape else None
    if axis == "bad":
        return None
    given: dict[str, int] = {}
    for kw in e.kwargs:
        if kw.name not in ("axis", "start", "stop"):
            lw.ctx.refuse("bad-argument", f"`slice` is called `{CALLS['slice']}`", kw.span)
            return None
        if kw.name != "axis":
            v = int_arg(lw, kw.value)
            if v is None:
                return None
            given[kw.name] = v
    if not isinstance(axis, int) or "start" not in given or "stop" not in given:
        lw.ctx.refuse("bad-argument", f"`slice` is called `{CALLS['slice']}`", e.span)
        return None
    if shape[axis] == BATCH:
        lw.ctx.refuse("batch-axis-reduced", "`slice` of the batch axis", e.span)
        return None
    start, stop = given["start"], given["stop"]
    if not 0 <= start < stop <= shape[axis]:
        lw.ctx.refuse(
            "bad-argument",
            f"`start: {start}, stop: {stop}` is not a range of axis {axis} of {show_shape(shape)}",
            e.span,
        )
        return None
    out = shape[:axis] + (stop - start,) + shape[axis + 1 :]
    return lw.b.add("slice", (x,), out, (("axis", axis), ("start", start)))


def _dropout(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    """dropout(t, rate: p, seed: s): a per-example tensor's elements zeroed with probability p
    and the others scaled by 1 / (1 - p), in training only."""
    from alpha_core.check import arguments as A

    if len(e.args) != 1:
        lw.ctx.refuse("bad-argument", f"`dropout` is called `{CALLS['dropout']}`", e.span)
        return None
    bound = A.bind(
        lw.ctx,
        ast.Call(e.func, e.func_span, (), e.kwargs, e.span),
        [A.Arg("rate", "float", low=0.0, high=1.0, below=True), A.Arg("seed", "int", low=0)],
    )
    x = lw.expr(e.args[0], env)
    if bound is None or x is None:
        return None
    shape = lw.b.shape(x)
    if not shape or shape[0] != BATCH:
        lw.ctx.refuse(
            "shape-mismatch",
            f"`dropout` masks the values of examples, not {show_shape(shape)}",
            e.args[0].span,
        )
        return None
    attrs = (("rate", float(bound["rate"])), ("seed", int(bound["seed"])))
    return lw.b.add("dropout", (x,), shape, attrs)


# the built-in calls of this module, by name; check/calls.py gathers every module's
HANDLERS: dict[str, Handler] = {**_CORE, "dropout": _dropout, "slice": _slice}
