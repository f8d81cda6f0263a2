"""A default build's level copies compiled in processes of their own (codegen/level_jobs.py):
the bytes of the copies compiled in the building process, and the same executable."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import EXAMPLES

from alpha_core.build import executables
from alpha_core.build.executables import build_program
from alpha_core.check.program import Program
from alpha_core.codegen import level_jobs
from alpha_core.codegen.level_jobs import JOBS_VARIABLE, LevelJob, compile_levels
from alpha_core.codegen.levels import X86_LEVELS
from alpha_core.link.toolchain import cache_root
from alpha_core.workspace.analysis import Workspace


def digits() -> Program:
    program, _ = Workspace().analyze_file(str(EXAMPLES / "digits.alpha")).program(None)
    assert program is not None
    return program


def jobs_of() -> list[LevelJob]:
    program = digits()
    jobs = []
    for level in X86_LEVELS:
        host = executables._host("x86_64", level)
        text = executables._kernels_text(program, host, small=level == X86_LEVELS[0])
        jobs.append(LevelJob(text, level, X86_LEVELS[0], host))
    return jobs


def test_copies_compiled_in_child_processes_are_the_bytes_compiled_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs = jobs_of()
    here = [job.compile() for job in jobs]
    monkeypatch.setenv(JOBS_VARIABLE, "3")

    def refused(_job: LevelJob) -> bytes:
        raise AssertionError("compiled in the building process, not in a child")

    monkeypatch.setattr(LevelJob, "compile", refused)  # the parent's; the children import theirs
    assert compile_levels(jobs) == here


def test_a_child_that_fails_leaves_its_copy_to_the_building_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job whose child cannot run (here: an interpreter that is not one) is compiled in the
    building process, with its errors."""
    jobs = jobs_of()
    monkeypatch.setenv(JOBS_VARIABLE, "2")
    monkeypatch.setattr(level_jobs.sys, "executable", "/bin/false")
    assert compile_levels(jobs) == [job.compile() for job in jobs]


def test_a_default_build_is_the_same_executable_with_one_job_or_several(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each in a cache of its own (the toolchain's and runtime's objects shared), so that each
    compiles its copies."""
    program = digits()
    build_program(program, tmp_path / "warm")  # the toolchain and the runtime, cached
    real = cache_root()
    digests = []
    for jobs in ("1", "3"):
        cache = tmp_path / f"cache-{jobs}"
        cache.mkdir()
        for name in ("zig", "runtime"):
            (cache / name).symlink_to(real / name)
        monkeypatch.setenv(JOBS_VARIABLE, jobs)
        monkeypatch.setenv("ALPHA_CACHE_DIR", str(cache))
        exe = build_program(program, tmp_path / f"out-{jobs}").executables[0].path
        digests.append(hashlib.sha256(Path(exe).read_bytes()).hexdigest())
    assert digests[0] == digests[1]
