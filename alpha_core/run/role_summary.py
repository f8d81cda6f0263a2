"""A run of many roles at a glance: how many are starting, running, done or refused, the round
the slowest has reached and which role that is, and every refused role by name. The CLI shows
it instead of a bar per role and alpha-tui above its (scrolling) table, from MANY_ROLES on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from alpha_core.build.outputs import BuildResult
from alpha_core.run.run_state import RoleState, RunState
from alpha_core.support.sizes import human_bytes, show_loss

MANY_ROLES = 16  # from this many roles a face summarises instead of drawing a line per role
STATES = ("starting", "running", "done", "refused", "killed")


@dataclass(frozen=True)
class Refused:
    role: str
    name: str
    message: str


@dataclass(frozen=True)
class Summary:
    roles: int
    steps: int
    counts: dict[str, int]  # roles in each of STATES
    slowest: str | None  # the unfinished role furthest behind (the first of equals), or once
    # every role has ended the one whose last round ended last; None: none known
    slowest_round: int  # the round every role has reached
    fastest_round: int
    loss: float | None  # the newest loss of the role furthest ahead
    refused: tuple[Refused, ...]  # every refused or killed role, in role order

    def line(self) -> str:
        """`256 roles: 200 running, 56 done · rounds 12-20 of 20 · loss 0.773655`."""
        states = ", ".join(f"{self.counts[s]:,} {s}" for s in STATES if self.counts.get(s))
        rounds = (
            f"round {self.slowest_round:,}"
            if self.slowest_round == self.fastest_round
            else f"rounds {self.slowest_round:,}-{self.fastest_round:,}"
        )
        loss = f" · loss {show_loss(self.loss)}" if self.loss is not None else ""
        return f"{self.roles:,} roles: {states} · {rounds} of {self.steps:,}{loss}"

    def slowest_line(self) -> str | None:
        """`slowest worker[17] at round 12` while roles run; `slowest worker[17]: its last
        round ended last` once they have ended."""
        if self.slowest is None:
            return None
        if self.counts.get("starting") or self.counts.get("running"):
            return f"slowest {self.slowest} at round {self.slowest_round:,}"
        return f"slowest {self.slowest}: its last round ended last"


def summarize(state: RunState) -> Summary:
    return summary_of(list(state.roles.values()))


def summary_of(roles: Sequence[RoleState]) -> Summary:
    counts = dict.fromkeys(STATES, 0)
    for r in roles:
        counts[r.state] = counts.get(r.state, 0) + 1
    unfinished = [r for r in roles if not r.finished]
    slowest = min(unfinished, key=lambda r: r.round, default=None)
    if slowest is None:  # every role has ended: the one whose last round ended last
        timed = [r for r in roles if r.pace]
        slowest = max(timed, key=lambda r: r.pace[-1][0], default=None)
    ahead = max(roles, key=lambda r: r.round, default=None)
    return Summary(
        len(roles),
        roles[0].steps if roles else 0,
        counts,
        slowest.role if slowest is not None else None,
        min((r.round for r in roles), default=0),
        ahead.round if ahead is not None else 0,
        ahead.loss if ahead is not None else None,
        tuple(
            Refused(r.role, r.refusal or r.state, r.message or "")
            for r in roles
            if r.state in ("refused", "killed")
        ),
    )


def roles_line(roles: Sequence[str]) -> str:
    """The roles of a finished run as a line: every name for a few, the first and last for
    many (`worker[0] … worker[255]`)."""
    if len(roles) < MANY_ROLES:
        return ", ".join(roles)
    return f"{roles[0]} … {roles[-1]}"


def built_line(result: BuildResult) -> str:
    """A build of many roles as one line: how many of each target, their sizes, the largest
    memory demand and the least headroom (each role's own figures are in the manifest)."""
    exes = result.executables
    targets: dict[str, int] = {}
    for e in exes:
        targets[e.target] = targets.get(e.target, 0) + 1
    kinds = ", ".join(f"{n:,} {t}" for t, n in sorted(targets.items()))
    sizes = sorted({e.size for e in exes})
    size = (
        human_bytes(sizes[0])
        if len(sizes) == 1
        else f"{human_bytes(sizes[0])} to {human_bytes(sizes[-1])}"
    )
    total = human_bytes(sum(e.size for e in exes))
    demand = human_bytes(max(e.demand for e in exes))
    headroom = human_bytes(min(e.headroom for e in exes))
    folder = Path(result.manifest).parent
    return (
        f"built {len(exes):,} executables in {folder} ({kinds}): {size} each, {total} in all; "
        f"memory {demand} at most, headroom {headroom} at least"
    )
