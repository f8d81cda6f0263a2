"""What a name in a model may stand for: a tensor (a graph node), or one of the values that exist
only while the model is built: a block array, one block of it, or a `for` loop's index.

A block array (`param blocks[N] { ... }`, docs/language.md "Block arrays") is N blocks of the
same members; each member of each block is an ordinary parameter tensor named `blocks[i].m`
(check/block_params.py). These values let the checker resolve `blocks[i].m` and `p.m` to that
tensor's graph node when it lowers the model; none of them reaches the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.ir.graph import Shape
from alpha_core.support.span import Span


@dataclass(frozen=True)
class MemberInfo:
    shape: Shape | None  # None: refused where declared
    span: Span  # the member's name in its declaration


@dataclass(eq=False)
class BlockArray:
    name: str
    span: Span  # the array's name where declared
    count: int
    members: dict[str, MemberInfo] = field(default_factory=dict)  # in declaration order
    # the graph node of each member of each block (absent: refused where declared)
    nodes: list[dict[str, int]] = field(default_factory=list)

    def layout(self) -> tuple[tuple[str, Shape | None], ...]:
        """The members and their shapes in order: what a block argument's type asks for."""
        return tuple((name, m.shape) for name, m in self.members.items())


@dataclass(frozen=True)
class BlockRef:
    """One block: `blocks[2]`, or a function argument declared `p: blocks`."""

    array: BlockArray
    index: int


@dataclass(frozen=True)
class LoopIndex:
    """The index of a `for` loop in one pass of its body."""

    value: int


@dataclass(frozen=True)
class Binding:
    node: int  # the tensor's graph node; < 0: refused where declared, or no tensor (`other`)
    span: Span  # where the name is defined
    other: BlockArray | BlockRef | LoopIndex | None = None  # a name that is no tensor
