"""The live view of a run: one progress bar per role, fed by the roles' events; from
MANY_ROLES roles on, one summary line and bar for all of them, the slowest role, and each
refused role as it is refused."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from alpha_cli.render import err
from alpha_core.run.launch import Launch, RoleOutcome, startable
from alpha_core.run.role_summary import MANY_ROLES, summarize
from alpha_core.run.run_state import RunState
from alpha_core.support.sizes import show_loss

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SHOWN_REFUSALS = 8  # refused roles named as they are refused in a run of many roles


class Interrupted(BaseException):
    """The launcher got SIGINT, SIGTERM or SIGHUP while its roles ran: they were stopped, and
    `state` is what they had said by then."""

    def __init__(self, sig: int, state: RunState | None = None) -> None:
        super().__init__(sig)
        self.sig = sig
        self.state = state


@contextmanager
def stopping_signals() -> Iterator[None]:
    """While inside, SIGINT, SIGTERM and SIGHUP raise Interrupted in the main thread (where
    `Launch.wait` is waiting), so the roles are stopped and the run says where it got to."""

    def interrupt(sig: int, _frame: object) -> None:
        raise Interrupted(sig)

    before = {sig: signal.signal(sig, interrupt) for sig in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _watched(
    commands: Sequence[tuple[str, Sequence[str]]],
    state: RunState,
    on_event: Callable[[str, dict[str, object]], None] | None,
    record: Callable[[str, dict[str, object]], None] | None = None,
) -> list[RoleOutcome]:
    """Start every role and wait for them; on a stopping signal stop them all (their process
    group, then SIGKILL after a grace) and raise Interrupted with what they had said.
    `record` is given every event too (the run's record, alpha_core.run.record)."""

    def apply(role: str, event: dict[str, object]) -> None:
        state.apply(role, event)
        if record is not None:
            record(role, event)
        if on_event is not None:
            on_event(role, event)

    with stopping_signals():
        launch = Launch(commands, apply)
        try:
            return launch.wait()
        except Interrupted as i:
            for sig in STOPPING_SIGNALS:  # a second Ctrl-C while they stop changes nothing
                signal.signal(sig, signal.SIG_IGN)
            launch.stop()
            raise Interrupted(i.sig, state) from None


def run_with_progress(
    commands: Sequence[tuple[str, Sequence[str]]],
    steps: int,
    quiet: bool,
    targets: dict[str, str] | None = None,
    record: Callable[[str, dict[str, object]], None] | None = None,
) -> list[RoleOutcome]:
    """One bar per role; `targets` (role -> x86_64, aarch64, gpu h200 (shadow), ...) labels
    each, and a GPU role's bar names its device once it has started."""
    state = RunState([role for role, _ in commands], steps)
    if quiet:
        return _watched(commands, state, None, record)
    startable(commands)  # a launch-failed refusal comes before any bar is drawn
    if len(commands) >= MANY_ROLES:
        return _run_summarised(commands, state, steps, record)
    columns = (
        TextColumn("[bold]{task.description:>12}"),
        TextColumn("{task.fields[target]}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err) as progress:
        tasks: dict[str, TaskID] = {
            role: progress.add_task(
                role, total=steps, loss="–", state="", target=(targets or {}).get(role, "")
            )
            for role, _ in commands
        }

        marks = {"refused": "[red]refused: {}", "done": "[green]done"}

        def on_event(role: str, event: dict[str, object]) -> None:
            if event.get("event") == "device":
                where = f"{event.get('target')} on {event.get('name')}"
                if event.get("uuid") and not event.get("shadow"):
                    where += f" {str(event.get('uuid'))[:12]}…"
                progress.update(tasks[role], target=where)
            r = state.roles[role]
            loss = "–" if r.loss is None else show_loss(r.loss)
            mark = marks.get(r.state, "").format(r.refusal)
            progress.update(tasks[role], completed=r.round, loss=loss, state=mark)

        return _watched(commands, state, on_event, record)


def _run_summarised(
    commands: Sequence[tuple[str, Sequence[str]]],
    state: RunState,
    steps: int,
    record: Callable[[str, dict[str, object]], None] | None,
) -> list[RoleOutcome]:
    """Many roles: a summary line, one bar at the slowest role's round and the slowest role's
    name, redrawn a few times a second from the run's state (never once per event), and a line
    for each role as it is refused."""
    from rich.console import Group
    from rich.live import Live
    from rich.text import Text

    def view() -> Group:
        s = summarize(state)
        width = 40
        filled = width * min(s.slowest_round, steps) // max(1, steps)
        bar = Text("━" * filled, style="green") + Text("━" * (width - filled), style="grey37")
        bar += Text(f" {s.slowest_round:,}/{steps:,} rounds by every role")
        parts = [Text(s.line()), bar]
        slowest = s.slowest_line()
        if slowest is not None:
            parts.append(Text(slowest))
        return Group(*parts)

    told: set[str] = set()
    with Live(console=err, get_renderable=view, refresh_per_second=4, transient=False) as live:

        def on_event(role: str, event: dict[str, object]) -> None:
            r = state.roles[role]
            if r.state in ("refused", "killed") and role not in told:
                told.add(role)
                if len(told) <= SHOWN_REFUSALS:  # the report counts the rest by name
                    live.console.print(
                        f"[red]refused[/] {escape(role)}: {escape(r.refusal or '')} "
                        f"{escape(r.message or '')}",
                        soft_wrap=True,
                    )

        try:
            return _watched(commands, state, on_event, record)
        finally:
            live.stop()  # its last view drawn, then the line ended where Live leaves it open
            if not err.is_terminal:
                err.line()


def training_line(steps: int, resume: str | None) -> str:
    """What a run is about to do: `training 300 steps`, or for a resume `resuming at round
    N of M` (the round of the capture it resumes from, read from the checkpoint itself)."""
    if not resume:
        return f"training {steps} steps"
    from alpha_core.checkpoint import CheckpointError, read_checkpoint

    try:
        at = read_checkpoint(resume).round
    except CheckpointError:  # the roles refuse it by name at start-up
        return f"resuming from {resume} ({steps} steps in all)"
    return f"resuming at round {at} of {steps}"


def gpu_lines(outcomes: Sequence[RoleOutcome]) -> list[str]:
    """A line per GPU role of a finished run: its target and device, the device memory it
    holds against what was free when it started, its kernel time per round."""
    from alpha_core.support.sizes import human_bytes

    lines = []
    for o in outcomes:
        d = o.device
        if d is None:
            continue
        demand = int(str(d.get("demand") or 0))
        free = int(str(d.get("free") or 0))
        memory = f"device memory {human_bytes(demand)}"
        memory += f" of {human_bytes(free)} free" if free else " (host memory)"
        kernels = o.kernel_ms_per_round
        timing = f", kernels {kernels:.3f} ms/round" if kernels is not None else ""
        if o.to_device is not None and o.to_host is not None:
            timing += f", bus {human_bytes(o.to_device)} over, {human_bytes(o.to_host)} back"
        lines.append(f"{o.role:>17} {d.get('target')} on {d.get('name')}: {memory}{timing}")
    return lines
