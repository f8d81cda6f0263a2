"""The built-ins as an editor shows them: how each is called and what it does in one line."""

from __future__ import annotations

from alpha_core.check.arguments import Arg
from alpha_core.check.data_source import SYNTHETIC, TABLE
from alpha_core.check.system import INITS, LEARNERS, LOSSES
from alpha_core.ops import BUILTINS

SUMMARIES = {
    "sgd": "gradient descent: p = p - lr·g",
    "momentum": "heavy-ball momentum: v = mu·v + g, then p = p - lr·v",
    "adam": "Adam with bias correction; state m, v, b1t, b2t",
    "adamw": "Adam with decoupled weight decay: p = p·(1 - lr·wd), then the Adam step",
    "zeros": "every element +0.0",
    "ones": "every element 1.0",
    "constant": "every element the value, rounded to float32",
    "xavier_uniform": "uniform(-a, a), a = gain·sqrt(6 / (fan_in + fan_out))",
    "xavier_normal": "normal(0, gain·sqrt(2 / (fan_in + fan_out)))",
    "he_uniform": "uniform(-a, a), a = gain·sqrt(3 / fan_in), gain sqrt(2) by default",
    "he_normal": "normal(0, gain / sqrt(fan_in)), gain sqrt(2) by default",
    "normal": "mean + std·z, z an Irwin–Hall approximation of a standard normal; a pure "
    "function of (seed, element)",
    "uniform": "low + (high - low)·u, u uniform in [0, 1); a pure function of (seed, element)",
    "load": "the tensor `key` of a file (.npz, .safetensors, or an earlier run's .params), of "
    "this shape, float32; the file's SHA-256 joins the system's identity (fine-tuning)",
    "softmax_cross_entropy": "per example log(Σ exp(z - m)) - (z[c] - m); needs class labels",
    "mse": "per example the mean of (z - t)², added left to right; needs regression targets",
    "table": "a CSV file of numbers: the label last, first or named by a header row",
    "npy": "NumPy arrays: a features file and a labels file, read in place",
    "npz": "a NumPy archive (uncompressed): features and labels by key",
    "tokens": "a flat file of uint16 or uint32 tokens, cut into windows of `length`",
    "synthetic": "Gaussian blobs (classes) or a noisy linear map (targets), generated from a seed "
    "and compiled into the executable",
    "shuffle": "the order of the examples each epoch, from a seed",
    "sigmoid_cross_entropy": "one logit's cross-entropy: (max(z, 0) - z c) + log(1 + exp(-|z|))",
    "pair": "two workers that exchange their pieces",
    "star": "workers send their pieces to one hub, which combines and sends the total back",
    "hierarchy": "a tree of workers, each combining up to `fanout` children",
    "exact": "every plan gives the bits of the single-process build",
    # the built-in functions of expressions: alpha_core/ops
    **{name: b.summary for name, b in BUILTINS.items()},
}


def _arg_text(a: Arg) -> str:
    return f"{a.name}: {a.kind}" + ("" if a.default is None else f" = {a.default!r}")


def builtin_signature(name: str) -> str | None:
    """How a built-in is called, with its arguments and their defaults."""
    tables: dict[str, list[Arg]] = {**LEARNERS, **INITS, "table": TABLE, "synthetic": SYNTHETIC}
    tables["shuffle"] = [Arg("seed", "int")]
    if name in tables:
        return f"{name}({', '.join(_arg_text(a) for a in tables[name])})"
    if name in LOSSES:
        return f"{name}(model(x), y)"
    if name in BUILTINS:
        return BUILTINS[name].call
    if name == "zeros":
        return "zeros"
    if name == "star":
        return "star(HUB)"
    if name == "hierarchy":
        return "hierarchy(fanout: int)"
    if name in ("pair", "exact"):
        return name
    return None


def builtin_args(name: str) -> list[Arg]:
    return {**LEARNERS, **INITS, "table": TABLE, "synthetic": SYNTHETIC}.get(name, [])
