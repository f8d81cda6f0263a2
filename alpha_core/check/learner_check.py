"""Check a system's `learner` item: the learner, its arguments, a learning-rate schedule given
as `lr: cosine(…)`, clipping by global norm (`clip:`) and weight decay."""

from __future__ import annotations

import dataclasses

from alpha_core.check import arguments as A
from alpha_core.check.context import CheckContext
from alpha_core.check.program import LearnerSpec
from alpha_core.semantics.schedules import ROUND_CAP, ScheduleSpec
from alpha_core.syntax import ast

_LR = A.Arg("lr", "float", low=0.0, positive=True)
_DECAY = A.Arg("weight_decay", "float", 0.0, low=0.0)
_CLIP = A.Arg("clip", "float", 0.0, low=0.0, positive=True)  # default 0: no clipping
_ADAM = [
    A.Arg("beta1", "float", 0.9, low=0.0, high=1.0, below=True),
    A.Arg("beta2", "float", 0.999, low=0.0, high=1.0, below=True),
    A.Arg("eps", "float", 1e-8, low=0.0, positive=True),
]
LEARNERS: dict[str, list[A.Arg]] = {
    "sgd": [_LR, _DECAY, _CLIP],
    "momentum": [
        _LR,
        A.Arg("mu", "float", 0.9, low=0.0, high=1.0),
        A.Arg("nesterov", "name", "false"),
        _DECAY,
        _CLIP,
    ],
    "adam": [_LR, *_ADAM, _DECAY, _CLIP],
    "adamw": [_LR, *_ADAM, dataclasses.replace(_DECAY, default=0.01), _CLIP],
}
# arguments that leave a learner's meaning unchanged at these values: kept out of its identity,
# so a system written before they existed keeps its identity
_NEUTRAL = {"weight_decay": 0.0, "nesterov": 0.0}

_PEAK = A.Arg("peak", "float", low=0.0, positive=True)
_WARMUP = A.Arg("warmup", "int", 0, low=0, high=ROUND_CAP)
_DECAYING = [
    _PEAK,
    _WARMUP,
    A.Arg("steps", "int", 0, low=1, high=ROUND_CAP),  # 0: the system's steps
    A.Arg("final", "float", 0.0, low=0.0),
]
SCHEDULES: dict[str, list[A.Arg]] = {
    "constant": [_PEAK, _WARMUP],
    "linear": _DECAYING,
    "cosine": _DECAYING,
    "step": [
        _PEAK,
        A.Arg("every", "int", low=1, high=ROUND_CAP),
        A.Arg("factor", "float", 0.1, low=0.0, high=1.0, positive=True),
        _WARMUP,
    ],
}


def check_learner(
    item: ast.LearnerItem, ctx: CheckContext, steps: int | None
) -> LearnerSpec | None:
    """`steps`: the system's rounds (None when its `steps` item is missing)."""
    call = item.call
    spec = LEARNERS.get(call.func)
    if spec is None:
        ctx.unknown("learner", call.func, call.func_span, LEARNERS)
        return None
    lr = call.kwarg("lr")
    schedule = None
    if lr is not None and isinstance(lr.value, ast.Call):
        schedule = _schedule(lr.value, ctx, steps)
        if schedule is None:
            return None
        # the rest is bound as usual, the schedule's peak standing for `lr`
        call = dataclasses.replace(call, kwargs=tuple(k for k in call.kwargs if k is not lr))
        spec = [dataclasses.replace(a, default=schedule.peak) if a is _LR else a for a in spec]
    args = A.bind(ctx, call, spec)
    if args is None:
        return None
    if "nesterov" in args:
        kw = call.kwarg("nesterov")
        if args["nesterov"] not in ("true", "false"):
            assert kw is not None
            ctx.refuse("bad-argument", "`nesterov` is `true` or `false`", kw.value.span)
            return None
        if args["nesterov"] == "true" and args["mu"] == 0:
            assert kw is not None
            ctx.refuse(
                "bad-argument",
                "Nesterov momentum needs `mu` above 0; with `mu: 0` it is plain sgd",
                kw.span,
            )
            return None
        args["nesterov"] = 1.0 if args["nesterov"] == "true" else 0.0
    clip = float(args.pop("clip"))
    hyper = tuple(
        (k, float(v))
        for k, v in args.items()
        if not (call.func != "adamw" and k in _NEUTRAL and float(v) == _NEUTRAL[k])
    )
    return LearnerSpec(call.func, hyper, schedule, clip if clip > 0 else None)


def _schedule(call: ast.Call, ctx: CheckContext, steps: int | None) -> ScheduleSpec | None:
    spec = SCHEDULES.get(call.func)
    if spec is None:
        ctx.unknown("learning-rate schedule", call.func, call.func_span, SCHEDULES)
        return None
    args = A.bind(ctx, call, spec, positional=1)
    if args is None:
        return None
    warmup = int(args["warmup"])
    length = int(args.get("steps", 0)) or (steps or 0)
    if call.func in ("linear", "cosine") and length > ROUND_CAP:
        ctx.refuse(
            "bad-argument",
            f"`{call.func}` decays over the system's {length:,} steps, more than "
            f"{ROUND_CAP:,} rounds",
            call.span,
            help=f"give `steps:` at most {ROUND_CAP:,}: the rate stays at `final` after it",
        )
        return None
    over = length if call.func in ("linear", "cosine") else (steps or 0)
    if over and warmup >= over:
        what = "its `steps:`" if "steps" in args and args["steps"] else "the system's steps"
        kw = call.kwarg("warmup")
        ctx.refuse(
            "bad-argument",
            f"a warmup of {warmup:,} rounds leaves no round of `{call.func}` after it: "
            f"{what} are {over:,}",
            kw.span if kw is not None else call.span,
        )
        return None
    return ScheduleSpec(
        call.func,
        float(args["peak"]),
        warmup,
        length if call.func in ("linear", "cosine") else 0,
        float(args.get("final", 0.0)),
        int(args.get("every", 1)),
        float(args.get("factor", 1.0)),
    )
