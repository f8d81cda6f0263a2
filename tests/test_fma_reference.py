"""The reference's float32 fused multiply-add against the CPU's own instruction.

`arithmetic fused` systems are checked against a NumPy reference whose fma (alpha_core/semantics/
numpy_fma.py) must be the correctly rounded one the hardware computes. Here ten million triples
go through both: random bit patterns (every class of float32: NaN, infinities, subnormals,
zeros) and families built to hit the cases a careless emulation gets wrong: exact products on a
float32 halfway point nudged by a tiny addend (where rounding the float64 sum first goes to
even on the wrong side), results in the subnormal range, sums that overflow, cancellation
against the rounded product, and signed zeros. The hardware side is `llvm.fma.f32` compiled by
LLVM for this CPU and run in process; its code is checked to hold the FMA instruction itself
(not a call to a library fmaf). The naive float64 formula is checked to fail on this set, so the
set can tell a wrong emulation from a right one.
"""

from __future__ import annotations

import ctypes
import functools
import re
from collections.abc import Callable

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from alpha_core.semantics.numpy_fma import fma32

TRIPLES = 10_000_000
Fn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@functools.cache
def hardware_fma() -> tuple[Fn, str]:
    """out[i] = llvm.fma.f32(a[i], b[i], c[i]) compiled for this CPU, and its assembly."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    f32, i64 = ir.FloatType(), ir.IntType(64)
    ptr = ir.PointerType(f32)
    module = ir.Module(name="fma_check")
    module.triple = llvm.get_process_triple()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * 4 + [i64]), "fma_all")
    fma = ir.Function(module, ir.FunctionType(f32, [f32] * 3), "llvm.fma.f32")
    a, b, c, out, n = fn.args
    entry, test, body, done = (fn.append_basic_block(x) for x in ("e", "t", "b", "d"))
    bld = ir.IRBuilder(entry)
    slot = bld.alloca(i64)
    bld.store(ir.Constant(i64, 0), slot)
    bld.branch(test)
    bld.position_at_end(test)
    i = bld.load(slot)
    bld.cbranch(bld.icmp_unsigned("<", i, n), body, done)
    bld.position_at_end(body)
    args = [bld.load(bld.gep(p, [i])) for p in (a, b, c)]
    bld.store(bld.call(fma, args), bld.gep(out, [i]))
    bld.store(bld.add(i, ir.Constant(i64, 1)), slot)
    bld.branch(test)
    bld.position_at_end(done)
    bld.ret_void()
    target = llvm.Target.from_default_triple()
    tm = target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2
    )
    parsed = llvm.parse_assembly(str(module))
    asm = tm.emit_assembly(parsed)
    engine = llvm.create_mcjit_compiler(parsed, tm)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4, ctypes.c_int64)
    call = proto(engine.get_function_address("fma_all"))

    def run(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        x, y, z = (np.ascontiguousarray(v, dtype=np.float32) for v in (x, y, z))
        out = np.empty_like(x)
        call(x.ctypes.data, y.ctypes.data, z.ctypes.data, out.ctypes.data, len(x))
        run.engine = engine  # type: ignore[attr-defined]  # kept alive with the function
        return out

    return run, asm


def _bits(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)


def _f32(v: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(v, dtype=np.float64).astype(np.float32)


def _short(n: int, rng: np.random.Generator, low: int, high: int) -> np.ndarray:
    """Values of 13 significant bits (1 + i·2^-12) scaled by 2^e, e in [low, high), either
    sign: two of them multiply to an exact product whose low bit often sits on a float32
    halfway point."""
    mant = 1.0 + rng.integers(0, 4096, n) * 2.0**-12
    sign = rng.choice([-1.0, 1.0], n)
    return _f32(sign * mant * np.exp2(rng.integers(low, high, n).astype(np.float64)))


def triples(n: int, seed: int = 2026) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """About n triples in families (name: a, b, c)."""
    rng = np.random.default_rng(seed)
    part = n // 8
    fams: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    fams["random bits"] = (_bits(2 * part, rng), _bits(2 * part, rng), _bits(2 * part, rng))
    a, b = _short(part, rng, -30, 30), _short(part, rng, -30, 30)
    tiny = rng.choice([-1.0, 1.0], part) * np.exp2(rng.integers(-140, -40, part).astype(float))
    fams["halfway products, tiny addend"] = (a, b, _f32(tiny))
    a, b = _short(part, rng, -80, -50), _short(part, rng, -80, -50)
    c = _f32(rng.choice([-1.0, 1.0], part) * np.exp2(rng.integers(-149, -120, part).astype(float)))
    fams["subnormal results"] = (a, b, c)
    a, b = _short(part, rng, 60, 68), _short(part, rng, 60, 68)
    c = _f32(rng.choice([-1.0, 1.0], part) * np.exp2(rng.integers(100, 128, part).astype(float)))
    fams["overflow"] = (a, b, c)
    a, b = _bits(part, rng), _bits(part, rng)
    with np.errstate(all="ignore"):
        rounded = (a.astype(np.float64) * b).astype(np.float32)
    nudge = rng.integers(-2, 3, part).astype(np.int32)
    c = (-rounded).view(np.int32) + nudge  # -round(a·b) and its neighbours: the error term
    fams["cancellation"] = (a, b, c.view(np.float32))
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 3.4028235e38, 1.1754944e-38],
        dtype=np.float32,
    )
    pick = lambda: specials[rng.integers(0, len(specials), part)]  # noqa: E731
    fams["signed zeros and specials"] = (pick(), pick(), pick())
    rest = n - sum(len(v[0]) for v in fams.values())
    a, b = _short(rest, rng, -126, 0), _short(rest, rng, 0, 126)
    fams["halfway products, random addend"] = (a, b, _bits(rest, rng))
    return fams


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bit for bit, any NaN matching any NaN (which NaN is not part of the contract)."""
    return (x.view(np.uint32) == y.view(np.uint32)) | (np.isnan(x) & np.isnan(y))


def _naive(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return (a.astype(np.float64) * b + c).astype(np.float32)


def test_the_hardware_side_is_the_fma_instruction() -> None:
    _, asm = hardware_fma()
    machine = llvm.get_process_triple().split("-")[0]
    instruction = {"x86_64": r"\bvfn?madd\d*ss\b", "aarch64": r"\bfn?madd\s"}.get(machine)
    if instruction is None:
        pytest.fail(f"no FMA instruction known for {machine}")
    assert re.search(instruction, asm), "the check would compare against a library fmaf"
    assert "fmaf" not in asm


def test_ten_million_triples_match_the_hardware_bit_for_bit() -> None:
    run, _ = hardware_fma()
    fams = triples(TRIPLES)
    assert sum(len(v[0]) for v in fams.values()) == TRIPLES
    naive_wrong = 0
    for name, (a, b, c) in fams.items():
        hw = run(a, b, c)
        ref = fma32(a, b, c)
        wrong = ~_same(hw, ref)
        assert not wrong.any(), (
            f"{name}: {int(wrong.sum())} triples differ, first "
            f"{[(float(a[i]), float(b[i]), float(c[i])) for i in np.flatnonzero(wrong)[:3]]}"
        )
        naive_wrong += int((~_same(hw, _naive(a, b, c))).sum())
    # the set can tell: rounding the float64 sum first is wrong on many of these triples
    assert naive_wrong > 1000


def test_the_halfway_family_catches_double_rounding() -> None:
    """The smallest case, written out: 1 + 2^-11 + 2^-24 is halfway between two float32
    values; an addend of 2^-80 puts the exact sum above it, so fma rounds up, while the float64
    sum rounds to the halfway point and then to even (down)."""
    a = np.array([1 + 2.0**-12], dtype=np.float32)
    c = np.array([2.0**-80], dtype=np.float32)
    up = np.float32(1 + 2.0**-11 + 2.0**-23)
    assert fma32(a, a, c)[0] == up
    assert _naive(a, a, c)[0] != up
    run, _ = hardware_fma()
    assert run(a, a, c)[0] == up
