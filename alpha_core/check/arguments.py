"""Named arguments of built-in calls (data sources, initialisers, learners), checked by table."""

from __future__ import annotations

import math
from dataclasses import dataclass

from alpha_core.check.context import CheckContext
from alpha_core.syntax import ast


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # float | int | name | string
    default: float | int | str | None = None  # None: required
    low: float | None = None  # inclusive bound
    high: float | None = None  # inclusive bound
    positive: bool = False  # strictly above `low`
    below: bool = False  # strictly below `high`


def _literal(e: ast.Expr) -> tuple[str, float | int | str] | None:
    if isinstance(e, ast.Number):
        # an integer's value from its text: exact, where the float value may be rounded or inf
        return ("int" if e.is_int else "float", int(e.text) if e.is_int else e.value)
    if isinstance(e, ast.Neg) and isinstance(e.operand, ast.Number):
        v = e.operand.value
        return (
            "int" if e.operand.is_int else "float",
            -int(e.operand.text) if e.operand.is_int else -v,
        )
    if isinstance(e, ast.String):
        return ("string", e.value)
    if isinstance(e, ast.Name):
        return ("name", e.id)
    return None


def bind(
    ctx: CheckContext, call: ast.Call, spec: list[Arg], positional: int = 0
) -> dict[str, float | int | str] | None:
    """Match a call's arguments against `spec`; the first `positional` may be given by position.

    Returns the values by name, or None after refusing with `bad-argument`.
    """
    what = f"`{call.func}`"
    known = {a.name: a for a in spec}
    given: dict[str, tuple[ast.Expr, ast.Span]] = {}
    if len(call.args) > positional:
        ctx.refuse(
            "bad-argument",
            f"{what} takes at most {positional} positional argument(s), {len(call.args)} given",
            call.args[positional].span,
            help="name the arguments: " + ", ".join(f"{a.name}:" for a in spec),
        )
        return None
    for a, e in zip(spec, call.args, strict=False):
        given[a.name] = (e, e.span)
    for kw in call.kwargs:
        if kw.name not in known:
            from alpha_core.check.context import suggest

            near = suggest(kw.name, known)
            ctx.refuse(
                "bad-argument",
                f"{what} has no argument `{kw.name}`",
                kw.name_span,
                help=("did you mean `" + near[0] + "`?")
                if near
                else "it takes " + ", ".join(f"`{a}`" for a in known),
            )
            return None
        if kw.name in given:
            ctx.refuse("bad-argument", f"`{kw.name}` is given twice", kw.name_span)
            return None
        given[kw.name] = (kw.value, kw.span)
    out: dict[str, float | int | str] = {}
    for a in spec:
        if a.name not in given:
            if a.default is None:
                ctx.refuse("bad-argument", f"{what} needs `{a.name}:`", call.span)
                return None
            out[a.name] = a.default
            continue
        e, span = given[a.name]
        lit = _literal(e)
        ok = lit is not None and (lit[0] == a.kind or (a.kind == "float" and lit[0] == "int"))
        if not ok or lit is None:
            ctx.refuse("bad-argument", f"`{a.name}` of {what} must be a literal {a.kind}", e.span)
            return None
        value = float(lit[1]) if a.kind == "float" else lit[1]
        if isinstance(value, float) and not math.isfinite(value):
            ctx.refuse("bad-argument", f"`{a.name}` of {what} must be finite", e.span)
            return None
        if a.kind == "int" and isinstance(value, int) and not -(2**63) <= value < 2**63:
            ctx.refuse("bad-argument", f"`{a.name}` of {what} does not fit in 64 bits", e.span)
            return None
        if isinstance(value, int | float):
            if (a.low is not None and (value < a.low or (a.positive and value <= a.low))) or (
                a.high is not None and (value > a.high or (a.below and value >= a.high))
            ):
                rng = (
                    f"{'above' if a.positive else 'at least'} {a.low}" if a.low is not None else ""
                )
                if a.high is not None:
                    rng += (" and " if rng else "") + (
                        f"below {a.high}" if a.below else f"at most {a.high}"
                    )
                ctx.refuse("bad-argument", f"`{a.name}` is {value}; it must be {rng}", e.span)
                return None
        out[a.name] = value
    return out
