"""Check that projected schedules fit together: every send meets its receive, nothing waits
forever. Sends and receives are modelled as rendezvous (no buffering), the strictest case."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.plan.schedule import RoleSchedule


@dataclass(frozen=True)
class ScheduleFault:
    kind: str  # mismatch | deadlock
    message: str


SENDS = {"send": "recv", "send_params": "recv_params", "ack_send": "ack_recv"}
RECEIVES = set(SENDS.values())


def simulate(schedules: list[RoleSchedule]) -> ScheduleFault | None:
    """Run every role's schedule for one round; None when all of them finish."""
    by_index = {s.index: s for s in schedules}
    pc = {s.index: 0 for s in schedules}

    def current(i: int) -> tuple[str, tuple[int, int, int, int], int] | None:
        s = by_index[i]
        if pc[i] >= len(s.ops):
            return None
        op = s.ops[pc[i]]
        talks = op.kind in SENDS or op.kind in RECEIVES
        peer = s.links[op.link].peer if talks else -1
        return op.kind, (op.a, op.b, op.start, op.count), peer

    progress = True
    while progress:
        progress = False
        for i in by_index:
            while (op := current(i)) is not None and op[0] not in SENDS and op[0] not in RECEIVES:
                pc[i] += 1
                progress = True
            if op is None or op[0] not in SENDS:
                continue
            kind, what, peer = op
            if peer not in by_index:
                return ScheduleFault("mismatch", f"{by_index[i].name} sends to an unknown role")
            other = current(peer)
            if other is None or other[0] not in RECEIVES or other[2] != i:
                continue
            if (other[0], other[1]) != (SENDS[kind], what):
                return ScheduleFault(
                    "mismatch",
                    f"{by_index[i].name} does {kind} {what} but {by_index[peer].name} "
                    f"expects {other[0]} {other[1]}",
                )
            pc[i] += 1
            pc[peer] += 1
            progress = True
    stuck = [s.name for s in schedules if pc[s.index] < len(s.ops)]
    if stuck:
        return ScheduleFault("deadlock", "no role can proceed: " + ", ".join(stuck[:8]))
    return None
