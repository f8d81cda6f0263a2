"""One role's projected schedule: the ops it runs every round and the links it holds.

This is the data compiled into an executable as ALPHA_ROLE (runtime/alpha_program.h); its size
depends on the role's fan-out and depth, never on the total number of roles.
"""

from __future__ import annotations

from dataclasses import dataclass

OP_KINDS = {"compute": 1, "combine": 2, "send": 3, "recv": 4, "apply": 5}


@dataclass(frozen=True)
class Op:
    kind: str  # compute | combine | send | recv | apply
    a: int = 0
    b: int = 0
    link: int = 0

    def show(self, links: tuple[Link, ...]) -> str:
        node = f"[{self.a}, {self.b})"
        if self.kind == "compute":
            return f"compute leaves {node}"
        if self.kind == "combine":
            return f"combine node {node} by the canonical tree"
        if self.kind == "send":
            return f"send piece {node} to {links[self.link].peer_name}"
        if self.kind == "recv":
            return f"receive piece {node} from {links[self.link].peer_name}"
        return "apply the learner to the round's gradient"


@dataclass(frozen=True)
class Link:
    peer: int
    peer_name: str
    accept: bool  # this role listens, the peer connects
    host: str = "127.0.0.1"
    port: int = 0


@dataclass(frozen=True)
class RoleSchedule:
    index: int
    name: str
    n_roles: int
    plan: str
    plan_identity: str
    ops: tuple[Op, ...]
    links: tuple[Link, ...]
    writes_params: bool
    listen_host: str = "127.0.0.1"
    listen_port: int = 0
    epoch: int = 1
    connect_timeout_ms: int = 10_000
    io_timeout_ms: int = 10_000

    def show(self) -> str:
        lines = [f"role {self.name} (index {self.index} of {self.n_roles}), plan {self.plan}"]
        for link in self.links:
            how = "accepts" if link.accept else "connects to"
            lines.append(f"  link: {how} {link.peer_name}")
        lines.append("  each round:")
        lines += [f"    {i + 1}. {op.show(self.links)}" for i, op in enumerate(self.ops)]
        return "\n".join(lines)


def single_process(leaves: int, identity: str) -> RoleSchedule:
    """The schedule of a build without a plan: one role computes and combines everything."""
    ops = (Op("compute", 0, leaves), Op("combine", 0, leaves), Op("apply"))
    return RoleSchedule(0, "main", 1, "", identity, ops, (), True)
