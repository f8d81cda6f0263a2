"""Independent lines computed side by side: a softmax's lines, a cross-entropy's examples.

Each pass over a line's elements becomes a loop over a block of lines inside the loop over the
elements, so the lanes of a vector are independent lines while each line still sees its own
elements in ascending order, one at a time. A line's running values (its maximum, its sum) live
in small stack arrays of the block's width.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.loops import F32, PTR, RECIPE_VECTORS, entry_alloca, for_range, i64, load
from alpha_core.semantics.llvm_arith import LlvmArith

# (line of the block, element) -> the element's offset
Element = Callable[[ir.Value, ir.Value], ir.Value]


class Block:
    """One block of lines: `count` lines from line `first`, and their running values."""

    def __init__(self, lines: LineBlocks, first: ir.Value, count: int) -> None:
        self.b, self.lines, self.first, self.count = lines.b, lines, first, count

    def get(self, which: int, j: ir.Value) -> ir.Value:
        """Running value `which` of the block's line j."""
        return self.b.load(self.lines.slot(which, j), typ=F32)

    def set(self, which: int, j: ir.Value, value: ir.Value) -> None:
        self.b.store(value, self.lines.slot(which, j))

    def lanes(self, body: Callable[[ir.Value], None]) -> None:
        """body(j) for every line of the block: the loop whose iterations are vector lanes."""
        for_range(self.b, self.count, body, "ln")

    def over(self, n: int, body: Callable[[ir.Value, ir.Value], None]) -> None:
        """body(j, k) for k ascending over a line's n elements, every line at each k."""
        for_range(self.b, n, lambda k: self.lanes(lambda j: body(j, k)), "el")

    def along(self, n: int, body: Callable[[ir.Value, ir.Value], None]) -> None:
        """body(j, k) for every line, k over its n elements inside: the loop whose iterations
        are vector lanes runs along a line, RECIPE_VECTORS vectors at a time. Only for a body
        whose elements are independent (no running value)."""
        b = self.b
        self.lanes(lambda j: for_range(b, n, lambda k: body(j, k), "al", RECIPE_VECTORS))


class LineBlocks:
    """`lines` lines in blocks of at most `width`, with `slots` running values per line."""

    def __init__(self, b: ir.IRBuilder, lines: int, width: int, slots: int) -> None:
        self.b, self.lines = b, lines
        self.width = min(width, lines)
        self.block = ir.ArrayType(F32, self.width)
        self.buffers = [entry_alloca(b, self.block) for _ in range(slots)]
        for buf in self.buffers:
            buf.type = PTR  # opaque: loads and stores name their element type

    def slot(self, which: int, j: ir.Value) -> ir.Value:
        """Running value `which` of the block's line j."""
        return self.b.gep(self.buffers[which], [i64(0), j], inbounds=True, source_etype=self.block)

    def run(self, one_block: Callable[[Block], None]) -> None:
        """one_block for every block: the full ones in a loop, then the rest."""
        b = self.b
        full, rest = divmod(self.lines, self.width)
        for_range(
            b,
            full,
            lambda blk: one_block(Block(self, b.mul(blk, i64(self.width)), self.width)),
            "blk",
        )
        if rest:
            one_block(Block(self, i64(full * self.width), rest))


MAX, SUM = 0, 1  # the running values of softmax_sums


def line_max(blk: Block, A: LlvmArith, src: ir.Value, n: int, at: Element) -> None:
    """MAX of each line of the block: its first element, then v > m ? v : m ascending."""
    b = blk.b
    blk.lanes(lambda j: blk.set(MAX, j, load(b, src, at(j, i64(0)))))

    def top(j: ir.Value, k: ir.Value) -> None:
        v, m = load(b, src, at(j, k)), blk.get(MAX, j)
        blk.set(MAX, j, A.select(A.gt(v, m), v, m))

    blk.over(n, top)


def softmax_sums(
    blk: Block,
    A: LlvmArith,
    src: ir.Value,
    n: int,
    at: Element,
    exp: ir.Function,
    keep: Callable[[ir.Value, ir.Value, ir.Value], None] | None = None,
) -> None:
    """For each line of the block: MAX = its first element, then v > m ? v : m ascending; SUM =
    Σ exp(v - MAX) ascending from +0.0 (softmax and the softmax cross-entropy). `keep(j, k, e)`
    is given each exp(v - MAX) as it is added."""
    b = blk.b
    line_max(blk, A, src, n, at)
    blk.lanes(lambda j: blk.set(SUM, j, A.const(0.0)))

    def add(j: ir.Value, k: ir.Value) -> None:
        e = b.call(exp, [A.sub(load(b, src, at(j, k)), blk.get(MAX, j))])
        if keep is not None:
            keep(j, k, e)
        blk.set(SUM, j, A.add(blk.get(SUM, j), e))

    blk.over(n, add)
