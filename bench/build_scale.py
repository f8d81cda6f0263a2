"""`alpha build` against the number of parameter tensors and of model operations (issue 22).

    python bench/build_scale.py [--kind bias|dense|ops] [--sizes 100,300,600,2000]
                                [--check] [--json OUT]

Kinds of system (the generator is tests/test_build_scale.py's `source`):
  bias   N tensors: a first layer, then N - 1 bias vectors added to its output in a chain
         (`dense_every` off: every bias shares one gradient; about two operations a tensor)
  dense  N tensors: the same chain with every tenth tensor a 3 x 3 layer, tanh(t @ m)
         (the test's system)
  ops    N calls of a small residual block h + tanh(h @ m) * 0.5 over 11 tensors: about four
         operations a call, so that the operations, not the tensors, grow

For each size the source is written to a fresh folder and `alpha build FILE -o DIR` (or
`alpha check FILE` with --check) runs as a subprocess with an object cache of its own (the
runtime objects and zig's cache are the shared ones, so nothing is compiled but the system's
own code): reported are its wall time, its peak resident memory (`ru_maxrss` of the child) and
both per tensor. A benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "tests"))

from machine import machine  # noqa: E402
from test_build_scale import source as chain  # noqa: E402

from alpha_core.link.toolchain import cache_root  # noqa: E402


def ops(calls: int) -> str:
    params = "".join(
        f"  param m{i}: f32[3, 3] = normal(0.0, 0.5, seed: {i + 10})\n" for i in range(10)
    )
    lets = "".join(f"    let t{i} = blk(t{i - 1}, m{i % 10})\n" for i in range(1, calls + 1))
    return f"""system ops {{
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 2
  param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)
{params}  fn blk(h: f32[B, 3], m: f32[3, 3]) -> f32[B, 3] {{
    return h + tanh(h @ m) * 0.5
  }}
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    let t0 = x @ w
{lets}    return t{calls}
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 10
}}
"""


def system(kind: str, n: int) -> str:
    if kind == "bias":
        return chain(n, dense_every=10**9)
    if kind == "dense":
        return chain(n)
    return ops(n)


def run(kind: str, n: int, folder: Path, check: bool) -> dict[str, object]:
    path = folder / f"{kind}{n}.alpha"
    path.write_text(system(kind, n))
    alpha = str(Path(sys.executable).with_name("alpha"))
    cli = [alpha, "check", str(path)] if check else [alpha, "build", str(path), "-o"]
    if not check:
        cli.append(str(folder / f"out{n}"))
    cache = folder / f"cache{n}"  # a first build of this system: its kernels are not cached
    cache.mkdir()
    for shared in ("runtime", "zig"):
        (cache / shared).symlink_to(cache_root() / shared)
    env = {**os.environ, "ALPHA_CACHE_DIR": str(cache)}
    t = time.perf_counter()
    proc = subprocess.Popen(cli, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    assert proc.stderr is not None
    tail = proc.stderr.read().decode(errors="replace").strip().splitlines()[-1:]
    rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    return {
        "kind": kind,
        "size": n,
        "seconds": round(seconds, 2),
        "max_rss_mb": round(rss_mb, 1),
        "ms_per_unit": round(seconds * 1000 / n, 2),
        "kb_per_unit": round(rss_mb * 1024 / n, 1),
        "exit_code": os.waitstatus_to_exitcode(status),
        "stderr": tail,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kind", choices=("bias", "dense", "ops"), default="bias")
    p.add_argument("--sizes", default="100,300,600,2000")
    p.add_argument("--check", action="store_true", help="time `alpha check`, not a build")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    info = machine()
    print(f"{info['cpu']}, {info['cores']} cores, load {os.getloadavg()[0]:.2f}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            r = run(args.kind, n, Path(tmp), args.check)
            results.append(r)
            print(
                f"{args.kind} {n:>7,}: {r['seconds']:8.2f} s  {r['max_rss_mb']:8.1f} MB  "
                f"{r['ms_per_unit']:7.2f} ms and {r['kb_per_unit']:6.1f} KB per unit"
                + (f"  exit {r['exit_code']}: {r['stderr']}" if r["exit_code"] else "")
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "results": results}, indent=2))


if __name__ == "__main__":
    main()
