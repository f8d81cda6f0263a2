"""The live view of a run: one progress bar per role, fed by the roles' events."""

from __future__ import annotations

from collections.abc import Sequence

from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from alpha_cli.render import err
from alpha_core.launch import RoleOutcome, run_roles, startable
from alpha_core.run_state import RunState


def run_with_progress(
    commands: Sequence[tuple[str, Sequence[str]]], steps: int, quiet: bool
) -> list[RoleOutcome]:
    if quiet:
        return run_roles(commands)
    startable(commands)  # a launch-failed refusal comes before any bar is drawn
    columns = (
        TextColumn("[bold]{task.description:>12}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err) as progress:
        tasks: dict[str, TaskID] = {
            role: progress.add_task(role, total=steps, loss="–", state="") for role, _ in commands
        }

        state = RunState([role for role, _ in commands], steps)
        marks = {"refused": "[red]refused: {}", "done": "[green]done"}

        def on_event(role: str, event: dict[str, object]) -> None:
            state.apply(role, event)
            r = state.roles[role]
            loss = "–" if r.loss is None else f"{r.loss:.4f}"
            mark = marks.get(r.state, "").format(r.refusal)
            progress.update(tasks[role], completed=r.round, loss=loss, state=mark)

        return run_roles(commands, on_event)


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
