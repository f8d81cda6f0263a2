"""The matrix-product kernel on its own: GFLOP/s against this machine's measured peak.

    python bench/gemm.py [--cpu x86-64-v3] [--threads 1] [--seconds 0.5] [--json OUT]
                         [--shapes 1024x1024x1024,32x1024x784:nt,...] [--emit EXE]

Each shape is MxNxK with an optional layout: `nn` (A·B), `tn` (Aᵀ·B, A stored K x M), `nt`
(A·Bᵀ, B stored N x K), the three products a training step makes. The default shapes are the
1024 x 1024 x 1024 products and those of one leaf of the 784-1024-1024-10 model at batch 256
in 8 leaves (leaf 32). The kernel is the compiler's own (alpha_core/codegen/gemm.py), emitted
for --cpu, linked with the runtime's thread pool (runtime/pool.c) and a small C driver that
times repeated calls by the monotonic clock and keeps the best. The driver then computes
every output again with the plain loop (k ascending from +0.0, a separate multiply and add) and
counts the outputs whose bits differ: it must print none.

With --fma the kernel is that of a system of `arithmetic fused` (each term one fused
multiply-add) and the driver's check is a loop of fmaf, k ascending from +0.0.

The peak is measured, not assumed: a loop of independent vector multiplies and adds (no FMA,
as the unfused kernel; with --fma, independent fused multiply-adds), as many as the registers
hold, at the kernel's vector width. The nominal peak,
vector width x 2 ops x clock, is printed beside it from /proc/cpuinfo's MHz (under a hypervisor
that figure may not be the clock the core runs at). This is a benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from llvmlite import ir

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

from alpha_core.codegen.gemm import GemmEmitter  # noqa: E402
from alpha_core.codegen.loops import F32, I64, PTR, for_count, gep, splat  # noqa: E402
from alpha_core.codegen.target import TARGETS, HostTarget, object_code  # noqa: E402
from alpha_core.codegen.tiles import blocking_of  # noqa: E402
from alpha_core.link.toolchain import link_kernels_driver  # noqa: E402
from alpha_core.semantics.llvm_arith import emit_muladd  # noqa: E402

DEFAULT_SHAPES = (
    "1024x1024x1024:nn,1024x1024x1024:tn,1024x1024x1024:nt,"
    "32x1024x784:nn,32x1024x1024:nn,1024x1024x32:tn,784x1024x32:tn,32x1024x1024:nt"
)

DRIVER = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpu_level.h"
#include "pool.h"

void bench_run(int shape, float *c, const float *a, const float *b);
double bench_peak(int64_t iterations);
extern const int64_t bench_shapes[][7]; /* m, n, k, a's strides, b's strides */
extern const int bench_count;

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
    double seconds = argc > 2 ? atof(argv[2]) : 0.5;
    pool_start(threads);
    /* the runtime's start-up choice, as an executable makes it: here (no levels inside), how
     * the AVX2 unfused kernel loads B, from the CPU or ALPHA_GEMM_FOLD=1|0 */
    cpu_level_start();
    /* the peak first: iterations sized to about `seconds` */
    int64_t it = 1 << 20;
    double t0 = cpu_now(), flops = bench_peak(it), t = cpu_now() - t0;
    while (t < seconds / 4) { it *= 2; t0 = cpu_now(); flops = bench_peak(it); t = cpu_now() - t0; }
    printf("{\"peak_gflops\": %.3f", flops / t * 1e-9);
    for (int s = 0; s < bench_count; s++) {
        int64_t m = bench_shapes[s][0], n = bench_shapes[s][1], k = bench_shapes[s][2];
        size_t big = (size_t)(m > n ? m : n) * (size_t)k;
        float *a = aligned_alloc(64, big * 4 + 64), *b = aligned_alloc(64, big * 4 + 64);
        float *c = aligned_alloc(64, (size_t)m * n * 4 + 64);
        for (size_t i = 0; i < big; i++) {
            a[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
            b[i] = (float)((i * 40503u) % 997) / 997.0f - 0.5f;
        }
        double best = 1e30, start = cpu_now();
        int calls = 0;
        while (cpu_now() - start < seconds || calls < 3) {
            double s0 = cpu_now();
            bench_run(s, c, a, b);
            double d = cpu_now() - s0;
            if (d < best) best = d;
            calls++;
        }
        /* the same sums one at a time, k ascending from +0.0: the bits must agree */
        int64_t as0 = bench_shapes[s][3], as1 = bench_shapes[s][4];
        int64_t bs0 = bench_shapes[s][5], bs1 = bench_shapes[s][6];
        long wrong = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float acc = 0.0f;
                for (int64_t p = 0; p < k; p++) {
#ifdef FUSED
                    acc = __builtin_fmaf(a[i * as0 + p * as1], b[p * bs0 + j * bs1], acc);
#else
                    float prod = a[i * as0 + p * as1] * b[p * bs0 + j * bs1];
                    acc = acc + prod;
#endif
                }
                wrong += memcmp(&acc, &c[i * n + j], sizeof acc) != 0;
            }
        printf(", \"s%d\": [%.9f, %d, %ld]", s, best, calls, wrong);
        free(a); free(b); free(c);
    }
    printf("}\n");
    return 0;
}
"""


def parse_shapes(text: str) -> list[tuple[int, int, int, str]]:
    shapes = []
    for item in text.split(","):
        dims, _, layout = item.partition(":")
        m, n, k = (int(d) for d in dims.split("x"))
        shapes.append((m, n, k, layout or "nn"))
    return shapes


def strides(m: int, n: int, k: int, layout: str) -> tuple[tuple[int, int], tuple[int, int]]:
    a = (1, m) if layout[0] == "t" else (k, 1)
    b = (1, k) if layout[1] == "t" else (n, 1)
    return a, b


def module(
    host: HostTarget, shapes: list[tuple[int, int, int, str]], fused: bool = False
) -> tuple[ir.Module, int]:
    mod = ir.Module(name="bench.gemm")
    mod.triple = host.triple
    tile = blocking_of(host.triple, host.cpu, host.features, fused)
    width = tile.width
    gemm = GemmEmitter(mod, tile, fused)
    run = ir.Function(
        mod, ir.FunctionType(ir.VoidType(), [ir.IntType(32), PTR, PTR, PTR]), "bench_run"
    )
    shape, c, a, b_ = run.args
    b = ir.IRBuilder(run.append_basic_block("entry"))
    done = run.append_basic_block("done")
    switch = b.switch(shape, done)
    for i, (m, n, k, layout) in enumerate(shapes):
        block = run.append_basic_block(f"s{i}")
        switch.add_case(ir.Constant(ir.IntType(32), i), block)
        b.position_at_end(block)
        sa, sb = strides(m, n, k, layout)
        gemm.call(b, c, a, b_, m, n, k, sa, sb)
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    gemm.finish()
    table = ir.ArrayType(ir.ArrayType(I64, 7), len(shapes))
    g = ir.GlobalVariable(mod, table, "bench_shapes")
    rows = []
    for m, n, k, layout in shapes:
        (a0, a1), (b0, b1) = strides(m, n, k, layout)
        rows.append(ir.Constant(ir.ArrayType(I64, 7), [m, n, k, a0, a1, b0, b1]))
    g.initializer = ir.Constant(table, rows)
    g.global_constant = True
    count = ir.GlobalVariable(mod, ir.IntType(32), "bench_count")
    count.initializer = ir.Constant(ir.IntType(32), len(shapes))
    count.global_constant = True
    _peak(mod, width, fused)
    return mod, width


def _peak(mod: ir.Module, width: int, fused: bool) -> None:
    """bench_peak(n): n iterations of independent (acc * f + g) chains as a separate
    multiply and add (fused: one fma), returning the flops done (the result is stored so
    nothing folds away). 24 chains where there are 32 registers, 12 where there are 16: a
    multiply then an add is 8 cycles of latency a round, and on a Sapphire Rapids core 12 such
    chains measured 105-107 GFLOP/s where 24 measured 117-118, so the unfused shares printed
    against the 12-chain peak were a tenth too high; the fused peak (one fma, 4 cycles) is the
    same with 12 or 24 (240-243)."""
    vec = ir.VectorType(F32, width)
    fn = ir.Function(mod, ir.FunctionType(ir.DoubleType(), [I64]), "bench_peak")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    sink = ir.GlobalVariable(mod, ir.ArrayType(F32, 24 * width), "bench_sink")
    sink.initializer = ir.Constant(ir.ArrayType(F32, 24 * width), None)
    sink.type = PTR
    chains = 24 if width >= 16 else 12
    slots = []
    for j in range(chains):
        slot = b.alloca(vec)
        b.store(splat(b, ir.Constant(F32, 1.0 + j * 1e-3), width), slot)
        slots.append(slot)
    f = splat(b, ir.Constant(F32, 0.999999), width)
    g = splat(b, ir.Constant(F32, 1e-7), width)

    def body(_: ir.Value) -> None:
        for slot in slots:
            v = b.load(slot, typ=vec)
            b.store(emit_muladd(b, fused, g, v, f), slot)

    for_count(b, fn.args[0], body, "it")
    for j, slot in enumerate(slots):
        b.store(b.load(slot, typ=vec), gep(b, sink, ir.Constant(I64, j * width), vec), align=4)
    n = b.uitofp(fn.args[0], ir.DoubleType())
    b.ret(b.fmul(n, ir.Constant(ir.DoubleType(), float(chains * width * 2))))


def nominal_mhz() -> float | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1])
    except OSError:
        return None
    return None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--cpu", default="x86-64-v3")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    parser.add_argument("--json")
    parser.add_argument(
        "--fma",
        action="store_true",
        help="the kernel of `arithmetic fused` (one fma a term) against the fused peak, "
        "checked against an fmaf loop",
    )
    parser.add_argument(
        "--emit",
        metavar="EXE",
        help="only build the driver into EXE (run it elsewhere as `EXE THREADS SECONDS`: it "
        "prints the timings and counts as JSON, the shapes in --shapes order)",
    )
    args = parser.parse_args()
    shapes = parse_shapes(args.shapes)
    host = TARGETS["x86_64"]
    host = HostTarget(host.name, host.triple, host.zig, args.cpu, host.features)
    mod, width = module(host, shapes, args.fma)
    with tempfile.TemporaryDirectory(prefix="alpha-bench-gemm-") as temp:
        exe = link_kernels_driver(
            host.zig,
            object_code(mod, host),
            DRIVER,
            Path(temp),
            "gemm",
            ["-DFUSED"] if args.fma else [],
        )
        if args.emit:
            shutil.copy2(exe, args.emit)
            return 0
        out = subprocess.run(
            [str(exe), str(args.threads), str(args.seconds)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    result = json.loads(out)
    mhz = nominal_mhz()
    nominal = width * 2 * mhz / 1000 if mhz else None
    peak = result["peak_gflops"] * args.threads
    contract = "fused multiply-add" if args.fma else "separate multiply and add"
    print(f"cpu {args.cpu}: {width} lanes, threads {args.threads}, {contract}")
    kind = "FMA" if args.fma else "non-FMA"
    print(f"measured {kind} peak {peak:.1f} GFLOP/s", end="")
    if nominal:
        print(f"; nominal {width} lanes x 2 ops x {mhz:.0f} MHz = {nominal * args.threads:.1f}")
    else:
        print()
    rows = []
    for i, (m, n, k, layout) in enumerate(shapes):
        seconds, calls, wrong = result[f"s{i}"]
        gflops = 2 * m * n * k / seconds * 1e-9
        rows.append(
            {
                "m": m,
                "n": n,
                "k": k,
                "layout": layout,
                "seconds": seconds,
                "calls": calls,
                "gflops": gflops,
                "of_peak": gflops / peak,
                "outputs_differing": wrong,
            }
        )
        print(
            f"  {m:>5} x {n:>5} x {k:>5} {layout}: {seconds * 1e6:10.1f} us  "
            f"{gflops:6.1f} GFLOP/s  {gflops / peak:6.1%} of measured peak"
            + (f", {gflops / (nominal * args.threads):6.1%} of nominal" if nominal else "")
            + (f"  bits: {wrong} OUTPUTS DIFFER from the plain loop" if wrong else "  bits: same")
        )
    differing = sum(r["outputs_differing"] for r in rows)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "cpu": args.cpu,
                    "width": width,
                    "threads": args.threads,
                    "peak_gflops": peak,
                    "nominal_gflops": nominal,
                    "shapes": rows,
                },
                indent=2,
            )
            + "\n"
        )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
