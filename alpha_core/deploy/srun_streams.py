"""Reading a job step's output: `srun --label` prefixes every line with its task id, so each
role's JSON-lines events are told apart; srun's own error lines say which tasks exited with
what status (or could not be launched) on which node."""

from __future__ import annotations

import json
import re

_LABELLED = re.compile(r"^\s*(\d+): (.*)$")
# srun: error: n2: task 1: Exited with exit code 3 / srun: error: n1: tasks 0-2: Killed
_EXITED = re.compile(r"srun: error: (\S+): tasks? ([0-9,-]+): (.*)$")
_CODE = re.compile(r"[Ee]xit(?:ed with exit)? code (\d+)")


def labelled(line: str) -> tuple[int, dict[str, object]] | None:
    """(task, event) for a task's JSON event line, else None."""
    m = _LABELLED.match(line)
    if not m:
        return None
    try:
        event = json.loads(m.group(2))
    except json.JSONDecodeError:
        return None
    return (int(m.group(1)), event) if isinstance(event, dict) else None


def _tasks(text: str) -> list[int]:
    found: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            found += range(int(low), int(high or low) + 1)
    return found


def task_exits(line: str) -> list[tuple[int, int, str]]:
    """(task, exit status, what srun said) for each task an srun error line names: the exit
    code it gives, or 137 for a task killed by a signal or never launched."""
    m = _EXITED.search(line)
    if not m:
        return []
    said = m.group(3).strip()
    code = _CODE.search(said)
    status = int(code.group(1)) if code else 137
    return [(t, status, f"{said} on {m.group(1)}") for t in _tasks(m.group(2))]
