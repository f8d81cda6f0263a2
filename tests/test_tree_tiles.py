"""Trees of short products in registers (alpha_core/codegen/tree_tiles.py), called directly.

The compiler's own `GemmEmitter.call_tree` is emitted for each target, linked with the runtime's
thread pool and a small C driver, and run on inputs that carry what the exactness contract is
about at the edges: products of -0.0 (a row of A all negative against a column of B all +0.0,
whose sum from +0.0 is +0.0 where a sum from the first product would be -0.0), a NaN with a
payload, infinities, tiles cut at every edge (rows that fill no tile, columns that fill no
vector) and trees that are not powers of two. Every output's bits must be those of the NumPy
float32 reference: each leaf's sum from +0.0 in ascending p, the leaves added by the canonical
tree, at 1 and 3 threads; a NaN must be a NaN, with any payload (LLVM treats an addition as
commutative and leaves open which of two NaNs it keeps: measured, AVX2 and SSE keep different
ones here). One shape of longer leaves takes the blocked path and must agree too.
"""

from __future__ import annotations

import shutil
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
from alpha_core.codegen.tree_tiles import TREE_TILE_MAX_K, tile_rows
from alpha_core.link.toolchain import link_kernels_driver
from alpha_core.lower.tree import tree_combine

# (leaves, m, n, k): m rows of C (A is k x m per leaf, stored transposed as the gradients read
# it), n columns (B is k x n per leaf, row-major)
SHAPES = (
    (8, 37, 45, 1),
    (7, 29, 70, 3),
    (5, 8, 16, 8),
    (1, 13, 17, 1),
    (16, 20, 33, 2),
    (4, 240, 64, 1),
    (3, 11, 40, 12),  # longer leaves: the blocked tree
)

DRIVER = (
    PRELUDE
    + r"""
void tree_run(int32_t shape, float *c, const float *a, const float *b);

int main(int argc, char **argv)
{
    /* threads shape a.bin b.bin c_floats out.bin */
    pool_start((unsigned)atoi(argv[1]));
    long na, nb, nc = atol(argv[5]);
    float *a = slurp(argv[3], &na), *b = slurp(argv[4], &nb);
    float *c = calloc((size_t)nc + 16, 4);
    tree_run(atoi(argv[2]), c, a, b);
    return spill(argv[6], c, nc);
}
"""
)


def _module(host: HostTarget) -> ir.Module:
    mod = ir.Module(name="test.tree_tiles")
    mod.triple = host.triple
    gemm = GemmEmitter(mod, blocking_of(host.triple, host.cpu, host.features))
    run = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I32, PTR, PTR, PTR]), "tree_run")
    shape, c, a, bm = run.args

    def case(b: ir.IRBuilder, i: int) -> None:
        leaves, m, n, k = SHAPES[i]
        gemm.call_tree(b, c, a, bm, m, n, k, (1, m), (n, 1), leaves, (k * m, k * n))

    shape_switch(run, shape, len(SHAPES), case)
    gemm.finish()
    return mod


def _build(host: HostTarget, work: Path) -> Path:
    return link_kernels_driver(host.zig, object_code(_module(host), host), DRIVER, work, "tree")


def _inputs(leaves: int, m: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((leaves, k, m)).astype(np.float32)  # A_l[i, p] at a[l, p, i]
    bm = rng.standard_normal((leaves, k, n)).astype(np.float32)
    a[rng.random(a.shape) < 0.2] = 0.0
    bm[rng.random(bm.shape) < 0.2] = 0.0
    a[:, :, 0] = -np.abs(a[:, :, 0]) - 1.0  # row 0 of C: negative times ...
    bm[:, :, 0] = 0.0  # ... +0.0: every product -0.0, the sum from +0.0 is +0.0
    a[0, 0, m - 1] = np.frombuffer(np.uint32(0x7FC12345).tobytes(), np.float32)[0]  # a NaN
    bm[-1, -1, n - 1] = np.inf
    return a, bm


def _reference(a: np.ndarray, bm: np.ndarray) -> np.ndarray:
    leaves, k, m = a.shape
    n = bm.shape[2]
    sums = []
    with np.errstate(invalid="ignore", over="ignore"):
        for leaf in range(leaves):
            acc = np.zeros((m, n), np.float32)
            for p in range(k):
                acc = acc + np.outer(a[leaf, p], bm[leaf, p]).astype(np.float32)
            sums.append(acc)
        return tree_combine(sums, lambda left, right: (left + right).astype(np.float32))


def _check(exe: list[str], tmp_path: Path) -> None:
    for i, (leaves, m, n, k) in enumerate(SHAPES):
        a, bm = _inputs(leaves, m, n, k, seed=i)
        (tmp_path / "a.bin").write_bytes(a.tobytes())
        (tmp_path / "b.bin").write_bytes(bm.tobytes())
        want = _reference(a, bm)
        assert want[0].view(np.uint32)[0] == 0  # +0.0, not -0.0
        assert np.isnan(want).any() and np.isinf(want).any()
        for threads in (1, 3):
            out = tmp_path / "c.bin"
            args = [str(threads), str(i), str(tmp_path / "a.bin"), str(tmp_path / "b.bin")]
            subprocess.run([*exe, *args, str(m * n), str(out)], check=True, timeout=300)
            got = np.frombuffer(out.read_bytes(), np.float32).reshape(m, n)
            same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
            differ = np.argwhere(~same)
            assert differ.size == 0, (leaves, m, n, k, threads, differ[:5].tolist())


def test_shapes_cover_both_paths_and_partial_tiles() -> None:
    host = TARGETS["x86_64"]
    tile = blocking_of(host.triple, "x86-64-v3", host.features)
    short = [s for s in SHAPES if s[3] <= TREE_TILE_MAX_K]
    assert short and len(short) < len(SHAPES)
    assert any(m % tile_rows(tile.registers, leaves) for leaves, m, _, _ in short)
    assert any(n % tile.width for _, _, n, _ in short)
    assert any(leaves & (leaves - 1) for leaves, _, _, _ in short)


@pytest.mark.parametrize("cpu", ["x86-64-v2", "x86-64-v3", "x86-64-v4"])
def test_register_trees_have_the_reference_bits(cpu: str, tmp_path: Path) -> None:
    host = TARGETS["x86_64"]
    host = HostTarget(host.name, host.triple, host.zig, cpu, host.features)
    if not runs_here(cpu):
        assert_code_for(cpu, assembly(_module(host), host))
        return
    _check([str(_build(host, tmp_path / "build"))], tmp_path)


def test_register_trees_have_the_reference_bits_on_aarch64(tmp_path: Path) -> None:
    assert shutil.which("qemu-aarch64"), "this test needs qemu-aarch64 (apt: qemu-user)"
    _check(["qemu-aarch64", str(_build(TARGETS["aarch64"], tmp_path / "build"))], tmp_path)
