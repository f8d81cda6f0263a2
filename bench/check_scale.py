"""`alpha check` at scale: a file of N small systems, checked by the real CLI.

    python bench/check_scale.py [--sizes 1000,4000,32870] [--data table|synthetic|mixed]
                                [--profile N] [--json OUT]

Each system is about 315 bytes (32,870 of them make a 10 MB file): a linear model on four
features, its own seeds and step count, reading its rows from one CSV beside the file that all
of them share (`--data table`, the default), from its own synthetic source (`synthetic`), or
alternately one and the other (`mixed`). For each size the file is written to a fresh folder
and `alpha check FILE` runs as a subprocess, its output discarded; reported are its wall time,
its peak resident memory (`ru_maxrss` of the child, from `wait4`) and both per system.
`--profile N` also runs the check of the first size in this process under cProfile, split into
the phases of `Workspace.analyze` (cutting and parsing, checking, the placed tree a face asks
for), and prints the N functions with the most time of their own. A benchmark, never a test.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from machine import machine  # noqa: E402

ROWS = 200  # rows of the shared CSV: 4 features and a class in 0..2


def csv_rows() -> str:
    # deterministic without a generator: the digits of a simple recurrence
    out = []
    for i in range(ROWS):
        feats = ",".join(f"{((i * 37 + k * 11) % 97) / 97:.3f}" for k in range(4))
        out.append(f"{feats},{i % 3}")
    return "\n".join(out) + "\n"


def system(i: int, data: str) -> str:
    table = data == "table" or (data == "mixed" and i % 2 == 1)
    source = (
        'table("data.csv", features: 4, classes: 3)'
        if table
        else f"synthetic(rows: 64, features: 4, classes: 3, seed: {i})"
    )
    return f"""system s{i} {{
  data train: {source}
  batch 8 leaves 2
  param w: f32[4, 3] = normal(0.0, 0.1, seed: {i})
  param b: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    return x @ w + b
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps {10 + i}
}}

"""


def source(n: int, data: str) -> str:
    return "".join(system(i, data) for i in range(n))


@dataclass
class Case:
    systems: int
    bytes: int
    seconds: float
    max_rss_mb: float
    ms_per_system: float
    kb_per_system: float
    exit_code: int


def run_check(folder: Path, n: int, data: str) -> Case:
    path = folder / f"s{n}.alpha"
    path.write_text(source(n, data))
    (folder / "data.csv").write_text(csv_rows())
    cli = [str(Path(sys.executable).with_name("alpha")), "check", str(path)]
    t = time.perf_counter()
    proc = subprocess.Popen(cli, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    return Case(
        n,
        path.stat().st_size,
        seconds,
        rss_mb,
        seconds * 1000 / n,
        rss_mb * 1024 / n,
        proc.returncode,
    )


def profile(folder: Path, n: int, data: str, top: int) -> None:
    """The phases of one analysis in this process, then the functions with most own time."""
    from alpha_core.syntax import parser
    from alpha_core.workspace.analysis import Workspace, clear_memos

    path = folder / f"s{n}.alpha"
    text = path.read_text()
    clear_memos()
    prof = cProfile.Profile()
    phases: dict[str, float] = {}
    prof.enable()
    t = time.perf_counter()
    parsed = parser.parse_file(text)
    phases["parse"] = time.perf_counter() - t
    t = time.perf_counter()
    Workspace().check(str(path), parsed)
    phases["check"] = time.perf_counter() - t
    t = time.perf_counter()
    _ = parsed.module
    phases["placed tree"] = time.perf_counter() - t
    prof.disable()
    print(f"\nphases of one analysis of {n:,} systems (under cProfile, so slower):")
    for name, s in phases.items():
        print(f"  {name}: {s:.2f} s")
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    print(buf.getvalue())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,4000,32870", help="systems per file, comma-separated")
    p.add_argument("--data", choices=["table", "synthetic", "mixed"], default="table")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="profile the first size")
    p.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    m = machine()
    load = os.getloadavg()[0]
    print(f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, load {load:.2f}")
    print(f"data: {args.data}")
    print("| systems | file | `alpha check` | peak RSS | per system | per system |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            c = run_check(Path(tmp), n, args.data)
            cases.append(c)
            flag = "" if c.exit_code == 0 else f" (exit {c.exit_code})"
            print(
                f"| {n:,} | {c.bytes / 1e6:.2f} MB | {c.seconds:.2f} s{flag} | "
                f"{c.max_rss_mb:,.0f} MB | {c.ms_per_system:.2f} ms | {c.kb_per_system:.1f} KB |",
                flush=True,
            )
        if args.profile:
            profile(Path(tmp), sizes[0], args.data, args.profile)
    if args.json:
        args.json.write_text(
            json.dumps({"machine": m, "data": args.data, "cases": [asdict(c) for c in cases]})
        )


if __name__ == "__main__":
    main()
