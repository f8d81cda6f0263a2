"""The packed GEMM (alpha_core/codegen/gemm.py) called directly, on every layout of A it packs:
read along p (A·B and A·Bᵀ: A read in place at its own row stride, only a last partial panel
copied, where its rows are long and spread over L1; otherwise A's panels are its rows copied as
they are, `packing.pack_rows`) and read across p (Aᵀ·B: k-major panels), in both
arithmetics, with a bias row added as the sums are stored (`GemmEmitter.call`'s row,
sum_folds.py).

Shapes cut tiles at every edge (rows that fill no tile of either height, columns that fill no
vector, k that fills no block) and pass KC so that partial sums go back to C between blocks of
p; the inputs carry a sum whose terms are all -0.0 (from +0.0 it is +0.0), a NaN and an
infinity. Every output's bits must be those of the NumPy float32 reference (each sum from +0.0
in ascending p, a separate multiply and add or one fma, then + the row), at 1 and 3 threads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_code_for, runs_here
from kernel_drivers import PRELUDE, shape_switch
from llvmlite import ir

from alpha_core.codegen.gemm import GemmEmitter
from alpha_core.codegen.loops import I32, PTR
from alpha_core.codegen.target import TARGETS, HostTarget, assembly, object_code
from alpha_core.codegen.tiles import blocking_of
from alpha_core.link.toolchain import link_kernels_driver
from alpha_core.semantics.numpy_fma import fma32

# (m, n, k, layout): layout nn (A m x k), tn (A stored k x m), nt (B stored n x k)
SHAPES = (
    (300, 40, 256, "nn"),
    (100, 72, 40, "nn"),
    (37, 45, 300, "nn"),
    (300, 40, 70, "nt"),
    (61, 33, 530, "tn"),
    (8, 16, 16, "nn"),
    (270, 17, 9, "nn"),
)

DRIVER = (
    PRELUDE
    + r"""
void gemm_run(int32_t shape, float *c, const float *a, const float *b, const float *row);

int main(int argc, char **argv)
{
    /* threads shape a.bin b.bin row.bin c_floats out.bin */
    pool_start((unsigned)atoi(argv[1]));
    long na, nb, nr, nc = atol(argv[6]);
    float *a = slurp(argv[3], &na), *b = slurp(argv[4], &nb), *row = slurp(argv[5], &nr);
    float *c = calloc((size_t)nc + 16, 4);
    gemm_run(atoi(argv[2]), c, a, b, row);
    return spill(argv[7], c, nc);
}
"""
)


def _strides(m: int, n: int, k: int, layout: str) -> tuple[tuple[int, int], tuple[int, int]]:
    a = (1, m) if layout == "tn" else (k, 1)
    b = (1, k) if layout == "nt" else (n, 1)
    return a, b


def _module(host: HostTarget, fused: bool) -> tuple[ir.Module, GemmEmitter]:
    mod = ir.Module(name="test.gemm_layouts")
    mod.triple = host.triple
    gemm = GemmEmitter(mod, blocking_of(host.triple, host.cpu, host.features, fused), fused)
    fnty = ir.FunctionType(ir.VoidType(), [I32, PTR, PTR, PTR, PTR])
    run = ir.Function(mod, fnty, "gemm_run")
    shape, c, a, bm, row = run.args

    def case(b: ir.IRBuilder, i: int) -> None:
        m, n, k, layout = SHAPES[i]
        sa, sb = _strides(m, n, k, layout)
        gemm.call(b, c, a, bm, m, n, k, sa, sb, None, row if i % 2 == 0 else None)

    shape_switch(run, shape, len(SHAPES), case)
    gemm.finish()
    return mod, gemm


def _inputs(m: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    bm = rng.standard_normal((k, n)).astype(np.float32)
    a[rng.random(a.shape) < 0.2] = 0.0
    a[0, :] = -np.abs(a[0, :]) - 1.0  # row 0 of A negative ...
    bm[:, 0] = 0.0  # ... against a column of +0.0: every term -0.0, the sum +0.0
    a[m - 1, 0] = np.frombuffer(np.uint32(0x7FC12345).tobytes(), np.float32)[0]
    bm[k - 1, n - 1] = np.inf
    row = rng.standard_normal(n).astype(np.float32)
    row[0] = 0.0
    return a, bm, row


def _reference(a: np.ndarray, bm: np.ndarray, row: np.ndarray | None, fused: bool) -> np.ndarray:
    m, k = a.shape
    acc = np.zeros((m, bm.shape[1]), np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for p in range(k):
            x, y = np.broadcast_arrays(a[:, p : p + 1], bm[p : p + 1, :])
            acc = fma32(x, y, acc) if fused else (acc + (x * y).astype(np.float32))
        return acc if row is None else (acc + row).astype(np.float32)


def _check(exe: Path, fused: bool, tmp_path: Path) -> None:
    for i, (m, n, k, layout) in enumerate(SHAPES):
        a, bm, row = _inputs(m, n, k, seed=i)
        stored_a = a.T.copy() if layout == "tn" else a
        stored_b = bm.T.copy() if layout == "nt" else bm
        (tmp_path / "a.bin").write_bytes(stored_a.tobytes())
        (tmp_path / "b.bin").write_bytes(stored_b.tobytes())
        (tmp_path / "r.bin").write_bytes(row.tobytes())
        want = _reference(a, bm, row if i % 2 == 0 else None, fused)
        assert want[0, 0].view(np.uint32) == (0 if i % 2 else row[0].view(np.uint32))
        for threads in (1, 3):
            out = tmp_path / "c.bin"
            files = [str(tmp_path / f) for f in ("a.bin", "b.bin", "r.bin")]
            cmd = [str(exe), str(threads), str(i), *files, str(m * n), str(out)]
            subprocess.run(cmd, check=True, timeout=300)
            got = np.frombuffer(out.read_bytes(), np.float32).reshape(m, n)
            same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
            differ = np.argwhere(~same)
            assert differ.size == 0, (m, n, k, layout, threads, differ[:5].tolist())


@pytest.mark.parametrize(
    "cpu, fused",
    [("x86-64-v2", False), ("x86-64-v3", False), ("x86-64-v4", False)]
    + [("x86-64-v3", True), ("x86-64-v4", True)],
)
def test_every_layout_of_a_has_the_reference_bits(cpu: str, fused: bool, tmp_path: Path) -> None:
    host = TARGETS["x86_64"]
    host = HostTarget(host.name, host.triple, host.zig, cpu, host.features)
    mod, gemm = _module(host, fused)
    # A's row strides 256 (four L1 sets: at most 16 rows, so AVX-512's 24-row tile hands the
    # product to its 8-row one), 300 (three blocks of p) and 70 read in place; rows of 40, 16
    # and 9 floats are copied (under IN_PLACE_FROM); the Aᵀ·B product's A is read across p
    tall = gemm.k.mr
    short = tall if tall <= 16 else gemm.k.small_mr
    assert gemm.row_strides == {256: short, 300: tall, 70: tall}
    assert "alpha.gemm.block" in str(mod) and any(
        f.name.startswith("alpha.gemm.kernel") and f.name.endswith("r") for f in mod.functions
    )
    if not runs_here(cpu):
        assert_code_for(cpu, assembly(mod, host))
        return
    exe = link_kernels_driver(host.zig, object_code(mod, host), DRIVER, tmp_path / "b", "gemm")
    _check(exe, fused, tmp_path)


def test_a_is_read_in_place_only_where_its_rows_spread_over_l1() -> None:
    """Rows 4 KiB apart (1,024 floats) share one L1 set: packed; 2 KiB two and 1 KiB four: read
    in place by the 8-row tile only (four rows a set); 512 bytes apart they fall in eight sets,
    and a stride of no whole line in all: the 24-row tile."""
    host = TARGETS["x86_64"]
    mod = ir.Module(name="test.in_place")
    mod.triple = host.triple
    gemm = GemmEmitter(mod, blocking_of(host.triple, "x86-64-v4", host.features))
    run = ir.Function(mod, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR]), "run")
    b = ir.IRBuilder(run.append_basic_block("entry"))
    c, a, bm = run.args
    for stride in (1024, 512, 256, 128, 100, 128):
        gemm.call(b, c, a, bm, 64, 64, 100, (stride, 1), (64, 1))
    b.ret_void()
    gemm.finish()
    assert gemm.row_strides == {512: 8, 256: 8, 128: 24, 100: 24}
