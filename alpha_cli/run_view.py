"""The live view of a run: one progress bar per role, fed by the roles' events."""

from __future__ import annotations

from collections.abc import Sequence

from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from alpha_cli.render import err
from alpha_core.launch import RoleOutcome, run_roles, startable
from alpha_core.run_state import RunState


def run_with_progress(
    commands: Sequence[tuple[str, Sequence[str]]],
    steps: int,
    quiet: bool,
    targets: dict[str, str] | None = None,
) -> list[RoleOutcome]:
    """One bar per role; `targets` (role -> x86_64, aarch64, gpu h200 (shadow), ...) labels
    each, and a GPU role's bar names its device once it has started."""
    if quiet:
        return run_roles(commands)
    startable(commands)  # a launch-failed refusal comes before any bar is drawn
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

        state = RunState([role for role, _ in commands], steps)
        marks = {"refused": "[red]refused: {}", "done": "[green]done"}

        def on_event(role: str, event: dict[str, object]) -> None:
            state.apply(role, event)
            if event.get("event") == "device":
                where = f"{event.get('target')} on {event.get('name')}"
                if event.get("uuid") and not event.get("shadow"):
                    where += f" {str(event.get('uuid'))[:12]}…"
                progress.update(tasks[role], target=where)
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


def gpu_lines(outcomes: Sequence[RoleOutcome]) -> list[str]:
    """A line per GPU role of a finished run: its target and device, the device memory it
    holds against what was free when it started, its kernel time per round."""
    from alpha_core.sizes import human_bytes

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
        lines.append(f"{o.role:>17} {d.get('target')} on {d.get('name')}: {memory}{timing}")
    return lines
