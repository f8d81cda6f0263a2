"""Counted loop nests in LLVM IR, and typed access to float buffers."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()

# Outputs computed side by side in one vector: never a change of bits, only of speed, since
# lanes are independent outputs and each lane's sum keeps its order.
LANES = 8

# Vectors of elements an iteration of an activation's loop computes side by side. A recipe is a
# long chain of dependent operations (gelu's tanh: about 60, with a division), and one vector
# an iteration left the core waiting on each chain: the d-128 transformer's gelu and its
# adjoint (4 x 524,288 elements each a step) took 9.2% of its step, 4.9% with four (one
# Sapphire Rapids core, x86-64-v4). Elements are independent: no bit changes.
RECIPE_VECTORS = 4


def i64(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def for_range(
    b: ir.IRBuilder,
    n: int,
    body: Callable[[ir.Value], None],
    name: str = "i",
    interleave: int = 1,
) -> None:
    """for (i = 0; i < n; i++) body(i), with i an i64 and n known now."""
    if n > 0:
        for_count(b, i64(n), body, name, interleave)


_LOOP_HINTS: weakref.WeakKeyDictionary[ir.Module, dict[int, ir.MDValue]] = (
    weakref.WeakKeyDictionary()
)


def interleaved(module: ir.Module, count: int) -> ir.MDValue:
    """The loop hint `llvm.loop.interleave.count`: the vectorised loop computes `count`
    vectors of iterations side by side (independent elements: the bits never change)."""
    hints = _LOOP_HINTS.setdefault(module, {})
    if count not in hints:
        hint = module.add_metadata(
            [ir.MetaDataString(module, "llvm.loop.interleave.count"), ir.Constant(I32, count)]
        )
        # a node of its own (the string keeps llvmlite from handing back a shared one), then
        # made to name itself first, as a loop's id does (LLVM's LangRef)
        loop_id = module.add_metadata([ir.MetaDataString(module, f"alpha.loop.{count}"), hint])
        loop_id.operands = (loop_id, hint)
        hints[count] = loop_id
    return hints[count]


def for_count(
    b: ir.IRBuilder,
    n: ir.Value,
    body: Callable[[ir.Value], None],
    name: str = "i",
    interleave: int = 1,
) -> None:
    """for (i = 0; i < n; i++) body(i), with n an i64 known only at run time. `interleave`
    > 1 asks LLVM's vectoriser for that many vectors of iterations a step (`interleaved`)."""
    fn = b.function
    pre = b.block
    head = fn.append_basic_block(f"{name}.head")
    loop = fn.append_basic_block(f"{name}.body")
    done = fn.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name)
    i.add_incoming(i64(0), pre)
    b.cbranch(b.icmp_unsigned("<", i, n), loop, done)
    b.position_at_end(loop)
    body(i)
    nxt = b.add(i, i64(1), flags=["nuw", "nsw"])
    i.add_incoming(nxt, b.block)
    latch = b.branch(head)
    if interleave > 1:
        latch.set_metadata("llvm.loop", interleaved(b.module, interleave))
    b.position_at_end(done)


def nest(b: ir.IRBuilder, dims: Sequence[int], body: Callable[[list[ir.Value]], None]) -> None:
    """Row-major loop nest over `dims`: the last index varies fastest."""

    def level(k: int, idx: list[ir.Value]) -> None:
        if k == len(dims):
            body(idx)
            return
        for_range(b, dims[k], lambda i: level(k + 1, idx + [i]), name=f"d{k}")

    level(0, [])


def linear(b: ir.IRBuilder, idx: Sequence[ir.Value], strides: Sequence[int]) -> ir.Value:
    """Σ idx[k] * strides[k] (strides of 0 skip a broadcast axis)."""
    off: ir.Value = i64(0)
    for i, s in zip(idx, strides, strict=True):
        if s == 0:
            continue
        term = i if s == 1 else b.mul(i, i64(s), flags=["nuw", "nsw"])
        off = (
            term
            if isinstance(off, ir.Constant) and off.constant == 0
            else b.add(off, term, flags=["nuw", "nsw"])
        )
    return off


def row_major_strides(shape: Sequence[int]) -> list[int]:
    strides = [0] * len(shape)
    acc = 1
    for k in range(len(shape) - 1, -1, -1):
        strides[k] = acc
        acc *= shape[k]
    return strides


def broadcast_strides(shape: Sequence[int], out: Sequence[int]) -> list[int]:
    """Strides for reading a `shape` tensor at `out` indices, NumPy broadcasting rules."""
    own = row_major_strides(shape)
    strides = [0] * len(out)
    for k in range(1, len(shape) + 1):
        strides[-k] = 0 if shape[-k] == 1 and out[-k] != 1 else own[-k]
    return strides


def gep(b: ir.IRBuilder, base: ir.Value, offset: ir.Value, ty: ir.Type = F32) -> ir.Value:
    if isinstance(ty, ir.VectorType):
        ty = ty.element  # offsets count elements, never whole vectors
    return b.gep(base, [offset], inbounds=True, source_etype=ty)


def load(b: ir.IRBuilder, base: ir.Value, offset: ir.Value, ty: ir.Type = F32) -> ir.Value:
    # element alignment: a vector of lanes starts at any float
    return b.load(gep(b, base, offset, ty), typ=ty, align=4)


def store(b: ir.IRBuilder, value: ir.Value, base: ir.Value, offset: ir.Value) -> None:
    b.store(value, gep(b, base, offset, value.type), align=4)


def entry_alloca(b: ir.IRBuilder, ty: ir.Type = F32) -> ir.Value:
    """A stack slot in the entry block, where mem2reg can promote it to a register."""
    here = b.block
    b.position_at_start(b.function.entry_basic_block)
    slot = b.alloca(ty)
    b.position_at_end(here)
    return slot


def splat(b: ir.IRBuilder, value: ir.Value, width: int) -> ir.Value:
    """`value` in every lane of a `width`-lane vector (itself when width is 1)."""
    if width == 1:
        return value
    ty = ir.VectorType(value.type, width)
    one = b.insert_element(ir.Constant(ty, ir.Undefined), value, ir.Constant(I32, 0))
    return b.shuffle_vector(
        one, ir.Constant(ty, ir.Undefined), ir.Constant(ir.VectorType(I32, width), [0] * width)
    )
