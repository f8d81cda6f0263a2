"""The layer operations against PyTorch in float32: the same systems, initial values and batches.

Each case is a system (the ops tests' sources, examples/digits_cnn.alpha and
examples/transformer.alpha) built and run for STEPS rounds by the real executable. PyTorch then
trains the same model: the checked model graph is evaluated node by node with PyTorch's own
operations (torch.softmax, F.conv2d, F.max_pool2d, F.gelu(approximate="tanh"), F.silu,
torch.maximum, masked_fill, embedding by indexing, ...), differentiated by torch.autograd and
updated by torch.optim, from the same initial parameters (alpha_core.semantics.rng) on the same
batches (alpha_core.link.batch_reference). They are different float32 programs (PyTorch sums
in its own orders and differentiates its own way), so they agree to float32 rounding, not bit
for bit: printed are the largest relative difference of the per-round losses and of the final
parameters (max |a - t| / max |t|), per case.

Usage: .venv-bench/bin/python bench/ops_torch.py [--steps N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

import learners_torch  # noqa: E402
from learners_torch import clip_and_step, initial_params, optimizer, round_rows  # noqa: E402

from alpha_core.data import synthetic  # noqa: E402
from alpha_core.ir.conv import window_of  # noqa: E402
from alpha_core.ir.graph import concrete  # noqa: E402


def _cases(steps: int) -> dict[str, str]:
    import layer_sources as src

    def seq(body: str, regression: bool = False) -> str:
        return src.seq_source(body, regression, steps)

    examples = REPO / "examples"

    def example(name: str) -> str:
        text = (examples / name).read_text().replace('"data/', f'"{examples}/data/')
        text = text[: text.index("\nplan ")]
        head, _, tail = text.rpartition("steps ")
        return head + f"steps {steps}\n}}\n"

    return {
        # ties would split PyTorch's maximum/minimum gradients in halves: none here
        "gelu silu abs max min clamp": seq(
            "let a = x @ wq * s\n"
            "    let z = gelu(a) + silu(a) * s + abs(a) * 0.1 + maximum(a, 0.05) "
            "- minimum(a, 0.3) + clamp(a, -0.5, 0.5)\n"
            "    return reshape(z, B, 12) @ wo"
        ),
        "layer norm + causal attention": seq(src.BODIES["attention"]),
        "softmax log_softmax sqrt (mse)": seq(src.BODIES["log_softmax"], True),
        "slice": seq(src.BODIES["slice"]),
        "max / min along an axis": seq(src.BODIES["extremes"]),
        "multi-head causal attention (rank 4)": seq(src.BODIES["heads"]),
        "conv pad/stride + pools": src.cnn_source("padded", steps),
        "conv stride 2 + overlapping pools": src.cnn_source("strided", steps),
        "sigmoid cross-entropy (one logit)": src.loss_source(src.BINARY, steps),
        "label smoothing 0.1": src.loss_source(src.SMOOTH, steps),
        "dropout (Alpha's masks)": src.DROPOUT.replace("steps 20", f"steps {steps}"),
        "embedding": src.EMBED.replace("steps 12", f"steps {steps}"),
        "digits_cnn (adamw cosine clip)": example("digits_cnn.alpha"),
        "transformer": example("transformer.alpha"),
    }


def alpha_run(text: str, folder: Path) -> tuple[Any, np.ndarray, list[float]]:
    return learners_torch.alpha_run(text, folder, "s.alpha")


def _data(program: Any) -> tuple[np.ndarray, np.ndarray]:
    d = program.data
    if d.kind == "synthetic":
        return synthetic.generate(d)
    table = np.loadtxt(d.path, delimiter=",", dtype=np.float64, ndmin=2)
    return table[:, : d.features].astype(np.float32), table[:, d.features :].astype(np.float32)


def _mask(n: Any, shape: tuple[int, ...], t: int) -> Any:
    """Alpha's dropout mask for round t over the whole batch (row r is example r of the
    round: leaf r // leafsize, example r % leafsize), times its scale: PyTorch draws its own
    masks, so the comparison takes Alpha's."""
    import torch

    from alpha_core.semantics import activations
    from alpha_core.semantics.numpy_arith import NumpyArith

    A = NumpyArith()
    rate, seed = float(n.attr("rate")), int(n.attr("seed"))
    per = int(np.prod(shape[1:], dtype=np.int64))
    r = np.arange(shape[0], dtype=np.uint64)[:, None]
    e = np.arange(per, dtype=np.uint64)[None, :]
    index = (((np.uint64(t) << np.uint64(32)) + r) * np.uint64(per) + e).reshape(shape)
    keep = activations.dropout_keep(A, seed, index, rate)
    scale = float(activations.dropout_scale(A, rate))
    return torch.from_numpy(np.where(keep, np.float32(scale), np.float32(0.0)))


def forward(program: Any, params: list[Any], x: Any, batch: int, t: int = 0) -> Any:
    """The model graph evaluated with PyTorch's operations (round t's dropout masks)."""
    import torch
    import torch.nn.functional as F

    v: dict[int, Any] = {}
    for i, n in enumerate(program.model.nodes[: program.output + 1]):
        shape = concrete(n.shape, batch)
        a = [v[j] for j in n.inputs]
        op = n.op
        if op == "param":
            r = params[int(n.attr("index"))]
        elif op == "input_x":
            r = x.reshape(shape)
        elif op == "const":
            r = torch.tensor(n.attr("value"), dtype=torch.float32)
        elif op in ("add", "sub", "mul", "div"):
            r = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op](*a)
        elif op == "neg":
            r = -a[0]
        elif op in ("relu", "tanh", "sigmoid", "exp", "log", "sqrt", "abs"):
            r = getattr(torch, op)(a[0])
        elif op == "square":
            r = a[0] * a[0]
        elif op == "gelu":
            r = F.gelu(a[0], approximate="tanh")
        elif op == "silu":
            r = F.silu(a[0])
        elif op in ("maximum", "minimum"):
            r = getattr(torch, op)(*a)
        elif op in ("sum", "mean"):
            axis = n.attr("axis")
            f = torch.sum if op == "sum" else torch.mean
            r = f(a[0]) if axis is None else f(a[0], dim=int(axis))  # type: ignore[call-overload]
        elif op in ("max", "min"):
            axis = n.attr("axis")
            f = torch.amax if op == "max" else torch.amin
            r = f(a[0]) if axis is None else f(a[0], dim=int(axis))  # type: ignore[call-overload]
        elif op == "reshape":
            r = a[0].reshape(shape)
        elif op == "transpose":
            r = a[0].transpose(-1, -2)
        elif op == "swap_axes":
            r = a[0].transpose(int(n.attr("a")), int(n.attr("b")))
        elif op in ("matmul", "bmatmul"):
            r = a[0] @ a[1]
        elif op in ("softmax", "log_softmax"):
            r = getattr(torch, op)(a[0], dim=int(n.attr("axis")))  # type: ignore[call-overload]
        elif op == "causal_mask":
            t = shape[-1]
            r = a[0].masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        elif op == "slice":
            axis, start = int(n.attr("axis")), int(n.attr("start"))  # type: ignore[call-overload]
            r = a[0].narrow(axis, start, shape[axis])
        elif op == "embed":
            rows = a[0].shape[0]
            idx = torch.nan_to_num(a[1].detach()).trunc().clamp(0, rows - 1).long()
            r = a[0][idx]
        elif op == "dropout":
            r = a[0] * _mask(n, shape, t)
        elif op == "conv2d":
            w = window_of(n.attrs)
            r = F.conv2d(a[0], a[1], stride=w.stride, padding=w.padding)
        elif op in ("max_pool", "avg_pool"):
            w = window_of(n.attrs)
            pool = F.max_pool2d if op == "max_pool" else F.avg_pool2d
            r = pool(a[0], kernel_size=w.kh, stride=w.stride)
        else:
            raise AssertionError(f"no PyTorch form for {op}")
        v[i] = r
    return v[program.output]


def torch_run(program: Any) -> tuple[np.ndarray, list[float]]:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    X_np, Y_np = _data(program)
    X = torch.from_numpy(X_np)
    params = initial_params(program)
    learner = program.learner
    opt, sched = optimizer(params, learner)
    losses = []
    for t in range(program.steps):
        rows = round_rows(program, t)
        x = X[rows]
        opt.zero_grad()
        z = forward(program, params, x, program.batch, t)
        if program.loss == "sigmoid_cross_entropy":
            labels = torch.from_numpy(Y_np[rows].astype(np.float32)).reshape(-1)
            total = F.binary_cross_entropy_with_logits(z[:, 0], labels, reduction="sum")
        elif program.loss == "softmax_cross_entropy":
            labels = torch.from_numpy(Y_np[rows].astype(np.int64)).reshape(-1)
            total = F.cross_entropy(
                z.reshape(labels.shape[0], -1),
                labels,
                reduction="sum",
                label_smoothing=program.smoothing,
            )
        else:
            target = torch.from_numpy(Y_np[rows])
            total = ((z - target) ** 2).mean(dim=1).sum()
        loss = total / program.batch
        loss.backward()
        losses.append(float(loss.detach()))
        clip_and_step(params, learner, opt, sched)
    flat = torch.cat([p.detach().reshape(-1) for p in params]).numpy()
    return flat, losses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="alpha-ops-") as temp:
        for i, (name, text) in enumerate(_cases(args.steps).items()):
            folder = Path(temp) / str(i)
            folder.mkdir()
            program, alpha_params, alpha_losses = alpha_run(text, folder)
            torch_params, torch_losses = torch_run(program)
            loss_rel = max(
                abs(a - b) / max(abs(b), 1e-30)
                for a, b in zip(alpha_losses, torch_losses, strict=True)
            )
            param_rel = float(
                np.max(np.abs(alpha_params - torch_params)) / np.max(np.abs(torch_params))
            )
            rows.append(
                {
                    "case": name,
                    "steps": args.steps,
                    "learner": program.learner.kind,
                    "loss_max_rel": loss_rel,
                    "params_max_rel": param_rel,
                    "first_loss": alpha_losses[0],
                    "last_loss_alpha": alpha_losses[-1],
                    "last_loss_torch": torch_losses[-1],
                }
            )
            print(
                f"{name:36s} {program.learner.kind:6s} steps {args.steps}  losses max rel "
                f"{loss_rel:.2e}  params max rel {param_rel:.2e}  last loss "
                f"{alpha_losses[-1]:.6f} / {torch_losses[-1]:.6f}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
