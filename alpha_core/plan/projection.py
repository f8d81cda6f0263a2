"""Project a plan's round onto one role: the ops it runs and the links it holds.

Projection never enumerates the membership: a worker's schedule is computed from its own index,
the fan-out and the depth of the hierarchy, so it costs O(fan-out × depth × log leaves) whatever
the number of roles, and so does the schedule compiled into its executable.

Every topology moves canonical-tree pieces along the edges of a role tree (a pair is the
smallest) and evaluates each node once from its two children, left first, so every owner count
gives the single-process bits:
- a worker computes its leaves and combines the maximal tree nodes inside its own range;
- a combiner receives its children's pieces, in child order, and combines the nodes of its
  wider range; the root holds [0, leaves);
- the total is delivered back down the same edges; every worker applies the learner.
Children send before they receive and parents receive before they send, so no cycle of waits
can form: the schedules cannot deadlock (checked by simulation in verify.py).
"""

from __future__ import annotations

from alpha_core.plan.model import Plan
from alpha_core.plan.schedule import Link, Op, RoleSchedule
from alpha_core.plan.tree import cover


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


class _Builder:
    def __init__(self, plan: Plan, index: int, port_base: int, host: str) -> None:
        self.plan = plan
        self.index = index
        self.port_base = port_base
        self.host = host
        self.ops: list[Op] = []
        self.links: list[Link] = []
        self.leaves = plan.system.leaves

    def link(self, peer: int, accept: bool) -> int:
        name = self.plan.membership.name_of(peer)
        port = 0 if accept else self.port_base + peer
        self.links.append(Link(peer, name, accept, self.host, port))
        return len(self.links) - 1

    def combine(self, a: int, b: int) -> None:
        for lo, hi in cover(a, b, self.leaves):
            if hi - lo > 1:
                self.ops.append(Op("combine", lo, hi))

    def send(self, link: int, a: int, b: int) -> None:
        self.ops += [Op("send", lo, hi, link) for lo, hi in cover(a, b, self.leaves)]

    def recv(self, link: int, a: int, b: int) -> None:
        self.ops += [Op("recv", lo, hi, link) for lo, hi in cover(a, b, self.leaves)]


def project(
    plan: Plan, index: int, port_base: int = 47000, host: str = "127.0.0.1"
) -> RoleSchedule:
    m = plan.membership
    if not 0 <= index < m.total:
        raise IndexError(index)
    b = _Builder(plan, index, port_base, host)
    workers = plan.workers
    leaves = plan.system.leaves
    if plan.hub is not None and index == plan.hub.first:
        _hub(b)
    else:
        w = index - workers.first
        lo, hi = plan.assignment.range_of(w)
        b.ops.append(Op("compute", lo, hi))
        b.combine(lo, hi)
        if plan.topology == "pair":
            _pair(b, w)
        elif plan.topology == "star":
            assert plan.hub is not None
            up = b.link(plan.hub.first, accept=False)
            b.send(up, lo, hi)
            b.recv(up, 0, leaves)
        else:
            _hierarchy(b, w)
        b.ops.append(Op("apply"))
    writes = index == workers.first
    return RoleSchedule(
        index,
        m.name_of(index),
        m.total,
        plan.name,
        plan.identity(),
        tuple(b.ops),
        tuple(b.links),
        writes,
        host,
        port_base + index if any(k.accept for k in b.links) else 0,
    )


def _pair(b: _Builder, w: int) -> None:
    plan = b.plan
    workers = plan.workers
    other = 1 - w
    link = b.link(workers.first + other, accept=w == 0)
    mine, theirs = plan.assignment.range_of(w), plan.assignment.range_of(other)
    if w == 0:  # the lower index sends first, the other receives first: no crossed waits
        b.send(link, *mine)
        b.recv(link, *theirs)
    else:
        b.recv(link, *theirs)
        b.send(link, *mine)
    b.combine(0, b.leaves)


def _hub(b: _Builder) -> None:
    plan = b.plan
    workers = plan.workers
    links = [b.link(workers.first + w, accept=True) for w in range(workers.count)]
    for w, link in enumerate(links):
        b.recv(link, *plan.assignment.range_of(w))
    b.combine(0, b.leaves)
    for link in links:
        b.send(link, 0, b.leaves)
    b.ops.append(Op("apply"))


def _hierarchy(b: _Builder, w: int) -> None:
    plan = b.plan
    k, n = plan.fanout, plan.workers.count
    first = plan.workers.first
    depth = _levels(n, k)
    mine = _combine_levels(w, k, depth)
    children: list[tuple[int, int]] = []  # (level, link) in the order received
    for j in range(1, mine + 1):
        step = k ** (j - 1)
        for i in range(1, k):
            c = w + i * step
            if c >= n:
                break
            link = b.link(first + c, accept=True)
            children.append((j, link))
            b.recv(link, *plan.assignment.span_of(c, min(c + step, n)))
        b.combine(*plan.assignment.span_of(w, min(w + k**j, n)))
    if w != 0:
        parent = w - w % (k ** (mine + 1))
        up = b.link(first + parent, accept=False)
        b.send(up, *plan.assignment.span_of(w, min(w + k**mine, n)))
        b.recv(up, 0, b.leaves)
    for _, link in sorted(children, key=lambda c: -c[0]):
        b.send(link, 0, b.leaves)
