"""Convolutions as products (alpha_core/codegen/conv_gemm.py), called directly.

conv2d and both adjoints, emitted on the packed GEMM for shapes that take it (stride 1 and 2,
padding 0 and 1, kernels 3 and 5, channels that are no multiple of any tile, more than one
block of k so that a block resumes from the partial sums in the output, more than one block of
columns, more rows than a block of MC holds on SSE), linked with the runtime's thread pool and a
small C driver, and run at 1 and 3 threads. Every output's bits must be those of the NumPy
float32 reference (tests/reference_conv.py): each sum from +0.0 in §5's order, a padded term
skipped. Inputs hold zeros, -0.0 and sums that cancel, so a sum that went -0.0 would show.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_code_for, runs_here
from kernel_drivers import PRELUDE
from llvmlite import ir
from reference import Mode
from reference_conv import conv

from alpha_core.codegen.conv_gemm import emit_conv_product
from alpha_core.codegen.gemm import GemmEmitter
from alpha_core.codegen.loops import I32, PTR
from alpha_core.codegen.target import TARGETS, HostTarget, assembly, object_code
from alpha_core.codegen.tiles import blocking_of
from alpha_core.ir.conv import Window
from alpha_core.ir.graph import Node
from alpha_core.link.toolchain import link_kernels_driver
from alpha_core.lower.blocking import blocking_for
from alpha_core.lower.conv_gemm import on_gemm

# (B, C, H, W, O, k, stride, padding)
SHAPES = (
    (3, 5, 13, 13, 19, 3, 1, 1),
    (4, 7, 21, 21, 22, 3, 2, 0),
    (2, 3, 30, 30, 13, 5, 2, 1),
    (2, 40, 18, 18, 30, 3, 1, 0),  # k = 360 and 270: blocks of k; 256 positions: column blocks
    (1, 4, 12, 12, 100, 3, 1, 1),  # 100 rows of dw: two row blocks on SSE
    (1, 100, 8, 8, 6, 3, 1, 1),  # 100 rows of dx
    (3, 6, 21, 26, 17, 3, 2, 1),  # not square
    (2, 3, 17, 17, 9, 5, 1, 2),  # stride 1, k 5: the gather's loop once per kw (CONSTANT_KW)
    (2, 3, 16, 16, 9, 7, 1, 3),  # stride 1, k 7: wider than CONSTANT_KW, one loop for all kw
)
OPS = ("conv2d", "conv2d_dx", "conv2d_dw")

DRIVER = (
    PRELUDE
    + r"""
void conv_run(int32_t which, float *out, const float *a, const float *b);

int main(int argc, char **argv)
{
    /* threads which a.bin b.bin out_floats out.bin */
    pool_start((unsigned)atoi(argv[1]));
    long n = atol(argv[5]), na, nb;
    float *a = slurp(argv[3], &na), *b = slurp(argv[4], &nb);
    float *out = malloc((size_t)n * 4 + 64);
    for (long i = 0; i < n; i++) out[i] = 12345.0f; /* every output must be written */
    conv_run(atoi(argv[2]), out, a, b);
    return spill(argv[6], out, n);
}
"""
)


def _shapes(
    shape: tuple[int, ...], op: str
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(out, first input, second input) of one op."""
    bn, c, h, w, o, k, s, p = shape
    oh, ow = Window(k, k, s, p).out_size(h, w)
    x, kern, y = (bn, c, h, w), (o, c, k, k), (bn, o, oh, ow)
    return {"conv2d": (y, x, kern), "conv2d_dx": (x, y, kern), "conv2d_dw": (kern, x, y)}[op]


def _node(shape: tuple[int, ...], op: str) -> Node:
    _, _, _, _, _, k, s, p = shape
    return Node(op, (0, 1), _shapes(shape, op)[0], Window(k, k, s, p).attrs())


def _cases() -> list[tuple[tuple[int, ...], str]]:
    return [(shape, op) for shape in SHAPES for op in OPS]


def _module(host: HostTarget, fused: bool = False) -> ir.Module:
    mod = ir.Module(name="test.conv_gemm")
    mod.triple = host.triple
    gemm = GemmEmitter(mod, blocking_of(host.triple, host.cpu, host.features, fused), fused)
    run = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I32, PTR, PTR, PTR]), "conv_run")
    which, out, a, bm = run.args
    b = ir.IRBuilder(run.append_basic_block("entry"))
    done = run.append_basic_block("done")
    switch = b.switch(which, done)
    for i, (shape, op) in enumerate(_cases()):
        block = run.append_basic_block(f"c{i}")
        switch.add_case(ir.Constant(I32, i), block)
        b.position_at_end(block)
        emit_conv_product(gemm, b, _node(shape, op), _shapes(shape, op), (out, a, bm))
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    gemm.finish()
    return mod


def _inputs(shapes: tuple[tuple[int, ...], ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    values = []
    for shape in shapes[1:]:
        v = rng.standard_normal(shape).astype(np.float32)
        v[rng.random(shape) < 0.15] = 0.0
        v[rng.random(shape) < 0.05] = -0.0
        values.append(v)
    return values


def _check(exe: list[str], tmp: Path, threads: tuple[int, ...], fused: bool = False) -> None:
    for i, (shape, op) in enumerate(_cases()):
        shapes = _shapes(shape, op)
        a, bm = _inputs(shapes, seed=i)
        (tmp / "a.bin").write_bytes(a.tobytes())
        (tmp / "b.bin").write_bytes(bm.tobytes())
        want = conv(_node(shape, op), [a, bm], shapes[0], Mode(np.float32, fused=fused))
        n = int(np.prod(shapes[0]))
        for t in threads:
            args = [str(t), str(i), str(tmp / "a.bin"), str(tmp / "b.bin"), str(n)]
            subprocess.run([*exe, *args, str(tmp / "c.bin")], check=True, timeout=300)
            got = np.frombuffer((tmp / "c.bin").read_bytes(), np.float32).reshape(shapes[0])
            differ = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
            assert differ.size == 0, (shape, op, t, differ[:5].tolist())


def test_every_case_takes_the_gemm_and_covers_its_edges() -> None:
    for shape, op in _cases():
        out, x, y = _shapes(shape, op)
        assert on_gemm(op, out, (x, y)), (shape, op)
    sse, v4 = blocking_for(4, 16), blocking_for(16, 32)
    assert any(s[1] * s[5] ** 2 > sse.kc for s in SHAPES)  # k in more than one block
    assert any(s[4] * s[5] ** 2 > v4.kc for s in SHAPES)
    assert any(s[4] > sse.mc for s in SHAPES) and any(s[1] > sse.mc for s in SHAPES)
    assert {(s[6], s[7]) for s in SHAPES} >= {(1, 0), (1, 1), (2, 0), (2, 1)}


@pytest.mark.parametrize("cpu", ["x86-64-v2", "x86-64-v3", "x86-64-v4"])
def test_convolutions_on_the_gemm_have_the_reference_bits(cpu: str, tmp_path: Path) -> None:
    host = TARGETS["x86_64"]
    host = HostTarget(host.name, host.triple, host.zig, cpu, host.features)
    if not runs_here(cpu):
        assert_code_for(cpu, assembly(_module(host), host))
        return
    exe = link_kernels_driver(
        host.zig, object_code(_module(host), host), DRIVER, tmp_path / "build", "conv"
    )
    _check([str(exe)], tmp_path, (1, 3))


def test_convolutions_on_the_gemm_have_the_reference_bits_on_aarch64(tmp_path: Path) -> None:
    assert shutil.which("qemu-aarch64"), "this test needs qemu-aarch64 (apt: qemu-user)"
    host = TARGETS["aarch64"]
    exe = link_kernels_driver(
        host.zig, object_code(_module(host), host), DRIVER, tmp_path / "build", "conv"
    )
    _check(["qemu-aarch64", str(exe)], tmp_path, (2,))


@pytest.mark.parametrize("cpu", ["x86-64-v3", "x86-64-v4"])
def test_fused_convolutions_on_the_gemm_have_the_fused_reference_bits(
    cpu: str, tmp_path: Path
) -> None:
    """`arithmetic fused`: each term one fma, in the same orders (docs/semantics.md §6)."""
    host = TARGETS["x86_64"]
    host = HostTarget(host.name, host.triple, host.zig, cpu, host.features)
    if not runs_here(cpu):
        assert_code_for(cpu, assembly(_module(host, fused=True), host))
        return
    exe = link_kernels_driver(
        host.zig, object_code(_module(host, fused=True), host), DRIVER, tmp_path / "b", "conv"
    )
    _check([str(exe)], tmp_path, (1, 3), fused=True)
