"""A function's signature at one call: its size variables bound by the arguments' shapes.

`fn dense(a: f32[B, N], w: f32[N, M], b: f32[M]) -> f32[B, M]` names sizes `N` and `M`; each
call binds them from the arguments, left to right, and a size given two different values is
refused by name. `B` is the batch axis and only ever the first dimension.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.check.context import CheckContext, show_shape
from alpha_core.diagnostics import Related
from alpha_core.ir.graph import BATCH, Shape
from alpha_core.syntax import ast


@dataclass
class Sizes:
    """The sizes one call has bound: name -> (size, the parameter that bound it, its span)."""

    bound: dict[str, tuple[int, str, ast.Span]] = field(default_factory=dict)


def _dtype(ctx: CheckContext, t: ast.TensorType, what: str) -> bool:
    if t.dtype == "f32":
        return True
    ctx.refuse(
        "type-mismatch",
        f"{what} is declared `{t.dtype}`; tensors in a model are `f32`",
        t.dtype_span,
    )
    return False


def _batch_first(ctx: CheckContext, t: ast.TensorType) -> bool:
    for i, d in enumerate(t.dims):
        if d.value == "B" and i != 0:
            ctx.refuse(
                "shape-mismatch",
                "`B` is the batch axis, only ever the first dimension",
                d.span,
            )
            return False
    return True


def bind_sizes(
    ctx: CheckContext, param: ast.FnParam, got: Shape, sizes: Sizes, arg: ast.Expr
) -> bool:
    """Match one argument's shape against its parameter's type, binding size variables."""
    t = param.type
    if not isinstance(t, ast.TensorType):  # a block argument: bound by block_lowering
        return False
    if not _dtype(ctx, t, f"`{param.name}`") or not _batch_first(ctx, t):
        return False
    declared = (Related(t.span, "declared here"),)

    def mismatch(message: str) -> bool:
        ctx.refuse("shape-mismatch", message, arg.span, related=declared)
        return False

    if len(t.dims) != len(got):
        return mismatch(
            f"`{param.name}` is declared with {len(t.dims)} dimension(s) but is given "
            f"{show_shape(got)}"
        )
    for d, g in zip(t.dims, got, strict=True):
        if isinstance(d.value, int):
            if d.value != g:
                return mismatch(
                    f"`{param.name}` is declared {declared_text(t)} but is given {show_shape(got)}"
                )
        elif d.value == "B":
            if g != BATCH:
                return mismatch(
                    f"`{param.name}` is declared {declared_text(t)} (per example) but is given "
                    f"{show_shape(got)}"
                )
        elif g == BATCH:
            return mismatch(f"`{d.value}` of `{param.name}` is given the batch axis; name it `B`")
        elif d.value in sizes.bound:
            value, by, span = sizes.bound[d.value]
            if value != g:
                ctx.refuse(
                    "shape-mismatch",
                    f"`{d.value}` is {value} from `{by}` but {g} from `{param.name}`",
                    arg.span,
                    related=(*declared, Related(span, f"`{d.value}` is {value} from here")),
                )
                return False
        else:
            sizes.bound[d.value] = (g, param.name, arg.span)
    return True


def result_shape(ctx: CheckContext, fn: ast.FnItem, sizes: Sizes, got: Shape) -> Shape | None:
    """The declared result with the call's sizes. A size no argument binds is bound by the
    returned value (`-> f32[B, O, P, Q]` of a pooling layer), where it is a size."""
    t = fn.result
    if not _dtype(ctx, t, f"the result of `{fn.name}`") or not _batch_first(ctx, t):
        return None
    dims: list[int] = []
    for k, d in enumerate(t.dims):
        if isinstance(d.value, int):
            dims.append(d.value)
        elif d.value == "B":
            dims.append(BATCH)
        elif d.value in sizes.bound:
            dims.append(sizes.bound[d.value][0])
        elif len(got) == len(t.dims) and got[k] != BATCH:
            sizes.bound[d.value] = (got[k], "the result", d.span)
            dims.append(got[k])
        else:
            dims.append(0)  # no size: the comparison with the returned value refuses
    return tuple(dims)


def declared_text(t: ast.TensorType) -> str:
    return f"{t.dtype}[" + ", ".join(str(d.value) for d in t.dims) + "]"
