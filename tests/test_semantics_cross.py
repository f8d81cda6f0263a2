"""The recipes on other instruction sets: AArch64 (run under qemu) and NVPTX (inspected).

The claim is that the *same* bits come out on x86-64, AArch64 and GPUs.  AArch64 code is
built into a static musl executable with ``zig cc`` and run under ``qemu-aarch64`` when it
is installed (skipped otherwise); its outputs must equal the NumPy reference bit for bit.
Without a GPU, the PTX is inspected: it must use only correctly rounded ``.rn``
operations, never a fused multiply-add or an approximate division.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from llvmlite import ir

from alpha_core.semantics import llvm_arith, mathfuncs, rng, rng_llvm
from alpha_core.semantics.harness import emit_unary_kernel, optimise, target_machine

NAMES = list(mathfuncs.RECIPES)
INITS = [("uniform", (-0.5, 0.5), 11), ("normal", (0.0, 0.1), 2**63 + 5)]
FUSED_AARCH64 = re.compile(r"^\s+(fmadd|fmsub|fnmadd|fnmsub|fmla|fmls|fmad|fmsb)\b", re.M)

DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
%(decls)s
static void dump(const char *dir, const char *name, const float *v, int64_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%%s/%%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, sizeof(float), (size_t)n, f) != (size_t)n) exit(2);
    fclose(f);
}
int main(int argc, char **argv) {
    if (argc != 4) return 1;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 3;
    int64_t n = 0, cap = 1 << 20;
    float *x = malloc(cap * sizeof(float));
    size_t got;
    while ((got = fread(x + n, sizeof(float), (size_t)(cap - n), f)) > 0) {
        n += (int64_t)got;
        if (n == cap) { cap *= 2; x = realloc(x, cap * sizeof(float)); }
    }
    fclose(f);
    int64_t count = atoll(argv[3]);
    float *y = malloc((n > count ? n : count) * sizeof(float) + 4);
%(calls)s
    return 0;
}
"""


def _module() -> ir.Module:
    module = ir.Module(name="semantics_cross")
    for name, fn in llvm_arith.emit_math_functions(module).items():
        emit_unary_kernel(module, f"k_{name}", fn)
    for i, (kind, params, seed) in enumerate(INITS):
        rng_llvm.emit_init_function(module, f"init_{i}", kind, params, seed)
    return module


def _inputs() -> np.ndarray:
    g = np.random.default_rng(99)
    return np.concatenate(
        [
            np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45], dtype=np.float32),
            g.integers(0, 2**32, 60_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
            g.uniform(-105, 90, 60_000).astype(np.float32),
            g.uniform(-1, 1, 30_000).astype(np.float32),
        ]
    )


@pytest.mark.skipif(shutil.which("qemu-aarch64") is None, reason="qemu-aarch64 not installed")
def test_aarch64_bits_match_numpy(tmp_path: Path) -> None:
    tm = target_machine("aarch64-unknown-linux-musl", cpu="neoverse-v1")
    obj = tmp_path / "kernels.o"
    obj.write_bytes(tm.emit_object(optimise(_module(), tm)))
    decls = "\n".join(
        [f"void k_{n}(const float *, float *, int64_t);" for n in NAMES]
        + [f"void init_{i}(float *, int64_t, int64_t);" for i in range(len(INITS))]
    )
    calls = "\n".join(
        [f'    k_{n}(x, y, n); dump(argv[2], "{n}", y, n);' for n in NAMES]
        + [
            f'    init_{i}(y, count, 1000); dump(argv[2], "init_{i}", y, count);'
            for i in range(len(INITS))
        ]
    )
    driver = tmp_path / "driver.c"
    driver.write_text(DRIVER % {"decls": decls, "calls": calls})
    exe = tmp_path / "role"
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-linux-musl"]
    subprocess.run([*zig, "-O2", "-ffp-contract=off", str(driver), str(obj), "-o", str(exe)],
                   check=True)  # fmt: skip
    x = _inputs()
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    count = 50_000
    subprocess.run(
        ["qemu-aarch64", str(exe), str(tmp_path / "in.bin"), str(tmp_path), str(count)],
        check=True,
        timeout=300,
    )
    for name in NAMES:
        got = np.fromfile(tmp_path / f"{name}.bin", dtype=np.float32)
        want = mathfuncs.numpy_math(name, x)
        ok = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert ok.all(), f"{name}: {(~ok).sum()} mismatches, first at x={x[~ok][:5]}"
    for i, (kind, params, seed) in enumerate(INITS):
        got = np.fromfile(tmp_path / f"init_{i}.bin", dtype=np.float32)
        want = rng.numpy_init(kind, params, seed, count, first_index=1000)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), kind


def test_aarch64_code_has_no_fused_multiply_add() -> None:
    for cpu in ("generic", "neoverse-v1"):
        tm = target_machine("aarch64-unknown-linux-gnu", cpu=cpu)
        asm = tm.emit_assembly(optimise(_module(), tm))
        assert "fdiv" in asm and "fmul" in asm
        assert not FUSED_AARCH64.search(asm), FUSED_AARCH64.search(asm)


def test_ptx_uses_only_correctly_rounded_operations() -> None:
    module = _module()
    for fn in module.functions:
        if fn.name.startswith(("k_", "init_")):
            fn.calling_convention = "ptx_kernel"
    tm = target_machine("nvptx64-nvidia-cuda", cpu="sm_90", features="+ptx80")
    ptx = tm.emit_assembly(optimise(module, tm))
    assert ".version 8.0" in ptx
    float_ops = re.findall(r"\b((?:add|sub|mul|div|sqrt|rcp|fma|mad|ex2|lg2)\.[\w.]*f32)", ptx)
    assert float_ops, "no float arithmetic found"
    for op in set(float_ops):
        assert not op.startswith(("fma", "mad", "ex2", "lg2")), op
        assert ".rn" in op, op  # correctly rounded: no .approx / .full division
        assert ".ftz" not in op, op  # subnormals kept
