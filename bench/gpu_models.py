"""The models users train, on one GPU role against PyTorch CUDA eager, with the host's bits.

For the MNIST-shaped CNN (bench/cnn_torch.py) and the d-128 transformer
(bench/transformer_torch.py), unfused and fused:

- `alpha run` of the system in one process on the host, and on one GPU role (plan `solo`,
  pairing `one_gpu` on the given profile), N steps: the GPU role's final SHA-256 must be the
  host's; its ms per round (from its first step event to its last, so start-up, data and the
  device's set-up are not counted), its kernels' ms per round and the bytes it copies each way
  per round (its step events);
- PyTorch eager on the device (float32, TF32 off), the same model from the same initial values
  on the same batches: ms per step, best of 3 samples of N steps after 2 warm-up steps.

    python bench/gpu_models.py [--profile h200] [--steps N] [--shadow] [--peer-device cuda]

scripts/qualify-gpu runs it on a GPU machine. `--shadow` builds host shadows and
`--peer-device cpu` times the peer on the CPU: a control of this script on any machine, never a
GPU figure. Prints one JSON object per model and arithmetic; exits 1 when a digest differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import cnn_torch  # noqa: E402
import transformer_torch  # noqa: E402
from scale_models import fused_source  # noqa: E402

SOLO = """
plan solo for {name} {{
  roles worker[1]
  topology hierarchy(fanout: 2)
}}
pairing one_gpu for solo {{
  worker[*]: host x86_64, gpu {profile}
}}
"""


def source(model: str, steps: int, fused: bool) -> str:
    if model == "cnn":
        text = cnn_torch.SYSTEM % {"rows": cnn_torch.ROWS, "steps": steps}
    else:
        text = transformer_torch.alpha_source(steps)
    return fused_source(text) if fused else text


def alpha_run(path: Path, out: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "alpha_cli.main",
            "run",
            str(path),
            "--json",
            "-o",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1800,
    )
    if not done.stdout:
        raise RuntimeError(f"alpha run {path.name} {' '.join(extra)}: {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    if not report.get("ok"):
        raise RuntimeError(f"alpha run {path.name} {' '.join(extra)}: {json.dumps(report)[:2000]}")
    report_: dict[str, Any] = report
    return report_


def digest(report: dict[str, Any]) -> str:
    shas = {r["params_sha256"] for r in report["roles"] if r.get("params_sha256")}
    assert len(shas) == 1, report["roles"]
    return str(shas.pop())


def peer_ms(model: str, program: Any, device: str, steps: int) -> float | str:
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if device == "cuda" and not torch.cuda.is_available():
        return "torch sees no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if model == "cnn":
        cnn = cnn_torch.TorchRun(program, device)
        for _ in range(3):
            cnn.sample(1, steps)
        return cnn.best[1]
    run = transformer_torch.TorchRun(program, device, train=False)
    for _ in range(3):
        run.sample(1, steps)
    return run.best[1]


def measure(model: str, fused: bool, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    from alpha_core.workspace.analysis import Workspace

    gpu_flags = ["--plan", "solo", "--pairing", "one_gpu"] + (
        ["--gpu-shadow"] if args.shadow else []
    )
    label = f"{model}-{'fused' if fused else 'unfused'}"
    text = source(model, args.steps, fused)
    path = folder / f"{label}.alpha"
    path.write_text(text + SOLO.format(name=text.split()[1], profile=args.profile))
    gpu = alpha_run(path, folder / f"{label}-gpu", *gpu_flags)
    host = alpha_run(path, folder / f"{label}-host")
    program, _ = Workspace().analyze_file(str(path)).program()
    assert program is not None
    role = gpu["roles"][0]
    sha, host_sha = digest(gpu), digest(host)
    peer = peer_ms(model, program, args.peer_device, args.steps)
    ms = role.get("ms_per_round")
    return {
        "model": label,
        "gpu_sha256": sha,
        "host_sha256": host_sha,
        "same_bits": sha == host_sha,
        "alpha_gpu_ms_per_round": round(ms, 3) if ms is not None else None,
        "kernel_ms_per_round": role.get("kernel_ms_per_round"),
        "to_device_per_round": role.get("to_device_per_round"),
        "to_host_per_round": role.get("to_host_per_round"),
        "torch_ms_per_step": round(peer, 3) if isinstance(peer, float) else peer,
        "peer_device": args.peer_device,
        "alpha_over_torch": round(ms / peer, 3) if ms and isinstance(peer, float) else None,
        "shadow": bool(args.shadow),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--steps", type=int, default=20, help="N: the steps timed")
    ap.add_argument("--shadow", action="store_true", help="host shadows (a control)")
    ap.add_argument("--peer-device", default="cuda")
    ap.add_argument("--models", default="cnn,transformer")
    args = ap.parse_args(argv)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            for fused in (False, True):
                row = measure(model, fused, args, Path(tmp))
                failures += not row["same_bits"]
                print(json.dumps(row), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
