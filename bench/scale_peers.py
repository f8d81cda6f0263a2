"""Peer implementations of an MLP training step at any size, for bench/scale.py.

The model is the one bench/scale.py gives Alpha: layers of widths d0 -> d1 -> ... -> dL, ReLU
after every hidden layer, a linear last layer, softmax cross-entropy over dL classes (mean over
the batch), Adam(lr, 0.9, 0.999, 1e-8), float32 throughout. Each step takes one batch of B rows:
sequential batches over the training rows, wrapping (as the Alpha runtime does without a
shuffle). The peers compute the batch at once, not in 8 leaves: that is what a practitioner
writes in each framework.

Data: `--digits CSV` trains on the first 1,500 rows of the digits table with the features scaled by
1/16 (examples/digits.alpha); otherwise R synthetic rows of standard normal features with label i
mod dL, or with `--rows-npz` the rows of an .npz (x, y): bench/scale.py passes Alpha's own synthetic
rows, because the step's cost does depend on them on some CPUs: a model that separates its classes
well drives some softmax probabilities below 2^-126, and on Intel cores every product with such a
subnormal value takes a microcode assist (docs/performance.md). Parameters start as normal(0, 0.05)
weights and zero biases.

Usage:
    python bench/scale_peers.py {torch,numpy} --dims 784,1024,1024,10 --batch 256
        [--rows R] [--digits CSV] [--lr LR] [--threads T] [--steps N] [--warmup W]

Prints one JSON object: {"peer", "steps", "seconds", "first_loss", "last_loss", "threads", ...}
where "seconds" times N steps after W untimed ones. The thread count of NumPy's BLAS is set by
the caller's environment (OPENBLAS_NUM_THREADS); PyTorch's by torch.set_num_threads(T).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
DIGITS_FEATURES = 64
DIGITS_TRAIN_ROWS = 1500

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


def synthetic_rows(rows: int, features: int, classes: int, seed: int) -> tuple[F32, I64]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features), dtype=np.float32)
    return x, np.arange(rows, dtype=np.int64) % classes


def digits_rows(path: Path) -> tuple[F32, I64]:
    """The first 1,500 rows of the digits table, features divided by 16 once (not per step)."""
    raw = np.loadtxt(path, delimiter=",", dtype=np.int64)[:DIGITS_TRAIN_ROWS]
    x = raw[:, :DIGITS_FEATURES].astype(np.float32) / np.float32(16.0)
    return x, raw[:, DIGITS_FEATURES].copy()


def initial_params(dims: list[int], seed: int) -> list[tuple[F32, F32]]:
    rng = np.random.default_rng(seed)
    return [
        (
            (rng.standard_normal((a, b), dtype=np.float32) * np.float32(0.05)),
            np.zeros(b, dtype=np.float32),
        )
        for a, b in zip(dims[:-1], dims[1:], strict=True)
    ]


def batch_rows(step: int, batch: int, rows: int) -> I64:
    return (step * batch + np.arange(batch, dtype=np.int64)) % rows


# --------------------------------------------------------------------------------------------
# NumPy float32, vectorised over the batch, Adam by hand


class NumpyStep:
    def __init__(self, dims: list[int], x: F32, y: I64, batch: int, lr: float) -> None:
        self.x, self.y, self.batch, self.lr = x, y, batch, lr
        self.p: list[F32] = [t for layer in initial_params(dims, 1) for t in layer]
        self.m = [np.zeros_like(t) for t in self.p]
        self.v = [np.zeros_like(t) for t in self.p]
        self.t = 0
        self.arange = np.arange(batch)

    def step(self, step: int) -> float:
        rows = batch_rows(step, self.batch, len(self.y))
        a = self.x[rows]
        y = self.y[rows]
        n_layers = len(self.p) // 2
        acts = [a]  # the input of each layer
        for i in range(n_layers):
            z = acts[-1] @ self.p[2 * i] + self.p[2 * i + 1]
            acts.append(np.maximum(z, np.float32(0.0)) if i < n_layers - 1 else z)
        logits = acts[-1]
        mx = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - mx)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) + mx[:, 0] - logits[self.arange, y]))
        d = e / s
        d[self.arange, y] -= np.float32(1.0)
        d /= np.float32(self.batch)
        grads: list[F32] = [np.empty(0, dtype=np.float32)] * len(self.p)
        for i in reversed(range(n_layers)):
            grads[2 * i] = acts[i].T @ d
            grads[2 * i + 1] = d.sum(axis=0)
            if i > 0:
                # The ReLU's derivative from its output: positive exactly where its input was.
                d = (d @ self.p[2 * i].T) * (acts[i] > 0)
        self.adam(grads)
        return loss

    def adam(self, grads: list[F32]) -> None:
        self.t += 1
        c1 = np.float32(1.0 - BETA1**self.t)
        c2 = np.float32(1.0 - BETA2**self.t)
        b1, b2 = np.float32(BETA1), np.float32(BETA2)
        for p, m, v, g in zip(self.p, self.m, self.v, grads, strict=True):
            m *= b1
            m += np.float32(1.0 - BETA1) * g
            v *= b2
            v += np.float32(1.0 - BETA2) * (g * g)
            p -= np.float32(self.lr) * (m / c1) / (np.sqrt(v / c2) + np.float32(EPS))


# --------------------------------------------------------------------------------------------
# PyTorch CPU eager, torch.optim.Adam


class TorchStep:
    def __init__(
        self, dims: list[int], x: F32, y: I64, batch: int, lr: float, threads: int
    ) -> None:
        import torch

        torch.set_num_threads(threads)
        self.torch = torch
        self.x = torch.from_numpy(x)
        self.y = torch.from_numpy(y)
        self.batch = batch
        self.p = [
            torch.tensor(t, requires_grad=True) for layer in initial_params(dims, 1) for t in layer
        ]
        self.opt = torch.optim.Adam(self.p, lr=lr, betas=(BETA1, BETA2), eps=EPS)
        self.rows = torch.arange(batch, dtype=torch.int64)

    def step(self, step: int) -> float:
        torch = self.torch
        rows = (self.rows + step * self.batch) % len(self.y)
        a = self.x[rows]
        n_layers = len(self.p) // 2
        for i in range(n_layers):
            a = a @ self.p[2 * i] + self.p[2 * i + 1]
            if i < n_layers - 1:
                a = torch.relu(a)
        loss = torch.nn.functional.cross_entropy(a, self.y[rows])
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return float(loss.detach())


# --------------------------------------------------------------------------------------------


def blas_info() -> list[dict[str, Any]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keys = ("internal_api", "version", "architecture", "num_threads")
    return [
        {k: lib[k] for k in keys if k in lib}
        for lib in threadpool_info()
        if lib.get("user_api") == "blas"
    ]


def run_peer(args: argparse.Namespace) -> dict[str, Any]:
    dims = [int(d) for d in args.dims.split(",")]
    if args.digits is not None:
        x, y = digits_rows(args.digits)
    elif args.rows_npz is not None:  # Alpha's own rows (bench/scale.py writes them)
        held = np.load(args.rows_npz)
        x, y = held["x"].astype(np.float32), held["y"].astype(np.int64).reshape(-1)
    else:
        x, y = synthetic_rows(args.rows, dims[0], dims[-1], seed=7)
    if args.peer == "numpy":
        impl: NumpyStep | TorchStep = NumpyStep(dims, x, y, args.batch, args.lr)
    else:
        impl = TorchStep(dims, x, y, args.batch, args.lr, args.threads)
    first_loss = impl.step(0)
    for s in range(1, args.warmup):
        impl.step(s)
    start = max(args.warmup, 1)
    last_loss = first_loss
    t0 = time.perf_counter()
    for s in range(start, start + args.steps):
        last_loss = impl.step(s)
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {
        "peer": args.peer,
        "dims": dims,
        "batch": args.batch,
        "steps": args.steps,
        "seconds": seconds,
        "warmup": args.warmup,
        "first_loss": first_loss,
        "last_loss": last_loss,
        "numpy": np.__version__,
    }
    if args.peer == "numpy":
        result["blas"] = blas_info()
    else:
        import torch

        result["torch"] = torch.__version__
        result["threads"] = torch.get_num_threads()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("peer", choices=["torch", "numpy"])
    ap.add_argument("--dims", required=True, help="layer widths, e.g. 784,1024,1024,10")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--rows", type=int, default=0, help="synthetic rows (default: 2 x batch)")
    ap.add_argument("--digits", type=Path, help="train on this digits CSV instead")
    ap.add_argument("--rows-npz", type=Path, help="train on these rows (arrays x and y)")
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--steps", type=int, default=100, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps before the timing")
    args = ap.parse_args(argv)
    try:
        dims = [int(d) for d in args.dims.split(",")]
    except ValueError:
        ap.error(f"--dims must be comma-separated integers, got {args.dims!r}")
    if len(dims) < 2 or min(dims) < 1:
        ap.error("--dims needs at least two positive widths")
    if args.batch < 1 or args.steps < 1 or args.warmup < 0 or args.threads < 1:
        ap.error("--batch, --steps and --threads must be positive, --warmup non-negative")
    if args.rows == 0:
        args.rows = 2 * args.batch
    print(json.dumps(run_peer(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
