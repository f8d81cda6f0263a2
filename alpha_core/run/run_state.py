"""What a run looks like from its events: each role's round, loss curve, frames, captures and
end, folded from the JSON lines its executable writes (docs/runtime.md, "Events").

The faces that watch a run (the CLI's bars, alpha-tui) only show a RunState; they decide
nothing about it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from alpha_core.run.agreement import Agreement
from alpha_core.run.launch import ended

LOSS_HISTORY = 4096  # the losses kept per role, for a curve
PACE_SAMPLES = 64  # the step events a role's rate is measured over
EVENT_HISTORY = 2000  # the events kept per role, for its log


def _events() -> deque[dict[str, object]]:
    return deque(maxlen=EVENT_HISTORY)


@dataclass
class RoleState:
    role: str
    steps: int
    round: int = 0  # rounds completed
    state: str = "starting"  # starting, running, done, refused, killed
    losses: list[float] = field(default_factory=list)  # the newest LOSS_HISTORY of them
    first_round: int = 1  # the round of losses[0]
    events: deque[dict[str, object]] = field(default_factory=_events)  # the newest, in order
    frames: int = 0  # sent and received since this launch began
    bytes: int = 0
    captured: int | None = None  # the last round this role wrote a capture of
    published: int | None = None  # the last round this role published (the root only)
    capture: str | None = None  # the folder of that published capture
    resumed: int | None = None  # the round this launch resumed from
    refusal: str | None = None
    message: str | None = None
    done: dict[str, object] | None = None
    device: dict[str, object] | None = None  # a GPU role's `device` event: target, name, ...
    cpu: str | None = None  # the CPU level its kernels run at (the start event's `cpu`)
    kernel_us: int | None = None  # a GPU role's kernel time in its newest round
    # when its recent rounds ended (monotonic seconds, round), for its rate and ETA
    pace: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=PACE_SAMPLES))
    cpu_percent: float | None = None  # its process, from /proc (process_usage.py), if sampled
    rss: int | None = None

    @property
    def rate(self) -> float | None:
        """Rounds a second over its recent rounds (the last PACE_SAMPLES step events), while it
        runs; None once it has finished (what it was is its history, not its state)."""
        if len(self.pace) < 2 or self.finished:
            return None
        (t0, r0), (t1, r1) = self.pace[0], self.pace[-1]
        return (r1 - r0) / (t1 - t0) if t1 > t0 and r1 > r0 else None

    @property
    def eta(self) -> float | None:
        """Seconds until its last round at that rate; None when unknown or finished."""
        rate = self.rate
        if rate is None or self.finished or self.round >= self.steps:
            return None
        return (self.steps - self.round) / rate

    @property
    def loss(self) -> float | None:
        return self.losses[-1] if self.losses else None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "refused", "killed")


@dataclass
class RunResult:
    """How a finished launch ended: the parameters' digest and metrics, or the refusals."""

    ok: bool
    params_sha256: str | None = None
    final_loss: float | None = None
    holdout_accuracy: float | None = None
    holdout_mse: float | None = None
    refusals: list[tuple[str, str, str]] = field(default_factory=list)  # role, name, message


class RunState:
    """Every role of one launch. `apply` takes each event as it arrives; `exited` the exit
    status once a role's process has ended."""

    def __init__(self, roles: list[str], steps: int) -> None:
        self.roles = {role: RoleState(role, steps) for role in roles}
        self.agreement = Agreement(tuple(roles))

    def apply(self, role: str, event: dict[str, object], now: float | None = None) -> None:
        """`now`: when the event was read (monotonic seconds; default: now), for the rate."""
        r = self.roles[role]
        r.events.append(event)
        kind = event.get("event")
        if kind == "start":
            self.agreement.start(event)
            cpu = event.get("cpu")
            r.cpu = cpu if isinstance(cpu, str) else None
            if r.state == "starting":
                r.state = "running"
        elif kind == "resumed":
            r.resumed = r.round = _count(event.get("round"))
        elif kind == "device":
            r.device = event
        elif kind == "step":
            if isinstance(event.get("kernel_us"), int):
                r.kernel_us = _count(event.get("kernel_us"))
            r.state = "running"
            r.round = _count(event.get("step"))
            r.pace.append((time.monotonic() if now is None else now, r.round))
            loss = event.get("loss")
            r.losses.append(float(loss) if isinstance(loss, int | float) else float("nan"))
            if len(r.losses) > LOSS_HISTORY:
                del r.losses[:-LOSS_HISTORY]
            r.first_round = r.round - len(r.losses) + 1
            self.agreement.step(role, event)
            r.frames += _count(event.get("frames"))
            r.bytes += _count(event.get("bytes"))
        elif kind == "checkpoint":
            r.captured = _count(event.get("round"))
            if event.get("published") is True:
                r.published = r.captured
                r.capture = str(event.get("capture") or "") or None
        elif kind == "refused":
            r.state = "refused"
            r.refusal = str(event.get("name"))
            r.message = str(event.get("message"))
        elif kind == "done":
            r.state = "done"
            r.done = event

    def exited(self, role: str, code: int, killed: bool = False) -> None:
        """The role's process ended with `code`; a kill or a silent crash is named here."""
        r = self.roles[role]
        r.cpu_percent = r.rss = None  # a process that is gone uses nothing
        if killed and r.state != "done":
            r.state, r.refusal = "killed", "killed"
            r.message = f"{role} was killed by signal 9 (SIGKILL) on request"
        elif code != 0 and r.state not in ("refused", "killed"):
            r.state, r.refusal = "refused", "role-crashed"
            r.message = f"{role} {ended(code)} and no named refusal"

    @property
    def finished(self) -> bool:
        return all(r.finished for r in self.roles.values())

    def published(self) -> int | None:
        """The newest round any role published in this launch."""
        rounds = [r.published for r in self.roles.values() if r.published is not None]
        return max(rounds) if rounds else None

    def newest_capture(self) -> tuple[int, str] | None:
        """The round and folder of the newest capture published in this launch."""
        found = [
            (r.published, r.capture)
            for r in self.roles.values()
            if r.published is not None and r.capture is not None
        ]
        return max(found) if found else None

    def reached(self) -> int:
        """The round every role has completed (the slowest role's)."""
        return min((r.round for r in self.roles.values()), default=0)

    def result(self) -> RunResult:
        refusals = [
            (r.role, r.refusal or "role-crashed", r.message or "")
            for r in self.roles.values()
            if r.state != "done"
        ]
        writer = next(
            (r.done for r in self.roles.values() if r.done and "params_sha256" in r.done), None
        )
        if refusals or writer is None:
            return RunResult(False, refusals=refusals)
        return RunResult(
            True,
            str(writer.get("params_sha256")),
            _real(writer.get("final_loss")),
            _real(writer.get("holdout_accuracy")),
            _real(writer.get("holdout_mse")),
        )


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _real(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None
