"""The last-two-axes transpose (alpha_core/codegen/transpose.py), compiled for this host and
called through ctypes: every element equals NumPy's transpose, bit for bit, both in 8 x 8
register blocks (both axes multiples of 8) and element by element (any other shape)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from llvmlite import ir

from alpha_core.codegen.loops import PTR
from alpha_core.codegen.transpose import emit_transpose
from alpha_core.semantics.harness import build_shared

SHAPES = [(1, 8, 8), (3, 16, 24), (64, 64, 32), (2, 5, 7), (1, 8, 12), (4, 1, 9)]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    module = ir.Module(name="transpose_test")
    for index, (lead, m, n) in enumerate(SHAPES):
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR]), f"t{index}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        emit_transpose(b, fn.args[0], fn.args[1], lead, m, n)
        b.ret_void()
    out: Path = tmp_path_factory.mktemp("transpose")
    return ctypes.CDLL(str(build_shared(module, out, "transpose")))


@pytest.mark.parametrize("index", range(len(SHAPES)))
def test_transpose_equals_numpy(library: ctypes.CDLL, index: int) -> None:
    lead, m, n = SHAPES[index]
    rng = np.random.default_rng(index)
    a = rng.standard_normal((lead, m, n)).astype(np.float32)
    a.flat[::7] = -0.0  # signed zeros and a NaN payload travel as bits
    a.flat[3] = np.frombuffer(np.uint32(0x7FC01234).tobytes(), np.float32)[0]
    out = np.full((lead, n, m), 7.0, np.float32)
    fn = getattr(library, f"t{index}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    fn(a.ctypes.data, out.ctypes.data)
    want = np.ascontiguousarray(np.swapaxes(a, 1, 2))
    assert out.tobytes() == want.tobytes()
