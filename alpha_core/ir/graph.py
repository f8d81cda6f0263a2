"""The tensor graph: a straight-line list of operations on statically shaped float32 tensors.

A shape may start with BATCH, the examples of one leaf. Every operation's order of evaluation is
part of its meaning (docs/semantics.md): a reduction adds its inputs from +0.0 in row-major
index order; a matmul adds over its inner index in order; nothing is fused or reassociated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BATCH = -1
# A dimension -k (k > 1) is k times the batch axis: the per-example rows of a tensor
# f32[B, k, ...] seen as one matrix, as a product over every position reads them (only
# autodiff and lowering make such shapes; a declared type never holds one).

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Node:
    """One operation. `attrs` holds op-specific constants (value, axis, index, shape). What
    each op is to every phase (arity, shape rule, adjoint, emitters): alpha_core/ops."""

    op: str
    inputs: tuple[int, ...]
    shape: Shape
    attrs: tuple[tuple[str, object], ...] = ()

    def attr(self, name: str) -> object:
        for k, v in self.attrs:
            if k == name:
                return v
        raise KeyError(name)

    def axis(self) -> int | None:
        """The `axis` attribute of a reduction or broadcast (None: every axis)."""
        value = self.attr("axis")
        return value if isinstance(value, int) else None

    def value(self) -> float:
        """The value of a `const` node."""
        value = self.attr("value")
        assert isinstance(value, float)
        return value


@dataclass(frozen=True)
class Graph:
    nodes: tuple[Node, ...]

    def __getitem__(self, i: int) -> Node:
        return self.nodes[i]

    def __len__(self) -> int:
        return len(self.nodes)


class GraphTooLarge(Exception):
    """A GraphBuilder was asked for more nodes than its limit."""


@dataclass
class GraphBuilder:
    """Appends nodes, sharing identical ones (a parameter read twice is one node). With a
    `limit`, the node after the limit raises GraphTooLarge instead of being added."""

    nodes: list[Node] = field(default_factory=list)
    _index: dict[Node, int] = field(default_factory=dict)
    limit: int | None = None

    def add(
        self,
        op: str,
        inputs: tuple[int, ...],
        shape: Shape,
        attrs: tuple[tuple[str, object], ...] = (),
    ) -> int:
        node = Node(op, inputs, shape, attrs)
        found = self._index.get(node)
        if found is not None:
            return found
        if self.limit is not None and len(self.nodes) >= self.limit:
            raise GraphTooLarge
        self.nodes.append(node)
        self._index[node] = len(self.nodes) - 1
        return len(self.nodes) - 1

    def shape(self, i: int) -> Shape:
        return self.nodes[i].shape

    def graph(self) -> Graph:
        return Graph(tuple(self.nodes))


def broadcast_shapes(a: Shape, b: Shape) -> Shape | None:
    """NumPy broadcasting over trailing dimensions; None when the shapes do not fit."""
    out: list[int] = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            return None
    return tuple(reversed(out))


def concrete(shape: Shape, batch: int) -> Shape:
    return tuple(-d * batch if d < 0 else d for d in shape)


def symbolic_size(shape: Shape) -> int:
    """The element count, negative (k times the batch) when the shape has the batch axis."""
    n = 1
    batched = False
    for d in shape:
        if d < 0:
            batched = True
            n *= -d
        else:
            n *= d
    return -n if batched else n


def size(shape: Shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
