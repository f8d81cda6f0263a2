"""Per-round latency and throughput on loopback: Alpha against gloo and a bare TCP round trip.

    python bench/round.py [--repeats R] [--short N1] [--long N2] [--json OUT] [--no-gloo]
                          [--large | --no-large] [--small | --no-small] [--cpu LEVEL]

The gradient is 2,410 float32 values (the size of the digits model's parameters). Measured side
by side in one run:

- Alpha: a generated system whose compute is as small as it gets with exactly 2,410 parameters
  (synthetic data with 240 features, `x @ w + b` with w: f32[240, 10], b: f32[10], softmax
  cross-entropy, sgd, batch 8 in 8 leaves of 1), built by `alpha_core.build.executables` as one
  process, as plan `pair` (2 workers) and as plan `tree8` (8 workers, hierarchy(fanout: 2)). Each
  build exists with `steps N1` and `steps N2`; all roles run at once
  (`alpha_core.run.launch.run_roles`, `--quiet`) and the whole run is timed by wall clock. Per
  round = (t_N2 - t_N1) / (N2 - N1), each t the best of R, which removes process start,
  handshake and the parameter file.
- gloo: torch.distributed with the gloo backend at world sizes 2 and 8 on 127.0.0.1, one
  process per rank, one thread each; rank 0 times `all_reduce` (sum) of a 2,410-float tensor,
  in blocks of many calls after warm-up, and keeps the best block's mean.
- bare TCP: bench/tcp_pingpong/pingpong.c (gcc -O2, or `python -m ziglang cc -O2`): two
  processes, one sends 9,640 bytes, the other sends them back, TCP_NODELAY, timed over many
  round trips; best of R.

- Alpha with 4 MB frames (`--large`, on by default): the same three realisations of a system of
  1,024,000 parameters (`relu(x @ w1) @ w2`, w1: f32[240, 4096], w2: f32[4096, 10]), so every
  piece and parameter frame carries 4,096,004 or 4,096,000 bytes; built with `steps N1/20` and
  `steps N2/20` (at least 2 apart); and gloo's all_reduce of 1,024,000 floats at world sizes 2
  and 8, the peer of the 4 MB pair and 8-role rounds. `--no-small` measures the 4 MB case alone.

An Alpha round also computes the leaves and applies the learner; gloo's figure is the
all-reduce alone. This is a benchmark, never a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import machine
from round_peers import BYTES, Result, build_pingpong, gloo, pingpong

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
LARGE_FLOATS = 240 * 4096 + 4096 * 10  # the 4 MB system's parameters: 1,024,000 floats

SOURCE = """\
# bench/round.py: 2,410 parameters (as digits), the least compute that has them.
system round {
  data train: synthetic(rows: 64, features: 240, classes: 10, seed: 1, holdout: 0)
  batch 8 leaves 8
  param w: f32[240, 10] = zeros
  param b: f32[10] = zeros
  fn model(x: f32[B, 240]) -> f32[B, 10] {
    return x @ w + b
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.01)
  steps STEPS
}

plan pair for round {
  roles worker[2]
  topology pair
}

plan tree8 for round {
  roles worker[8]
  topology hierarchy(fanout: 2)
}
"""

# 1,024,000 parameters: every frame of a round carries 4 MB (the bytes matter, not the model).
SOURCE_LARGE = (
    SOURCE.replace("round.py: 2,410 parameters (as digits)", "round.py: 4 MB frames")
    .replace(
        "param w: f32[240, 10] = zeros\n  param b: f32[10] = zeros",
        # random weights, so that "identical" compares parameters that trained (from zeros
        # every gradient of this model is zero and every realisation keeps the zeros)
        "param w1: f32[240, 4096] = normal(0.0, 0.05, seed: 1)\n"
        "  param w2: f32[4096, 10] = normal(0.0, 0.05, seed: 2)",
    )
    .replace("return x @ w + b", "return relu(x @ w1) @ w2")
)


# --------------------------------------------------------------------------------------------
# Alpha


class AlphaBuilds:
    """The three realisations of the system, each built with N1 and N2 steps."""

    configs = (("single", None), ("pair", "pair"), ("tree8", "tree8"))

    def __init__(
        self,
        work: Path,
        short: int,
        long: int,
        source: str = SOURCE,
        cpu: str | None = None,
        threads: int | None = None,
    ) -> None:
        self.work = work
        self.short = short
        self.long = long
        self.source = source
        self.cpu = cpu
        # every role's thread count, when given (else the executables' own: the cores)
        self.threads = ["--threads", str(threads)] if threads else []
        self.commands: dict[tuple[str, int], list[tuple[str, list[str]]]] = {}
        self.best: dict[tuple[str, int], float] = {}
        self.sha: dict[tuple[str, int], set[str]] = {}

    def build(self) -> None:
        sys.path.insert(0, str(REPO))
        from alpha_core.build.executables import build_plan, build_program
        from alpha_core.build.outputs import Deployment
        from alpha_core.run.launch import free_port_base
        from alpha_core.workspace.analysis import Workspace

        for steps in (self.short, self.long):
            folder = self.work / f"alpha{steps}"
            folder.mkdir(parents=True)
            path = folder / "round.alpha"
            path.write_text(self.source.replace("STEPS", str(steps)))
            analysis = Workspace().analyze_file(str(path))
            errors = [d for d in analysis.diagnostics if d.severity == "error"]
            if errors:
                raise RuntimeError("; ".join(f"{d.name}: {d.message}" for d in errors))
            for config, plan_name in self.configs:
                out = folder / config
                if plan_name is None:
                    program, diags = analysis.program()
                    if program is None:
                        raise RuntimeError(f"{config}: {diags}")
                    result = build_program(program, out, deployment=Deployment(cpu=self.cpu))
                else:
                    plan, _, diags = analysis.plan(plan_name)
                    if plan is None:
                        raise RuntimeError(f"{config}: {diags}")
                    deployment = Deployment(
                        free_port_base(plan.membership.total),
                        "127.0.0.1",
                        None,
                        30_000,
                        30_000,
                        cpu=self.cpu,
                    )
                    result = build_plan(plan, None, out, deployment)
                self.commands[(config, steps)] = [
                    (
                        e.role,
                        [
                            str(e.path),
                            "--quiet",
                            "--params-out",
                            str(out / f"{i}.params"),
                            *self.threads,
                        ],
                    )
                    for i, e in enumerate(result.executables)
                ]

    def sample(self, config: str, steps: int) -> float:
        from alpha_core.run.launch import run_roles

        commands = self.commands[(config, steps)]
        t0 = time.perf_counter()
        outcomes = run_roles(commands)
        seconds = time.perf_counter() - t0
        bad = [(o.role, o.refusal, o.message) for o in outcomes if o.exit_code != 0]
        if bad or len(outcomes) != len(commands):
            raise RuntimeError(f"alpha {config} steps {steps}: {bad}")
        key = (config, steps)
        self.best[key] = min(seconds, self.best.get(key, seconds))
        for o in outcomes:
            if o.done and o.done.get("params_sha256"):
                self.sha.setdefault(key, set()).add(str(o.done["params_sha256"]))
        return seconds

    def same_bits(self) -> bool:
        """Whether every plan wrote the one-process parameters (a check, not a timing)."""
        for steps in (self.short, self.long):
            shas = [self.sha.get((config, steps), set()) for config, _ in self.configs]
            if any(len(s) != 1 for s in shas) or len(set.union(*shas)) != 1:
                return False
        return True

    def result(self, config: str, name: str) -> Result:
        t1 = self.best.get((config, self.short))
        t2 = self.best.get((config, self.long))
        if t1 is None or t2 is None:
            return Result(name, note="not measured")
        us = 1e6 * (t2 - t1) / (self.long - self.short)
        roles = len(self.commands[(config, self.short)])
        return Result(
            name,
            us,
            f"{roles} process{'es' if roles > 1 else ''}",
            {f"t{self.short}_s": t1, f"t{self.long}_s": t2},
        )


# --------------------------------------------------------------------------------------------


def ratio(num: Result, den: Result) -> float | None:
    if num.us is None or den.us is None or den.us == 0:
        return None
    return num.us / den.us


def fmt(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="samples of each (best kept)")
    parser.add_argument("--short", type=int, default=200, help="Alpha's shorter build (rounds)")
    parser.add_argument("--long", type=int, default=2200, help="Alpha's longer build (rounds)")
    parser.add_argument("--pingpong-iters", type=int, default=20000)
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    parser.add_argument("--no-gloo", action="store_true", help="skip the gloo peer")
    parser.add_argument(
        "--large",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also the 4 MB-frame system (N1/20 and N2/20 rounds) and gloo at 4 MB",
    )
    parser.add_argument(
        "--small",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the 9.6 KB system, gloo at 9.6 KB and the bare round trip (--no-small: 4 MB only)",
    )
    parser.add_argument(
        "--cpu", help="the CPU level Alpha's kernels are generated for (e.g. x86-64-v4)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="threads of every Alpha role (default: the executables' own, the cores)",
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    info = machine()
    print(f"machine: {info['cpu']}, {info['cores']} cores ({platform.machine()})")
    info["alpha_cpu"] = args.cpu or "the target's baseline"
    print(f"alpha kernels generated for: {info['alpha_cpu']}")
    load = os.getloadavg()[0]
    info["load_1min_at_start"] = load
    print(f"load average (1 min) at start: {load:.2f}")
    if load > 0.5 * (os.cpu_count() or 1):
        print("warning: the machine is busy; figures may come out slower than on a quiet one")

    results: dict[str, Result] = {}
    with tempfile.TemporaryDirectory(prefix="alpha-round-") as tmp:
        work = Path(tmp)

        alpha: AlphaBuilds | None = None
        if args.small:
            alpha = AlphaBuilds(work, args.short, args.long, cpu=args.cpu, threads=args.threads)
            try:
                alpha.build()
            except Exception as exc:  # report it and go on with the peers
                print(f"alpha: build failed ({exc}); reporting the peers alone")
                alpha = None

        large: AlphaBuilds | None = None
        if args.large:
            short4 = max(1, args.short // 20)
            long4 = max(short4 + 2, args.long // 20)
            large = AlphaBuilds(work / "large", short4, long4, SOURCE_LARGE, args.cpu, args.threads)
            try:
                large.build()
            except Exception as exc:  # report it and go on with the rest
                print(f"alpha 4 MB: build failed ({exc})")
                large = None

        exe, compiler = None, ""
        try:
            if args.small:
                exe, compiler = build_pingpong(work)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"pingpong: build failed ({exc})")

        # Interleaved samples: a change of load falls on every system alike.
        best_pp: dict[str, Any] | None = None
        for i in range(args.repeats):
            if alpha is not None:
                for config, _ in alpha.configs:
                    for steps in (args.short, args.long):
                        alpha.sample(config, steps)
            if large is not None:
                for config, _ in large.configs:
                    for steps in (large.short, large.long):
                        large.sample(config, steps)
            if exe is not None:
                run = pingpong(exe, args.pingpong_iters)
                if best_pp is None or run["seconds"] < best_pp["seconds"]:
                    best_pp = run
            print(f"  round {i + 1}/{args.repeats} sampled", flush=True)

        if alpha is not None:
            info["alpha_same_bits_as_one_process"] = alpha.same_bits()
            same = "identical" if alpha.same_bits() else "DIFFERENT"
            print(f"alpha: parameters of pair and tree8 vs one process: {same}")
            results["single"] = alpha.result("single", "Alpha, one process")
            results["pair"] = alpha.result("pair", "Alpha plan pair (2 workers)")
            results["tree8"] = alpha.result("tree8", "Alpha plan hierarchy(fanout: 2), 8 workers")
        if large is not None:
            info["alpha_4mb_same_bits_as_one_process"] = large.same_bits()
            same = "identical" if large.same_bits() else "DIFFERENT"
            print(f"alpha 4 MB: parameters of pair and tree8 vs one process: {same}")
            results["single_4mb"] = large.result("single", "Alpha 4 MB, one process")
            results["pair_4mb"] = large.result("pair", "Alpha 4 MB plan pair (2 workers)")
            results["tree8_4mb"] = large.result("tree8", "Alpha 4 MB hierarchy, 8 workers")
        if best_pp is not None:
            results["tcp"] = Result(
                f"bare TCP round trip, {BYTES:,} bytes",
                best_pp["us_per_round_trip"],
                f"{compiler}, 2 processes, TCP_NODELAY",
                best_pp,
            )

    if not args.no_gloo and args.small:
        results["gloo2"] = gloo(2, warmup=500, iters=1000, blocks=5)
        results["gloo8"] = gloo(8, warmup=10, iters=40, blocks=3)
    if not args.no_gloo and args.large:
        results["gloo2_4mb"] = gloo(2, warmup=5, iters=20, blocks=5, floats=LARGE_FLOATS)
        results["gloo8_4mb"] = gloo(8, warmup=3, iters=10, blocks=3, floats=LARGE_FLOATS)

    print()
    print(f"{'system':<46} {'µs / round':>12} {'rounds / s':>12}  note")
    for r in results.values():
        per_s = fmt(r.per_s, ",.0f")
        print(f"{r.name:<46} {fmt(r.us, ',.1f'):>12} {per_s:>12}  {r.note}")

    def get(key: str) -> Result:
        return results.get(key, Result(key))

    ratios = {
        "pair / bare TCP round trip (target <= 1.2)": ratio(get("pair"), get("tcp")),
        "pair / gloo world 2 (target < 0.5)": ratio(get("pair"), get("gloo2")),
        "tree8 / gloo world 8 (target < 0.1)": ratio(get("tree8"), get("gloo8")),
        "pair / one process": ratio(get("pair"), get("single")),
        "tree8 / one process": ratio(get("tree8"), get("single")),
    }
    comm: dict[str, float | None] = {}
    if args.large:
        ratios["pair 4 MB / one process 4 MB"] = ratio(get("pair_4mb"), get("single_4mb"))
        ratios["tree8 4 MB / one process 4 MB"] = ratio(get("tree8_4mb"), get("single_4mb"))
        ratios["pair 4 MB / gloo world 2 4 MB (target <= 1)"] = ratio(
            get("pair_4mb"), get("gloo2_4mb")
        )
        ratios["tree8 4 MB / gloo world 8 4 MB (target <= 1)"] = ratio(
            get("tree8_4mb"), get("gloo8_4mb")
        )
    for k in ("pair", "tree8", "pair_4mb", "tree8_4mb"):
        us, single = get(k).us, get("single_4mb" if k.endswith("4mb") else "single").us
        comm[k] = None if us is None or single is None else us - single
    print()
    for k, v in ratios.items():
        print(f"{k:<46} {fmt(v, '.2f'):>8}")
    for k, v in comm.items():
        print(f"{k} round minus one-process round: {fmt(v, ',.1f')} µs")
    print(f"\nwall time {time.perf_counter() - started:.0f} s")

    if args.json is not None:
        payload = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": info,
            "args": {k: v for k, v in vars(args).items() if not k.startswith("gloo")},
            "results": {
                k: {"name": r.name, "us": r.us, "per_s": r.per_s, "note": r.note, **r.extra}
                for k, r in results.items()
            },
            "ratios": ratios,
        }
        args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
