"""The live view of a run: one progress bar per role, fed by the roles' events."""

from __future__ import annotations

from collections.abc import Sequence

from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from alpha_cli.render import err
from alpha_core.launch import RoleOutcome, run_roles


def run_with_progress(
    commands: Sequence[tuple[str, Sequence[str]]], steps: int, quiet: bool
) -> list[RoleOutcome]:
    if quiet:
        return run_roles(commands)
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

        def on_event(role: str, event: dict[str, object]) -> None:
            kind = event.get("event")
            task = tasks[role]
            if kind == "step":
                loss = event.get("loss")
                progress.update(
                    task,
                    completed=int(str(event.get("step", 0))),
                    loss=f"{float(loss):.4f}" if isinstance(loss, int | float) else "nan",
                )
            elif kind == "refused":
                progress.update(task, state=f"[red]refused: {event.get('name')}")
            elif kind == "done":
                progress.update(task, state="[green]done")

        return run_roles(commands, on_event)
