"""Independent lines computed side by side: a softmax's lines, a cross-entropy's examples.

Each pass over a line's elements becomes a loop over a block of lines inside the loop over the
elements, so the lanes of a vector are independent lines while each line still sees its own
elements in ascending order, one at a time. A line's running values (its maximum, its sum) live
in small stack arrays of the block's width.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from alpha_core.codegen.loops import F32, PTR, entry_alloca, for_range, i64


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

    def run(self, one_block: Callable[[ir.Value, int], None]) -> None:
        """one_block(first line, count) for every block: full ones in a loop, then the rest."""
        b = self.b
        full, rest = divmod(self.lines, self.width)
        for_range(b, full, lambda blk: one_block(b.mul(blk, i64(self.width)), self.width), "blk")
        if rest:
            one_block(i64(full * self.width), rest)
