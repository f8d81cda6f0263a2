"""One executable, every x86-64 level (alpha_core/codegen/levels.py, runtime/cpu_level.c): a
default build carries its kernels for x86-64-v2 and v3, and v4 when a product takes the packed
GEMM, and runs the widest of them this CPU supports, naming it in the start event and in
--describe. Forcing each level with
ALPHA_CPU_LEVEL gives the same parameters, bit for bit (SHA-256), for digits and for a system
whose products all take the packed, threaded GEMM; a level the executable does not carry, or
that this CPU lacks, is refused by name before anything is written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, program_of, runs_here, widest_here
from reference import train
from test_gemm import SOURCE as WIDE

from alpha_core.build.executables import build_program
from alpha_core.build.outputs import Deployment
from alpha_core.codegen.levels import LEVEL_VARIABLE, X86_LEVELS
from alpha_core.workspace.analysis import Workspace

# digits has no product large enough for the packed GEMM: its executable carries v2 and v3
DIGITS_LEVELS = ("x86-64-v2", "x86-64-v3")


def widest_of(carried: tuple[str, ...]) -> str:
    """The level an executable carrying `carried` runs here."""
    return [level for level in carried if runs_here(level)][-1]


def run_at(exe: str, level: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != LEVEL_VARIABLE}
    if level is not None:
        env[LEVEL_VARIABLE] = level
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=300)


def events_of(done: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    import json

    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> str:
    a = Workspace().analyze_file(str(EXAMPLES / "digits.alpha"))
    program, _ = a.program(None)
    assert program is not None
    out = tmp_path_factory.mktemp("digits")
    return build_program(program, out).executables[0].path


def test_the_default_build_runs_the_widest_level_and_names_it(digits: str) -> None:
    done = run_at(digits, None, "--quiet")
    assert done.returncode == 0, done.stderr
    start = events_of(done)[0]
    assert start["event"] == "start" and start["cpu"] == widest_of(DIGITS_LEVELS)
    described = events_of(run_at(digits, None, "--describe"))[0]
    assert described["cpu"] == widest_of(DIGITS_LEVELS)
    # two copies of the kernels, and still a small executable
    assert Path(digits).stat().st_size < 256_000


def test_every_level_gives_the_same_bits_or_is_refused_by_name(digits: str, tmp_path: Path) -> None:
    shas = {}
    for level in X86_LEVELS:
        params = tmp_path / f"{level}.params"
        done = run_at(digits, level, "--quiet", "--params-out", str(params))
        if level not in DIGITS_LEVELS or not runs_here(level):  # refused, nothing written
            assert done.returncode == 3 and "error[cpu-level-unsupported]" in done.stderr
            assert not params.exists()
            continue
        assert done.returncode == 0, done.stderr
        events = events_of(done)
        assert events[0]["cpu"] == level
        shas[level] = events[-1]["params_sha256"]
    assert "x86-64-v2" in shas and len(set(shas.values())) == 1, shas


def test_a_level_the_executable_does_not_carry_is_refused(digits: str, tmp_path: Path) -> None:
    params = tmp_path / "p.params"
    done = run_at(digits, "x86-64-v9", "--params-out", str(params))
    assert done.returncode == 3
    refusal = events_of(done)[-1]
    assert refusal["event"] == "refused" and refusal["name"] == "cpu-level-unsupported"
    assert str(refusal["message"]).endswith("carries the kernels of " + ", ".join(DIGITS_LEVELS))
    assert not params.exists()


def test_a_build_for_one_cpu_carries_only_that_level(tmp_path: Path) -> None:
    a = Workspace().analyze_file(str(EXAMPLES / "digits.alpha"))
    program, _ = a.program(None)
    assert program is not None
    exe = build_program(program, tmp_path, deployment=Deployment(cpu="x86-64-v2"))
    path = exe.executables[0].path
    done = run_at(path, None, "--quiet")
    assert done.returncode == 0 and events_of(done)[0]["cpu"] == "x86-64-v2"
    other = run_at(path, "x86-64-v3", "--quiet")
    assert other.returncode == 3
    assert "carries only the kernels of x86-64-v2" in other.stderr


@pytest.mark.parametrize("cpu, needs", [("x86-64-v3", 3), ("haswell", 3), ("x86-64-v4", 4)])
def test_a_build_for_one_cpu_on_a_cpu_without_its_instructions_is_refused_by_name(
    cpu: str, needs: int, tmp_path: Path
) -> None:
    """qemu-user emulating a Nehalem (SSE4.2: no AVX, AVX2, FMA or AVX-512) runs an executable
    built with `--cpu`: refused at start-up, naming the CPU it was built for and the level its
    instructions need, before anything is read or written (no illegal instruction)."""
    assert shutil.which("qemu-x86_64"), "this test needs qemu-x86_64 (apt: qemu-user)"
    a = Workspace().analyze_file(str(EXAMPLES / "digits.alpha"))  # small: a quick build
    program, _ = a.program(None)
    assert program is not None
    exe = build_program(program, tmp_path / "out", deployment=Deployment(cpu=cpu))
    params = tmp_path / "p.params"
    done = subprocess.run(
        ["qemu-x86_64", "-cpu", "Nehalem", exe.executables[0].path, "--params-out", str(params)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr[-600:]
    refused = events_of(done)[-1]
    assert refused["event"] == "refused" and refused["name"] == "cpu-level-unsupported"
    assert f"built for one CPU, {cpu}," in str(refused["message"])
    assert f"x86-64-v{needs}" in str(refused["message"])
    assert not params.exists() and all(e["event"] != "start" for e in events_of(done))


def test_the_packed_gemm_gives_the_references_bits_at_every_level_and_thread_count(
    tmp_path: Path,
) -> None:
    """Each level has its own register tiles and scratch (v2 4 x 8, v3 3 x 32, v4 24 x 16):
    the dispatcher gives the pool the largest scratch and the chosen copy's thread hook."""
    program = program_of(WIDE % {"steps": 3}, tmp_path / "wide.alpha")
    reference = train(program).sha256
    exe = build_program(program, tmp_path / "out").executables[0].path
    default = run_at(exe, None, "--quiet", "--threads", "1")
    assert events_of(default)[0]["cpu"] == widest_here()  # it carries v4: its products are tasks
    for level in X86_LEVELS:
        if not runs_here(level):
            continue
        for threads in ("1", "2", "3"):
            code, events, stderr = run_exe_at(exe, level, "--quiet", "--threads", threads)
            assert code == 0, stderr
            assert events[0]["cpu"] == level
            assert events[-1]["params_sha256"] == reference, (level, threads)


def test_both_loads_of_b_in_the_avx2_kernel_give_the_references_bits(tmp_path: Path) -> None:
    """The AVX2 unfused kernel folds all of B's loads into its multiplies on a CPU that splits
    256-bit operations (Zen 1), and holds two of B's vectors in registers elsewhere
    (runtime/cpu_level.c): ALPHA_GEMM_FOLD forces either, and both give the reference's bits."""
    level = "x86-64-v3"
    if not runs_here(level):
        pytest.fail(f"this test needs a CPU that runs {level}")
    program = program_of(WIDE % {"steps": 3}, tmp_path / "wide.alpha")
    reference = train(program).sha256
    exe = build_program(program, tmp_path / "out").executables[0].path
    for fold in ("1", "0"):
        for threads in ("1", "2"):
            env = {k: v for k, v in os.environ.items() if k != LEVEL_VARIABLE}
            env[LEVEL_VARIABLE], env["ALPHA_GEMM_FOLD"] = level, fold
            done = subprocess.run(
                [exe, "--quiet", "--threads", threads],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr
            assert events_of(done)[-1]["params_sha256"] == reference, (fold, threads)


def run_exe_at(exe: str, level: str, *args: str) -> tuple[int, list[dict[str, object]], str]:
    done = run_at(exe, level, *args)
    return done.returncode, events_of(done), done.stderr
