"""Shared fixtures: analysing sources and building them with the real compiler and linker."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alpha_core.build.executables import build_program
from alpha_core.build.outputs import BuildResult
from alpha_core.check.program import Program
from alpha_core.codegen.levels import X86_LEVELS
from alpha_core.plan.schedule import RoleSchedule
from alpha_core.workspace.analysis import Workspace

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(Path(__file__).parent))


def program_of(source: str, path: Path) -> Program:
    path.write_text(source)
    a = Workspace().analyze_file(str(path))
    program, diags = a.program()
    assert program is not None, [(d.name, d.message) for d in diags]
    return program


def recorded(name: str, program: Program) -> list[Any]:
    """What each call of alpha_core.codegen.graph_emit's `name` (an analysis the emitter calls,
    such as fold_sums or row_groups) returned while the training step's kernels were built
    for this host."""
    from alpha_core.autodiff.reverse import training_step
    from alpha_core.codegen import graph_emit
    from alpha_core.codegen.kernels import build_kernels
    from alpha_core.codegen.target import TARGETS

    seen: list[Any] = []
    original = getattr(graph_emit, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        seen.append(found)
        return found

    setattr(graph_emit, name, recording)
    try:
        host = TARGETS["x86_64"]
        build_kernels(program, training_step(program), host.triple, host.cpu, host.features)
    finally:
        setattr(graph_emit, name, original)
    return seen


def build(program: Program, out: Path) -> BuildResult:
    return build_program(program, out)


TRAPS = ("-fsanitize=undefined", "-fsanitize-trap=undefined")


def link_checked(program: Program, role: RoleSchedule, out: Path) -> str:
    """An x86-64 executable of `role` whose runtime traps on undefined behaviour (overflow,
    out-of-range shifts, misaligned or null access, out-of-bounds indexing): every runtime
    source compiled with the traps (once per folder), then linked as alpha_core links."""
    from alpha_core.build.executables import kernels_object
    from alpha_core.codegen.program_c import program_c
    from alpha_core.codegen.target import TARGETS
    from alpha_core.link.link import LINK_FLAGS
    from alpha_core.link.toolchain import compile_c, run_zig, runtime_dir

    target = TARGETS["x86_64"].zig
    runtime = out.parent / "checked-runtime"
    if not runtime.exists():
        runtime.mkdir(parents=True)
        # the host runtime, as runtime_objects selects it: gpu_*.c belong to GPU roles only
        for source in sorted(s for s in runtime_dir().glob("*.c") if not s.name.startswith("gpu_")):
            compile_c(
                target,
                source.name,
                runtime / f"{source.stem}.o",
                cwd=runtime_dir(),
                extra_flags=TRAPS,
            )
    work = out.parent / f"{out.name}.work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "program.c").write_text(program_c(program, None, role))
    compile_c(target, "program.c", work / "program.o", cwd=work, include_dirs=[runtime_dir()])
    (work / "kernels.o").write_bytes(kernels_object(program, "x86_64"))
    inputs = [*map(str, sorted(runtime.glob("*.o"))), "program.o", "kernels.o"]
    run_zig(["cc", "-target", target, *LINK_FLAGS, *inputs, "-o", str(out)], cwd=work)
    return str(out)


def run_exe(path: str, *args: str) -> tuple[int, list[dict[str, object]], str]:
    proc = subprocess.run([path, *args], capture_output=True, text=True, timeout=300)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, events, proc.stderr


# ---- the CPU these tests run on ----------------------------------------------------------------
# A level's code runs only on a CPU that has its instructions: on one without them (an AMD Zen 1
# or 2 has no AVX-512) a test built for that level shows the refusal a user would get instead
# of its bits, which a CPU with the level shows.

V3_FLAGS = ("avx2", "bmi1", "bmi2", "fma", "f16c", "movbe", "abm")
V4_FLAGS = ("avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl")


@functools.cache
def widest_here() -> str:
    """The widest x86-64 level this machine runs, from the kernel's view of the CPU
    (/proc/cpuinfo lists a flag only when the OS also saves the registers it needs)."""
    flags: set[str] = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    if all(f in flags for f in V3_FLAGS + V4_FLAGS):
        return "x86-64-v4"
    return "x86-64-v3" if all(f in flags for f in V3_FLAGS) else "x86-64-v2"


def runs_here(level: str) -> bool:
    """Whether this CPU runs code built for x86-64 `level`."""
    return X86_LEVELS.index(level) <= X86_LEVELS.index(widest_here())


def assert_refused_here(exe: str, level: str, tmp_path: Path) -> None:
    """An executable built for one CPU (`--cpu level`) that this CPU cannot run: refused by
    name at start-up (cpu-level-unsupported, exit 3), the level named, nothing written."""
    assert not runs_here(level)
    params = tmp_path / "refused.params"
    code, events, stderr = run_exe(exe, "--params-out", str(params))
    assert code == 3 and "error[cpu-level-unsupported]" in stderr, (code, stderr[-800:])
    assert f"x86-64-v{level[-1]}" in stderr and not params.exists()
    assert events and events[-1]["event"] == "refused"


def assert_code_for(level: str, asm: str) -> None:
    """Kernels this CPU cannot run (`level` beyond it), made all the same: their assembly uses
    the level's widest registers (a CPU that has the level runs them and shows their bits)."""
    assert not runs_here(level)
    register = {"x86-64-v3": "%ymm", "x86-64-v4": "%zmm"}[level]
    assert register in asm, f"no {register} in the {level} kernels"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real `alpha` command in a subprocess, wide enough that rich does not wrap."""
    import os

    return subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )


def _keep_runs_out_of_the_checkout() -> None:
    """`alpha run` without -o keeps its run in ./alpha-runs: for every command a test starts
    (they inherit this environment), in a temporary folder instead of the source tree."""
    import os
    import tempfile

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")  # a folder per worker (test.sh)
    runs = Path(tempfile.gettempdir()) / f"alpha-test-runs-{worker}"
    os.environ.setdefault("ALPHA_RUNS_DIR", str(runs))


_keep_runs_out_of_the_checkout()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With CI=true nothing may hide: a skipped or xfailed test fails the run."""
    import os

    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {}) if reporter is not None else {}
    hidden = len(stats.get("skipped", [])) + len(stats.get("xfailed", []))
    if hidden:
        print(f"\nCI=true: {hidden} test(s) skipped or xfailed; failing the run")
        session.exitstatus = 1
