"""The image built-ins of expressions: conv2d and the max and average pools over per-example
images f32[B, C, H, W], their arguments, result shapes and lowering (gathered with
the other built-ins in check/calls.py; how each is called: alpha_core/ops)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alpha_core.check.builtins import CALLS, Env, Handler, int_arg
from alpha_core.check.context import show_shape
from alpha_core.ir.graph import BATCH, Shape
from alpha_core.syntax import ast

if TYPE_CHECKING:
    from alpha_core.check.expressions import ExprLowering


def _window_args(
    lw: ExprLowering, e: ast.Call, names: tuple[str, ...], defaults: dict[str, int]
) -> dict[str, int] | None:
    """Integer named arguments of a convolution or a pooling."""
    values = dict(defaults)
    for kw in e.kwargs:
        if kw.name not in names:
            lw.ctx.refuse("bad-argument", f"`{e.func}` is called `{CALLS[e.func]}`", kw.span)
            return None
        v = int_arg(lw, kw.value)
        if v is None:
            return None
        values[kw.name] = v
    if "size" in values and "stride" not in values:
        values["stride"] = values["size"]  # windows side by side
    for name in names:
        if name not in values:
            lw.ctx.refuse("bad-argument", f"`{e.func}` needs `{name}:`", e.span)
            return None
    low = {"stride": 1, "size": 1, "padding": 0}
    for name, v in values.items():
        if not low[name] <= v <= 64:
            lw.ctx.refuse(
                "bad-argument", f"`{name}:` of `{e.func}` must be from {low[name]} to 64", e.span
            )
            return None
    return values


def _image(lw: ExprLowering, e: ast.Call, x: int, rank: int) -> Shape | None:
    shape = lw.b.shape(x)
    if len(shape) < rank or BATCH in shape[-2:]:
        lw.ctx.refuse(
            "shape-mismatch",
            f"`{e.func}` takes images f32[B, C, H, W], not {show_shape(shape)}",
            e.args[0].span,
        )
        return None
    return shape


def _conv2d(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    from alpha_core.ir.conv import Window

    if len(e.args) != 2:
        lw.ctx.refuse("bad-argument", f"`conv2d` is called `{CALLS['conv2d']}`", e.span)
        return None
    args = _window_args(lw, e, ("stride", "padding"), {"stride": 1, "padding": 0})
    x, w = lw.expr(e.args[0], env), lw.expr(e.args[1], env)
    if args is None or x is None or w is None:
        return None
    sx = _image(lw, e, x, 4)
    if sx is None:
        return None
    sw = lw.b.shape(w)
    if len(sx) != 4 or len(sw) != 4 or BATCH in sw or sw[1] != sx[1]:
        lw.ctx.refuse(
            "shape-mismatch",
            f"`conv2d` of {show_shape(sx)} by {show_shape(sw)}: the kernels are "
            "f32[O, C, KH, KW] with the images' C",
            e.span,
        )
        return None
    win = Window(sw[2], sw[3], args["stride"], args["padding"])
    oh, ow = win.out_size(sx[2], sx[3])
    if oh < 1 or ow < 1 or args["padding"] >= min(sw[2], sw[3]):
        lw.ctx.refuse(
            "shape-mismatch",
            f"a {sw[2]}x{sw[3]} kernel with padding {args['padding']} does not fit "
            f"{sx[2]}x{sx[3]} images",
            e.span,
            help="the padding must be below the kernel's size",
        )
        return None
    return lw.b.add("conv2d", (x, w), (sx[0], sw[0], oh, ow), win.attrs())


def _pool(lw: ExprLowering, e: ast.Call, env: Env) -> int | None:
    from alpha_core.ir.conv import Window

    if len(e.args) != 1:
        lw.ctx.refuse("bad-argument", f"`{e.func}` is called `{CALLS[e.func]}`", e.span)
        return None
    args = _window_args(lw, e, ("size", "stride"), {})
    x = lw.expr(e.args[0], env)
    if args is None or x is None:
        return None
    sx = _image(lw, e, x, 3)
    if sx is None:
        return None
    win = Window(args["size"], args["size"], args["stride"], 0)
    oh, ow = win.out_size(sx[-2], sx[-1])
    if oh < 1 or ow < 1:
        lw.ctx.refuse(
            "shape-mismatch",
            f"a {args['size']}x{args['size']} window does not fit {sx[-2]}x{sx[-1]} images",
            e.span,
        )
        return None
    return lw.b.add(e.func, (x,), sx[:-2] + (oh, ow), win.attrs())


HANDLERS: dict[str, Handler] = {"conv2d": _conv2d, "max_pool": _pool, "avg_pool": _pool}
