"""Plans of any size (issue 28): build time and size of a 1,024-role digits plan, and for its
256-role variant run on this machine: start-up time to the first round and the peak memory of
all roles together, with the launch's shared rows and without them.

    python bench/large_plans.py [--roles 1024] [--run 256] [--steps 40] [--skip build|run]

The system is examples/digits.alpha with `batch 1024 leaves 1024`; the plans are
`hierarchy(fanout: 4)` over 1,024 and 256 workers. "Warm": the toolchain, the runtime and this
system's kernels are in the object cache (a first build made them); each build is timed twice,
the second finding even the roles' template there. Memory is read from /proc while the roles
run (every 50 ms): the sum over the roles of their resident set (RSS, which counts a shared
page in every process that maps it) and of their proportional set (PSS, which divides it among
them), each at its peak. Start-up: from the launch to each role's first step event (the median
and the last role). A benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from machine import machine  # noqa: E402

import alpha_core.run.launch as launch_module  # noqa: E402
from alpha_core.build.executables import build_plan  # noqa: E402
from alpha_core.build.outputs import Deployment  # noqa: E402
from alpha_core.run.launch import Launch, free_port_base  # noqa: E402
from alpha_core.run.runs import Choice, overridden  # noqa: E402
from alpha_core.workspace.analysis import Workspace  # noqa: E402


def load() -> str:
    """The 1-, 5- and 15-minute load averages (two other sessions share these cores)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def source(folder: Path, plans: list[int]) -> Path:
    text = (ROOT / "examples" / "digits.alpha").read_text()
    text = text[: text.index("# Distribution")]
    text = text.replace("batch 64 leaves 8", "batch 1024 leaves 1024")
    text = text.replace('table("data/digits.csv"', f'table("{ROOT}/examples/data/digits.csv"')
    for n in plans:
        text += (
            f"\nplan p{n} for digits {{\n  roles worker[{n}]\n  topology hierarchy(fanout: 4)\n}}\n"
        )
    path = folder / "large.alpha"
    path.write_text(text)
    return path


def bench_build(path: Path, roles: int, folder: Path) -> dict[str, float]:
    plan, _, diags = Workspace().analyze_file(str(path)).plan(f"p{roles}")
    assert plan is not None, diags
    d = Deployment(port_base=free_port_base(roles))
    figures: dict[str, float] = {}
    for label in ("first", "again"):
        start = time.perf_counter()
        result = build_plan(plan, None, folder / f"build-{label}", d)
        figures[f"{label}_s"] = time.perf_counter() - start
        figures["bytes"] = sum(e.size for e in result.executables)
        figures["role_bytes"] = result.executables[0].size
    return figures


def _smaps(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in bytes, from smaps_rollup; (0, 0) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    rss = pss = 0
    for line in text.splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Pss:"):
            pss = int(line.split()[1]) * 1024
    return rss, pss


def bench_run(path: Path, roles: int, steps: int, folder: Path, shared: bool) -> dict[str, Any]:
    plan, _, diags = Workspace().analyze_file(str(path)).plan(f"p{roles}")
    assert plan is not None, diags
    plan = overridden(plan, Choice(plan=f"p{roles}", steps=steps))
    d = Deployment(port_base=free_port_base(roles), connect_timeout_ms=60_000)
    result = build_plan(plan, None, folder / f"run-{int(shared)}", d)
    out = folder / f"run-{int(shared)}" / "out.params"
    commands = [(e.role, [e.path, "--params-out", str(out)]) for e in result.executables]
    first: dict[str, float] = {}
    done: dict[str, str] = {}
    start = time.monotonic()

    def on_event(role: str, event: dict[str, object]) -> None:
        if event.get("event") == "step" and role not in first:
            first[role] = time.monotonic() - start
        if event.get("event") == "done" and event.get("params_sha256"):
            done[role] = str(event["params_sha256"])

    if not shared:  # the launch offers no folder: every role parses and holds its own rows
        keep = launch_module._rows_folder
        launch_module._rows_folder = lambda: None  # type: ignore[assignment]
    try:
        launch = Launch(commands, on_event)
    finally:
        if not shared:
            launch_module._rows_folder = keep  # type: ignore[assignment]
    pids = [launch.pid(role) for role, _ in commands]
    peak = {"rss": 0, "pss": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            rss = pss = 0
            for pid in pids:
                if pid is not None:
                    r, p = _smaps(pid)
                    rss, pss = rss + r, pss + p
            peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    outcomes = launch.wait()
    took = time.monotonic() - start
    stop.set()
    sampler.join()
    failed = [(o.role, o.refusal, o.message) for o in outcomes if o.exit_code != 0]
    assert not failed, failed[:3]
    times = sorted(first.values())
    return {
        "roles": roles,
        "steps": steps,
        "shared_rows": shared,
        "wall_s": took,
        "first_round_median_s": statistics.median(times),
        "first_round_last_s": times[-1],
        "peak_rss_bytes": peak["rss"],
        "peak_pss_bytes": peak["pss"],
        "params_sha256": next(iter(done.values()), None),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--roles", type=int, default=1024)
    parser.add_argument("--run", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--skip", nargs="*", default=[])
    args = parser.parse_args()
    print(json.dumps(machine()))
    with tempfile.TemporaryDirectory(prefix="alpha-bench-large-") as temp:
        folder = Path(temp)
        path = source(folder, sorted({args.roles, args.run, 64}))
        if "build" not in args.skip:
            for roles in (64, args.roles):
                figures = bench_build(path, roles, folder)
                print(f"build of {roles} roles: {json.dumps(figures)} load {load()}")
        if "run" not in args.skip:
            for shared in (True, False):
                before = load()
                figures = bench_run(path, args.run, args.steps, folder, shared)
                print(f"run: {json.dumps(figures)} load {before} -> {load()}", flush=True)


if __name__ == "__main__":
    main()
