"""Training steps per second on the digits system: Alpha against its peers, as ratios.

    python bench/step_time.py [--steps N] [--repeats R] [--json OUT] [--no-alpha]

Measured side by side in one run, each in its own processes:

- C: bench/c_step/step.c, the hand-written fixed-order step (gcc -O3 -march=CPU
  -ffp-contract=off; `python -m ziglang cc -O3` where gcc is missing); it times its own step
  loop of N steps (data loading excluded).
- NumPy: bench/peers.py numpy (float32, vectorised over the batch of 64), N steps after warm-up.
- PyTorch: bench/peers.py torch (CPU eager, one thread, torch.optim.Adam), likewise.
- Alpha: examples/digits.alpha built twice by `alpha build FILE -o DIR --json`, once with
  `steps 300` and once with `steps 3300`; each executable runs with `--quiet --params-out TMP
  --data CSV`, timed by wall clock. Alpha's per-step time is (t3300 - t300) / 3000, which
  removes process start-up, data loading and evaluation.

The systems are sampled in R interleaved rounds (one sample of each per round), so that a change
in the machine's load falls on all of them alike; each keeps its best sample (for Alpha, the
best t300 and the best t3300).

Every process gets OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 (all the systems, Alpha
included, run one step on one core), and the NumPy peer's process runs with OPENBLAS_CORETYPE
and OPENBLAS_L2_SIZE unset (they slow a current OpenBLAS; see docs/performance.md).
This is a benchmark, never a test: nothing here asserts a timing.
"""

from __future__ import annotations

import abc
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from machine import machine, single_thread_env

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


# --------------------------------------------------------------------------------------------
# The systems. Each is prepared once (built), then sampled once per round; rounds interleave the
# systems so that a change in the machine's load falls on all of them alike.


class System(abc.ABC):
    name = ""

    def __init__(self) -> None:
        self.result = Result(self.name)
        self.ready = False

    def prepare(self, work: Path) -> None:
        self.ready = True

    @abc.abstractmethod
    def sample(self) -> None:
        """Time the system once and keep its best result."""

    def fail(self, note: str) -> None:
        self.ready = False
        self.result = Result(self.name, note=note)


class CStep(System):
    name = "C (hand-written)"

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.exe = Path()
        self.best: dict[str, Any] | None = None

    def prepare(self, work: Path) -> None:
        self.exe = work / "c_step"
        if shutil.which("gcc"):
            cmd = ["gcc", "-O3", f"-march={CPU[0]}", "-ffp-contract=off"]
        else:
            cmd = [
                sys.executable,
                "-m",
                "ziglang",
                "cc",
                "-O3",
                f"-march={CPU[0].replace('-', '_')}",
            ]
            cmd += ["-ffp-contract=off"]
        compiler = " ".join(Path(c).name if c == sys.executable else c for c in cmd)
        try:
            subprocess.run(cmd + ["-o", str(self.exe), str(C_SOURCE), "-lm"], check=True)
            subprocess.run([str(self.exe), str(DATA), "50"], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            self.fail(f"build failed: {exc}")
            return
        self.result.note = compiler
        self.ready = True

    def sample(self) -> None:
        out = subprocess.run(
            [str(self.exe), str(DATA), str(self.steps)],
            check=True,
            capture_output=True,
            text=True,
            env=single_thread_env(),
        ).stdout
        run = json.loads(out)
        if self.best is None or run["seconds"] < self.best["seconds"]:
            self.best = run
            self.result.us_per_step = 1e6 * run["seconds"] / run["steps"]
            self.result.extra = run


class Peer(System):
    def __init__(self, peer: str, name: str, steps: int) -> None:
        self.name = name
        super().__init__()
        self.peer = peer
        self.steps = steps

    def sample(self) -> None:
        cmd = [sys.executable, str(BENCH / "peers.py"), self.peer, "--steps", str(self.steps)]
        cmd += ["--repeats", "1", "--data", str(DATA)]
        env = single_thread_env(unset_openblas_tuning=self.peer == "numpy")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            self.fail(f"failed: {tail}")
            return
        run = json.loads(proc.stdout)
        us = 1e6 * run["seconds"] / run["steps"]
        if self.result.us_per_step is None or us < self.result.us_per_step:
            self.result.us_per_step = us
            self.result.extra = run
        if self.peer == "numpy":
            blas = (run.get("blas") or [{}])[0]
            self.result.note = (
                f"numpy {run['numpy']}, {blas.get('internal_api')} {blas.get('architecture')}"
            )
        else:
            self.result.note = f"torch {run['torch']}, {run['threads']} thread"


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


def build_error(proc: subprocess.CompletedProcess[str]) -> str:
    """A one-line reason from a failed `alpha build --json`: its refusals, else its stderr."""
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    if isinstance(report, dict):
        refusals = report.get("refusals") or []
        if refusals:
            return "; ".join(json.dumps(r, sort_keys=True)[:200] for r in refusals[:2])
        for key in ("error", "message"):
            if report.get(key):
                return str(report[key])[:300]
    lines = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()
    return " / ".join(line.strip() for line in lines[-3:])


def build_alpha(cli: str, work: Path, steps: int) -> Path:
    src_dir = work / f"src{steps}"
    src_dir.mkdir()
    # Keep relative data references working too: the copy sits beside a copy of data/.
    shutil.copytree(DATA.parent, src_dir / "data")
    system = src_dir / EXAMPLE.name
    system.write_text(variant(EXAMPLE.read_text(), steps))
    out_dir = work / f"build{steps}"
    proc = subprocess.run(
        [cli, "build", str(system), "-o", str(out_dir), "--json", "--cpu", CPU[0]],
        capture_output=True,
        text=True,
        cwd=src_dir,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"alpha build failed ({proc.returncode}): {build_error(proc)}")
    report = json.loads(proc.stdout)
    exe = Path(report["executables"][0]["path"])
    if not exe.is_absolute():
        exe = (src_dir / exe) if (src_dir / exe).exists() else (out_dir / exe)
    return exe


class AlphaStep(System):
    """Differential timing: (best t3300 - best t300) / 3000 over whole runs."""

    name = "Alpha"

    def __init__(self) -> None:
        super().__init__()
        self.cmds: dict[int, list[str]] = {}
        self.best: dict[int, float] = {}
        self.rounds = 0

    def prepare(self, work: Path) -> None:
        cli = alpha_cli()
        if cli is None:
            self.fail("pending: the `alpha` CLI is not installed")
            return
        if not EXAMPLE.exists():
            self.fail(f"pending: {EXAMPLE.relative_to(REPO)} does not exist yet")
            return
        try:
            for steps in (ALPHA_SHORT, ALPHA_LONG):
                exe = build_alpha(cli, work, steps)
                cmd = [str(exe), "--quiet", "--params-out", str(work / f"params{steps}.bin")]
                self.cmds[steps] = cmd + ["--data", str(DATA)]
                self.run(steps)  # warm the page cache
        except (OSError, ValueError, RuntimeError, KeyError, IndexError) as exc:
            self.fail(f"not measured: {exc}")
            return
        except subprocess.CalledProcessError as exc:
            err = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
            self.fail(f"not measured: run failed ({exc.returncode}) {err[-1:]}")
            return
        self.ready = True

    def run(self, steps: int) -> float:
        t0 = time.perf_counter()
        subprocess.run(self.cmds[steps], check=True, capture_output=True, env=single_thread_env())
        return time.perf_counter() - t0

    def sample(self) -> None:
        self.rounds += 1
        for steps in (ALPHA_SHORT, ALPHA_LONG):
            self.best[steps] = min(self.best.get(steps, float("inf")), self.run(steps))
        t_short, t_long = self.best[ALPHA_SHORT], self.best[ALPHA_LONG]
        self.result.extra = {"t300_s": t_short, "t3300_s": t_long, "rounds": self.rounds}
        us = 1e6 * (t_long - t_short) / (ALPHA_LONG - ALPHA_SHORT)
        self.result.us_per_step = us if us > 0 else None
        self.result.note = (
            f"({ALPHA_LONG} - {ALPHA_SHORT} steps) differential"
            if us > 0
            else f"not measured: t{ALPHA_LONG} {t_long:.4f}s <= t{ALPHA_SHORT} {t_short:.4f}s"
        )


# --------------------------------------------------------------------------------------------


def ratio(num: Result, den: Result) -> float | None:
    if num.us_per_step is None or den.us_per_step is None:
        return None
    return num.us_per_step / den.us_per_step


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


# The CPU level both compiled systems are generated for (C's -march, Alpha's --cpu): the same
# vector width on both sides. x86-64-v3 (AVX2) where the machine has it, else x86-64-v2.
CPU = ["x86-64-v2"]


def _default_cpu() -> str:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "x86-64-v2"
    return "x86-64-v3" if " avx2" in flags and " fma" in flags else "x86-64-v2"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000, help="timed steps for C, NumPy, PyTorch")
    ap.add_argument(
        "--repeats", type=int, default=5, help="interleaved rounds; each keeps its best"
    )
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    ap.add_argument("--no-alpha", action="store_true", help="measure the peers only")
    ap.add_argument(
        "--cpu",
        default=None,
        help="CPU level for C (-march) and Alpha (--cpu); default: x86-64-v3 "
        "where AVX2 is present, else x86-64-v2",
    )
    args = ap.parse_args(argv)
    CPU[0] = args.cpu or _default_cpu()
    print(f"generated code for both compiled systems: {CPU[0]}")
    if args.steps < 1 or args.repeats < 1:
        ap.error("--steps and --repeats must be positive")

    info = machine()
    print(f"machine: {info['cpu']}, {info['cores']} cores ({info.get('simd', '')})")
    print(f"python {info['python']}, {info['os']}")
    load = os.getloadavg()[0]
    info["load_1min_at_start"] = load
    print(f"load average (1 min) at start: {load:.2f}")
    if load > 0.5 * (os.cpu_count() or 1):
        print("warning: the machine is busy; the figures will be slower and noisier than usual")

    alpha = AlphaStep()
    c = CStep(args.steps)
    numpy = Peer("numpy", "NumPy (float32)", args.steps)
    torch = Peer("torch", "PyTorch eager (CPU)", args.steps)
    systems: list[System] = [alpha, c, numpy, torch]
    with tempfile.TemporaryDirectory(prefix="alpha-bench-") as tmp:
        work = Path(tmp)
        for system in systems:
            if system is alpha and args.no_alpha:
                system.fail("not measured (--no-alpha)")
            else:
                system.prepare(work)
        if not alpha.ready:
            print(f"Alpha: {alpha.result.note}; continuing with the peers.")
        for _ in range(args.repeats):
            for system in systems:
                if system.ready:
                    system.sample()
    for system in systems:
        if system.result.us_per_step is not None:
            system.result.note += f", best of {args.repeats}"
    alpha_r, c_r, numpy_r, torch_r = (s.result for s in systems)

    results = [alpha_r, c_r, numpy_r, torch_r]
    print()
    print(f"{'system':<22} {'us/step':>10} {'steps/s':>10}  notes")
    for r in results:
        us, sps = fmt(r.us_per_step, ".1f"), fmt(r.steps_per_s, ",.0f")
        print(f"{r.name:<22} {us:>10} {sps:>10}  {r.note}")

    ratios = {
        "PyTorch/Alpha": ratio(torch_r, alpha_r),
        "NumPy/Alpha": ratio(numpy_r, alpha_r),
        "Alpha/C": ratio(alpha_r, c_r),
        "PyTorch/C": ratio(torch_r, c_r),
        "NumPy/C": ratio(numpy_r, c_r),
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
