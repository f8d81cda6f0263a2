"""Peer implementations of the digits training step, for bench/step_time.py.

Each peer trains the model of examples/digits.alpha on the same data in the same order:

    h = relu((x / 16) @ w1 + b1); logits = h @ w2 + b2
    loss = softmax cross-entropy, mean over a batch of 64
    Adam(lr 0.01, beta1 0.9, beta2 0.999, eps 1e-8), float32 throughout

Example g of the run is training row g mod 1500 (sequential batches over the first 1,500 rows,
wrapping, as the Alpha runtime does without shuffling). The peers compute one batch of 64 at a
time, not 8 leaves of 8: they are what a practitioner would write in each framework.

The initial parameters are the deterministic ones of bench/c_step/step.c, so the first-step loss
of every peer matches the C baseline's (a check that all of them compute the same step).

Usage: python bench/peers.py {torch,numpy} [--steps N] [--warmup W] [--repeats R] [--data CSV]
Prints one JSON object: {"peer", "steps", "seconds", "first_loss", "last_loss", ...}, where
"seconds" is the best of the repeats, each timing N steps after W warm-up steps.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "examples" / "data" / "digits.csv"

FEATURES = 64
HIDDEN = 32
CLASSES = 10
BATCH = 64
TRAIN_ROWS = 1500
LR = 0.01
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8

F32 = npt.NDArray[np.float32]


def load_digits(path: Path) -> tuple[F32, npt.NDArray[np.int64]]:
    """The first 1,500 rows: raw features (0..16, as float32) and class labels."""
    raw = np.loadtxt(path, delimiter=",", dtype=np.int64)
    train = raw[:TRAIN_ROWS]
    return train[:, :FEATURES].astype(np.float32), train[:, FEATURES].copy()


def init_tensor(fan_in: int, fan_out: int, seed: int) -> F32:
    """The initialisation of bench/c_step/step.c (a multiplicative hash, rounded to float32)."""
    i = np.arange(fan_in * fan_out, dtype=np.uint64)
    h = (i * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2**32)
    u = h.astype(np.float64) / 4294967296.0 - 0.5
    scale = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
    return (u * scale).astype(np.float32).reshape(fan_in, fan_out)


def initial_params() -> dict[str, F32]:
    return {
        "w1": init_tensor(FEATURES, HIDDEN, 1),
        "b1": np.zeros(HIDDEN, dtype=np.float32),
        "w2": init_tensor(HIDDEN, CLASSES, 2),
        "b2": np.zeros(CLASSES, dtype=np.float32),
    }


def batch_rows(step: int) -> npt.NDArray[np.int64]:
    return (step * BATCH + np.arange(BATCH, dtype=np.int64)) % TRAIN_ROWS


# --------------------------------------------------------------------------------------------
# NumPy float32, vectorised over the batch


class NumpyStep:
    def __init__(self, x: F32, y: npt.NDArray[np.int64]) -> None:
        self.x = x
        self.y = y
        self.p = initial_params()
        self.m = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.t = 0
        self.arange = np.arange(BATCH)

    def step(self, step: int) -> float:
        p = self.p
        rows = batch_rows(step)
        xs = self.x[rows] / np.float32(16.0)
        y = self.y[rows]
        z = xs @ p["w1"] + p["b1"]
        h = np.maximum(z, np.float32(0.0))
        logits = h @ p["w2"] + p["b2"]
        mx = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - mx)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) + mx[:, 0] - logits[self.arange, y]))
        dl = e / s
        dl[self.arange, y] -= np.float32(1.0)
        dl /= np.float32(BATCH)
        grads = {
            "w2": h.T @ dl,
            "b2": dl.sum(axis=0),
        }
        dz = (dl @ p["w2"].T) * (z > 0)
        grads["w1"] = xs.T @ dz
        grads["b1"] = dz.sum(axis=0)

        self.t += 1
        c1 = np.float32(1.0 - BETA1**self.t)
        c2 = np.float32(1.0 - BETA2**self.t)
        b1, b2 = np.float32(BETA1), np.float32(BETA2)
        for k, g in grads.items():
            m, v = self.m[k], self.v[k]
            m *= b1
            m += np.float32(1.0 - BETA1) * g
            v *= b2
            v += np.float32(1.0 - BETA2) * (g * g)
            p[k] -= np.float32(LR) * (m / c1) / (np.sqrt(v / c2) + np.float32(EPS))
        return loss


# --------------------------------------------------------------------------------------------
# PyTorch CPU eager, one thread, torch.optim.Adam


class TorchStep:
    def __init__(self, x: F32, y: npt.NDArray[np.int64]) -> None:
        import torch

        torch.set_num_threads(1)
        self.torch = torch
        self.x = torch.from_numpy(x)
        self.y = torch.from_numpy(y)
        self.p = {k: torch.tensor(v, requires_grad=True) for k, v in initial_params().items()}
        self.opt = torch.optim.Adam(self.p.values(), lr=LR, betas=(BETA1, BETA2), eps=EPS)
        self.rows = torch.arange(BATCH, dtype=torch.int64)

    def step(self, step: int) -> float:
        torch = self.torch
        p = self.p
        rows = (self.rows + step * BATCH) % TRAIN_ROWS
        xs = self.x[rows] / 16.0
        h = torch.relu(xs @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        loss = torch.nn.functional.cross_entropy(logits, self.y[rows])
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return float(loss.detach())


# --------------------------------------------------------------------------------------------


def numpy_info() -> dict[str, Any]:
    info: dict[str, Any] = {"numpy": np.__version__}
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [
            {
                k: lib.get(k)
                for k in ("internal_api", "version", "architecture", "num_threads")
                if k in lib
            }
            for lib in threadpool_info()
            if lib.get("user_api") == "blas"
        ]
    except ImportError:
        pass
    return info


def run_peer(name: str, data: Path, steps: int, warmup: int, repeats: int) -> dict[str, Any]:
    x, y = load_digits(data)
    best = math.inf
    first_loss = last_loss = math.nan
    for _ in range(repeats):
        impl: NumpyStep | TorchStep = NumpyStep(x, y) if name == "numpy" else TorchStep(x, y)
        first_loss = impl.step(0)
        for s in range(1, warmup):
            impl.step(s)
        t0 = time.perf_counter()
        for s in range(max(warmup, 1), max(warmup, 1) + steps):
            last_loss = impl.step(s)
        best = min(best, time.perf_counter() - t0)
    result: dict[str, Any] = {
        "peer": name,
        "steps": steps,
        "seconds": best,
        "warmup": warmup,
        "repeats": repeats,
        "first_loss": first_loss,
        "last_loss": last_loss,
    }
    if name == "numpy":
        result.update(numpy_info())
    else:
        import torch

        result["torch"] = torch.__version__
        result["threads"] = torch.get_num_threads()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("peer", choices=["torch", "numpy"])
    ap.add_argument("--steps", type=int, default=2000, help="timed steps per repeat")
    ap.add_argument("--warmup", type=int, default=20, help="untimed steps before the timing")
    ap.add_argument("--repeats", type=int, default=3, help="fresh runs; the best is reported")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.warmup < 0:
        ap.error("--steps and --repeats must be positive, --warmup non-negative")
    print(json.dumps(run_peer(args.peer, args.data, args.steps, args.warmup, args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
