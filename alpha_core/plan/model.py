"""A checked plan: compact membership, topology, leaf assignment; a checked pairing.

Membership is kept as role families (a name and a count), never as a list of roles, so a plan
of 200,000 workers costs what a plan of 2 does until one role is projected.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from alpha_core.check.program import Program
from alpha_core.plan.profiles import DEVICE_PROFILES, Profile, host_profile

MAX_FANOUT = 64


@dataclass(frozen=True)
class Family:
    name: str
    first: int  # global index of member 0
    count: int
    singleton: bool

    def member(self, i: int) -> str:
        return self.name if self.singleton else f"{self.name}[{i}]"


@dataclass(frozen=True)
class Membership:
    families: tuple[Family, ...]

    @property
    def total(self) -> int:
        return sum(f.count for f in self.families)

    def family(self, name: str) -> Family | None:
        for f in self.families:
            if f.name == name:
                return f
        return None

    def name_of(self, index: int) -> str:
        for f in self.families:
            if f.first <= index < f.first + f.count:
                return f.member(index - f.first)
        raise IndexError(index)

    def index_of(self, role: str) -> int | None:
        """`hub` or `worker[3]` to its global index."""
        name, _, rest = role.partition("[")
        f = self.family(name)
        if f is None:
            return None
        if f.singleton:
            return f.first if not rest else None
        if not rest.endswith("]") or not rest[:-1].isdigit():
            return None
        i = int(rest[:-1])
        return f.first + i if i < f.count else None


@dataclass(frozen=True)
class LeafAssignment:
    """Which leaves each worker computes: ranges in worker order, contiguous, covering all.

    `breaks` holds (first worker, first leaf) pairs for explicitly given blocks; within a block
    the leaves are split evenly (the first workers get one more when they do not divide).
    """

    workers: int
    leaves: int
    blocks: tuple[tuple[int, int, int, int], ...]  # (first worker, end worker, lo, hi)

    @staticmethod
    def even(workers: int, leaves: int) -> LeafAssignment:
        return LeafAssignment(workers, leaves, ((0, workers, 0, leaves),))

    def range_of(self, w: int) -> tuple[int, int]:
        for first, end, lo, hi in self.blocks:
            if first <= w < end:
                n = end - first
                base, extra = divmod(hi - lo, n)
                i = w - first
                start = lo + i * base + min(i, extra)
                return start, start + base + (1 if i < extra else 0)
        raise IndexError(w)

    def span_of(self, w_lo: int, w_hi: int) -> tuple[int, int]:
        """Leaves of workers [w_lo, w_hi): contiguous by construction."""
        return self.range_of(w_lo)[0], self.range_of(w_hi - 1)[1]


@dataclass(frozen=True)
class StateLayout:
    """Which state is replicated on every worker and which is partitioned by element range.

    Every element of every state kind has one logical owner: for partitioned state the worker
    whose slice holds it, for replicated state worker 0 (the others hold replicas, which are
    never a second authority: they are written only from what the owner computes).
    """

    params: str = "replicated"  # replicated | partitioned
    grads: str = "replicated"  # replicated (delivered to all) | partitioned (to each owner)
    optimizer: str = "replicated"

    @property
    def stage(self) -> int:
        """The ZeRO stage this layout corresponds to, for readers who know that name."""
        return [self.optimizer, self.grads, self.params].count("partitioned")

    @property
    def partitioned(self) -> bool:
        return self.optimizer == "partitioned"


@dataclass(frozen=True)
class Plan:
    name: str
    system: Program
    membership: Membership
    workers: Family
    hub: Family | None
    topology: str  # pair | star | hierarchy
    fanout: int
    assignment: LeafAssignment
    contract: str  # exact
    state: StateLayout = StateLayout()
    checkpoint_every: int | None = None

    def slice_of(self, w: int) -> tuple[int, int]:
        """Elements of the flat parameter array that worker w owns when state is partitioned."""
        n = self.system.n_params
        base, extra = divmod(n, self.workers.count)
        start = w * base + min(w, extra)
        return start, start + base + (1 if w < extra else 0)

    def canonical(self) -> str:
        fams = ", ".join(
            f"{f.name}{'' if f.singleton else f'[{f.count}]'}" for f in self.membership.families
        )
        return (
            f"plan {self.name}\nroles {fams}\ntopology {self.topology} fanout {self.fanout}"
            f" hub {self.hub.name if self.hub else '-'}\nworkers {self.workers.name}\n"
            f"leaves {self.assignment.blocks}\ncombine canonical tree, deliver to all\n"
            f"contract {self.contract}\nstate {self.state}\ncheckpoint {self.checkpoint_every}\n"
        )

    def identity(self) -> str:
        text = self.system.canonical() + self.canonical()
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class PairingEntry:
    """Roles lo..hi-1 of a family run on `host`, with `memory` bytes (None: the default) and
    `cores` cores for each role's threads (None: whatever the machine gives it)."""

    family: str
    lo: int
    hi: int
    host: str
    memory: int | None = None
    cores: int | None = None
    gpu: str | None = None  # a device profile (profiles.DEVICE_PROFILES): a GPU role


@dataclass(frozen=True)
class Pairing:
    name: str
    plan: Plan
    entries: tuple[PairingEntry, ...]

    def entry_of(self, index: int) -> PairingEntry:
        name = self.plan.membership.name_of(index)
        fam, _, rest = name.partition("[")
        i = int(rest[:-1]) if rest else 0
        for e in self.entries:
            if e.family == fam and e.lo <= i < e.hi:
                return e
        raise KeyError(name)

    def host_of(self, index: int) -> str:
        return self.entry_of(index).host

    def cores_of(self, index: int) -> int | None:
        return self.entry_of(index).cores

    def gpu_of(self, index: int) -> str | None:
        """The device profile of a GPU role, None for a host role."""
        return self.entry_of(index).gpu

    def profile_of(self, index: int) -> Profile:
        e = self.entry_of(index)
        if e.gpu is not None:
            return DEVICE_PROFILES[e.gpu]
        return host_profile(e.host, e.memory)
