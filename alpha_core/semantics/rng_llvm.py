"""The initialiser (rng.py) interpreted by LLVM: a parameter's values generated in the executable,
the same bits as `rng.numpy_init`."""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from alpha_core.semantics.arith import to_uint64
from alpha_core.semantics.llvm_arith import F32, I64, LlvmArith
from alpha_core.semantics.rng import init_params, init_value, seed_key


def _i64(v: int | ir.Value) -> ir.Value:
    if isinstance(v, int):
        u = to_uint64(v)
        return ir.Constant(I64, u - (1 << 64) if u >= 1 << 63 else u)
    return v


def emit_init(
    builder: ir.IRBuilder,
    kind: str,
    params: Sequence[float],
    seed: int | ir.Value,
    ptr: ir.Value,
    count: int | ir.Value,
    first_index: int | ir.Value = 0,
) -> None:
    """Emit a loop storing the initial values of ``count`` floats at ``ptr``.

    Element ``i`` (0 <= i < count) gets the value for index ``first_index + i``.  ``seed``,
    ``count`` and ``first_index`` are Python ints (constants) or ``i64`` values; ``ptr`` is
    a pointer to float.  The builder is left positioned at the end of the loop's exit
    block, so the caller continues from there.  Does nothing at run time if count <= 0.
    """
    init_params(kind, params)
    b = builder
    A = LlvmArith(b)
    n = _i64(count)
    first = _i64(first_index)
    key = seed_key(A, _i64(seed))
    pre = b.block
    loop = b.append_basic_block("init.loop")
    done = b.append_basic_block("init.done")
    b.cbranch(b.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64, name="init.i")
    i.add_incoming(ir.Constant(I64, 0), pre)
    value = init_value(A, kind, params, key, b.add(first, i))
    b.store(value, b.gep(ptr, [i], source_etype=F32), align=4)
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)


def emit_init_function(
    module: ir.Module, name: str, kind: str, params: Sequence[float], seed: int
) -> ir.Function:
    """Emit ``void name(float* out, i64 count, i64 first_index)`` filling ``out``."""
    fn = ir.Function(
        module, ir.FunctionType(ir.VoidType(), [ir.PointerType(), I64, I64]), name=name
    )
    out, count, first = fn.args
    out.name, count.name, first.name = "out", "count", "first_index"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    emit_init(b, kind, params, seed, out, count, first)
    b.ret_void()
    return fn
