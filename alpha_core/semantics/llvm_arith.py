"""llvmlite interpretation of :class:`~alpha_core.semantics.arith.Arith` — the compiler side.

Each method appends exactly one LLVM instruction (or intrinsic call) at the builder's
position and returns the resulting scalar ``ir.Value`` (``float``, ``i32``, ``i1`` or
``i64``).  The codegen calls the emitted functions inside loops; after inlining LLVM
vectorises them, which is safe because every instruction here has lane-wise IEEE
semantics that vectorisation does not change.

What is deliberately *not* emitted:

* no fast-math flags (``contract``, ``reassoc``, ``nnan``, ``fast``...): with them LLVM
  may fuse a multiply into an add or reorder a chain and change the bits;
* no ``fptosi`` on values that might be out of range (that is poison): :meth:`ftoi` uses the
  saturating ``llvm.fptosi.sat`` intrinsic, defined for every input;
* no shift by a variable or out-of-range amount (poison): shift amounts are constants.

Comparisons are *ordered* (``fcmp olt`` ...), i.e. false when either side is NaN, matching
NumPy's operators.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from alpha_core.semantics.arith import check_shift, to_int32, to_uint64
from alpha_core.semantics.mathfuncs import RECIPES

F32 = ir.FloatType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """Declare (once) and return an LLVM intrinsic function in ``module``."""
    existing = module.globals.get(name)
    if isinstance(existing, ir.Function):
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def fma_function(module: ir.Module, ty: ir.Type) -> ir.Function:
    """``llvm.fma`` of float32 or a vector of them: always one correctly rounded fused
    multiply-add (``llvm.fmuladd`` would leave the choice to LLVM, and so would a ``contract``
    flag: neither is ever emitted)."""
    name = f"llvm.fma.v{ty.count}f32" if isinstance(ty, ir.VectorType) else "llvm.fma.f32"
    return intrinsic(module, name, ty, [ty, ty, ty])


def emit_fma(b: ir.IRBuilder, x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
    """fma(x, y, acc) = x · y + acc rounded once, of scalars or of vectors lane by lane."""
    return b.call(fma_function(b.function.module, x.type), [x, y, acc])


def emit_muladd(b: ir.IRBuilder, fused: bool, acc: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
    """One term of a sum of products in the system's arithmetic (docs/semantics.md,
    "Arithmetic"): ``acc + x · y`` with the product rounded first (unfused), or
    ``fma(x, y, acc)`` (fused)."""
    return emit_fma(b, x, y, acc) if fused else b.fadd(acc, b.fmul(x, y))


class LlvmArith:
    """Emits :class:`Arith` / :class:`Arith64` operations through an ``ir.IRBuilder``.

    ``F`` is a ``float`` value, ``I`` an ``i32``, ``M`` an ``i1`` and ``U`` an ``i64``.
    ``fused`` is the system's arithmetic, used by :meth:`muladd` alone: the terms of its sums of
    products; every other operation is the same in both arithmetics.
    """

    def __init__(self, builder: ir.IRBuilder, fused: bool = False) -> None:
        self.b = builder
        self.fused = fused

    def muladd(self, acc: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        """A term of a sum of products: ``acc + x · y`` in the system's arithmetic."""
        return emit_muladd(self.b, self.fused, acc, x, y)

    @property
    def module(self) -> ir.Module:
        module: ir.Module = self.b.function.module
        return module

    # -- float32 -------------------------------------------------------------------------
    def const(self, x: float) -> ir.Value:
        # Round here, exactly as the reference does (llvmlite's own rounding raises on
        # values beyond the float32 range instead of giving inf).
        with np.errstate(over="ignore"):
            return ir.Constant(F32, float(np.float32(x)))

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fadd(a, b)

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fsub(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fmul(a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fdiv(a, b)

    def neg(self, a: ir.Value) -> ir.Value:
        return self.b.fneg(a)

    def sqrt(self, a: ir.Value) -> ir.Value:
        fn = intrinsic(self.module, "llvm.sqrt.f32", F32, [F32])
        return self.b.call(fn, [a])

    # -- comparisons and selection ---------------------------------------------------------
    def lt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", a, b)

    def le(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<=", a, b)

    def gt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered(">", a, b)

    def ge(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered(">=", a, b)

    def eq(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("==", a, b)

    def select(self, m: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(m, a, b)

    def iselect(self, m: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(m, a, b)

    # -- bit views and conversions -----------------------------------------------------------
    def bits(self, a: ir.Value) -> ir.Value:
        return self.b.bitcast(a, I32)

    def from_bits(self, i: ir.Value) -> ir.Value:
        return self.b.bitcast(i, F32)

    def itof(self, i: ir.Value) -> ir.Value:
        return self.b.sitofp(i, F32)

    def ftoi(self, f: ir.Value) -> ir.Value:
        fn = intrinsic(self.module, "llvm.fptosi.sat.i32.f32", I32, [F32])
        return self.b.call(fn, [f])

    # -- int32 ----------------------------------------------------------------------------
    def iconst(self, x: int) -> ir.Value:
        return ir.Constant(I32, to_int32(x))

    def iadd(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.add(a, b)  # no nsw/nuw: wraps

    def isub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.sub(a, b)

    def iand(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.and_(a, b)

    def ior(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.or_(a, b)

    def ishl(self, a: ir.Value, n: int) -> ir.Value:
        return self.b.shl(a, ir.Constant(I32, check_shift(n, 32)))

    def ishr(self, a: ir.Value, n: int) -> ir.Value:
        return self.b.ashr(a, ir.Constant(I32, check_shift(n, 32)))

    # -- uint64 ---------------------------------------------------------------------------
    def u64const(self, x: int) -> ir.Value:
        v = to_uint64(x)
        return ir.Constant(I64, v - (1 << 64) if v >= 1 << 63 else v)

    def u64add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.add(a, b)

    def u64mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.mul(a, b)

    def u64xor(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.xor(a, b)

    def u64shr(self, a: ir.Value, n: int) -> ir.Value:
        return self.b.lshr(a, ir.Constant(I64, check_shift(n, 64)))

    def u64_low32(self, a: ir.Value) -> ir.Value:
        return self.b.trunc(a, I32)


def emit_math_functions(module: ir.Module) -> dict[str, ir.Function]:
    """Emit ``alpha_exp``, ``alpha_log``, ``alpha_tanh``, ``alpha_sigmoid`` into ``module``.

    Each is ``float (float)``, ``internal`` and ``alwaysinline`` so it disappears into the
    caller's loop, where LLVM can vectorise it.  Functions already present in the module
    are reused, so calling this twice is harmless.  Returns ``{"exp": fn, ...}``.
    """
    out: dict[str, ir.Function] = {}
    for name, recipe in RECIPES.items():
        fname = f"alpha_{name}"
        existing = module.globals.get(fname)
        if isinstance(existing, ir.Function):
            out[name] = existing
            continue
        fn = ir.Function(module, ir.FunctionType(F32, [F32]), name=fname)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        fn.args[0].name = "x"
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        builder.ret(recipe(LlvmArith(builder), fn.args[0]))
        out[name] = fn
    return out
