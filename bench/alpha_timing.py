"""Alpha's side of the model benches (cnn_torch.py, transformer_torch.py): one build at two step
counts, timed per step by difference, at any thread count or forced CPU level."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alpha_core.build.executables import build_program
from alpha_core.build.outputs import Deployment


def has_avx512() -> bool:
    return " avx512f" in Path("/proc/cpuinfo").read_text()


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


class AlphaBuild:
    """One build (a --cpu choice) of the system `program_of(steps, folder)` gives, at two step
    counts; per step = (best time of the long run - best of the short) / (long - short), which
    cancels start-up, data and writing the parameters."""

    def __init__(
        self,
        label: str,
        cpu: str | None,
        work: Path,
        short: int,
        long: int,
        program_of: Callable[[int, Path], Any],
    ) -> None:
        self.label, self.cpu, self.short, self.long = label, cpu, short, long
        self.work = work
        self.exes: dict[int, str] = {}
        self.build_s: dict[int, float] = {}
        for steps in (short, long):
            folder = work / f"{label}-{steps}"
            folder.mkdir(parents=True)
            program = program_of(steps, folder)
            t0 = time.perf_counter()
            result = build_program(program, folder / "build", deployment=Deployment(cpu=cpu))
            self.build_s[steps] = time.perf_counter() - t0
            self.exes[steps] = result.executables[0].path
        self.best: dict[tuple[int, int], float] = {}
        self.sha: dict[str, str] = {}  # the long run's parameters, by `--threads N [LEVEL]`
        self.losses: list[float] = []  # the long run's step losses
        self.level = ""  # the CPU level the long run's kernels ran at
        for steps in (short, long):
            self.run(steps, 1)  # warm the page cache; the long run's losses and SHA-256

    def run(self, steps: int, threads: int, level: str | None = None) -> float:
        out = self.work / f"{self.label}.params"
        cmd = [self.exes[steps], "--threads", str(threads), "--params-out", str(out)]
        env = dict(os.environ)
        env.pop("ALPHA_CPU_LEVEL", None)
        if level is not None:
            env["ALPHA_CPU_LEVEL"] = level
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        dt = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} (ALPHA_CPU_LEVEL={level}): {proc.stderr[-2000:]}")
        events = events_of(proc.stdout)
        if steps == self.long:
            key = f"--threads {threads}" + (f" ALPHA_CPU_LEVEL={level}" if level else "")
            self.sha[key] = str(events[-1]["params_sha256"])
            self.losses = [float(e["loss"]) for e in events if e.get("event") == "step"]
            self.level = next((str(e.get("cpu")) for e in events if e.get("event") == "start"), "")
        return dt

    def sample(self, threads: int) -> None:
        for steps in (self.short, self.long):
            key = (steps, threads)
            self.best[key] = min(self.best.get(key, float("inf")), self.run(steps, threads))

    def ms_per_step(self, threads: int) -> float:
        t_short, t_long = self.best[(self.short, threads)], self.best[(self.long, threads)]
        return 1e3 * (t_long - t_short) / (self.long - self.short)
