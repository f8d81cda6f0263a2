"""Check that projected schedules fit together: every send meets its receive, nothing waits
forever. Sends and receives are modelled as rendezvous (no buffering), the strictest case."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.plan.schedule import RoleSchedule


@dataclass(frozen=True)
class ScheduleFault:
    kind: str  # mismatch | deadlock
    message: str


def simulate(schedules: list[RoleSchedule]) -> ScheduleFault | None:
    """Run every role's schedule for one round; None when all of them finish."""
    by_index = {s.index: s for s in schedules}
    pc = {s.index: 0 for s in schedules}

    def current(i: int) -> tuple[str, int, int, int] | None:
        s = by_index[i]
        if pc[i] >= len(s.ops):
            return None
        op = s.ops[pc[i]]
        peer = s.links[op.link].peer if op.kind in ("send", "recv") else -1
        return op.kind, op.a, op.b, peer

    progress = True
    while progress:
        progress = False
        for i in by_index:
            while (op := current(i)) is not None and op[0] not in ("send", "recv"):
                pc[i] += 1
                progress = True
            if op is None or op[0] != "send":
                continue
            _, a, b, peer = op
            if peer not in by_index:
                return ScheduleFault("mismatch", f"{by_index[i].name} sends to an unknown role")
            other = current(peer)
            if other is None or other[0] != "recv" or other[3] != i:
                continue
            if (other[1], other[2]) != (a, b):
                return ScheduleFault(
                    "mismatch",
                    f"{by_index[i].name} sends piece [{a}, {b}) but {by_index[peer].name} "
                    f"expects [{other[1]}, {other[2]})",
                )
            pc[i] += 1
            pc[peer] += 1
            progress = True
    stuck = [s.name for s in schedules if pc[s.index] < len(s.ops)]
    if stuck:
        return ScheduleFault("deadlock", "no role can proceed: " + ", ".join(stuck[:8]))
    return None
