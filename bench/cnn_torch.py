"""An MNIST-shaped CNN per training step: Alpha against PyTorch eager, float32, in one run.

The model (input 1x28x28; conv 3x3 of 32 channels, relu; conv 3x3 of 64 channels, relu; max pool
2x2; dense 128, relu; dense 10; softmax cross-entropy; Adam; batch 64) is written once as an
Alpha system (SYSTEM below) and trained by the compiled executable, and by PyTorch eager
(F.conv2d, F.max_pool2d, torch.optim.Adam) from the same initial parameters
(alpha_core.semantics.rng) on the same batches (the runtime's batch selection).

Timed per training step, the systems sampled in interleaved rounds so that a change in the
machine's load falls on all alike; each keeps its best sample:

- PyTorch at 1 and 2 threads (torch.set_num_threads): N steps after warm-up, wall clock / N.
- Alpha built with default flags and with `--cpu x86-64-v4` (where the CPU has AVX-512), each
  run with `--threads 1` and `--threads 2`: differential, (t(S + N steps) - t(S steps)) / N over
  whole runs, which removes start-up and data generation.

Printed: the CPU (lscpu's model name), the 1-minute load before and after, ms per step, GFLOP/s
(the step's multiply-adds x 2), the ratios Alpha / PyTorch, the first-step losses of both, and
each Alpha build's parameter SHA-256 at every thread count (which must all be one value).

Usage: .venv-bench/bin/python bench/cnn_torch.py [--steps N] [--rounds R] [--json OUT]
This is a benchmark, never a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from alpha_timing import AlphaBuild, has_avx512  # noqa: E402
from learners_torch import clip_and_step, initial_params, optimizer, round_rows  # noqa: E402
from machine import machine  # noqa: E402
from scale_models import fused_source  # noqa: E402
from torch_models import cnn_loss  # noqa: E402

from alpha_core.data import synthetic  # noqa: E402
from alpha_core.workspace.analysis import Workspace  # noqa: E402

BATCH = 64
ROWS = 64 * 16
SYSTEM = """system mnist_cnn {
  data train: synthetic(rows: %(rows)d, features: 784, classes: 10, seed: 5, noise: 0.5, holdout: 0)
  batch 64 leaves 1 shuffle(seed: 7)
  param k1: f32[32, 1, 3, 3] = normal(0.0, 0.3, seed: 1)
  param c1: f32[32, 1, 1] = zeros
  param k2: f32[64, 32, 3, 3] = normal(0.0, 0.06, seed: 2)
  param c2: f32[64, 1, 1] = zeros
  param w1: f32[9216, 128] = normal(0.0, 0.01, seed: 3)
  param b1: f32[128] = zeros
  param w2: f32[128, 10] = normal(0.0, 0.1, seed: 4)
  param b2: f32[10] = zeros
  fn model(x: f32[B, 1, 28, 28]) -> f32[B, 10] {
    let h1 = relu(conv2d(x, k1, stride: 1, padding: 0) + c1)
    let h2 = relu(conv2d(h1, k2, stride: 1, padding: 0) + c2)
    let p = max_pool(h2, size: 2, stride: 2)
    let d = relu(reshape(p, B, 9216) @ w1 + b1)
    return d @ w2 + b2
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps %(steps)d
}
"""


def step_flops() -> float:
    """Multiply-adds x 2 of one step's convolutions and products (forward, dx, dw)."""
    conv1 = BATCH * 32 * 26 * 26 * 9  # forward and dw; no dx (the input)
    conv2 = BATCH * 64 * 24 * 24 * 32 * 9  # forward, dx and dw alike
    dense1 = BATCH * 9216 * 128
    dense2 = BATCH * 128 * 10
    return 2.0 * (2 * conv1 + 3 * conv2 + 3 * dense1 + 3 * dense2)


def program_of(steps: int, folder: Path, fused: bool = False) -> Any:
    """The system at `steps`; `fused`: in `arithmetic fused`."""
    path = folder / f"cnn{steps}.alpha"
    text = SYSTEM % {"rows": ROWS, "steps": steps}
    path.write_text(fused_source(text) if fused else text)
    program, diags = Workspace().analyze_file(str(path)).program()
    assert program is not None, [(d.name, d.message) for d in diags]
    return program


class TorchRun:
    """The same model, initial values and batches in PyTorch eager."""

    def __init__(self, program: Any, device: str = "cpu") -> None:
        import torch

        self.torch = torch
        self.program = program
        self.device = device  # "cuda": the peer of a GPU role (bench/gpu_models.py)
        x, y = synthetic.generate(program.data)
        self.X = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device)
        self.Y = torch.from_numpy(y.astype(np.int64).reshape(-1)).to(device)
        self.best: dict[int, float] = {}
        self.first_loss = self._losses(1)[0]

    def _losses(self, steps: int) -> list[float]:

        torch = self.torch
        params = initial_params(self.program, self.device)
        opt, sched = optimizer(params, self.program.learner)
        losses = []
        for t in range(steps):
            rows = torch.from_numpy(round_rows(self.program, t % self.program.steps))
            rows = rows.to(self.device)
            x = self.X[rows].reshape(BATCH, 1, 28, 28)
            opt.zero_grad()
            loss = cnn_loss(params, x, self.Y[rows])
            loss.backward()
            losses.append(loss.detach())
            clip_and_step(params, self.program.learner, opt, sched)
        return [float(v) for v in losses]  # read back once, after the steps

    def sample(self, threads: int, steps: int) -> None:
        self.torch.set_num_threads(threads)
        self._losses(2)  # warm-up at this thread count
        t0 = time.perf_counter()
        self._losses(steps)
        ms = 1e3 * (time.perf_counter() - t0) / steps
        self.best[threads] = min(self.best.get(threads, float("inf")), ms)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="steps timed per sample")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved samples of each")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--fused", action="store_true", help="also the system in arithmetic fused")
    args = ap.parse_args(argv)
    threads = (1, 2)
    load_before = os.getloadavg()[0]
    short, long = 2, 2 + args.steps
    with tempfile.TemporaryDirectory(prefix="cnn_torch.") as tmp:
        work = Path(tmp)
        builds = [AlphaBuild("default", None, work, short, long, program_of)]
        if has_avx512():
            builds.append(AlphaBuild("x86-64-v4", "x86-64-v4", work, short, long, program_of))
        if args.fused:
            fused = lambda steps, folder: program_of(steps, folder, fused=True)  # noqa: E731
            builds.append(AlphaBuild("fused", None, work, short, long, fused))
        torch_run = TorchRun(program_of(long, work))
        for _ in range(args.rounds):
            for t in threads:
                torch_run.sample(t, args.steps)
                for build in builds:
                    build.sample(t)
        load_after = os.getloadavg()[0]
        flops = step_flops()
        cpu = str(machine()["cpu"])
        print(f"CPU: {cpu}; 1-minute load {load_before:.2f} before, {load_after:.2f} after")
        print(f"step: {flops / 1e9:.2f} GFLOP; best of {args.rounds} interleaved samples")
        first = builds[0].losses[0] if builds[0].losses else None
        print(f"first-step loss: Alpha {first} PyTorch {torch_run.first_loss}")
        rows = []
        for t in threads:
            rows.append((f"PyTorch eager, {t} thread{'s' * (t > 1)}", torch_run.best[t], t))
        for build in builds:
            for t in threads:
                rows.append((f"Alpha {build.label}, --threads {t}", build.ms_per_step(t), t))
        print(f"{'system':<36} {'ms/step':>9} {'GFLOP/s':>8} {'/ torch 1t':>11} {'/ torch 2t':>11}")
        for name, ms, _ in rows:
            print(
                f"{name:<36} {ms:9.2f} {flops / ms / 1e6:8.1f} "
                f"{ms / torch_run.best[1]:11.2f} {ms / torch_run.best[2]:11.2f}"
            )
        shas = {f"{b.label} {k}": sha for b in builds for k, sha in b.sha.items()}
        for name, sha in shas.items():
            print(f"params SHA-256 {name}: {sha}")
        unfused = {v for k, v in shas.items() if not k.startswith("fused ")}
        fused_shas = {v for k, v in shas.items() if k.startswith("fused ")}
        same = len(unfused) == 1 and len(fused_shas) <= 1
        print("SHA-256 equal at every cpu level and thread count (per arithmetic):", same)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "cpu": cpu,
                        "load": [load_before, load_after],
                        "ms_per_step": {name: ms for name, ms, _ in rows},
                        "sha256": shas,
                        "build_s": {b.label: max(b.build_s.values()) for b in builds},
                    },
                    indent=2,
                )
            )
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
