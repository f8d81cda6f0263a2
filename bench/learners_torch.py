"""The new learners against PyTorch in float32: the same system, initial values and batches.

For each case the digits system (examples/digits.alpha, alone) is built with that learner and
run for STEPS rounds by the real executable; PyTorch then trains the same model from the same
initial parameters (alpha_core.semantics.rng) on the same batches (the runtime's batch
selection, alpha_core.link.batch_reference) with torch.optim (SGD with weight decay and
Nesterov, Adam with weight decay, AdamW), torch.optim.lr_scheduler.LambdaLR for the schedule
(its formula in float64) and, for clipping, the global norm of the mean gradient with the
same decision (norm > C: multiply by C / norm). They are different float32 programs (PyTorch
sums a batch in its own order, its Adam uses lerp and float64 bias corrections), so they agree
to float32 rounding, not bit for bit: printed are the largest relative difference of the
per-round losses, and of the final parameters (max |a - t| / max |t|), per case.

Usage: .venv-bench/bin/python bench/learners_torch.py [--steps N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from alpha_core.build.executables import build_program  # noqa: E402
from alpha_core.codegen.kernels import init_arguments  # noqa: E402
from alpha_core.link.batch_reference import example_rows  # noqa: E402
from alpha_core.semantics.rng import numpy_init  # noqa: E402
from alpha_core.semantics.schedules import ScheduleSpec  # noqa: E402
from alpha_core.workspace.analysis import Workspace  # noqa: E402

ADAM = "learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)"
CASES = {
    "sgd weight decay": "sgd(lr: 0.05, weight_decay: 0.01)",
    "momentum nesterov + wd": "momentum(lr: 0.02, mu: 0.9, nesterov: true, weight_decay: 0.001)",
    "adam weight decay": "adam(lr: 0.005, weight_decay: 0.01)",
    "adamw": "adamw(lr: 0.005, weight_decay: 0.05)",
    "adamw cosine warmup": "adamw(lr: cosine(0.01, warmup: 20, final: 0.0005), weight_decay: 0.05)",
    "sgd linear": "sgd(lr: linear(0.1, warmup: 5, final: 0.01))",
    "momentum step": "momentum(lr: step(0.05, every: 40, factor: 0.5))",
    "adam constant warmup + clip": "adam(lr: constant(0.01, warmup: 10), clip: 0.5)",
    "adamw cosine + clip": "adamw(lr: cosine(0.01, warmup: 10), weight_decay: 0.01, clip: 0.4)",
}


def system_text(learner: str, steps: int) -> str:
    text = (REPO / "examples" / "digits.alpha").read_text()
    text = text.replace('"data/', f'"{REPO}/examples/data/')
    alone = text[: text.index("\n}\n", text.index("system digits")) + 3]
    return alone.replace(ADAM, f"learner {learner}").replace("steps 300", f"steps {steps}")


def alpha_run(
    text: str, folder: Path, name: str = "digits.alpha"
) -> tuple[Any, np.ndarray, list[float]]:
    """Build and run the system: its program, final parameters and per-round losses."""
    path = folder / name
    path.write_text(text)
    program, diags = Workspace().analyze_file(str(path)).program()
    assert program is not None, [(d.name, d.message) for d in diags]
    exe = build_program(program, folder / "build").executables[0].path
    out = folder / "out.params"
    proc = subprocess.run([exe, "--params-out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    losses = [float(e["loss"]) for e in events if e.get("event") == "step"]
    return program, np.fromfile(out, dtype="<f4"), losses


def factor(spec: ScheduleSpec | None, t: int) -> float:
    """The schedule's rate at round t over its peak, in float64 (LambdaLR's multiplier)."""
    if spec is None:
        return 1.0
    if t < spec.warmup:
        return (t + 1) / spec.warmup
    if spec.kind == "constant":
        return 1.0
    if spec.kind == "step":
        return spec.factor ** ((t - spec.warmup) // spec.every)
    u = min(t - spec.warmup, spec.steps - spec.warmup) / (spec.steps - spec.warmup)
    left = 0.5 * (1 + math.cos(math.pi * u)) if spec.kind == "cosine" else 1 - u
    return (spec.final + (spec.peak - spec.final) * left) / spec.peak


def initial_values(program: Any) -> list[np.ndarray]:
    """Alpha's initial values of every parameter, as float32 arrays (no torch needed)."""
    values = []
    for spec in program.params:
        kind, args, seed = init_arguments(spec.init)
        values.append(numpy_init(kind, args, seed, spec.count).reshape(spec.shape))
    return values


def initial_params(program: Any, device: str = "cpu") -> list[Any]:
    """Alpha's initial values of every parameter, as leaf tensors on `device`."""
    import torch

    return [
        torch.tensor(v, dtype=torch.float32, requires_grad=True, device=device)
        for v in initial_values(program)
    ]


def optimizer(params: list[Any], learner: Any) -> tuple[Any, Any]:
    """The torch optimizer of the system's learner and its schedule (LambdaLR of factor)."""
    import torch

    hyper = dict(learner.hyper)
    wd = hyper.get("weight_decay", 0.0)
    opt: Any
    if learner.kind == "sgd":
        opt = torch.optim.SGD(params, lr=hyper["lr"], weight_decay=wd)
    elif learner.kind == "momentum":
        nesterov = hyper.get("nesterov", 0.0) != 0
        opt = torch.optim.SGD(
            params, lr=hyper["lr"], momentum=hyper["mu"], nesterov=nesterov, weight_decay=wd
        )
    else:
        kind = torch.optim.AdamW if learner.kind == "adamw" else torch.optim.Adam
        opt = kind(
            params,
            lr=hyper["lr"],
            betas=(hyper["beta1"], hyper["beta2"]),
            eps=hyper["eps"],
            weight_decay=wd,
        )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: factor(learner.schedule, t))
    return opt, sched


def round_rows(program: Any, t: int) -> np.ndarray:
    """The rows of round t, leaf after leaf, as the runtime picks them."""
    d = program.data
    return np.concatenate(
        [
            example_rows(
                rows=d.rows,
                holdout=d.holdout,
                batch=program.batch,
                leaves=program.leaves,
                shuffle=int(program.shuffle_seed is not None),
                shuffle_seed=program.shuffle_seed or 0,
                t=t,
                leaf=leaf,
            )
            for leaf in range(program.leaves)
        ]
    )


def clip_and_step(params: list[Any], learner: Any, opt: Any, sched: Any) -> None:
    """Clipping by global norm as Alpha defines it (threshold / norm, no epsilon), then the
    optimizer's step and the schedule's."""
    import torch

    if learner.clip is not None:
        with torch.no_grad():
            norm = torch.linalg.vector_norm(torch.cat([p.grad.reshape(-1) for p in params]))
            if norm > learner.clip:
                for p in params:
                    p.grad.mul_(learner.clip / norm)
    opt.step()
    sched.step()


def torch_run(program: Any) -> tuple[np.ndarray, list[float]]:
    import torch

    torch.set_num_threads(1)
    d = program.data
    table = np.loadtxt(d.path, delimiter=",", dtype=np.float64, ndmin=2)
    X = torch.from_numpy(table[:, : d.features].astype(np.float32))
    Y = torch.from_numpy(table[:, d.features].astype(np.int64))
    params = initial_params(program)
    w1, b1, w2, b2 = params
    learner = program.learner
    opt, sched = optimizer(params, learner)
    losses = []
    for t in range(program.steps):
        rows = round_rows(program, t)
        x, y = X[rows], Y[rows]
        opt.zero_grad()
        logits = torch.relu((x / 16.0) @ w1 + b1) @ w2 + b2
        loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum") / program.batch
        loss.backward()
        losses.append(float(loss.detach()))
        clip_and_step(params, learner, opt, sched)
    flat = torch.cat([p.detach().reshape(-1) for p in params]).numpy()
    return flat, losses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="alpha-learners-") as temp:
        for i, (name, learner) in enumerate(CASES.items()):
            folder = Path(temp) / str(i)
            folder.mkdir()
            program, alpha_params, alpha_losses = alpha_run(
                system_text(learner, args.steps), folder
            )
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
                    "learner": learner,
                    "steps": args.steps,
                    "loss_max_rel": loss_rel,
                    "params_max_rel": param_rel,
                    "first_loss": alpha_losses[0],
                    "last_loss_alpha": alpha_losses[-1],
                    "last_loss_torch": torch_losses[-1],
                }
            )
            print(
                f"{name:30s} steps {args.steps}  losses max rel {loss_rel:.2e}  "
                f"params max rel {param_rel:.2e}  last loss {alpha_losses[-1]:.6f} "
                f"/ {torch_losses[-1]:.6f}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
