"""The models users train on a CPU Alpha did not build on: Alpha's executables against PyTorch
eager float32, the executables built here and carried to the machine that runs them.

bench/scale.py, cnn_torch.py and transformer_torch.py build and time in one process, so they need
Alpha's build dependencies (llvmlite, zig) where they time. A machine lent without the network
(a GPU machine's host: DEVELOPERS.md) has neither, but it has a CPU worth measuring on (its
AVX-512, its core). This bench splits the work:

    python bench/cpu_models.py build DIR [--steps-scale F]
    python3 bench/cpu_models.py run DIR [--rounds R] [--threads 1,2] [--models cnn,...]

`build` (Alpha's build dependencies, any x86-64 machine) writes one default executable (no
`--cpu`: it carries v2, v3 and v4 kernels and picks at start-up) per model and arithmetic —
the 1.86 M and 8.39 M MLPs (bench/scale_models.py), the MNIST-shaped CNN (cnn_torch.py), the
d-128 transformer (transformer_torch.py), examples/digits.alpha, unfused and fused — and
examples/digits_cnn.alpha, with what the PyTorch twin needs (initial values and batches as .npz;
the MLP twins draw their own rows, or read the digits table, as scale_peers.py does; the digits
systems read examples/data/digits.csv at run time and are given it with `--data`). `run` needs
Python 3 with NumPy and torch only.

Timed in `run`, in interleaved rounds, each keeping its best: PyTorch eager at each thread count
(torch.set_num_threads; ms per step over the timed steps after 2 warm-up steps), and each
executable at each thread count at the level it chooses (ms per round from its first step event
to its last, so start-up, data and writing the parameters are not counted). Then each executable
once more forced to every level this CPU has (ALPHA_CPU_LEVEL) at 1 and 3 threads: its SHA-256
must be one value per model and arithmetic. Prints the CPU, the load, and one JSON object per
model; exits 1 when a digest differs. A benchmark, never a test: nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

MLPS = {"mlp-1.86M": "784-1024-1024-10", "mlp-8.39M": "1024-4096-1024", "digits": "digits"}
STEPS = {
    "mlp-1.86M": 12,
    "mlp-8.39M": 6,
    "cnn": 12,
    "transformer": 12,
    "digits": 2000,
    "digits_cnn": 400,
}
DIGITS_CSV = "examples/data/digits.csv"  # read at run time: passed with --data, from the repo
LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")


# ---- build (Alpha's compiler) ------------------------------------------------------------------


def _source(model: str, steps: int, fused: bool) -> str:
    import gpu_models
    from scale_models import MODELS, alpha_source

    if model in MLPS:
        return alpha_source(MODELS[MLPS[model]], steps, fused)
    if model == "digits_cnn":
        text = (REPO / "examples" / "digits_cnn.alpha").read_text()
        data = json.dumps(str(REPO / "examples" / "data" / "digits.csv"))
        return text.replace('"data/digits.csv"', data)
    return gpu_models.source(model, steps, fused)


def build(folder: Path, scale: float) -> None:
    import gpu_models

    from alpha_core.workspace.analysis import Workspace

    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for model, steps in STEPS.items():
        steps = steps if model == "digits_cnn" else max(3, round(steps * scale))
        for fused in (False, True) if model != "digits_cnn" else (False,):
            label = f"{model}-{'fused' if fused else 'unfused'}"
            path = folder / f"{label}.alpha"
            path.write_text(_source(model, steps, fused))
            exe = gpu_models._build(path, folder / label)
            entry: dict[str, Any] = {
                "label": label,
                "model": model,
                "fused": fused,
                "steps": steps,
                "exe": str(exe.relative_to(folder.resolve())),
            }
            if model in MLPS:
                m = __import__("scale_models").MODELS[MLPS[model]]
                entry["peer"] = {"dims": list(m.dims), "batch": m.batch, "lr": m.lr}
            if model.startswith("digits"):
                entry["data"] = DIGITS_CSV
            elif model in ("cnn", "transformer") and not fused:
                program, _ = Workspace().analyze_file(str(path)).program()
                assert program is not None
                gpu_models._peer_inputs(model, program, steps, folder / f"{model}.npz")
            entries.append(entry)
            print(f"built {label} ({steps} steps)", file=sys.stderr, flush=True)
    (folder / "cpu_models.json").write_text(json.dumps({"runs": entries}, indent=1))


# ---- run (NumPy and torch) ---------------------------------------------------------------------


def run_alpha(exe: Path, threads: int, level: str | None, data: str = "") -> dict[str, Any]:
    """One run: ms per round (first step event to last), the level it ran at, its SHA-256.
    `data`: the CSV it was built with, as the repo holds it here (`--data`)."""
    env = dict(os.environ)
    env.pop("ALPHA_CPU_LEVEL", None)
    if level:
        env["ALPHA_CPU_LEVEL"] = level
    times: list[float] = []
    start: dict[str, Any] = {}
    done: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="alpha-cpu-models-") as tmp:
        cmd = [str(exe), "--threads", str(threads), "--params-out", str(Path(tmp) / "params")]
        cmd += ["--data", str(REPO / data)] if data else []
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            kind = event.get("event")
            if kind == "step":
                times.append(time.monotonic())
            elif kind == "start":
                start = event
            elif kind in ("done", "refused"):
                done = event
        stderr = proc.stderr.read() if proc.stderr else ""
        if proc.wait() != 0 or "params_sha256" not in done:
            return {"error": f"{json.dumps(done)[:300]} {stderr[-300:]}"}
    ms = 1000 * (times[-1] - times[0]) / (len(times) - 1)
    return {"ms": ms, "level": start.get("cpu"), "sha256": done["params_sha256"]}


def torch_ms(entry: dict[str, Any], folder: Path, threads: int) -> float:
    """PyTorch eager's ms per step at `threads`: the timed steps after 2 warm-up steps."""
    import torch

    torch.set_num_threads(threads)
    if "peer" in entry:
        import scale_peers

        p = entry["peer"]
        if entry.get("data"):
            x, y = scale_peers.digits_rows(REPO / entry["data"])
        else:
            x, y = scale_peers.synthetic_rows(2 * p["batch"], p["dims"][0], p["dims"][-1], seed=7)
        step = scale_peers.TorchStep(p["dims"], x, y, p["batch"], p["lr"], threads)
        for s in range(2):
            step.step(s)
        t0 = time.perf_counter()
        for s in range(2, 2 + entry["steps"]):
            step.step(s)
        return 1000 * (time.perf_counter() - t0) / entry["steps"]
    import gpu_models

    inputs = folder / f"{entry['model']}.npz"
    ms = gpu_models.peer_ms(entry["model"], inputs, "cpu", entry["steps"])  # best of 3 samples
    assert isinstance(ms, float), ms
    return ms


def levels_here() -> list[str]:
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    have = ["x86-64-v2"]
    if {"avx2", "fma", "bmi2"} <= flags:
        have.append("x86-64-v3")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        have.append("x86-64-v4")
    return have


def run(folder: Path, rounds: int, threads: list[int], only: str) -> int:
    from machine import machine

    runs = json.loads((folder / "cpu_models.json").read_text())["runs"]
    runs = [e for e in runs if not only or e["model"] in only.split(",")]
    info = machine()
    load = [os.getloadavg()[0]]
    print(json.dumps({"machine": info, "levels": levels_here()}), flush=True)
    best: dict[tuple[str, str, int], float] = {}  # (label or "torch:model", level, threads)
    picked: dict[str, str] = {}
    for _ in range(rounds):
        for entry in runs:
            exe = folder / entry["exe"]
            for t in threads:
                if not entry["fused"] and entry["model"] != "digits_cnn":
                    key = (f"torch:{entry['model']}", "", t)
                    best[key] = min(best.get(key, float("inf")), torch_ms(entry, folder, t))
                r = run_alpha(exe, t, None, entry.get("data", ""))
                if "ms" in r:
                    key = (entry["label"], "default", t)
                    best[key] = min(best.get(key, float("inf")), r["ms"])
                    picked[entry["label"]] = str(r["level"])
    load.append(os.getloadavg()[0])
    failures = 0
    for entry in runs:
        exe, label = folder / entry["exe"], entry["label"]
        shas: dict[str, str] = {}
        failed: dict[str, str] = {}  # runs with no digest: a forced level refused, say
        forced: dict[str, float] = {}

        def note(
            key: str,
            r: dict[str, Any],
            shas: dict[str, str] = shas,
            failed: dict[str, str] = failed,
        ) -> None:
            if "sha256" in r:
                shas[key] = r["sha256"]
            else:
                failed[key] = r["error"]

        for t in sorted({1, 3, *threads}):
            note(f"default --threads {t}", run_alpha(exe, t, None, entry.get("data", "")))
        for level in levels_here():
            if entry["fused"] and level == "x86-64-v2":
                continue  # refused by name: a fused multiply-add needs FMA
            for t in (1, 3):
                r = run_alpha(exe, t, level, entry.get("data", ""))
                note(f"{level} --threads {t}", r)
                if "ms" in r:
                    forced[f"{level} --threads {t}"] = round(r["ms"], 3)
        same = len(set(shas.values())) == 1 and not any(k.startswith("default") for k in failed)
        failures += not same
        row: dict[str, Any] = {"model": label, "level_chosen": picked.get(label)}
        for t in threads:
            ms = best.get((label, "default", t))
            peer = best.get((f"torch:{entry['model']}", "", t))
            row[f"alpha_ms_{t}t"] = round(ms, 3) if ms else None
            row[f"torch_ms_{t}t"] = round(peer, 3) if peer else None
            row[f"alpha_over_torch_{t}t"] = round(ms / peer, 3) if ms and peer else None
        row["forced_levels_ms"] = forced
        row["same_bits"] = same
        row["sha256"] = sorted(set(shas.values()))
        row["failed"] = failed
        print(json.dumps(row), flush=True)
    print(json.dumps({"load_1min": load, "rounds": rounds}), flush=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("build", "run"))
    ap.add_argument("dir", type=Path)
    ap.add_argument("--steps-scale", type=float, default=1.0, help="build: scale the steps")
    ap.add_argument("--rounds", type=int, default=3, help="run: interleaved rounds")
    ap.add_argument("--threads", default="1,2", help="run: thread counts")
    ap.add_argument("--models", default="", help="run: only these models (comma-separated)")
    args = ap.parse_args(argv)
    if args.mode == "build":
        build(args.dir, args.steps_scale)
        return 0
    return run(args.dir, args.rounds, [int(t) for t in args.threads.split(",")], args.models)


if __name__ == "__main__":
    sys.exit(main())
