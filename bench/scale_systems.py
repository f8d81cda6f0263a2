"""The systems bench/scale.py samples: Alpha by differential timing, and the peer processes."""

from __future__ import annotations

import abc
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from machine import single_thread_env
from scale_models import DIGITS_DATA, Model, alpha_source

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


@dataclass
class Result:
    us_per_step: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class System(abc.ABC):
    def __init__(self) -> None:
        self.result = Result()
        self.ready = False

    def prepare(self, work: Path) -> None:
        self.ready = True

    @abc.abstractmethod
    def sample(self) -> None:
        """Time the system once and keep its best result."""

    def fail(self, note: str) -> None:
        self.ready = False
        self.result = Result(note=note)


def thread_env(threads: int, unset_openblas_tuning: bool = False) -> dict[str, str]:
    env = single_thread_env(unset_openblas_tuning=unset_openblas_tuning)
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = str(threads)
    return env


def last_line(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = (text or "").strip().splitlines()
    return lines[-1][:300] if lines else "no output"


# --------------------------------------------------------------------------------------------
# Alpha


def alpha_cli() -> list[str] | None:
    """The venv's `alpha` beside this Python, else the repository's .venv, else PATH."""
    for candidate in (Path(sys.executable).parent / "alpha", REPO / ".venv" / "bin" / "alpha"):
        if candidate.exists():
            return [str(candidate)]
    found = shutil.which("alpha")
    return [found] if found else None


def thread_support(cli: list[str], timeout: float) -> str:
    """How this alpha takes a thread count: "run" (the executable's --threads, asked of a tiny
    system's executable), "build" (alpha build --threads), or "none"."""
    with tempfile.TemporaryDirectory(prefix="alpha-scale-probe-") as tmp:
        try:
            exe = build(cli, Path(tmp), "probe", alpha_source(_probe_model(), 1), [], timeout)
            out = subprocess.run(
                [str(exe), "--help"], capture_output=True, text=True, timeout=timeout
            )
            if "--threads" in out.stdout + out.stderr:
                return "run"
        except (OSError, RuntimeError, ValueError, KeyError, subprocess.SubprocessError):
            pass
    try:
        help_text = subprocess.run(
            cli + ["build", "--help"], capture_output=True, text=True, timeout=timeout
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "none"
    return "build" if "--threads" in help_text else "none"


def _probe_model() -> Model:
    return Model("probe", (4, 2), 8, 0.001, (1, 2), 1, 0)


def build_error(proc: subprocess.CompletedProcess[str]) -> str:
    """A one-line reason from a failed `alpha build --json`: its refusals, else its output."""
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    if isinstance(report, dict):
        refusals = report.get("refusals") or []
        if refusals:
            return "; ".join(json.dumps(r, sort_keys=True)[:200] for r in refusals[:2])
    return last_line(proc.stderr or proc.stdout)


def build(
    cli: list[str], work: Path, tag: str, source: str, extra: list[str], timeout: float
) -> Path:
    """Build one system text into work/tag and return the path of its executable."""
    src = work / f"{tag}.alpha"
    src.write_text(source)
    out_dir = work / tag
    cmd = cli + ["build", str(src), "-o", str(out_dir), "--json"] + extra
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"alpha build failed ({proc.returncode}): {build_error(proc)}")
    exe = Path(json.loads(proc.stdout)["executables"][0]["path"])
    return exe if exe.is_absolute() else work / exe


# Executables already built in this run, by their build folder.
BUILT: dict[Path, Path] = {}


class AlphaSystem(System):
    """Differential timing: (best t(S2) - best t(S1)) / (S2 - S1) over whole runs."""

    def __init__(
        self,
        model: Model,
        threads: int,
        support: str,
        cli: list[str] | None,
        cpu: str,
        timeout: float,
        fused: bool = False,
    ) -> None:
        super().__init__()
        self.model, self.threads, self.support = model, threads, support
        self.cli, self.cpu, self.timeout = cli, cpu, timeout
        self.fused = fused  # the system in `arithmetic fused`
        self.cmds: dict[int, list[str]] = {}
        self.best: dict[int, float] = {}
        self.rounds = 0

    def prepare(self, work: Path) -> None:
        if self.cli is None:
            self.fail("not measured: the `alpha` CLI is not installed")
            return
        # `default`: no --cpu, as a user builds (every x86-64 level, the widest chosen at start)
        build_flags = [] if self.cpu == "default" else ["--cpu", self.cpu]
        run_flags = ["--quiet"]
        if self.support == "build":
            build_flags += ["--threads", str(self.threads)]
        elif self.support == "run":
            run_flags += ["--threads", str(self.threads)]
        try:
            for steps in self.model.alpha_steps:
                # A run-time thread count shares one build per step count between counts.
                tag = f"{self.model.name}-s{steps}" + ("-fused" if self.fused else "")
                if self.support == "build":
                    tag += f"-t{self.threads}"
                path = BUILT.get(work / tag)
                if path is None:
                    source = alpha_source(self.model, steps, self.fused)
                    path = build(self.cli, work, tag, source, build_flags, self.timeout)
                    BUILT[work / tag] = path
                params = work / f"{tag}-t{self.threads}.params"
                self.cmds[steps] = [str(path), *run_flags, "--params-out", str(params)]
                if self.model.digits:
                    self.cmds[steps] += ["--data", str(DIGITS_DATA)]
            self.run(self.model.alpha_steps[0])  # warm the page cache, check it runs
        except (OSError, ValueError, RuntimeError, KeyError, IndexError) as exc:
            self.fail(f"not measured: {exc}")
            return
        except subprocess.CalledProcessError as exc:
            self.fail(f"not measured: run failed ({exc.returncode}): {last_line(exc.stderr)}")
            return
        except subprocess.TimeoutExpired as exc:
            self.fail(f"not measured: ran past {exc.timeout} s")
            return
        self.ready = True

    def run(self, steps: int) -> float:
        t0 = time.perf_counter()
        proc = subprocess.run(
            self.cmds[steps],
            check=True,
            capture_output=True,
            env=thread_env(1),
            timeout=self.timeout,
        )
        seconds = time.perf_counter() - t0
        for line in proc.stdout.decode(errors="replace").splitlines():
            if '"event":"done"' in line.replace(" ", ""):
                done = json.loads(line)
                self.result.extra[f"final_loss_s{steps}"] = done.get("final_loss")
                self.result.extra[f"params_sha256_s{steps}"] = done.get("params_sha256")
        return seconds

    def sample(self) -> None:
        self.rounds += 1
        try:
            for steps in self.model.alpha_steps:
                self.best[steps] = min(self.best.get(steps, float("inf")), self.run(steps))
        except subprocess.CalledProcessError as exc:
            self.fail(f"run failed ({exc.returncode}): {last_line(exc.stderr)}")
            return
        except subprocess.TimeoutExpired as exc:
            self.fail(f"ran past {exc.timeout} s")
            return
        s1, s2 = self.model.alpha_steps
        t1, t2 = self.best[s1], self.best[s2]
        self.result.extra.update({f"t{s1}_s": t1, f"t{s2}_s": t2, "rounds": self.rounds})
        self.result.extra["threads"] = self.threads
        us = 1e6 * (t2 - t1) / (s2 - s1)
        self.result.us_per_step = us if us > 0 else None
        self.result.note = "" if us > 0 else f"not measured: t{s2} {t2:.4f}s <= t{s1} {t1:.4f}s"


# --------------------------------------------------------------------------------------------
# The peers


class PeerSystem(System):
    """One fresh bench/scale_peers.py process per sample; the best per-step time is kept."""

    def __init__(self, model: Model, peer: str, threads: int, timeout: float) -> None:
        super().__init__()
        self.model, self.peer, self.threads, self.timeout = model, peer, threads, timeout

    def sample(self) -> None:
        m = self.model
        cmd = [sys.executable, str(BENCH / "scale_peers.py"), self.peer]
        cmd += ["--dims", ",".join(str(d) for d in m.dims), "--batch", str(m.batch)]
        cmd += ["--lr", str(m.lr), "--threads", str(self.threads), "--rows", str(m.rows)]
        cmd += ["--steps", str(m.peer_steps), "--warmup", str(m.warmup)]
        if m.digits:
            cmd += ["--digits", str(DIGITS_DATA)]
        env = thread_env(self.threads, unset_openblas_tuning=self.peer == "numpy")
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, env=env, timeout=self.timeout
            )
        except subprocess.TimeoutExpired as exc:
            self.fail(f"ran past {exc.timeout} s")
            return
        if proc.returncode != 0:
            self.fail(f"failed: {last_line(proc.stderr)}")
            return
        run = json.loads(proc.stdout)
        us = 1e6 * run["seconds"] / run["steps"]
        if self.result.us_per_step is None or us < self.result.us_per_step:
            self.result.us_per_step = us
            self.result.extra = run
