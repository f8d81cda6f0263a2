"""Training steps per second on the digits system: Alpha against its peers, as ratios.

    python bench/step_time.py [--steps N] [--repeats R] [--json OUT]

Measured side by side in one run, each in its own process:

- C: bench/c_step/step.c, the hand-written fixed-order step (gcc -O3 -march=x86-64-v2
  -ffp-contract=off; `python -m ziglang cc -O3` where gcc is missing); it times its own step loop.
- NumPy: bench/peers.py numpy (float32, vectorised over the batch of 64).
- PyTorch: bench/peers.py torch (CPU eager, one thread, torch.optim.Adam).
- Alpha: examples/digits.alpha built twice by `alpha build FILE -o DIR --json`, once with
  `steps 300` and once with `steps 3300`; each executable runs with `--quiet --params-out TMP
  --data CSV`, timed by wall clock (best of R). Alpha's per-step time is
  (t3300 - t300) / 3000, which removes process start-up, data loading and evaluation.

Every peer process gets OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 (all of them, Alpha
included, run one step on one core), and the NumPy peer's process runs with OPENBLAS_CORETYPE
and OPENBLAS_L2_SIZE unset (they slow a current OpenBLAS; see docs/performance.md).
This is a benchmark, never a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = REPO / "examples" / "data" / "digits.csv"
EXAMPLE = REPO / "examples" / "digits.alpha"
C_SOURCE = BENCH / "c_step" / "step.c"
ALPHA_SHORT = 300
ALPHA_LONG = 3300


@dataclass
class Result:
    name: str
    us_per_step: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def steps_per_s(self) -> float | None:
        return None if not self.us_per_step else 1e6 / self.us_per_step


def single_thread_env(unset_openblas_tuning: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    if unset_openblas_tuning:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    return env


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.platform(),
    }
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return info
    fields = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    info["cpu"] = fields.get("Model name", info["cpu"])
    for key in ("CPU(s)", "Thread(s) per core", "L1d cache", "L2 cache", "L3 cache"):
        if key in fields:
            info[key] = fields[key]
    flags = fields.get("Flags", "").split()
    info["simd"] = " ".join(f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in flags)
    return info


# --------------------------------------------------------------------------------------------
# C baseline


def build_c(out_dir: Path) -> tuple[Path, str]:
    exe = out_dir / "c_step"
    if shutil.which("gcc"):
        cmd = ["gcc", "-O3", "-march=x86-64-v2", "-ffp-contract=off"]
    else:
        cmd = [
            sys.executable,
            "-m",
            "ziglang",
            "cc",
            "-O3",
            "-march=x86_64_v2",
            "-ffp-contract=off",
        ]
    cmd += ["-o", str(exe), str(C_SOURCE), "-lm"]
    subprocess.run(cmd, check=True)
    return exe, " ".join(cmd[: cmd.index("-o")])


def measure_c(out_dir: Path, steps: int, repeats: int) -> Result:
    try:
        exe, compiler = build_c(out_dir)
    except (OSError, subprocess.CalledProcessError) as exc:
        return Result("C (hand-written)", note=f"build failed: {exc}")
    best: dict[str, Any] | None = None
    subprocess.run([str(exe), str(DATA), "50"], check=True, capture_output=True)  # warm caches
    for _ in range(repeats):
        out = subprocess.run(
            [str(exe), str(DATA), str(steps)],
            check=True,
            capture_output=True,
            text=True,
            env=single_thread_env(),
        ).stdout
        run = json.loads(out)
        if best is None or run["seconds"] < best["seconds"]:
            best = run
    assert best is not None
    return Result(
        "C (hand-written)",
        us_per_step=1e6 * best["seconds"] / best["steps"],
        note=compiler,
        extra=best,
    )


# --------------------------------------------------------------------------------------------
# Python peers


def measure_peer(peer: str, label: str, steps: int, repeats: int) -> Result:
    cmd = [sys.executable, str(BENCH / "peers.py"), peer, "--steps", str(steps)]
    cmd += ["--repeats", str(repeats), "--data", str(DATA)]
    env = single_thread_env(unset_openblas_tuning=peer == "numpy")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Result(label, note=f"failed: {tail}")
    run = json.loads(proc.stdout)
    note = ""
    if peer == "numpy":
        blas = run.get("blas") or [{}]
        note = f"numpy {run['numpy']}, {blas[0].get('internal_api')} {blas[0].get('architecture')}"
    else:
        note = f"torch {run['torch']}, {run['threads']} thread"
    return Result(label, us_per_step=1e6 * run["seconds"] / run["steps"], note=note, extra=run)


# --------------------------------------------------------------------------------------------
# Alpha


def alpha_cli() -> str | None:
    venv_cli = Path(sys.executable).parent / "alpha"
    if venv_cli.exists():
        return str(venv_cli)
    repo_cli = REPO / ".venv" / "bin" / "alpha"
    if repo_cli.exists():
        return str(repo_cli)
    return shutil.which("alpha")


def variant(source: str, steps: int) -> str:
    """The system text with its step count replaced and its data path made absolute."""
    text, n = re.subn(r"^(\s*)steps\s+\d+", rf"\g<1>steps {steps}", source, count=1, flags=re.M)
    if n != 1:
        raise ValueError("no `steps N` line in the example")
    # A quoted CSV reference (relative to the example) becomes the absolute path of the data.
    return re.sub(r"\"[^\"\n]*digits\.csv\"", json.dumps(str(DATA)), text)


def build_alpha(cli: str, work: Path, steps: int) -> Path:
    src_dir = work / f"src{steps}"
    src_dir.mkdir()
    # Keep relative data references working too: the copy sits beside a copy of data/.
    shutil.copytree(DATA.parent, src_dir / "data")
    system = src_dir / EXAMPLE.name
    system.write_text(variant(EXAMPLE.read_text(), steps))
    out_dir = work / f"build{steps}"
    proc = subprocess.run(
        [cli, "build", str(system), "-o", str(out_dir), "--json"],
        capture_output=True,
        text=True,
        cwd=src_dir,
    )
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise RuntimeError(f"alpha build failed ({proc.returncode}): {' / '.join(msg[-3:])}")
    report = json.loads(proc.stdout)
    exe = Path(report["executables"][0]["path"])
    if not exe.is_absolute():
        exe = (src_dir / exe) if (src_dir / exe).exists() else (out_dir / exe)
    return exe


def time_run(exe: Path, params_out: Path, repeats: int) -> float:
    cmd = [str(exe), "--quiet", "--params-out", str(params_out), "--data", str(DATA)]
    env = single_thread_env()
    subprocess.run(cmd, check=True, capture_output=True, env=env)  # warm the page cache
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        best = min(best, time.perf_counter() - t0)
    return best


def measure_alpha(work: Path, repeats: int) -> Result:
    label = "Alpha"
    cli = alpha_cli()
    if cli is None:
        return Result(label, note="pending: the `alpha` CLI is not installed")
    if not EXAMPLE.exists():
        return Result(label, note=f"pending: {EXAMPLE.relative_to(REPO)} does not exist yet")
    try:
        short = build_alpha(cli, work, ALPHA_SHORT)
        long = build_alpha(cli, work, ALPHA_LONG)
        t_short = time_run(short, work / "params300.bin", repeats)
        t_long = time_run(long, work / "params3300.bin", repeats)
    except (OSError, ValueError, RuntimeError, KeyError, IndexError) as exc:
        return Result(label, note=f"not measured: {exc}")
    except subprocess.CalledProcessError as exc:
        err = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        return Result(label, note=f"not measured: run failed ({exc.returncode}) {err[-1:]}")
    us = 1e6 * (t_long - t_short) / (ALPHA_LONG - ALPHA_SHORT)
    extra = {"t300_s": t_short, "t3300_s": t_long, "executable": str(short)}
    note = f"({ALPHA_LONG} - {ALPHA_SHORT} steps) differential, best of {repeats}"
    if us <= 0:
        return Result(label, note=f"not measured: t3300 {t_long:.4f}s <= t300 {t_short:.4f}s")
    return Result(label, us_per_step=us, note=note, extra=extra)


# --------------------------------------------------------------------------------------------


def ratio(num: Result, den: Result) -> float | None:
    if num.us_per_step is None or den.us_per_step is None:
        return None
    return num.us_per_step / den.us_per_step


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000, help="timed steps for C, NumPy, PyTorch")
    ap.add_argument("--repeats", type=int, default=5, help="runs per measurement; best is kept")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    ap.add_argument("--no-alpha", action="store_true", help="measure the peers only")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.repeats < 1:
        ap.error("--steps and --repeats must be positive")

    info = machine()
    print(f"machine: {info['cpu']}, {info['cores']} cores ({info.get('simd', '')})")
    print(f"python {info['python']}, {info['os']}")
    with tempfile.TemporaryDirectory(prefix="alpha-bench-") as tmp:
        work = Path(tmp)
        c = measure_c(work, args.steps, args.repeats)
        numpy = measure_peer("numpy", "NumPy (float32)", args.steps, args.repeats)
        torch = measure_peer("torch", "PyTorch eager (CPU)", args.steps, args.repeats)
        if args.no_alpha:
            alpha = Result("Alpha", note="not measured (--no-alpha)")
        else:
            alpha = measure_alpha(work, args.repeats)
    if alpha.us_per_step is None:
        print(f"Alpha: {alpha.note}; continuing with the peers.")

    results = [alpha, c, numpy, torch]
    print()
    print(f"{'system':<22} {'us/step':>10} {'steps/s':>10}  notes")
    for r in results:
        us, sps = fmt(r.us_per_step, ".1f"), fmt(r.steps_per_s, ",.0f")
        print(f"{r.name:<22} {us:>10} {sps:>10}  {r.note}")

    ratios = {
        "PyTorch/Alpha": ratio(torch, alpha),
        "NumPy/Alpha": ratio(numpy, alpha),
        "Alpha/C": ratio(alpha, c),
        "PyTorch/C": ratio(torch, c),
        "NumPy/C": ratio(numpy, c),
    }
    print()
    print("ratios of per-step time (targets: PyTorch/Alpha >= 10, Alpha/C <= 1.2):")
    for name, value in ratios.items():
        print(f"  {name:<14} {fmt(value, '.2f')}")
    losses = {r.name: r.extra.get("first_loss") for r in results if "first_loss" in r.extra}
    if losses:
        shown = ", ".join(f"{k} {v:.6f}" for k, v in losses.items())
        print(f"first-step loss (same init, same batch; should agree): {shown}")

    if args.json:
        payload = {
            "machine": info,
            "steps": args.steps,
            "repeats": args.repeats,
            "results": [asdict(r) | {"steps_per_s": r.steps_per_s} for r in results],
            "ratios": ratios,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
