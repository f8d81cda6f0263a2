"""Checking a plan and projecting one role, at 1,000 and at 200,000 workers.

    python bench/plans.py [--repeats R]

A hierarchy(fanout: 16) of N workers over a small system, as in tests/test_plans.py; once with
everything replicated, once with parameters, gradients and optimizer state partitioned over
the workers (200,000 more parameters, so that every worker owns a slice) and a capture every
10 rounds. Reported: the time to check the file once, cold (parse, check the system, the plan
and its leaf assignment and partitions), and to project a leaf, a combiner and the root (best
of R).
The peer is the same work at 1,000 workers: the ratio says how the cost grows with N. This is a
benchmark, never a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from machine import machine  # noqa: E402

SYSTEM = """system s {
  data train: synthetic(rows: 100, features: 3, classes: 2, seed: 1)
  batch LEAVES2 leaves LEAVES
  param w: f32[3, 2] = normal(0.0, 0.1, seed: 1)
  EXTRA_PARAM
  fn model(x: f32[B, 3]) -> f32[B, 2] {
    return x @ w EXTRA_TERM
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 1
}
plan p for s {
  roles worker[LEAVES]
  topology hierarchy(fanout: 16)
STATE}
"""
OWNED = (
    "  state { params partitioned over worker; grads partitioned over worker;"
    " optimizer partitioned over worker }\n  checkpoint every 10 rounds\n"
)


def source(n: int, owned: bool) -> str:
    text = SYSTEM.replace("LEAVES2", str(2 * n)).replace("LEAVES", str(n))
    text = text.replace("EXTRA_PARAM", "param v: f32[1000, 200] = zeros" if owned else "")
    text = text.replace("EXTRA_TERM", "+ sum(v)" if owned else "")
    return text.replace("STATE", OWNED if owned else "")


def best(repeats: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> int:
    from alpha_core.plan.projection import project
    from alpha_core.workspace.analysis import Workspace

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    m = machine()
    print(f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}")
    rows = []
    Workspace().analyze("/tmp/bench-plans-warm.alpha", source(10, True))  # imports, first use
    for owned in (False, True):
        for n in (1_000, 200_000):
            text = source(n, owned)

            def check(text: str = text) -> object:
                a = Workspace().analyze("/tmp/bench-plans.alpha", text)
                assert not a.diagnostics, [d.message for d in a.diagnostics]
                return a.checked.plans["p"]

            start = time.perf_counter()
            plan = check()  # once: a second check of the same text hits the parse memo
            figures = {"check": (time.perf_counter() - start) * 1e3}
            for name, index in (("leaf", 1), ("combiner", 256), ("root", 0)):
                figures[name] = best(args.repeats, lambda p=plan, i=index: project(p, i))
            rows.append((("partitioned" if owned else "replicated"), n, figures))
    print(f"\n{'layout':<12} {'workers':>8} {'check':>9} {'leaf':>8} {'combiner':>9} {'root':>8}")
    for layout, n, f in rows:
        print(
            f"{layout:<12} {n:>8,} {f['check']:>7.1f}ms {f['leaf']:>6.2f}ms "
            f"{f['combiner']:>7.2f}ms {f['root']:>6.2f}ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
