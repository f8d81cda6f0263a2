"""The models bench/scale.py measures, and the Alpha source of each (see scale.py's docstring)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DIGITS_DATA = REPO / "examples" / "data" / "digits.csv"
DIGITS_EXAMPLE = REPO / "examples" / "digits.alpha"
LEAVES = 8


@dataclass(frozen=True)
class Model:
    """One MLP: layer widths, batch, learning rate, and how many steps each system times."""

    name: str
    dims: tuple[int, ...]
    batch: int
    lr: float
    alpha_steps: tuple[int, int]  # the two builds of the differential timing
    peer_steps: int  # timed steps per peer sample
    warmup: int  # untimed peer steps before the timing
    digits: bool = False  # examples/digits.alpha and its CSV instead of synthetic rows

    @property
    def layers(self) -> list[tuple[int, int]]:
        return list(zip(self.dims[:-1], self.dims[1:], strict=True))

    @property
    def params(self) -> int:
        return sum(a * b + b for a, b in self.layers)

    @property
    def flops_per_step(self) -> int:
        """6 flops per weight per example: 2 forward (multiply, add), 4 backward (two products)."""
        return 6 * sum(a * b for a, b in self.layers) * self.batch

    @property
    def rows(self) -> int:
        """Synthetic rows: two batches, so the embedded data stays small beside the model."""
        return 2 * self.batch


# Default steps: Alpha's two builds differ by about a second of steps at the speeds measured
# during issue 10 (40 us, 1.2 ms, 60 ms and 180 ms per step; 6-10 s at the speeds before it),
# the peers time about a second each; --scale stretches both.
MODELS = {
    m.name: m
    for m in (
        Model("digits", (64, 32, 10), 64, 0.01, (300, 8300), 2000, 20, digits=True),
        Model("64-32-10", (64, 32, 10), 64, 0.001, (300, 8300), 2000, 20),
        Model("256-256-10", (256, 256, 10), 128, 0.001, (50, 650), 500, 10),
        Model("784-1024-1024-10", (784, 1024, 1024, 10), 256, 0.001, (2, 22), 20, 3),
        Model("1024-4096-1024", (1024, 4096, 1024), 256, 0.001, (1, 7), 8, 2),
    )
}


def digits_source(steps: int) -> str:
    """examples/digits.alpha with its step count replaced and its data path made absolute."""
    text, n = re.subn(
        r"^(\s*)steps\s+\d+",
        rf"\g<1>steps {steps}",
        DIGITS_EXAMPLE.read_text(),
        count=1,
        flags=re.M,
    )
    if n != 1:
        raise ValueError(f"no `steps N` line in {DIGITS_EXAMPLE}")
    return re.sub(r"\"[^\"\n]*digits\.csv\"", json.dumps(str(DIGITS_DATA)), text)


def synthetic_source(model: Model, steps: int) -> str:
    """A system of ReLU hidden layers, softmax cross-entropy over the last width, Adam."""
    name = "mlp_" + "_".join(str(d) for d in model.dims)
    lines = [
        f"system {name} {{",
        f"  data train: synthetic(rows: {model.rows}, features: {model.dims[0]}, "
        f"classes: {model.dims[-1]}, seed: 1, holdout: 0)",
        f"  batch {model.batch} leaves {LEAVES}",
    ]
    for i, (a, b) in enumerate(model.layers, start=1):
        lines.append(f"  param w{i}: f32[{a}, {b}] = normal(0.0, 0.05, seed: {i})")
        lines.append(f"  param b{i}: f32[{b}] = zeros")
    lines.append(f"  fn model(x: f32[B, {model.dims[0]}]) -> f32[B, {model.dims[-1]}] {{")
    prev = "x"
    for i in range(1, len(model.layers)):
        lines.append(f"    let h{i} = relu({prev} @ w{i} + b{i})")
        prev = f"h{i}"
    last = len(model.layers)
    lines += [
        f"    return {prev} @ w{last} + b{last}",
        "  }",
        "  loss softmax_cross_entropy(model(x), y)",
        f"  learner adam(lr: {model.lr}, beta1: 0.9, beta2: 0.999, eps: 1e-8)",
        f"  steps {steps}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def fused_source(text: str) -> str:
    """A system's text in `arithmetic fused`: the item after its (first) `steps` item. Shared
    by the benches that time a fused variant (scale.py, cnn_torch.py, transformer_torch.py)."""
    return re.sub(r"^(\s*)steps (\d+)$", r"\g<0>\n\g<1>arithmetic fused", text, count=1, flags=re.M)


def alpha_source(model: Model, steps: int, fused: bool = False) -> str:
    """The model's system; `fused`: in `arithmetic fused`."""
    text = digits_source(steps) if model.digits else synthetic_source(model, steps)
    return fused_source(text) if fused else text
