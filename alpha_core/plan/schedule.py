"""One role's projected schedule: the ops it runs every round and the links it holds.

This is the data compiled into an executable as ALPHA_ROLE (runtime/alpha_program.h); its size
depends on the role's fan-out and depth, never on the total number of roles.
"""

from __future__ import annotations

from dataclasses import dataclass

OP_KINDS = {
    "compute": 1,
    "combine": 2,
    "send": 3,
    "recv": 4,
    "apply": 5,
    "send_params": 6,
    "recv_params": 7,
    "checkpoint": 8,
    "ack_recv": 9,
    "ack_send": 10,
    "publish": 11,
    "norm_send": 12,
    "norm_recv": 13,
}
# what a CHECKPOINT op writes (its `flags`)
WRITES_PARAMS, WRITES_OPTIMIZER, WRITES_SCALARS = 1, 2, 4


@dataclass(frozen=True)
class Op:
    """One step of a role's round.

    `a`, `b`: a canonical-tree node [a, b) (compute, combine, send, recv). `start`, `count`:
    an element range of the flat parameter array; count 0 means all elements (a whole piece, a
    whole apply). `flags`: what a checkpoint op writes.
    """

    kind: str
    a: int = 0
    b: int = 0
    link: int = 0
    start: int = 0
    count: int = 0
    flags: int = 0

    def _elements(self) -> str:
        return f" elements [{self.start}, {self.start + self.count})" if self.count else ""

    def show(self, links: tuple[Link, ...]) -> str:
        node = f"[{self.a}, {self.b})"
        peer = links[self.link].peer_name if self.link < len(links) else "?"
        if self.kind == "compute":
            return f"compute leaves {node}"
        if self.kind == "combine":
            return f"combine node {node}{self._elements()} by the canonical tree"
        if self.kind == "send":
            return f"send piece {node}{self._elements()} to {peer}"
        if self.kind == "recv":
            return f"receive piece {node}{self._elements()} from {peer}"
        if self.kind == "apply":
            return "apply the learner to" + (self._elements() or " the round's gradient")
        if self.kind == "send_params":
            return f"send parameters{self._elements()} to {peer}"
        if self.kind == "recv_params":
            return f"receive parameters{self._elements()} from {peer}"
        if self.kind == "checkpoint":
            what = [
                w
                for bit, w in (
                    (WRITES_PARAMS, "parameters"),
                    (WRITES_OPTIMIZER, "optimizer state"),
                    (WRITES_SCALARS, "learner scalars"),
                )
                if self.flags & bit
            ]
            return (
                "on checkpoint rounds: write " + (", ".join(what) or "nothing") + self._elements()
            )
        if self.kind == "norm_send":
            return f"send the gradient-norm nodes of{self._elements()} to {peer}"
        if self.kind == "norm_recv":
            return f"receive the gradient-norm nodes of{self._elements()} from {peer}"
        if self.kind == "ack_recv":
            return f"on checkpoint rounds: receive {peer}'s capture acknowledgement"
        if self.kind == "ack_send":
            return f"on checkpoint rounds: acknowledge the capture to {peer}"
        return "on checkpoint rounds: publish the capture (manifest, then atomic rename)"


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
    checkpoint_every: int = 0  # 0: no checkpoints
    checkpoint_dir: str = ""
    resume: str = ""  # a checkpoint or capture folder to resume from; "" for a fresh start
    checkpoint_keep: int = 0  # published captures the root keeps; 0: every one
    state_start: int = 0  # the elements whose learner state this role holds
    state_count: int = 0  # 0: all of them
    secret_file: str = ""  # where the role reads the launch secret (a path, never the secret)
    threads: int = 0  # threads for the kernels' tasks; 0: the cores the process may use
    max_threads: int = 0  # the most its pairing admits (`cores N`); 0: no limit

    def show(self) -> str:
        lines = [f"role {self.name} (index {self.index} of {self.n_roles}), plan {self.plan}"]
        for link in self.links:
            how = "accepts" if link.accept else "connects to"
            lines.append(f"  link: {how} {link.peer_name}")
        if self.checkpoint_every:
            lines.append(f"  checkpoints every {self.checkpoint_every} rounds and at the end")
        if self.state_count:
            lines.append(
                f"  owns learner state for elements "
                f"[{self.state_start}, {self.state_start + self.state_count})"
            )
        lines.append("  each round:")
        lines += [f"    {i + 1}. {op.show(self.links)}" for i, op in enumerate(self.ops)]
        return "\n".join(lines)


def single_process(
    leaves: int,
    identity: str,
    n_params: int = 0,
    checkpoint_every: int = 0,
    checkpoint_dir: str = "",
) -> RoleSchedule:
    """The schedule of a build without a plan: one role computes and combines everything,
    owns all state, and (when asked) writes and publishes every capture itself."""
    ops = [Op("compute", 0, leaves), Op("combine", 0, leaves), Op("apply")]
    if checkpoint_every:
        flags = WRITES_PARAMS | WRITES_OPTIMIZER | WRITES_SCALARS
        ops += [Op("checkpoint", count=n_params, flags=flags), Op("publish")]
    return RoleSchedule(
        0,
        "main",
        1,
        "",
        identity,
        tuple(ops),
        (),
        True,
        checkpoint_every=checkpoint_every,
        checkpoint_dir=checkpoint_dir,
    )
