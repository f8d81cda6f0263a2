"""Bit identity: the compiled recipes (llvmlite, O3, vectorised) equal the NumPy reference.

The module is compiled once per test module (fixture scope="module") into a host shared
library with ``zig cc`` and called through ctypes on ~1e6 inputs chosen to cover every
regime of every recipe: all exponents, subnormals, ±0, ±inf, NaNs, the clamp and
threshold boundaries.  Results must have identical bits (two NaNs count as equal: NaN
payloads are not part of the semantics).
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir

from alpha_core.semantics import llvm_arith, mathfuncs, rng, rng_llvm
from alpha_core.semantics.arith import Arith
from alpha_core.semantics.harness import build_shared, emit_unary_kernel, unary_caller
from alpha_core.semantics.llvm_arith import F32, I32, I64, LlvmArith
from alpha_core.semantics.numpy_arith import NumpyArith

NAMES = list(mathfuncs.RECIPES)
INIT_CASES = [
    ("uniform", (-0.1, 0.1), 1),
    ("uniform", (0.0, 1.0), 12345678901234567890),
    ("normal", (0.0, 1.0), 42),
    ("normal", (0.5, 0.02), 7),
    ("constant", (0.1,), 3),
]

# Binary primitives of Arith, exercised directly.  Each maps two 32-bit inputs to a 32-bit
# output; "f"/"i" says how the 32 bits are typed.
BinOp = Callable[[Arith[Any, Any, Any], Any, Any], Any]
PRIMITIVES: dict[str, tuple[str, str, str, BinOp]] = {
    "add": ("f", "f", "f", lambda A, a, b: A.add(a, b)),
    "sub": ("f", "f", "f", lambda A, a, b: A.sub(a, b)),
    "mul": ("f", "f", "f", lambda A, a, b: A.mul(a, b)),
    "div": ("f", "f", "f", lambda A, a, b: A.div(a, b)),
    "neg": ("f", "f", "f", lambda A, a, b: A.neg(a)),
    "sqrt": ("f", "f", "f", lambda A, a, b: A.sqrt(a)),
    "sel_lt": ("f", "f", "f", lambda A, a, b: A.select(A.lt(a, b), a, b)),
    "sel_le": ("f", "f", "f", lambda A, a, b: A.select(A.le(a, b), b, a)),
    "sel_gt": ("f", "f", "f", lambda A, a, b: A.select(A.gt(a, b), a, b)),
    "sel_ge": ("f", "f", "f", lambda A, a, b: A.select(A.ge(a, b), b, a)),
    "sel_eq": ("f", "f", "f", lambda A, a, b: A.select(A.eq(a, b), a, A.const(7.0))),
    "bits": ("f", "f", "i", lambda A, a, b: A.bits(a)),
    "from_bits": ("i", "i", "f", lambda A, a, b: A.from_bits(a)),
    "itof": ("i", "i", "f", lambda A, a, b: A.itof(a)),
    "ftoi": ("f", "f", "i", lambda A, a, b: A.ftoi(a)),
    "iadd": ("i", "i", "i", lambda A, a, b: A.iadd(a, b)),
    "isub": ("i", "i", "i", lambda A, a, b: A.isub(a, b)),
    "iand": ("i", "i", "i", lambda A, a, b: A.iand(a, b)),
    "ior": ("i", "i", "i", lambda A, a, b: A.ior(a, b)),
    "ishl7": ("i", "i", "i", lambda A, a, b: A.ishl(a, 7)),
    "ishr9": ("i", "i", "i", lambda A, a, b: A.ishr(a, 9)),
    "iselect": ("f", "i", "i", lambda A, a, b: A.iselect(A.lt(a, A.const(0.0)), b, A.iconst(5))),
}


def _emit_binary_kernel(module: ir.Module, name: str, spec: tuple[str, str, str, BinOp]) -> None:
    """``void name(const u32* a, const u32* b, u32* out, i64 n)`` applying one primitive."""
    ta, tb, tout, op = spec
    ty = {"f": F32, "i": I32}
    ptr = ir.PointerType()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, I64]), name=name)
    a, b, out, n = fn.args
    entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
    bld = ir.IRBuilder(entry)
    bld.cbranch(bld.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)
    bld.position_at_end(loop)
    i = bld.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), entry)
    va = bld.load(bld.gep(a, [i], source_etype=ty[ta]), typ=ty[ta])
    vb = bld.load(bld.gep(b, [i], source_etype=ty[tb]), typ=ty[tb])
    r = op(LlvmArith(bld), va, vb)
    bld.store(r, bld.gep(out, [i], source_etype=ty[tout]))
    nxt = bld.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, loop)
    bld.cbranch(bld.icmp_signed("<", nxt, n), loop, done)
    bld.position_at_end(done)
    bld.ret_void()


def _emit_dynamic_seed_init(module: ir.Module, name: str, kind: str, params: Any) -> None:
    """``void name(float* out, i64 count, i64 first_index, i64 seed)``: seed at run time."""
    fn = ir.Function(
        module, ir.FunctionType(ir.VoidType(), [ir.PointerType(), I64, I64, I64]), name=name
    )
    out, count, first, seed = fn.args
    bld = ir.IRBuilder(fn.append_basic_block("entry"))
    rng_llvm.emit_init(bld, kind, params, seed, out, count, first)
    bld.ret_void()


class Native:
    """The compiled test library and typed callers for its kernels."""

    def __init__(self, lib_path: Path, opt_ir: str) -> None:
        self.lib = ctypes.CDLL(str(lib_path))
        self.opt_ir = opt_ir
        self.math = {n: unary_caller(self.lib, f"k_{n}") for n in NAMES}

    def init(self, idx: int, count: int, first_index: int = 0) -> np.ndarray:
        fn = getattr(self.lib, f"init_{idx}")
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        out = np.full(count, np.float32(-12345.0), dtype=np.float32)
        fn(out.ctypes.data, count, first_index)
        return out

    def init_dyn(self, kind: str, count: int, first_index: int, seed: int) -> np.ndarray:
        fn = getattr(self.lib, f"dyn_{kind}")
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint64]
        out = np.empty(count, dtype=np.float32)
        fn(out.ctypes.data, count, first_index, seed)
        return out

    def primitive(self, name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        fn = getattr(self.lib, f"prim_{name}")
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64]
        a32 = np.ascontiguousarray(a).view(np.uint32)
        b32 = np.ascontiguousarray(b).view(np.uint32)
        out = np.empty(a32.shape, dtype=np.uint32)
        fn(a32.ctypes.data, b32.ctypes.data, out.ctypes.data, a32.size)
        return out


DYN_PARAMS = {"uniform": (-2.0, 3.0), "normal": (0.25, 1.5)}


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Native:
    module = ir.Module(name="semantics_test")
    for name, fn in llvm_arith.emit_math_functions(module).items():
        emit_unary_kernel(module, f"k_{name}", fn)
    for idx, (kind, params, seed) in enumerate(INIT_CASES):
        rng_llvm.emit_init_function(module, f"init_{idx}", kind, params, seed)
    for kind, params in DYN_PARAMS.items():
        _emit_dynamic_seed_init(module, f"dyn_{kind}", kind, params)
    for name, spec in PRIMITIVES.items():
        _emit_binary_kernel(module, f"prim_{name}", spec)
    out = tmp_path_factory.mktemp("semantics_native")
    lib = build_shared(module, out, "semantics")
    return Native(lib, (out / "semantics.opt.ll").read_text())


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: identical bit patterns, or both NaN."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def assert_same_bits(x: np.ndarray, got: np.ndarray, want: np.ndarray, what: str) -> None:
    ok = same_bits(got, want)
    if not ok.all():
        bad = np.flatnonzero(~ok)[:10]
        rows = [
            f"x={x[i]!r} ({x.view(np.uint32)[i]:#010x}) native={got[i]!r} "
            f"({got.view(np.uint32)[i]:#010x}) numpy={want[i]!r} ({want.view(np.uint32)[i]:#010x})"
            for i in bad
        ]
        raise AssertionError(f"{what}: {(~ok).sum()} mismatches, e.g.\n" + "\n".join(rows))


def _around(center: float, ulps: int) -> np.ndarray:
    """The 2*ulps+1 consecutive float32 values centred on ``center`` (crossing zero)."""
    b = int(np.float32(center).view(np.uint32))
    key = -(b & 0x7FFFFFFF) if b >> 31 else b  # monotonic in the float's value
    keys = np.arange(key - ulps, key + ulps + 1, dtype=np.int64)
    bits = np.where(keys < 0, (-keys) | 0x80000000, keys)
    return bits.astype(np.uint32).view(np.float32)


def coverage_inputs(n_random: int = 300_000) -> np.ndarray:
    """About a million float32 values that reach every branch of every recipe."""
    g = np.random.default_rng(20240607)
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 2.0, 0.5,
         np.finfo(np.float32).max, -np.finfo(np.float32).max,
         np.finfo(np.float32).tiny, -np.finfo(np.float32).tiny,
         np.finfo(np.float32).smallest_subnormal, -np.finfo(np.float32).smallest_subnormal],
        dtype=np.float32,
    )  # fmt: skip
    nan_payloads = np.array([0x7F800001, 0xFF800001, 0x7FC12345, 0xFFFFFFFF], dtype=np.uint32)
    pieces = [
        specials,
        nan_payloads.view(np.float32),
        # every bit pattern equally likely: all exponents, subnormals, NaNs
        g.integers(0, 2**32, n_random, dtype=np.uint64).astype(np.uint32).view(np.float32),
        g.uniform(-110.0, 110.0, n_random).astype(np.float32),
        g.uniform(-3.0, 3.0, n_random // 2).astype(np.float32),
        (
            g.choice([-1.0, 1.0], n_random // 2) * np.exp(g.uniform(-104, 88.7, n_random // 2))
        ).astype(np.float32),
    ]
    boundaries = [
        mathfuncs.EXP_LO, mathfuncs.EXP_HI, 88.72283935546875, -87.33654022216797,
        -103.27892990343184, -103.97208, 0.34657359, -0.34657359,
        mathfuncs.TANH_SMALL, -mathfuncs.TANH_SMALL, 9.0, -9.0, 44.0,
        1.0, 0.70710677, 1.4142135, 2.0**-126, -(2.0**-126), 0.0, 1e-30, 5e-5,
    ]  # fmt: skip
    pieces += [_around(c, 2000) for c in boundaries]
    x = np.concatenate(pieces).astype(np.float32)
    assert x.dtype == np.float32
    return x


@pytest.fixture(scope="module")
def inputs() -> np.ndarray:
    return coverage_inputs()


@pytest.mark.parametrize("name", NAMES)
def test_math_bits_match_numpy(native: Native, inputs: np.ndarray, name: str) -> None:
    got = native.math[name](inputs)
    want = mathfuncs.numpy_math(name, inputs)
    assert got.dtype == want.dtype == np.float32
    assert inputs.size > 900_000
    assert_same_bits(inputs, got, want, name)


@pytest.mark.parametrize("name", list(PRIMITIVES))
def test_primitive_bits_match_numpy(native: Native, name: str) -> None:
    g = np.random.default_rng(7)
    n = 200_000
    raw_a = g.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    raw_b = g.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    # mix in ordinary-magnitude floats so arithmetic results are not all inf/0
    raw_a[: n // 2] = g.normal(0, 1e3, n // 2).astype(np.float32).view(np.uint32)
    raw_b[: n // 4] = g.normal(0, 1e3, n // 4).astype(np.float32).view(np.uint32)
    raw_a[:20] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**31, -(2.0**31), 2.0**31 - 128,
                           1e10, -1e10, 0.99, -0.99, 1.5, -1.5, 2.5, 16777217, 2.0**24, 3.0, 0, 0],
                          dtype=np.float32).view(np.uint32)  # fmt: skip
    ta, tb, tout, op = PRIMITIVES[name]
    kinds = {"f": np.float32, "i": np.int32}
    got = native.primitive(name, raw_a, raw_b)
    ref = op(NumpyArith(), raw_a.view(kinds[ta]), raw_b.view(kinds[tb]))
    want = np.broadcast_to(np.asarray(ref), (n,)).view(np.uint32)
    if tout == "f":
        assert_same_bits(raw_a.view(np.float32), got.view(np.float32), want.view(np.float32), name)
    else:
        assert np.array_equal(got, want), name


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False) | st.sampled_from([1e39, -1e39, 2.0**-150, 3.0 * 2.0**-151]))
def test_llvm_constants_round_like_numpy(x: float) -> None:
    c = LlvmArith(ir.IRBuilder()).const(x)
    text = str(c).split()[1]
    with np.errstate(over="ignore"):
        want = float(np.float32(x))
    assert _llvm_hex(text) == want


def _llvm_hex(text: str) -> float:
    """Decode LLVM's ``0x<16 hex digits>`` double literal."""
    return float(np.array([int(text, 16)], dtype=np.uint64).view(np.float64)[0])


def test_compiled_code_has_no_fusion_or_fast_math(native: Native) -> None:
    """O3 with FMA available must still keep every multiply and add separate."""
    opt = native.opt_ir
    assert "<16 x float>" in opt or "<8 x float>" in opt or "<4 x float>" in opt  # vectorised
    for forbidden in ("llvm.fma", "llvm.fmuladd", " fast ", " contract ", " reassoc "):
        assert forbidden not in opt, forbidden
    assert not re.search(r"call .*@(expf|logf|tanhf|exp|log|tanh)\(", opt)


@pytest.mark.parametrize("idx", range(len(INIT_CASES)))
def test_init_bits_match_numpy(native: Native, idx: int) -> None:
    kind, params, seed = INIT_CASES[idx]
    count = 300_000
    got = native.init(idx, count)
    want = rng.numpy_init(kind, params, seed, count)
    assert_same_bits(np.arange(count, dtype=np.float32), got, want, f"init {kind}")
    # any slice can be produced on its own (what a sharded plan relies on)
    part = native.init(idx, 1000, first_index=123_456)
    assert_same_bits(part, part, want[123_456:124_456], "slice")
    tail = rng.numpy_init(kind, params, seed, 1000, first_index=299_500)
    assert_same_bits(tail, tail[:500], want[299_500:], "numpy slice")


def test_init_zero_count_writes_nothing(native: Native) -> None:
    out = native.init(0, 0)
    assert out.size == 0
    fn = native.lib.init_0
    buf = np.full(4, np.float32(-1.0))
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    fn(buf.ctypes.data, 0, 0)
    fn(buf.ctypes.data, -5, 0)
    assert (buf == -1.0).all()


# -- hypothesis --------------------------------------------------------------------------
finite_or_not = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(finite_or_not, min_size=1, max_size=64))
def test_hypothesis_math_bits(native: Native, values: list[float]) -> None:
    x = np.array(values, dtype=np.float32)
    for name in NAMES:
        assert_same_bits(x, native.math[name](x), mathfuncs.numpy_math(name, x), name)


@settings(max_examples=200, deadline=None)
@given(
    bits=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=64),
)
def test_hypothesis_math_bit_patterns(native: Native, bits: list[int]) -> None:
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    for name in NAMES:
        assert_same_bits(x, native.math[name](x), mathfuncs.numpy_math(name, x), name)


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(sorted(DYN_PARAMS)),
    seed=st.integers(0, 2**64 - 1),
    first=st.integers(0, 2**62),
    count=st.integers(0, 40),
)
def test_hypothesis_init_bits(native: Native, kind: str, seed: int, first: int, count: int) -> None:
    got = native.init_dyn(kind, count, first, seed)
    want = rng.numpy_init(kind, DYN_PARAMS[kind], seed, count, first_index=first)
    assert_same_bits(want, got, want, kind)
