"""The record a run leaves in its folder, written as the roles' events arrive:

```
<run folder>/
  events/<role>.jsonl   every event of each role, one JSON object a line (runtime.md "Events")
  metrics.csv           launch,round,loss,loss_bits,seconds: one row per reported round
  holdout.csv           launch,round,holdout_accuracy|holdout_mse: one row per `evaluated`
                        event (`alpha run --eval-every N`, a single-process run)
  summary.json          system, plan, identity (the build's: with a plan, the plan's), the
                        system's identity and configuration (its canonical text, item by
                        item), steps, times, final loss, held-out metric, parameters'
                        SHA-256 and file, refusals, state
```

Shared by `alpha run` and alpha-tui. Bounded for long runs: a face asks the roles for a step
event every `step_every(steps)` rounds (at most STEP_EVENTS of them, and the last), and a
role's step events stop being written once its events file holds EVENT_BYTES (its other
events are always written; the summary counts what was left out). The summary is written when
the run starts (state `running`) and replaced, whole, at its end; a resumed launch in the same
folder (alpha-tui's `u`) appends to the events and metrics, its rows under a new `launch`
number, and the last row of a round is the one that counts (`alpha_core.run.history`).

The held-out metric is measured at the end (`done`), which the summary keeps, and, with
`--eval-every N` (a run of one process: a plan's roles hold their parameters whole only at the
end), every N rounds: the runtime's `evaluated` events, one row each in holdout.csv.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from alpha_core.build.outputs import role_file_name
from alpha_core.run.identity import configuration

FORMAT = "alpha-run/1"
SUMMARY = "summary.json"
METRICS = "metrics.csv"
HOLDOUT = "holdout.csv"
EVENTS = "events"
METRIC_COLUMNS = ("launch", "round", "loss", "loss_bits", "seconds")
STEP_EVENTS = 10_000  # at most this many step events from a role in a run
EVENT_BYTES = 32 << 20  # a role's events file stops taking step events past this size
FLUSH_S = 1.0  # files are flushed at least this often while events arrive


def step_every(steps: int) -> int:
    """Every how many rounds a role reports a step (and its last round): 1 up to STEP_EVENTS
    steps, so a run reports at most STEP_EVENTS rounds whatever its length."""
    return max(1, -(-steps // STEP_EVENTS))


def utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass
class Subject:
    """What was run: written into the summary as given."""

    system: str
    plan: str | None
    pairing: str | None
    identity: str  # the build's: the system's, or with a plan the plan's
    canonical: str  # the system's canonical text: its configuration
    steps: int
    source: str  # the .alpha file
    command: Sequence[str] = ()  # the command line that started it
    roles: Sequence[str] = ()
    resumed_from: str | None = None
    checkpoints: str | None = None  # where captures were published
    build: str | None = None  # the build manifest


@dataclass
class _Role:
    file: IO[str]
    bytes: int = 0


@dataclass
class RunRecord:
    """Writes the record of the launches of one run into `folder`."""

    folder: Path
    subject: Subject
    started: float = field(default_factory=time.time)
    launches: int = 0
    state: str = "running"
    done: dict[str, Any] | None = None
    refusals: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0  # the highest round a role reported
    left_out: dict[str, int] = field(default_factory=dict)  # step events not written, by role
    _roles: dict[str, _Role] = field(default_factory=dict)
    _metrics: IO[str] | None = None
    _writer: Any = None
    _metric_role: str | None = None
    _flushed: float = 0.0
    _launch_started: float = 0.0

    def begin(self, resumed_from: str | None = None) -> None:
        """A launch starts (the first, or a resume in the same folder): opens the files."""
        self.close()
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / EVENTS).mkdir(exist_ok=True)
        self.launches += 1
        self.state, self.done, self.refusals = "running", None, []
        if resumed_from is not None:
            self.subject.resumed_from = resumed_from
        self._launch_started = time.time()
        self._metric_role = self.subject.roles[0] if self.subject.roles else None
        metrics = self.folder / METRICS
        fresh = not metrics.exists()
        self._metrics = metrics.open("a", encoding="utf-8", newline="")
        self._writer = csv.writer(self._metrics, lineterminator="\n")
        if fresh:
            self._writer.writerow(METRIC_COLUMNS)
        for role in self.subject.roles:
            path = self.folder / EVENTS / f"{role_file_name(role)}.jsonl"
            size = path.stat().st_size if path.exists() else 0
            self._roles[role] = _Role(path.open("a", encoding="utf-8"), size)
        self.write_summary()

    def event(self, role: str, event: dict[str, object]) -> None:
        """One event of a role, as the launch read it."""
        r = self._roles.get(role)
        if r is None:
            return
        kind = event.get("event")
        line = json.dumps(event, separators=(",", ":")) + "\n"
        if kind == "step":
            step = event.get("step")
            if isinstance(step, int):
                self.rounds = max(self.rounds, step)
            if role == self._metric_role and self._writer is not None:
                self._writer.writerow(
                    (
                        self.launches,
                        step,
                        event.get("loss"),
                        event.get("loss_bits"),
                        f"{time.time() - self._launch_started:.3f}",
                    )
                )
            if r.bytes + len(line) > EVENT_BYTES:
                self.left_out[role] = self.left_out.get(role, 0) + 1
                line = ""
        elif kind == "evaluated":
            metric = "holdout_accuracy" if "holdout_accuracy" in event else "holdout_mse"
            path = self.folder / HOLDOUT
            fresh = not path.exists()
            with path.open("a", encoding="utf-8", newline="") as f:
                writer = csv.writer(f, lineterminator="\n")
                if fresh:
                    writer.writerow(("launch", "round", metric))
                writer.writerow((self.launches, event.get("round"), event.get(metric)))
        elif kind == "done":
            if self.done is None or ("params_sha256" in event and "params_sha256" not in self.done):
                self.done = dict(event)
        elif kind == "refused":
            self.refusals.append(
                {
                    "role": role,
                    "name": event.get("name"),
                    "message": event.get("message"),
                    "round": event.get("round"),
                }
            )
        if line:
            r.file.write(line)
            r.bytes += len(line.encode())
        now = time.monotonic()
        if now - self._flushed > FLUSH_S:
            self.flush()
            self._flushed = now

    def event_refused(self, name: str, message: str, role: str | None = None) -> None:
        """A refusal no role said (a role that could not be started): kept in the summary."""
        self.refusals.append({"role": role, "name": name, "message": message, "round": None})

    def flush(self) -> None:
        for r in self._roles.values():
            r.file.flush()
        if self._metrics is not None:
            self._metrics.flush()

    def end(self, state: str) -> None:
        """The launch ended: `done`, `refused`, `killed` or `interrupted`."""
        self.state = state
        self.flush()
        self.write_summary()

    def close(self) -> None:
        for r in self._roles.values():
            r.file.close()
        self._roles = {}
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None

    def summary(self) -> dict[str, Any]:
        s, done = self.subject, self.done or {}
        ended = self.state != "running"
        now = time.time()
        return {
            "format": FORMAT,
            "system": s.system,
            "plan": s.plan,
            "pairing": s.pairing,
            "identity": s.identity,
            "system_identity": hashlib.sha256(s.canonical.encode()).hexdigest(),
            "configuration": configuration(s.canonical),
            "canonical": s.canonical,
            "steps": s.steps,
            "source": s.source,
            "command": list(s.command),
            "roles": list(s.roles),
            "state": self.state,
            "launches": self.launches,
            "resumed_from": s.resumed_from,
            "started": utc(self.started),
            "ended": utc(now) if ended else None,
            "seconds": round(now - self.started, 3) if ended else None,
            "rounds": self.rounds,
            "final_loss": done.get("final_loss"),
            "final_loss_bits": done.get("final_loss_bits"),
            "holdout_rows": done.get("holdout_rows"),
            "holdout_accuracy": done.get("holdout_accuracy"),
            "holdout_mse": done.get("holdout_mse"),
            "params_sha256": done.get("params_sha256"),
            "params_file": done.get("params_file"),
            "refusals": self.refusals,
            "files": {
                "metrics": METRICS,
                "events": sorted(
                    f"{EVENTS}/{p.name}" for p in (self.folder / EVENTS).glob("*.jsonl")
                ),
                "checkpoints": s.checkpoints,
                "build": s.build,
            },
            "step_events_left_out": dict(self.left_out),
        }

    def write_summary(self) -> None:
        """summary.json replaced whole (a reader never sees half of one)."""
        path = self.folder / SUMMARY
        partial = path.with_name(f".{SUMMARY}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(self.summary(), indent=2) + "\n", encoding="utf-8")
        os.replace(partial, path)
