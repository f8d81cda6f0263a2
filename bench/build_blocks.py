"""Build time against repeated code: examples/transformer.alpha with its attention + MLP block
written once as a helper and called N times (each call with parameters of its own).

    python bench/build_blocks.py [--blocks 1,4,12] [--json OUT]

For each N: the check, the kernels' IR emission, LLVM (optimisation and object code, the
build's dominant phase), the object's size, and the initialisation alone (the loop that fills
the parameters: one function per kind of initialiser, so 6·N more parameters add calls, not
loops). Nothing is cached: every figure is a first build. A benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from llvmlite import ir  # noqa: E402
from machine import machine  # noqa: E402

from alpha_core.autodiff.reverse import training_step  # noqa: E402
from alpha_core.codegen.graph_emit import live_nodes  # noqa: E402
from alpha_core.codegen.kernels import build_kernels, emit_init  # noqa: E402
from alpha_core.codegen.target import TARGETS, object_code  # noqa: E402
from alpha_core.workspace.analysis import Workspace  # noqa: E402


def source(blocks: int) -> str:
    base = (ROOT / "examples" / "transformer.alpha").read_text()
    base = base[: base.index("\nplan ")]
    head, body = base.split("  fn norm(", 1)
    params = "".join(
        f"  param bq{i}: f32[32, 16] = normal(0.0, 0.18, seed: {100 + i})\n"
        f"  param bk{i}: f32[32, 16] = normal(0.0, 0.18, seed: {200 + i})\n"
        f"  param bv{i}: f32[32, 16] = normal(0.0, 0.18, seed: {300 + i})\n"
        f"  param bo{i}: f32[16, 32] = normal(0.0, 0.18, seed: {400 + i})\n"
        f"  param bm{i}: f32[32, 64] = normal(0.0, 0.18, seed: {500 + i})\n"
        f"  param bp{i}: f32[64, 32] = normal(0.0, 0.12, seed: {600 + i})\n"
        for i in range(blocks)
    )
    block = (
        "  fn block(h: f32[B, T, D], wq: f32[D, K], wk: f32[D, K], wv: f32[D, K], "
        "wo: f32[K, D], w1: f32[D, H], w2: f32[H, D]) -> f32[B, T, D] {\n"
        "    let a = h + head(norm(h, g1, n1), wq, wk, wv) @ wo\n"
        "    return a + gelu(norm(a, g2, n2) @ w1) @ w2\n  }\n"
    )
    calls = "h"
    for i in range(blocks):
        calls = f"block({calls}, bq{i}, bk{i}, bv{i}, bo{i}, bm{i}, bp{i})"
    text = head + params + block + "  fn norm(" + body
    return re.sub(r"    let h2 = .*\n    let h3 = .*\n", f"    let h3 = {calls}\n", text)


def measure(blocks: int, folder: Path) -> dict[str, float]:
    host = TARGETS["x86_64"]
    path = folder / f"blocks{blocks}.alpha"
    path.write_text(source(blocks))
    t0 = time.perf_counter()
    program, diags = Workspace().analyze_file(str(path)).program()
    assert program is not None, [(d.name, d.message) for d in diags]
    t1 = time.perf_counter()
    step = training_step(program)
    module = build_kernels(program, step, host.triple, host.cpu, host.features)
    t2 = time.perf_counter()
    obj = object_code(module, host)
    t3 = time.perf_counter()
    init = ir.Module(name="init")
    init.triple = host.triple
    emit_init(init, program)
    t4 = time.perf_counter()
    object_code(init, host)
    t5 = time.perf_counter()
    return {
        "blocks": blocks,
        "params": len(program.params),
        "live_nodes": len(live_nodes(step.graph, [step.loss_sum, *step.grads])),
        "check_s": t1 - t0,
        "emit_s": t2 - t1,
        "llvm_s": t3 - t2,
        "object_bytes": len(obj),
        "init_alone_s": t5 - t4,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", default="1,4,12")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(machine())
    rows = []
    with tempfile.TemporaryDirectory(prefix="alpha-blocks-") as temp:
        for n in map(int, args.blocks.split(",")):
            row = measure(n, Path(temp))
            rows.append(row)
            print(
                f"blocks {n:3d}: {row['params']} params, {row['live_nodes']} live nodes; check "
                f"{row['check_s']:.2f} s, emit {row['emit_s']:.2f} s, LLVM {row['llvm_s']:.2f} s, "
                f"object {row['object_bytes']:,} bytes; the init alone {row['init_alone_s']:.2f} s",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
