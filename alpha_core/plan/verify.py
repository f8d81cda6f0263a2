"""Check that projected schedules fit together: every send meets its receive, nothing waits
forever.

Two models of a send. `rendezvous`: a send waits until its receiver takes it (no buffering), the
strictest case, which every role tree's up-and-down schedule satisfies. `buffered`: a send is
queued and the role goes on, which is what the runtime does (its send queue drains while the
role waits to receive, tested with 8 MiB pieces crossing): the symmetric pair exchange, where
both workers send before they receive, needs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.plan.schedule import RoleSchedule


@dataclass(frozen=True)
class ScheduleFault:
    kind: str  # mismatch | deadlock
    message: str


SENDS = {
    "send": "recv",
    "send_params": "recv_params",
    "ack_send": "ack_recv",
    "norm_send": "norm_recv",
}
RECEIVES = set(SENDS.values())


def simulate(schedules: list[RoleSchedule], buffered: bool = False) -> ScheduleFault | None:
    """Run every role's schedule for one round; None when all of them finish."""
    if buffered:
        return _simulate_buffered(schedules)
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


def _simulate_buffered(schedules: list[RoleSchedule]) -> ScheduleFault | None:
    by_index = {s.index: s for s in schedules}
    pc = {s.index: 0 for s in schedules}
    queues: dict[tuple[int, int], list[tuple[str, tuple[int, int, int, int]]]] = {}
    progress = True
    while progress:
        progress = False
        for i, s in by_index.items():
            while pc[i] < len(s.ops):
                op = s.ops[pc[i]]
                what = (op.a, op.b, op.start, op.count)
                if op.kind in SENDS:
                    peer = s.links[op.link].peer
                    if peer not in by_index:
                        return ScheduleFault("mismatch", f"{s.name} sends to an unknown role")
                    queues.setdefault((i, peer), []).append((SENDS[op.kind], what))
                elif op.kind in RECEIVES:
                    queue = queues.get((s.links[op.link].peer, i), [])
                    if not queue:
                        break
                    kind, sent = queue.pop(0)
                    if (kind, sent) != (op.kind, what):
                        return ScheduleFault(
                            "mismatch", f"{s.name} expects {op.kind} {what} but gets {kind} {sent}"
                        )
                pc[i] += 1
                progress = True
    stuck = [s.name for s in schedules if pc[s.index] < len(s.ops)]
    if stuck:
        return ScheduleFault("deadlock", "no role can proceed: " + ", ".join(stuck[:8]))
    left = [k for k, q in queues.items() if q]
    if left:
        return ScheduleFault("mismatch", f"{len(left)} link(s) end with messages nobody receives")
    return None
