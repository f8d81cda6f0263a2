"""Small IR helpers of the GPU bodies: coordinates of an output, static loops, an opaque zero."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from alpha_core.codegen.loops import F32, I64, i64
from alpha_core.semantics.llvm_arith import LlvmArith


class UnsupportedOnGpu(Exception):
    """A graph node with no GPU kernel: the op's name."""


def unravel(b: ir.IRBuilder, t: ir.Value, shape: Sequence[int]) -> list[ir.Value]:
    """The row-major coordinates of element t of `shape`."""
    coords: list[ir.Value] = []
    rest = t
    for d in reversed(shape):
        coords.append(b.urem(rest, i64(d)))
        rest = b.udiv(rest, i64(d))
    return list(reversed(coords))


def linear_at(b: ir.IRBuilder, coords: Sequence[ir.Value], strides: Sequence[int]) -> ir.Value:
    at: ir.Value = i64(0)
    for c, s in zip(coords, strides, strict=True):
        if s:
            at = b.add(at, b.mul(c, i64(s)))
    return at


def loop(b: ir.IRBuilder, n: int, body: Callable[[ir.Value], None], name: str) -> None:
    """for j in 0..n (a static count, at least 1 iteration when n > 0)."""
    if n <= 0:
        return
    pre = b.block
    loop = b.append_basic_block(f"{name}.loop")
    done = b.append_basic_block(f"{name}.done")
    b.branch(loop)
    b.position_at_end(loop)
    j = b.phi(I64, name=name)
    j.add_incoming(i64(0), pre)
    body(j)
    nxt = b.add(j, i64(1))
    j.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, i64(n)), loop, done)
    b.position_at_end(done)


def nest(
    b: ir.IRBuilder, dims: Sequence[int], body: Callable[[list[ir.Value]], None], name: str
) -> None:
    """Nested loops over `dims`, the last innermost (row-major order)."""

    def level(k: int, outer: list[ir.Value]) -> None:
        if k == len(dims):
            body(outer)
            return
        loop(b, dims[k], lambda j: level(k + 1, [*outer, j]), f"{name}{k}")

    level(0, [])


class OpaqueZero(LlvmArith):
    """The host's arithmetic, but +0.0 comes from an instruction LLVM cannot see through.

    LLVM turns `x > 0 ? x : 0` into `max.f32 x, 0` on NVPTX; whether that instruction orders
    -0.0 below +0.0 as the select does is the hardware's rule, not the program's. With the zero
    opaque, the select stays a compare and a select, as on the host.
    """

    def const(self, x: float) -> ir.Value:
        if x != 0.0:
            return super().const(x)
        asm = ir.InlineAsm(ir.FunctionType(F32, []), "mov.b32 $0, 0;", "=f")
        return self.b.call(asm, [])
