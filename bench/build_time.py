"""Build time: a 64-role plan, a 48-block residual net, and executable size against data size.

    python bench/build_time.py [--roles 64] [--blocks 48] [--sizes 1000,20000,100000]
                               [--skip RESNET|PLAN|SIZES ...] [--totals-only] [--json OUT]

"Warm" means the toolchain is warm: zig's musl and the runtime's objects are in the object cache
(ALPHA_CACHE_DIR), as after any earlier build. What a build of *this* system makes (the program
part, the kernels) is not: every measured build gets a fresh `shared/` folder of the cache (the
rest of the cache is linked into a temporary cache root), so the figure is a first build of the
system. A second build of the same system (everything found in the cache) is reported beside it.

- plan: digits (examples/digits.alpha, with `batch 64 leaves 64` so that 64 workers have a leaf
  each) and `plan p64 { roles worker[64] topology hierarchy(fanout: 2) }`; build_plan's wall
  time, when the first and the last role were told done (`on_built`).
- resnet: `fn block(h, w, b) { return h + relu(h @ w + b) }` called BLOCKS times with other
  parameters (32 wide, batch 32 in 4 leaves, sgd); build_program's wall time, then the phases
  one by one: check, autodiff + kernel IR emit, LLVM optimise, object emit, program part (C
  text, then its compile), the role's link.
- sizes: a 4-role plan of one synthetic system at several row counts: the data's bytes, the
  shared program object's size and each role's executable size.

`--totals-only` uses build_plan / build_program alone (no internals), so that the same script
measures a tree before the shared objects existed. A benchmark, never a test.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from machine import machine  # noqa: E402

from alpha_core.build.executables import build_plan, build_program  # noqa: E402
from alpha_core.build.outputs import Deployment  # noqa: E402
from alpha_core.link.toolchain import cache_root  # noqa: E402
from alpha_core.run.launch import free_port_base  # noqa: E402
from alpha_core.workspace.analysis import Workspace  # noqa: E402


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def plan_source(roles: int) -> str:
    text = (ROOT / "examples" / "digits.alpha").read_text()
    text = text.replace("batch 64 leaves 8", f"batch {roles} leaves {roles}")
    text = text.replace('table("data/digits.csv"', f'table("{ROOT}/examples/data/digits.csv"')
    plan = (
        f"plan p{roles} for digits {{\n  roles worker[{roles}]\n  topology hierarchy(fanout: 2)\n}}"
    )
    return f"{text}\n{plan}\n"


def resnet_source(blocks: int, width: int = 32) -> str:
    lines = [
        "system resnet {",
        f"  data train: synthetic(rows: 256, features: {width}, classes: 4, seed: 3, holdout: 32)",
        "  batch 32 leaves 4",
        f"  param w0: f32[{width}, {width}] = normal(0.0, 0.1, seed: 1)",
    ]
    for i in range(1, blocks + 1):
        lines.append(f"  param w{i}: f32[{width}, {width}] = normal(0.0, 0.05, seed: {i + 1})")
        lines.append(f"  param b{i}: f32[{width}] = zeros")
    lines += [
        f"  param wo: f32[{width}, 4] = normal(0.0, 0.1, seed: 9999)",
        f"  fn block(h: f32[B, {width}], w: f32[{width}, {width}], b: f32[{width}])"
        f" -> f32[B, {width}] {{",
        "    return h + relu(h @ w + b)",
        "  }",
        f"  fn model(x: f32[B, {width}]) -> f32[B, 4] {{",
        "    let h0 = x @ w0",
    ]
    lines += [f"    let h{i} = block(h{i - 1}, w{i}, b{i})" for i in range(1, blocks + 1)]
    lines += [
        f"    return h{blocks} @ wo",
        "  }",
        "  loss softmax_cross_entropy(model(x), y)",
        "  learner sgd(lr: 0.01)",
        "  steps 10",
        "}",
    ]
    return "\n".join(lines) + "\n"


def sizes_source(rows: int) -> str:
    return f"""system s {{
  data train: synthetic(rows: {rows}, features: 16, classes: 4, seed: 11, holdout: {rows // 10})
  batch 32 leaves 4
  param w: f32[16, 4] = normal(0.0, 0.1, seed: 1)
  fn model(x: f32[B, 16]) -> f32[B, 4] {{
    return x @ w
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 1
}}
plan p for s {{
  roles worker[4]
  topology hierarchy(fanout: 2)
}}
"""


def analysis(text: str, folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.alpha"
    path.write_text(text)
    a = Workspace().analyze_file(str(path))
    assert not a.diagnostics, [(d.name, d.message) for d in a.diagnostics]
    return a


@contextmanager
def fresh_shared() -> Iterator[None]:
    """A cache root whose zig and runtime folders are the real (warm) ones, and nothing else:
    the program part and kernels of a system are made again."""
    real = cache_root()
    before = os.environ.get("ALPHA_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="alpha-bench-cache-") as temp:
        for name in ("zig", "runtime"):
            (Path(temp) / name).symlink_to(real / name)
        os.environ["ALPHA_CACHE_DIR"] = temp
        try:
            yield
        finally:
            if before is None:
                del os.environ["ALPHA_CACHE_DIR"]
            else:
                os.environ["ALPHA_CACHE_DIR"] = before


def warm_toolchain(folder: Path) -> None:
    """One small build, so that zig's musl and the runtime's objects are cached."""
    program, _ = analysis(sizes_source(100), folder / "warm").program()
    build_program(program, folder / "warm" / "out")


def bench_plan(roles: int, folder: Path) -> dict[str, float]:
    plan, _, diags = analysis(plan_source(roles), folder / "plan").plan(f"p{roles}")
    assert plan is not None, diags
    d = Deployment(port_base=free_port_base(roles))
    figures: dict[str, float] = {}

    def run(label: str) -> None:
        told: list[float] = []
        start = time.perf_counter()
        result = build_plan(
            plan,
            None,
            folder / f"plan-{label}",
            d,
            on_built=lambda *_: told.append(time.perf_counter()),
        )
        figures[f"{label}_s"] = time.perf_counter() - start
        figures[f"{label}_first_role_s"] = told[0] - start
        figures[f"{label}_last_role_s"] = told[-1] - start
        figures["role_bytes"] = result.executables[0].size
        figures["all_roles_bytes"] = sum(e.size for e in result.executables)

    with fresh_shared():
        run("first")
        run("again")
    return figures


def bench_resnet(blocks: int, folder: Path, totals_only: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    text = resnet_source(blocks)
    with fresh_shared():
        start = time.perf_counter()
        program, _ = analysis(text, folder / "resnet").program()
        result = build_program(program, folder / "resnet" / "first")
        figures["first_s"] = time.perf_counter() - start
        figures["bytes"] = result.executables[0].size
        start = time.perf_counter()
        program, _ = analysis(text, folder / "resnet").program()
        build_program(program, folder / "resnet" / "again")
        figures["again_s"] = time.perf_counter() - start
    if not totals_only:
        with fresh_shared():
            figures.update(resnet_phases(text, folder / "phases"))
    return figures


def resnet_phases(text: str, folder: Path) -> dict[str, float]:
    # internals, so that each phase is timed alone; bench code, not an interface
    import alpha_core.codegen.target as target
    from alpha_core.autodiff.reverse import training_step
    from alpha_core.codegen.kernels import build_kernels
    from alpha_core.codegen.program_c import program_part_c, role_part_c
    from alpha_core.link.link import link_role
    from alpha_core.link.object_cache import c_object
    from alpha_core.link.toolchain import runtime_objects
    from alpha_core.plan.schedule import single_process

    phases: dict[str, float] = {}
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[f"phase_{name}_s"] = now - mark
        mark = now

    program, _ = analysis(text, folder).program()
    lap("check")
    host = target.TARGETS["x86_64"]
    step = training_step(program)
    extra = (
        (host.cpu, host.features) if len(inspect.signature(build_kernels).parameters) > 3 else ()
    )
    module = build_kernels(program, step, host.triple, *extra)
    lap("ir_emit")
    phases["ir_chars"] = len(str(module))
    mark = time.perf_counter()
    optimised = target.optimized_ir(module, host)
    lap("llvm_optimise")
    obj = bytes(target._machine(host).emit_object(optimised))
    lap("object_emit")
    phases["kernels_bytes"] = len(obj)
    part = program_part_c(program, None)
    lap("program_part_emit")
    objects = (*runtime_objects(host.zig), c_object("program", host.zig, part))
    lap("program_part_compile")
    kernels = folder / "kernels.o"
    kernels.write_bytes(obj)
    role = single_process(program.leaves, program.identity())
    mark = time.perf_counter()
    link_role(host.zig, objects, role_part_c(role), kernels, folder / "resnet")
    lap("link")
    return phases


def bench_sizes(sizes: list[int], folder: Path) -> list[dict[str, int]]:
    rows_out = []
    for rows in sizes:
        plan, _, diags = analysis(sizes_source(rows), folder / f"sizes-{rows}").plan("p")
        assert plan is not None, diags
        result = build_plan(
            plan, None, folder / f"sizes-{rows}" / "out", Deployment(free_port_base(4))
        )
        data_bytes = rows * (16 + 1) * 4  # features and one label per row, float32
        rows_out.append(
            {
                "rows": rows,
                "data_bytes": data_bytes,
                "role_bytes": min(e.size for e in result.executables),
                "all_roles_bytes": sum(e.size for e in result.executables),
            }
        )
    return rows_out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roles", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=48)
    parser.add_argument("--sizes", default="1000,20000,100000")
    parser.add_argument("--skip", nargs="*", default=[], choices=["resnet", "plan", "sizes"])
    parser.add_argument("--totals-only", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": machine(), "load_before": load()}
    print(json.dumps(report["machine"]))
    with tempfile.TemporaryDirectory(prefix="alpha-bench-build-") as temp:
        folder = Path(temp)
        warm_toolchain(folder)
        if "plan" not in args.skip:
            report["plan"] = bench_plan(args.roles, folder)
            print(f"plan of {args.roles} roles:", json.dumps(report["plan"]), "load", load())
        if "resnet" not in args.skip:
            report["resnet"] = bench_resnet(args.blocks, folder, args.totals_only)
            print(f"resnet of {args.blocks} blocks:", json.dumps(report["resnet"]), "load", load())
        if "sizes" not in args.skip:
            report["sizes"] = bench_sizes([int(s) for s in args.sizes.split(",")], folder)
            for row in report["sizes"]:
                print("sizes:", json.dumps(row))
    report["load_after"] = load()
    print("load", report["load_before"], "->", report["load_after"])
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
