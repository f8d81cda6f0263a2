"""The shape rules the operation table names: a node's shape from its inputs' shapes and its
attributes, as the phase that makes the node computes it.

A rule returns the shape, or None for `given`: the maker decides the shape from what the node
does not carry (a reshape's target, the operand a `reduce_to` or an adjoint goes back to).
Pure functions of shapes, importable without llvmlite; tests/test_op_table.py checks every node
of every system it builds against its rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from alpha_core.ir.conv import window_of
from alpha_core.ir.graph import Shape, broadcast_shapes

Attrs = tuple[tuple[str, object], ...]
Rule = Callable[[Sequence[Shape], Attrs], Shape | None]


def _given(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    return None


def _scalar(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    return ()


def _same(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    return ins[0]


def _broadcast(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    out: Shape | None = ins[0]
    for s in ins[1:]:
        out = None if out is None else broadcast_shapes(out, s)
    return out


def _matmul(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    a, c = ins
    return (a[0], c[1])


def _bmatmul(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    a, c = ins
    return a[:-1] + (c[-1],)


def _transpose(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    a = ins[0]
    return a[:-2] + (a[-1], a[-2])


def _swap_axes(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    d = dict(attrs)
    out = list(ins[0])
    i, j = int(d["a"]), int(d["b"])  # type: ignore[call-overload]
    out[i], out[j] = out[j], out[i]
    return tuple(out)


def _reduce_axis(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    axis = dict(attrs).get("axis")
    a = ins[0]
    return () if not isinstance(axis, int) else a[:axis] + a[axis + 1 :]


def _rows(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    return (ins[0][0],)


def _embed(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    table, tokens = ins
    return tokens + (table[1],)


def _conv2d(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    x, w = ins
    return (x[0], w[0], *window_of(attrs).out_size(x[2], x[3]))


def _pool(ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    x = ins[0]
    return x[:-2] + window_of(attrs).out_size(x[-2], x[-1])


RULES: dict[str, Rule] = {
    "given": _given,
    "scalar": _scalar,
    "same": _same,
    "broadcast": _broadcast,
    "matmul": _matmul,
    "bmatmul": _bmatmul,
    "transpose": _transpose,
    "swap_axes": _swap_axes,
    "reduce_axis": _reduce_axis,
    "rows": _rows,
    "embed": _embed,
    "conv2d": _conv2d,
    "pool": _pool,
}


def expected_shape(rule: str, ins: Sequence[Shape], attrs: Attrs) -> Shape | None:
    """The shape `rule` gives a node of these input shapes and attributes (None: given)."""
    return RULES[rule](ins, attrs)
