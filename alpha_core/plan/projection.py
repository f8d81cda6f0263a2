"""Project a plan's round onto one role: the ops it runs and the links it holds.

Projection never enumerates the membership: a role's schedule is computed from its own index,
the fan-out and the depth of the role tree, so it costs O(fan-out × depth × log leaves) whatever
the number of roles, and so does the schedule compiled into its executable.

Every topology is a role tree: a pair is worker[0] over worker[1], a star is the hub over the
workers, a hierarchy groups `fanout` consecutive workers under the first of them, level by
level. A round moves along it:
- up: a role computes its leaves, receives its children's pieces in child order, combines the
  maximal canonical-tree nodes of its subtree's leaves and sends them to its parent; the root
  holds [0, leaves). A pair with gradients delivered to all exchanges pieces instead, and both
  workers combine the root;
- down: the round's gradient goes back to every worker (or, with gradients partitioned, only
  the elements each subtree owns);
- the learner is applied (to the owned slice when the optimizer is partitioned), and updated
  parameter slices are gathered up the tree and sent back down whole;
- on checkpoint rounds, each owner writes its shards and acknowledges up the tree; the root
  publishes the capture.
Every node is evaluated from its two children, left first, so every owner count gives the
single-process bits. Children send before they receive and parents receive before they send,
so no cycle of waits can form even if sends waited for their receivers (verify.py simulates
it); only the pair's crossing exchange relies on the runtime queueing its sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.lower.tree import cover
from alpha_core.plan.model import Plan
from alpha_core.plan.schedule import (
    WRITES_OPTIMIZER,
    WRITES_PARAMS,
    WRITES_SCALARS,
    Link,
    Op,
    RoleSchedule,
)

Range = tuple[int, int]


@dataclass
class Position:
    """A role's place in the role tree."""

    parent: int | None
    children: list[int] = field(default_factory=list)  # global indices, in receive order
    own_leaves: Range | None = None  # None for a hub
    subtree: Range = (0, 0)  # workers [lo, hi) under this role, itself included


def _levels(workers: int, k: int) -> int:
    d, span = 0, 1
    while span < workers:
        span *= k
        d += 1
    return d


def _combine_levels(w: int, k: int, depth: int) -> int:
    """How many levels worker w combines: the largest j <= depth with k**j dividing w."""
    if w == 0:
        return depth
    j = 0
    while j < depth and w % (k ** (j + 1)) == 0:
        j += 1
    return j


def position(plan: Plan, index: int) -> Position:
    first, n = plan.workers.first, plan.workers.count
    if plan.hub is not None:
        if index == plan.hub.first:
            return Position(None, [first + w for w in range(n)], None, (0, n))
        w = index - first
        return Position(plan.hub.first, [], plan.assignment.range_of(w), (w, w + 1))
    w = index - first
    own = plan.assignment.range_of(w)
    if plan.topology == "pair":
        return Position(
            None if w == 0 else first,
            [first + 1] if w == 0 else [],
            own,
            (0, 2) if w == 0 else (1, 2),
        )
    k = plan.fanout
    depth = _levels(n, k)
    mine = _combine_levels(w, k, depth)
    children = [
        first + w + i * k ** (j - 1)
        for j in range(1, mine + 1)
        for i in range(1, k)
        if w + i * k ** (j - 1) < n
    ]
    parent = None if w == 0 else first + w - w % (k ** (mine + 1))
    return Position(parent, children, own, (w, min(w + k**mine, n)))


class _Builder:
    def __init__(self, plan: Plan, index: int, port_base: int, host: str) -> None:
        self.plan = plan
        self.index = index
        self.port_base = port_base
        self.host = host
        self.ops: list[Op] = []
        self.links: list[Link] = []
        self.by_peer: dict[int, int] = {}
        self.leaves = plan.system.leaves

    def link(self, peer: int, accept: bool) -> int:
        if peer not in self.by_peer:
            name = self.plan.membership.name_of(peer)
            port = 0 if accept else self.port_base + peer
            self.links.append(Link(peer, name, accept, self.host, port))
            self.by_peer[peer] = len(self.links) - 1
        return self.by_peer[peer]

    def op(
        self,
        kind: str,
        a: int = 0,
        b: int = 0,
        link: int = 0,
        elements: Range | None = None,
        flags: int = 0,
    ) -> None:
        start, count = (0, 0) if elements is None else (elements[0], elements[1] - elements[0])
        self.ops.append(Op(kind, a, b, link, start, count, flags))

    def combine(self, span: Range) -> None:
        for lo, hi in cover(*span, self.leaves):
            if hi - lo > 1:
                self.op("combine", lo, hi)

    def pieces(self, kind: str, link: int, span: Range) -> None:
        for lo, hi in cover(*span, self.leaves):
            self.op(kind, lo, hi, link)


def _leaves(plan: Plan, workers: Range) -> Range:
    return plan.assignment.span_of(*workers)


def _elements(plan: Plan, workers: Range) -> Range:
    return plan.slice_of(workers[0])[0], plan.slice_of(workers[1] - 1)[1]


def _norm(
    b: _Builder,
    plan: Plan,
    pos: Position,
    up: int | None,
    down: list[int],
    child_workers: list[Range],
    n: int,
) -> None:
    """Clipping with gradients partitioned: no role holds the whole round's gradient, so the
    global norm's canonical element tree is evaluated where its elements are. Each role sends
    up the maximal nodes of its subtree's elements (its own, evaluated from its slice, and its
    children's, received first), the root evaluates the tree's root and sends it back down."""
    for link, workers in zip(down, child_workers, strict=True):
        b.op("norm_recv", link=link, elements=_elements(plan, workers))
    if up is not None:
        b.op("norm_send", link=up, elements=_elements(plan, pos.subtree))
        b.op("norm_recv", link=up, elements=(0, n))
    for link in reversed(down):
        b.op("norm_send", link=link, elements=(0, n))


def project(
    plan: Plan, index: int, port_base: int = 47000, host: str = "127.0.0.1"
) -> RoleSchedule:
    m = plan.membership
    if not 0 <= index < m.total:
        raise IndexError(index)
    b = _Builder(plan, index, port_base, host)
    pos = position(plan, index)
    first = plan.workers.first
    child_workers = [position(plan, c).subtree for c in pos.children]
    up = b.link(pos.parent, accept=False) if pos.parent is not None else None
    down = [b.link(c, accept=True) for c in pos.children]
    layout = plan.state
    symmetric = plan.topology == "pair" and layout.grads == "replicated"
    n = plan.system.n_params
    everything = (0, b.leaves)

    # up: the round's gradient
    if pos.own_leaves is not None:
        b.op("compute", *pos.own_leaves)
        b.combine(pos.own_leaves)
    if symmetric:
        other = first + (1 - (index - first))
        link = up if up is not None else down[0]
        mine, theirs = pos.own_leaves, position(plan, other).own_leaves
        assert mine is not None and theirs is not None
        # both send first: the runtime queues sends, so the two pieces cross in one one-way
        # latency rather than two (verify.simulate(..., buffered=True) checks it)
        b.pieces("send", link, mine)
        b.pieces("recv", link, theirs)
        b.combine(everything)
    else:
        for link, workers in zip(down, child_workers, strict=True):
            b.pieces("recv", link, _leaves(plan, workers))
        subtree_leaves = _leaves(plan, pos.subtree)
        if subtree_leaves != pos.own_leaves:  # a role with no children combined it above
            b.combine(subtree_leaves)
        # down: the round's gradient, or each subtree's slice of it
        partial = layout.grads == "partitioned"
        if up is not None:
            b.pieces("send", up, subtree_leaves)
            b.op("recv", *everything, up, _elements(plan, pos.subtree) if partial else None)
        for link, workers in reversed(list(zip(down, child_workers, strict=True))):
            b.op("send", *everything, link, _elements(plan, workers) if partial else None)
        if partial and plan.system.learner.clip is not None:
            _norm(b, plan, pos, up, down, child_workers, n)

    # the learner, and the parameters back together
    owns_state = pos.own_leaves is not None
    mine = plan.slice_of(index - first) if owns_state else (0, 0)
    if owns_state:
        b.op("apply", elements=mine if layout.partitioned else None)
    if layout.partitioned:
        for link, workers in zip(down, child_workers, strict=True):
            b.op("recv_params", link=link, elements=_elements(plan, workers))
        if up is not None:
            b.op("send_params", link=up, elements=_elements(plan, pos.subtree))
            b.op("recv_params", link=up, elements=(0, n))
        for link in reversed(down):
            b.op("send_params", link=link, elements=(0, n))

    # checkpoints: owners write their shards, acknowledgements go up, the root publishes
    if plan.checkpoint_every:
        # each kind is written over the range its owner holds: a partitioned kind by every
        # owner over its slice, a replicated one by worker 0 over all elements
        w = index - first
        writes: dict[Range, int] = {}
        if owns_state:
            for kind, bit in (("params", WRITES_PARAMS), ("optimizer", WRITES_OPTIMIZER)):
                if getattr(layout, kind) == "partitioned":
                    writes[mine] = writes.get(mine, 0) | bit
                elif w == 0:
                    writes[(0, n)] = writes.get((0, n), 0) | bit
            if w == 0:
                at = mine if layout.optimizer == "partitioned" else (0, n)
                writes[at] = writes.get(at, 0) | WRITES_SCALARS
        for elements, flags in writes.items():
            b.op("checkpoint", elements=elements, flags=flags)
        for link in down:
            b.op("ack_recv", link=link)
        if up is not None:
            b.op("ack_send", link=up)
        else:
            b.op("publish")

    return RoleSchedule(
        index,
        m.name_of(index),
        m.total,
        plan.name,
        plan.identity(),
        tuple(b.ops),
        tuple(b.links),
        index == first,
        host,
        port_base + index if any(k.accept for k in b.links) else 0,
        checkpoint_every=plan.checkpoint_every or 0,
        state_start=mine[0] if layout.partitioned else 0,
        state_count=(mine[1] - mine[0]) if layout.partitioned else 0,
    )
