"""The models users train, on one GPU role against PyTorch CUDA eager, with the host's bits.

For the MNIST-shaped CNN (bench/cnn_torch.py) and the d-128 transformer
(bench/transformer_torch.py), unfused and fused:

- the system built twice, for one process on the host and for one GPU role (plan `solo`,
  pairing `one_gpu` on the given profile), both run for N steps: the GPU role's final SHA-256
  must be the host's; its ms per round (from its first step event to its last, so start-up,
  data and the device's set-up are not counted), its kernels' ms per round and the bytes it
  copies each way in its last round (its step events), and where its kernel time went (its
  `kernels` event, each kernel named by what it computes: `top_kernels`);
- PyTorch eager on the device (float32, TF32 off), the same model from the same initial values
  on the same batches (bench/torch_models.py): ms per step, best of 3 samples of N steps after
  2 warm-up steps.

    python bench/gpu_models.py build DIR [--profile h200] [--steps N] [--shadow]
    python3 bench/gpu_models.py run DIR [--peer-device cuda]
    python bench/gpu_models.py [--profile h200] [--steps N] [--shadow] [--peer-device cuda]

`build` needs Alpha's build dependencies and no GPU; it writes the executables and, per model,
what the PyTorch twin needs (initial parameters, rows and each step's batch, as .npz). `run`
needs only Python 3 with NumPy (and torch for the peer) and the NVIDIA driver, as on a machine
lent without the network (DEVELOPERS.md); with neither mode it does both in a temporary folder.
scripts/qualify-gpu runs it. `--shadow` builds host shadows and `--peer-device cpu` times the
peer on the CPU: a control of this script on any machine, never a GPU figure. Prints one JSON
object per model and arithmetic; exits 1 when a digest differs.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

SOLO = """
plan solo for {name} {{
  roles worker[1]
  topology hierarchy(fanout: 2)
}}
pairing one_gpu for solo {{
  worker[*]: host x86_64, gpu {profile}
}}
"""
MODELS = ("cnn", "transformer")


# ---- build (Alpha's compiler; no GPU) ----------------------------------------------------------


def source(model: str, steps: int, fused: bool) -> str:
    """The model's system at `steps`, the CNN's rows two batches (the step is the same; the
    executables and the twin's inputs stay small enough to carry to a lent machine)."""
    import cnn_torch
    import transformer_torch
    from scale_models import fused_source

    if model == "cnn":
        text = cnn_torch.SYSTEM % {"rows": 2 * cnn_torch.BATCH, "steps": steps}
    else:
        text = transformer_torch.alpha_source(steps)
    return fused_source(text) if fused else text


def _build(path: Path, out: Path, *extra: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", "build", str(path), "-o", str(out), "--json"]
        + list(extra),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"alpha build {path.name} {' '.join(extra)}: {done.stderr[-2000:]}")
    (exe,) = json.loads(done.stdout)["executables"]
    return Path(exe["path"]).resolve()


def _peer_inputs(model: str, program: Any, steps: int, path: Path) -> None:
    """What the PyTorch twin needs, as arrays: the initial parameters by name, the rows, and
    the rows of each step (the runtime's batch selection), for the warm-up and timed steps."""
    from learners_torch import initial_values, round_rows

    from alpha_core.data import synthetic

    x, y = synthetic.generate(program.data)
    arrays = {
        f"param:{s.name}": np.asarray(v, dtype=np.float32)
        for s, v in zip(program.params, initial_values(program), strict=True)
    }
    arrays["x"] = np.ascontiguousarray(x, dtype=np.float32 if model == "cnn" else np.int64)
    y = np.asarray(y).astype(np.int64)
    arrays["y"] = y.reshape(-1) if model == "cnn" else y  # a label per row; the answers
    arrays["rows"] = np.stack([round_rows(program, t % program.steps) for t in range(steps + 2)])
    np.savez(path, **arrays)


def kernel_descriptions(program: Any, profile: str) -> dict[str, str]:
    """What each kernel of the program's GPU role computes, by kernel name: a product's op,
    shape (batch x m x n x k) and tile; any other kernel, the op of the node it writes (or
    the buffer: "gradient sum", "parameters")."""
    from alpha_core.autodiff.reverse import training_step
    from alpha_core.codegen.gpu_kernels import build_gpu_kernels
    from alpha_core.plan.profiles import DEVICE_PROFILES

    processors = DEVICE_PROFILES[profile.replace("_", "-")].multiprocessors  # h100_80gb
    _, layout = build_gpu_kernels(program, training_step(program), "ptx", "", processors)
    what: dict[str, str] = {}
    for name, product, tile in layout.products:
        what[name] = f"{product.op} {product.shape} {tile.name}"
    for launches in (layout.init, layout.leaf, layout.adds, layout.apply, layout.forward):
        for launch in launches:
            name = layout.kernels[launch.kernel]
            written = layout.buffers[launch.args[0][0]].what  # e.g. "step %38 max_pool_grad"
            what.setdefault(name, re.sub(r" %\d+", "", written))
    return what


def build(folder: Path, profile: str, steps: int, shadow: bool) -> None:
    from alpha_core.workspace.analysis import Workspace

    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for model in MODELS:
        for fused in (False, True):
            label = f"{model}-{'fused' if fused else 'unfused'}"
            text = source(model, steps, fused)
            path = folder / f"{label}.alpha"
            path.write_text(text + SOLO.format(name=text.split()[1], profile=profile))
            gpu_flags = ["--plan", "solo", "--pairing", "one_gpu"]
            gpu_flags += ["--gpu-shadow"] if shadow else []
            # the reference: the single-process host run, here (its executable stays here)
            host_dir = Path(tempfile.mkdtemp(prefix=f"{label}-host-", dir=folder))
            host = run_role(_build(path, host_dir / "out"))
            shutil.rmtree(host_dir)
            gpu = str(
                _build(path, folder / f"{label}-gpu", *gpu_flags).relative_to(folder.resolve())
            )
            program, _ = Workspace().analyze_file(str(path)).program()
            assert program is not None
            if not fused:  # the twin's inputs: one file per model (the arithmetic is Alpha's)
                _peer_inputs(model, program, steps, folder / f"{model}.npz")
            entries.append(
                {
                    "label": label,
                    "model": model,
                    "gpu": gpu,
                    "host_sha256": host["sha256"],
                    "host_ms_per_round": host["ms_per_round"],
                    "shadow": shadow,
                    "kernels": kernel_descriptions(program, profile),
                }
            )
    manifest = {"profile": profile, "steps": steps, "runs": entries}
    (folder / "models.json").write_text(json.dumps(manifest, indent=1))


# ---- run (NumPy, and torch for the peer; the NVIDIA driver for a GPU role) -------------------


def run_role(exe: Path) -> dict[str, Any]:
    """Runs one executable; its final digest and, from its step events, ms per round and the
    last round's kernel time and bytes each way."""
    steps: list[float] = []
    last: dict[str, Any] = {}
    done: dict[str, Any] = {}
    kernels: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="alpha-gpu-models-") as tmp:
        proc = subprocess.Popen(  # the parameters written outside the folder, which travels
            [str(exe), "--params-out", str(Path(tmp) / "params")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if event.get("event") == "step":
                steps.append(time.monotonic())
                last = event
            elif event.get("event") == "kernels":
                kernels = event["kernels"]
            elif event.get("event") in ("done", "refused"):
                done = event
        stderr = proc.stderr.read() if proc.stderr else ""
        if proc.wait() != 0 or "params_sha256" not in done:
            raise RuntimeError(f"{exe.name} failed: {json.dumps(done)[:500]} {stderr[-1000:]}")
    ms = 1000 * (steps[-1] - steps[0]) / (len(steps) - 1) if len(steps) > 1 else None
    return {
        "sha256": done["params_sha256"],
        "ms_per_round": ms,
        "kernel_ms": last.get("kernel_us", 0) / 1000 if "kernel_us" in last else None,
        "to_device": last.get("to_device"),
        "to_host": last.get("to_host"),
        "kernels": kernels,
    }


def peer_ms(model: str, inputs: Path, device: str, steps: int) -> float | str:
    """PyTorch eager's ms per step: best of 3 samples of `steps` steps after 2 warm-up."""
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if device == "cuda" and not torch.cuda.is_available():
        return "torch sees no CUDA device"
    import torch_models as tm

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    data = np.load(inputs)
    x, y = torch.from_numpy(data["x"]).to(device), torch.from_numpy(data["y"]).to(device)
    batches = [torch.from_numpy(r).to(device) for r in data["rows"]]
    named = {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith("param:")}
    best = float("inf")
    for _ in range(3):
        if model == "cnn":
            params = [torch.tensor(v, requires_grad=True, device=device) for v in named.values()]
            lr, b1, b2, eps = tm.CNN_ADAM
            opt = torch.optim.Adam(params, lr=lr, betas=(b1, b2), eps=eps)

            def loss_of(rows: Any, params: list[Any] = params) -> Any:
                return tm.cnn_loss(params, x[rows], y[rows])

        else:
            module = tm.torch_module().to(device)
            tm.load_named(module, named)
            opt = torch.optim.Adam(
                module.parameters(), lr=tm.LR, betas=(tm.BETA1, tm.BETA2), eps=tm.EPS
            )

            def loss_of(rows: Any, module: Any = module) -> Any:
                return module(x[rows], y[rows])

        for t, rows in enumerate(batches):
            if t == 2:
                if device != "cpu":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss_of(rows).backward()
            opt.step()
        if device != "cpu":
            torch.cuda.synchronize()
        best = min(best, 1000 * (time.perf_counter() - t0) / (len(batches) - 2))
    return best


def top_kernels(kernels: list[dict[str, Any]], what: dict[str, str], n: int = 8) -> list[str]:
    """Where the run's kernel time went (its `kernels` event), the kernels that compute the
    same thing taken together, the most time first: "what xK kernels: share of all kernel
    time, microseconds per launch"."""
    total = sum(k["us"] for k in kernels) or 1
    groups: dict[str, list[int]] = {}  # what: [kernels, launches, microseconds]
    for k in kernels:
        g = groups.setdefault(what.get(k["name"], k["name"]), [0, 0, 0])
        g[0], g[1], g[2] = g[0] + 1, g[1] + k["launches"], g[2] + k["us"]
    ranked = sorted(groups.items(), key=lambda item: -item[1][2])
    return [
        f"{name} x{g[0]}: {100 * g[2] / total:.1f}%, {g[2] / max(1, g[1]):.1f} us a launch"
        for name, g in ranked[:n]
    ]


def run(folder: Path, peer_device: str) -> int:
    manifest = json.loads((folder / "models.json").read_text())
    failures = 0
    for entry in manifest["runs"]:
        gpu = run_role(folder / entry["gpu"])
        inputs = folder / f"{entry['model']}.npz"
        peer = peer_ms(entry["model"], inputs, peer_device, manifest["steps"])
        ms = gpu["ms_per_round"]
        same = gpu["sha256"] == entry["host_sha256"]
        failures += not same
        row = {
            "model": entry["label"],
            "same_bits": same,
            "gpu_sha256": gpu["sha256"],
            "host_sha256": entry["host_sha256"],
            "alpha_host_ms_per_round": round(entry["host_ms_per_round"] or 0, 3),
            "alpha_gpu_ms_per_round": round(ms, 3) if ms is not None else None,
            "kernel_ms_per_round": gpu["kernel_ms"],
            "to_device_per_round": gpu["to_device"],
            "to_host_per_round": gpu["to_host"],
            "torch_ms_per_step": round(peer, 3) if isinstance(peer, float) else peer,
            "peer_device": peer_device,
            "alpha_over_torch": round(ms / peer, 3) if ms and isinstance(peer, float) else None,
            "shadow": entry["shadow"],
            "top_kernels": top_kernels(gpu["kernels"], entry.get("kernels", {})),
        }
        print(json.dumps(row), flush=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", choices=("build", "run"), help="one half (see above)")
    ap.add_argument("dir", nargs="?", type=Path)
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--steps", type=int, default=20, help="N: the steps timed")
    ap.add_argument("--shadow", action="store_true", help="host shadows (a control)")
    ap.add_argument("--peer-device", default="cuda")
    args = ap.parse_args(argv)
    if args.mode and args.dir is None:
        ap.error(f"{args.mode} needs a folder")
    if args.mode == "build":
        build(args.dir, args.profile, args.steps, args.shadow)
        return 0
    if args.mode == "run":
        return run(args.dir, args.peer_device)
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), args.profile, args.steps, args.shadow)
        return run(Path(tmp), args.peer_device)


if __name__ == "__main__":
    sys.exit(main())
