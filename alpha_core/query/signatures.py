"""The built-ins as an editor shows them: how each is called and what it does in one line."""

from __future__ import annotations

from alpha_core.check.arguments import Arg
from alpha_core.check.builtins import CALLS, REDUCE, UNARY
from alpha_core.check.data_source import SYNTHETIC, TABLE
from alpha_core.check.system import INITS, LEARNERS, LOSSES

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
    "softmax_cross_entropy": "per example log(Σ exp(z - m)) - (z[c] - m); needs class labels",
    "mse": "per example the mean of (z - t)², added left to right; needs regression targets",
    "table": "a CSV file of numbers, the label in the last column",
    "synthetic": "Gaussian blobs (classes) or a noisy linear map (targets), generated from a seed "
    "and compiled into the executable",
    "shuffle": "the order of the examples each epoch, from a seed",
    "relu": "t > 0 ? t : 0, elementwise",
    "tanh": "the compiler's tanh recipe, elementwise (within 3 ulp)",
    "sigmoid": "1 / (1 + exp(-t)), elementwise (within 3 ulp)",
    "exp": "the compiler's exp recipe, elementwise (within 2 ulp)",
    "log": "the compiler's log recipe, elementwise (within 2 ulp)",
    "sqrt": "the correctly rounded square root, elementwise",
    "abs": "|t|, elementwise",
    "square": "t·t, elementwise",
    "gelu": "t·(1 + tanh(sqrt(2/π)(t + 0.044715 t³)))/2, elementwise (the tanh form)",
    "silu": "t·sigmoid(t), elementwise",
    "maximum": "a > b ? a : b, elementwise with broadcasting",
    "minimum": "a < b ? a : b, elementwise with broadcasting",
    "clamp": "minimum(maximum(t, low), high), elementwise",
    "softmax": "exp(t - m) / Σ exp(t - m) along the axis, m the axis's maximum",
    "log_softmax": "(t - m) - log Σ exp(t - m) along the axis",
    "reshape": "the same elements in row-major order, another static shape (B first)",
    "transpose": "the last two axes swapped (t.T), or axes a and b",
    "causal_mask": "position [.., r, c] kept where c <= r, else -inf (before a softmax)",
    "embed": "row token of the table for every token of the input (clamped to its rows)",
    "conv2d": "the 2-D convolution of images [B, C, H, W] with kernels [O, C, KH, KW]",
    "max_pool": "the maximum of each size x size window, moved by stride",
    "avg_pool": "the mean of each size x size window, moved by stride",
    "dropout": "in training, each element kept with probability 1 - rate and scaled by "
    "1 / (1 - rate); a pure function of (seed, round, example, element); none in evaluation",
    "slice": "the elements start..stop-1 along the axis",
    "sigmoid_cross_entropy": "one logit's cross-entropy: (max(z, 0) - z c) + log(1 + exp(-|z|))",
    "max": "the largest element, of all of t or along `axis:`",
    "min": "the smallest element, of all of t or along `axis:`",
    "sum": "the sum from +0.0 in row-major order, of all of t or over `axis:`",
    "mean": "the sum divided by the count, of all of t or over `axis:`",
    "pair": "two workers that exchange their pieces",
    "star": "workers send their pieces to one hub, which combines and sends the total back",
    "hierarchy": "a tree of workers, each combining up to `fanout` children",
    "exact": "every plan gives the bits of the single-process build",
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
    if name in UNARY:
        return f"{name}(t)"
    if name in REDUCE:
        return f"{name}(t, axis: int, keepdims: bool)"
    if name in CALLS:
        return CALLS[name]
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
