"""What a run stopped by a signal says, in one line: the round its roles reached, its newest
published capture, and the command that resumes from it. Shared by `alpha run` and alpha-tui
(and docs/runtime.md, "Stopping a run"), so the two faces say the same thing."""

from __future__ import annotations

import shlex
import signal
from collections.abc import Sequence
from pathlib import Path

from alpha_core.run.captures import newest_capture
from alpha_core.run.run_state import RunState
from alpha_core.run.runs import Choice

# the options whose value a resume replaces: the capture to start from is the new one
_REPLACED = {"--resume"}
_DROPPED = {"--fresh"}


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def resume_argv(argv: Sequence[str], capture: str) -> list[str]:
    """`argv` (an `alpha run` command line) with `--resume CAPTURE` in place of any resume or
    --fresh it had: the same build inputs, so the same identity, continued from CAPTURE."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _REPLACED:
            skip = "=" not in arg
            continue
        if name in _DROPPED:
            continue
        kept.append(arg)
    return [*kept, "--resume", capture]


def interrupted_line(
    sig: int, state: RunState, steps: int, argv: Sequence[str], folder: Path | None = None
) -> str:
    """`interrupted by SIGINT at round 37 of 300; newest capture: round 30 in DIR; resume with:
    alpha run …`, or the same saying that no capture was published and how to start again.
    `argv` is the `alpha run` command line that would build this run again. The newest
    capture is the newer of what the roles said and what `folder` (where they publish) holds:
    a capture renamed into place just before the signal may not have been reported yet."""
    newest = state.newest_capture()
    on_disk = newest_capture(folder) if folder is not None else None
    if on_disk is not None and (newest is None or on_disk[0] > newest[0]):
        newest = (on_disk[0], str(on_disk[1]))
    # the roles' events may lag behind a capture they published: they reached at least it
    reached = max(state.reached(), newest[0] if newest is not None else 0)
    head = f"interrupted by {signal_name(sig)} at round {reached:,} of {steps:,}"
    if newest is None:
        return (
            f"{head}; no capture was published (captures come with `checkpoint every N rounds` "
            f"or --checkpoint-every N); start again with: {shlex.join(argv)}"
        )
    at, capture = newest
    return (
        f"{head}; newest capture: round {at:,} in {capture}; "
        f"resume with: {shlex.join(resume_argv(argv, capture))}"
    )


def run_argv(
    path: str,
    choice: Choice,
    checkpoint_every: int = 0,
    hosts: str | None = None,
    gpu_shadow: bool = False,
) -> list[str]:
    """The `alpha run` command line that builds `choice` of the file at `path` as a face
    (alpha-tui) built it: the same steps and capture interval, so the same identity."""
    argv = ["alpha", "run", path]
    if choice.plan is not None:
        argv += ["--plan", choice.plan]
        if choice.pairing is not None:
            argv += ["--pairing", choice.pairing]
    elif choice.system is not None:
        argv += ["--system", choice.system]
    if choice.steps is not None:
        argv += ["--steps", str(choice.steps)]
    every = choice.checkpoint_every or checkpoint_every
    if every:
        argv += ["--checkpoint-every", str(every)]
    if hosts is not None:
        argv += ["--hosts", hosts]
    if gpu_shadow:
        argv.append("--gpu-shadow")
    return argv
