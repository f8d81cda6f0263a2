"""PyTorch CUDA eager, the GPU peer of scripts/qualify-gpu: the MLP training step of
bench/scale_peers.py (same layers, loss, Adam, data and initial parameters) on the first CUDA
device, float32, no compilation, no CUDA graphs, TF32 off (Alpha's kernels do every float32
operation exactly; TF32 would not).

Usage:
    python3 bench/torch_cuda_peer.py --dims 784,1024,1024,10 --batch 256 [--steps N]
        [--warmup W] [--digits CSV]

Prints one JSON object: {"peer": "torch-cuda", "device", "steps", "seconds", "ms_per_step",
"last_loss", "torch"}; "seconds" times N steps after W untimed ones, with the device
synchronised before and after (the loss is read back only after the last step).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_peers import BETA1, BETA2, EPS, digits_rows, initial_params, synthetic_rows  # noqa: E402


def run(
    dims: list[int], batch: int, steps: int, warmup: int, digits: Path | None
) -> dict[str, Any]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    x_np, y_np = digits_rows(digits) if digits else synthetic_rows(2 * batch, dims[0], dims[-1], 7)
    x = torch.from_numpy(x_np).to(device)
    y = torch.from_numpy(y_np).to(device)
    params = [
        torch.tensor(t, requires_grad=True, device=device)
        for layer in initial_params(dims, 1)
        for t in layer
    ]
    opt = torch.optim.Adam(params, lr=0.001, betas=(BETA1, BETA2), eps=EPS)
    base = torch.arange(batch, dtype=torch.int64, device=device)

    def step(s: int) -> Any:
        rows = (base + s * batch) % len(y)
        a = x[rows]
        n_layers = len(params) // 2
        for i in range(n_layers):
            a = a @ params[2 * i] + params[2 * i + 1]
            if i < n_layers - 1:
                a = torch.relu(a)
        loss = torch.nn.functional.cross_entropy(a, y[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for s in range(warmup):
        step(s)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = None
    for s in range(warmup, warmup + steps):
        loss = step(s)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    return {
        "peer": "torch-cuda",
        "device": torch.cuda.get_device_name(0),
        "dims": dims,
        "batch": batch,
        "steps": steps,
        "seconds": seconds,
        "ms_per_step": 1000.0 * seconds / steps,
        "last_loss": float(loss.detach()) if loss is not None else None,
        "torch": torch.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", required=True, help="layer widths, e.g. 784,1024,1024,10")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--digits", type=Path, help="train on this digits CSV instead")
    args = ap.parse_args(argv)
    dims = [int(d) for d in args.dims.split(",")]
    print(json.dumps(run(dims, args.batch, args.steps, args.warmup, args.digits)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
