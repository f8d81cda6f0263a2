"""Check a parameter's initialiser and lower it to an InitSpec of alpha_core.semantics.rng.

Every initialiser is one of rng's three kinds: `constant` (`zeros`, `ones`, `constant(v)`),
`uniform(low, high)` and `normal(mean, std)`. The fan-scaled ones (`xavier_*`, `he_*` and their
other names `glorot_*`, `kaiming_*`) are `uniform` or `normal` whose bound or std is fixed here,
at compile time, from the parameter's shape: computed in float64 and used as the float32 it
rounds to, like every number of the source. So the generator, the kernels and the NumPy
reference need nothing new, and two spellings of one initialiser have one identity.

`load(path, key: name)` is the one initialiser that is not a generator: the tensor `name` of a
NumPy archive, a safetensors file or an earlier run's `.params` (check/tensor_file.py), read
now, its shape and dtype checked against the parameter's; the file's SHA-256 joins the
identity and the values are compiled into the executable (codegen/kernels.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from alpha_core.check import arguments as A
from alpha_core.check import tensor_file
from alpha_core.check.context import CheckContext, suggest
from alpha_core.check.program import InitSpec, LoadedTensor
from alpha_core.support.files import DATA_LIMIT, why_not_read
from alpha_core.syntax import ast

_SEED = A.Arg("seed", "int", low=0)
_GAIN = A.Arg("gain", "float", 1.0, low=0.0, positive=True)
_HE_GAIN = A.Arg("gain", "float", math.sqrt(2.0), low=0.0, positive=True)
INITS: dict[str, list[A.Arg]] = {
    "normal": [A.Arg("mean", "float"), A.Arg("std", "float", low=0.0), _SEED],
    "uniform": [A.Arg("low", "float"), A.Arg("high", "float"), _SEED],
    "constant": [A.Arg("value", "float")],
    "xavier_uniform": [_SEED, _GAIN],
    "xavier_normal": [_SEED, _GAIN],
    "he_uniform": [_SEED, _HE_GAIN],
    "he_normal": [_SEED, _HE_GAIN],
    "load": [A.Arg("path", "string"), A.Arg("key", "string")],
}
ALIASES = {
    "glorot_uniform": "xavier_uniform",
    "glorot_normal": "xavier_normal",
    "kaiming_uniform": "he_uniform",
    "kaiming_normal": "he_normal",
}
INIT_POSITIONAL = {
    "normal": 2,
    "uniform": 2,
    "constant": 1,
    "load": 1,
}  # leading arguments by position
BARE = {"zeros": 0.0, "ones": 1.0}  # written as a name, or called with no argument
NAMES = [*BARE, *INITS, *ALIASES]


def fans(shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(fan_in, fan_out): a matrix f32[IN, OUT] is used as `x @ w`, so its rows are the inputs;
    a kernel f32[O, C, KH, KW] (or any rank above 2) has C·KH·KW inputs and O·KH·KW outputs per
    element, as PyTorch counts them. None below rank 2."""
    if len(shape) < 2:
        return None
    if len(shape) == 2:
        return shape[0], shape[1]
    field = math.prod(shape[2:])
    return shape[1] * field, shape[0] * field


@dataclass(frozen=True)
class Files:
    """How `load` reads: the workspace's reader and the folder of the source file."""

    read_file: Callable[[str], bytes | None]
    base_dir: str


def check_init(
    init: ast.Name | ast.Call,
    shape: tuple[int, ...],
    ctx: CheckContext,
    files: Files | None = None,
) -> InitSpec | None:
    if isinstance(init, ast.Name):
        if init.id in BARE:
            return _constant(BARE[init.id])
        ctx.unknown("initialiser", init.id, init.span, NAMES)
        return None
    if init.func in BARE:
        if init.args or init.kwargs:
            ctx.refuse(
                "bad-argument",
                f"`{init.func}` takes no argument",
                init.span,
                help=f"write `= {init.func}`, or `= constant(v)` for another value",
            )
            return None
        return _constant(BARE[init.func])
    kind = ALIASES.get(init.func, init.func)
    if kind not in INITS:
        ctx.unknown("initialiser", init.func, init.func_span, NAMES)
        return None
    args = A.bind(ctx, init, INITS[kind], positional=INIT_POSITIONAL.get(kind, 0))
    if args is None:
        return None
    if kind == "constant":
        return _constant(float(args["value"]))
    if kind == "load":
        return _load(init, str(args["path"]), str(args["key"]), shape, ctx, files)
    if kind in ("normal", "uniform"):
        values = list(args.values())
        return InitSpec(kind, float(values[0]), float(values[1]), int(args["seed"]))
    fan = fans(shape)
    if fan is None:
        ctx.refuse(
            "bad-argument",
            f"`{init.func}` scales by the parameter's fan-in and fan-out, which "
            f"f32[{', '.join(map(str, shape))}] does not have: it needs rank 2 or more",
            init.span,
            help="give a vector or a scalar `zeros`, `constant(v)`, `normal` or `uniform`",
        )
        return None
    fan_in, fan_out = fan
    gain, seed = float(args["gain"]), int(args["seed"])
    if kind == "xavier_uniform":
        bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    elif kind == "xavier_normal":
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    elif kind == "he_uniform":
        bound = gain * math.sqrt(3.0 / fan_in)
    else:
        std = gain / math.sqrt(fan_in)
    if kind.endswith("uniform"):
        b = A.float32(bound)
        return InitSpec("uniform", -b, b, seed)
    return InitSpec("normal", 0.0, A.float32(std), seed)


def _constant(value: float) -> InitSpec:
    """`+0.0` keeps the identity `zeros` always had; any other value (`-0.0` too) is a
    constant."""
    if value == 0.0 and math.copysign(1.0, value) > 0:
        return InitSpec("zeros")
    return InitSpec("constant", value)


def _load(
    init: ast.Call,
    rel: str,
    key: str,
    shape: tuple[int, ...],
    ctx: CheckContext,
    files: Files | None,
) -> InitSpec | None:
    where = init.args[0].span if init.args else init.span
    base = files.base_dir if files is not None else "."
    path = rel if rel.startswith("/") else str(PurePosixPath(base) / rel)
    content = files.read_file(path) if files is not None else None
    if content is None:
        why = why_not_read(path, DATA_LIMIT) if files is not None else "no file can be read here"
        ctx.refuse(
            "load-unreadable",
            f"cannot read `{rel}` (looked for {path}): {why}",
            where,
            help="name an .npz, .safetensors or .params file (from `alpha export` or `alpha run`)",
        )
        return None
    try:
        t = tensor_file.read_tensor(path, content, key, files.read_file if files else _nothing)
    except tensor_file.LoadProblem as p:
        key_span = next((kw.value.span for kw in init.kwargs if kw.name == "key"), init.span)
        if p.kind == "missing":
            near = suggest(key, p.names)
            listed = ", ".join(f"`{n}`" for n in [*near, *(n for n in p.names if n not in near)])
            ctx.refuse(
                "unknown-name",
                f"`{rel}` has no tensor `{key}`",
                key_span,
                help=(f"did you mean `{near[0]}`? " if near else "")
                + (f"it holds {listed}"[:200] if p.names else "it holds no tensor"),
            )
            return None
        ctx.refuse("load-unreadable", f"cannot load from `{rel}`: {p.message}", where)
        return None
    declared = f"f32[{', '.join(map(str, shape))}]"
    if t.dtype != "float32":
        ctx.refuse(
            "type-mismatch",
            f"tensor `{key}` of `{rel}` holds {t.dtype}; parameters are float32",
            init.span,
            help="save it as float32 (NumPy: `a.astype(np.float32)`; PyTorch: `t.float()`)",
        )
        return None
    if t.shape != shape:
        ctx.refuse(
            "shape-mismatch",
            f"tensor `{key}` of `{rel}` is f32[{', '.join(map(str, t.shape))}]; the parameter "
            f"is {declared}",
            init.span,
        )
        return None
    digest = tensor_file.sha256_of(content)
    return InitSpec("load", loaded=LoadedTensor(path, digest, key, t.values))


def _nothing(path: str) -> bytes | None:
    return None
