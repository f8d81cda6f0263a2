"""The level copies of a default build's kernels compiled side by side, a process each.

llvmlite runs every LLVM call behind one lock, so the copies of a default x86-64 build (v2, v3,
v4: codegen/levels.py) cannot share the cores on threads; a process each can. `compile_levels`
hands each copy's module text to `python -m alpha_core.codegen.level_jobs`, which renames it for
its level and compiles it exactly as the building process would (target.object_code): the same
text, LLVM and options give the same bytes, which a test checks. Where a job cannot run (no
interpreter to start, a job that fails) its copy is compiled here instead, so every refusal
and error is the building process's own.

How many at once: the cores this process may use, at most one per copy; ALPHA_BUILD_JOBS sets
it (1: every copy here, one after the other).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from alpha_core.codegen import levels
from alpha_core.codegen.target import HostTarget, object_code

JOBS_VARIABLE = "ALPHA_BUILD_JOBS"


@dataclass(frozen=True)
class LevelJob:
    """One level's copy: the kernels module's text as made for the level's CPU, the level, and
    the narrowest level the build carries (levels.renamed)."""

    text: str
    level: str
    first: str
    host: HostTarget

    def compile(self) -> bytes:
        """The copy's object, compiled in this process."""
        return object_code(levels.renamed(self.text, self.level, self.first), self.host)


def jobs_allowed() -> int:
    """Processes a build may compile its copies in: ALPHA_BUILD_JOBS when it is a positive
    number, else the cores this process may use."""
    given = os.environ.get(JOBS_VARIABLE, "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def compile_levels(jobs: Sequence[LevelJob]) -> list[bytes]:
    """Each job's object, in order: in child processes side by side where more than one job and
    more than one process are allowed, else here."""
    workers = min(len(jobs), jobs_allowed())
    if workers <= 1:
        return [job.compile() for job in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:  # each thread waits on its child
        return list(pool.map(_in_child, jobs))


def _in_child(job: LevelJob) -> bytes:
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "alpha_core.codegen.level_jobs"],
            input=pickle.dumps(job),
            capture_output=True,
            env=env,
            check=False,
        )
    except OSError:
        return job.compile()
    if done.returncode != 0 or not done.stdout:
        return job.compile()  # here, where whatever went wrong is raised as it would be
    return done.stdout


def main() -> int:
    """The child: a pickled LevelJob on stdin, its object on stdout."""
    # run as __main__, this module's LevelJob is not the class the parent pickled
    from alpha_core.codegen.level_jobs import LevelJob as Pickled

    job = pickle.loads(sys.stdin.buffer.read())
    if not isinstance(job, Pickled):
        return 2
    sys.stdout.buffer.write(job.compile())
    return 0


if __name__ == "__main__":
    sys.exit(main())
