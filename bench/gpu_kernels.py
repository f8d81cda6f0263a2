"""The GPU product kernels without a GPU: resources, static traffic, and bytes across the bus.

For each block tile (alpha_core/codegen/gpu_tiles.py) at 4096^3 and at an edge shape with a K
tail, unfused and fused, and for every product kernel of the examples: `ptxas -v` for sm_80 and
sm_90 (registers per thread, stack frame, spill bytes, shared memory), and the global-memory
bytes a kernel loads per multiply-add, counted statically from its tiles (every block loads
(BM + BN) K floats; the one-thread-per-output kernel it replaces loads 8 bytes per
multiply-add). Then, for digits and the 1.86 M MLP on one GPU role (the host shadow, which
copies exactly what a GPU role copies), the bytes each round copies to and from the device.

    .venv-test/bin/python bench/gpu_kernels.py [--markdown] [--no-runs]

ptxas is the nvidia-cuda-nvcc wheel's (a test tool, never a run-time dependency).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import nvidia

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alpha_core.codegen.gpu_products import matmul_product  # noqa: E402
from alpha_core.codegen.gpu_tiles import (  # noqa: E402
    TILES,
    Product,
    Tile,
    blocks_of,
    product_module,
)
from alpha_core.codegen.ptx import emit_ptx, lint_ptx  # noqa: E402

PTXAS = Path(next(iter(nvidia.__path__))) / "cu13" / "bin" / "ptxas"
ARCHES = ("sm_80", "sm_90")
NAIVE_BYTES = 8.0  # one thread per output: a[r, k] and w[k, c] from global memory per term
# the shapes every tile is assembled at: full tiles, and edges with a K tail
SHAPES = ((4096, 4096, 4096), (1000, 1000, 1001))


@dataclass(frozen=True)
class Resources:
    registers: int
    stack: int  # bytes of stack frame (local memory)
    spill_stores: int
    spill_loads: int
    shared: int  # bytes of static shared memory


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def ptxas_resources(ptx: str, arch: str) -> dict[str, Resources]:
    """Each entry function's resources as `ptxas -v` reports them for `arch`."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        done = subprocess.run(
            [str(PTXAS), "-v", f"-arch={arch}", str(src), "-o", str(Path(tmp) / "k.cubin")],
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 0:
        raise RuntimeError(f"ptxas -arch={arch} failed: {done.stderr[-2000:]}")
    found: dict[str, Resources] = {}
    name = ""
    frame: tuple[int, int, int] = (0, 0, 0)
    for line in done.stderr.splitlines():
        if m := _ENTRY.search(line):
            name = m.group(1)
        elif m := _FRAME.search(line):
            frame = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif (m := _USED.search(line)) and name:
            found[name] = Resources(int(m.group(1)), *frame, int(m.group(2) or 0))
            name = ""
    return found


Run = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
_ENGINES: list[object] = []  # kept alive with their functions


def shadow_kernel(product: Product, tile: Tile, fused: bool) -> Run:
    """The product's kernel as the host shadow runs it: once per block, in order."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = product_module(product, tile, False, fused, llvm.get_process_triple())
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    tm = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2
    )
    engine = llvm.create_mcjit_compiler(parsed, tm)
    engine.finalize_object()
    _ENGINES.append(engine)
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64)(
        engine.get_function_address("alpha_product")
    )
    blocks = blocks_of(tile, product.batch, product.m, product.n)

    def run(out: np.ndarray, in0: np.ndarray, in1: np.ndarray) -> None:
        table = np.array([a.ctypes.data for a in (out, in0, in1)], dtype=np.uint64)
        for block in range(blocks):
            call(table.ctypes.data, block)

    return run


def global_bytes_per_muladd(product: Product, tile: Tile) -> float:
    """Bytes of A and B the product's blocks load from global memory, per multiply-add."""
    blocks = blocks_of(tile, product.batch, product.m, product.n)
    return 4 * blocks * (tile.bm + tile.bn) * product.k / product.muladds


@dataclass(frozen=True)
class KernelRow:
    what: str  # the kernel: a tile at a shape, or an example's node
    tile: Tile
    fused: bool
    bytes_per_muladd: float
    resources: dict[str, Resources]  # per arch


def tile_rows() -> list[KernelRow]:
    """Every tile at SHAPES, unfused and fused."""
    rows: list[KernelRow] = []
    for tile in TILES:
        for m, n, k in SHAPES:
            for fused in (False, True):
                product = matmul_product(m, n, k)
                ptx = emit_ptx(product_module(product, tile, True, fused))
                assert lint_ptx(ptx, fused) == [], lint_ptx(ptx, fused)[:3]
                res = {arch: ptxas_resources(ptx, arch)["alpha_product"] for arch in ARCHES}
                rows.append(
                    KernelRow(
                        f"@ {m}x{n}x{k}", tile, fused, global_bytes_per_muladd(product, tile), res
                    )
                )
    return rows


def example_rows(
    examples: tuple[str, ...] = ("digits", "digits_cnn", "transformer"),
) -> list[KernelRow]:
    """Every product kernel of the examples' GPU roles (an h200's tiles), unfused and fused."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "bench"))
    from conftest import EXAMPLES, program_of  # the tests' program loader
    from scale_models import fused_source

    from alpha_core.autodiff.reverse import training_step
    from alpha_core.codegen.gpu_kernels import build_gpu_kernels

    rows: list[KernelRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in examples:
            text = (EXAMPLES / f"{name}.alpha").read_text()
            text = text.replace('"data/', f'"{EXAMPLES}/data/')
            for fused in (False, True):
                src = fused_source(text) if fused else text
                program = program_of(src, Path(tmp) / f"{name}-{int(fused)}")
                assert program.fused == fused
                module, layout = build_gpu_kernels(program, training_step(program), "ptx")
                ptx = emit_ptx(module)
                per_arch = {arch: ptxas_resources(ptx, arch) for arch in ARCHES}
                for kernel, product, tile in layout.products:
                    rows.append(
                        KernelRow(
                            f"{name} {kernel} {product.op} {product.shape}",
                            tile,
                            fused,
                            global_bytes_per_muladd(product, tile),
                            {arch: per_arch[arch][kernel] for arch in ARCHES},
                        )
                    )
    return rows


def bus_bytes() -> dict[str, dict[str, object]]:
    """Bytes per round each way for digits and the 1.86 M MLP on one GPU role (the shadow)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from gpu_models import SOLO
    from scale_models import MODELS, alpha_source

    digits = (ROOT / "examples" / "digits.alpha").read_text()
    digits = digits.replace('"data/', f'"{ROOT}/examples/data/')
    systems = {"digits": digits, "mlp_1.86M": alpha_source(MODELS["784-1024-1024-10"], 2)}
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, text in systems.items():
            name = re.search(r"system (\w+)", text)
            assert name
            path = Path(tmp) / f"{label}.alpha"
            path.write_text(text + SOLO.format(name=name.group(1), profile="h200"))
            done = subprocess.run(
                [sys.executable, "-m", "alpha_cli.main", "run", str(path), "--plan", "solo"]
                + ["--pairing", "one_gpu", "--gpu-shadow", "--json", "-o", f"{tmp}/{label}"],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=1800,
            )
            report = json.loads(done.stdout)
            role = report["roles"][0]
            out[label] = {
                "to_device_per_round": role["to_device_per_round"],
                "to_host_per_round": role["to_host_per_round"],
                "params_sha256": role["params_sha256"],
            }
    return out


def _regs(row: KernelRow) -> str:
    return " / ".join(str(row.resources[a].registers) for a in ARCHES)


def local_bytes(row: KernelRow) -> str:
    """Local memory per arch, "sm_80 / sm_90": stack frame plus spill stores and loads."""
    each = (
        row.resources[a].stack + row.resources[a].spill_stores + row.resources[a].spill_loads
        for a in ARCHES
    )
    return " / ".join("0" if w == 0 else f"{w} B" for w in each)


def markdown(rows: list[KernelRow]) -> str:
    lines = [
        "| kernel | tile (BMxBN, BK, TMxTN) | arithmetic | registers sm_80 / sm_90 | "
        "stack + spills sm_80 / sm_90 | shared | global B per multiply-add |",
        "|---|---|---|---:|---|---:|---:|",
    ]
    for r in rows:
        t = r.tile
        res = r.resources[ARCHES[0]]
        lines.append(
            f"| {r.what} | {t.name} ({t.bm}x{t.bn}, {t.bk}, {t.tm}x{t.tn}) | "
            f"{'fused' if r.fused else 'unfused'} | {_regs(r)} | "
            f"{local_bytes(r)} | {res.shared} B | "
            f"{r.bytes_per_muladd:.4g} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-runs", action="store_true", help="leave out the bus bytes")
    args = parser.parse_args()
    rows = tile_rows() + example_rows()
    if args.markdown:
        print(markdown(rows))
    else:
        for r in rows:
            print(
                json.dumps(
                    {
                        "kernel": r.what,
                        "tile": r.tile.name,
                        "fused": r.fused,
                        "bytes_per_muladd": r.bytes_per_muladd,
                        **{a: r.resources[a].__dict__ for a in ARCHES},
                    }
                )
            )
    if not args.no_runs:
        print(json.dumps(bus_bytes(), indent=1))


if __name__ == "__main__":
    main()
