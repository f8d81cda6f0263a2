"""Named arguments of built-in calls (data sources, initialisers, learners), checked by table."""

from __future__ import annotations

import math
import struct
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


FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_MIN_NORMAL = 2.0**-126


def float32(value: float) -> float:
    """The float32 a value becomes (round to nearest even, as the kernels and runtime use it);
    inf when it overflows."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def float32_text(value: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    if not math.isfinite(value) or value == 0:
        return str(value).removesuffix(".0")
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if float32(float(text)) == value:
            return text
    return f"{value:.9g}"


def _float32_refusal(a: Arg, what: str, value: float) -> str | None:
    """Why `value` is refused once rounded to float32, or None: the learners, initialisers and
    data sources compute in float32, so the range is checked on the float32 value (`eps: 1e-50`
    would be 0, `lr: 1e39` inf)."""
    v32 = float32(value)
    if not math.isinf(v32) and (value == 0 or abs(v32) >= FLOAT32_MIN_NORMAL):
        return None  # the usual case: no message to build
    normal = f"from {float32_text(FLOAT32_MIN_NORMAL)} to {float32_text(FLOAT32_MAX)}"
    if math.isinf(v32):
        return (
            f"`{a.name}` of {what} is {value:g}, which is {v32} as a float32; its magnitude "
            f"must be at most {float32_text(FLOAT32_MAX)}"
        )
    if value != 0 and abs(v32) < FLOAT32_MIN_NORMAL:
        need = (
            f"it must be a positive normal float32, {normal}"
            if a.positive
            else f"a nonzero value must be a normal float32 in magnitude, {normal}"
        )
        kind = "0" if v32 == 0 else f"the subnormal {float32_text(v32)}"
        return f"`{a.name}` of {what} is {value:g}, which is {kind} as a float32; {need}"
    return None


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
        if isinstance(value, float) and (why := _float32_refusal(a, what, value)) is not None:
            ctx.refuse("bad-argument", why, e.span)
            return None
        if a.kind == "int" and isinstance(value, int) and not -(2**63) <= value < 2**63:
            ctx.refuse("bad-argument", f"`{a.name}` of {what} does not fit in 64 bits", e.span)
            return None
        if isinstance(value, int | float):
            # a float is used as its float32: 0.99999999 is 1 and no longer below 1
            seen = [value, float32(value)] if isinstance(value, float) else [value]
            if any(
                (a.low is not None and (v < a.low or (a.positive and v <= a.low)))
                or (a.high is not None and (v > a.high or (a.below and v >= a.high)))
                for v in seen
            ):
                rng = (
                    f"{'above' if a.positive else 'at least'} {a.low}" if a.low is not None else ""
                )
                if a.high is not None:
                    rng += (" and " if rng else "") + (
                        f"below {a.high}" if a.below else f"at most {a.high}"
                    )
                shown = f"{value}" if seen[-1] == value else f"{value} ({seen[-1]:g} as a float32)"
                ctx.refuse("bad-argument", f"`{a.name}` is {shown}; it must be {rng}", e.span)
                return None
        out[a.name] = value
    return out
