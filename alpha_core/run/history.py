"""The runs kept in a folder (`alpha runs`): each run folder's record (alpha_core.run.record)
read back, listed newest first, and two compared: their configurations' differences, their
results and final digests side by side, and their loss curves in one chart."""

from __future__ import annotations

import csv
import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alpha_core.build.outputs import MANIFEST
from alpha_core.run.chart import Series
from alpha_core.run.identity import configuration, differences
from alpha_core.run.record import METRICS, SUMMARY
from alpha_core.run.runs import RUNS_DIR_VARIABLE
from alpha_core.support.sizes import show_loss

CURVE_POINTS = 100_000  # a curve is read into at most this many points
SUMMARY_LIMIT = 16 << 20


class HistoryError(Exception):
    """A run that cannot be found or read: `run-not-found`, naming it."""

    name = "run-not-found"


def runs_root(given: str | None = None) -> Path:
    """Where runs are kept: `given`, else ALPHA_RUNS_DIR, else ./alpha-runs."""
    return Path(given or os.environ.get(RUNS_DIR_VARIABLE) or "alpha-runs")


@dataclass(frozen=True)
class Run:
    folder: Path
    summary: dict[str, Any]  # {} for a run folder without a record (made before alpha kept one)

    @property
    def name(self) -> str:
        return self.folder.name

    def get(self, key: str) -> Any:
        return self.summary.get(key)

    @property
    def started(self) -> str:
        return str(self.summary.get("started") or "")

    def label(self) -> str:
        system = self.summary.get("system") or "?"
        plan = self.summary.get("plan")
        return f"{system} plan {plan}" if plan else str(system)

    def result(self) -> str:
        """`loss 0.040045, accuracy 0.9697` (or mse), or what stopped it."""
        s = self.summary
        if not s:
            return "no record"
        if s.get("state") != "done":
            names = sorted({str(r.get("name")) for r in s.get("refusals") or []})
            why = f" ({', '.join(names)})" if names else ""
            return f"{s.get('state')} at round {s.get('rounds') or 0:,}{why}"
        parts = [f"loss {show_loss(float(s['final_loss']))}"] if s.get("final_loss") else []
        if s.get("holdout_accuracy") is not None:
            parts.append(f"accuracy {float(s['holdout_accuracy']):.4f}")
        if s.get("holdout_mse") is not None:
            parts.append(f"mse {show_loss(float(s['holdout_mse']))}")
        return ", ".join(parts) or "done"

    def line(self) -> str:
        """One line of `alpha runs`."""
        when = self.started.replace("T", " ").removesuffix("Z") or "?"
        steps = self.summary.get("steps")
        steps_text = f"{steps:,} steps" if isinstance(steps, int) else ""
        return f"{self.name}  {when}  {self.label()}  {steps_text}  {self.result()}"

    def to_json(self) -> dict[str, Any]:
        body = {k: v for k, v in self.summary.items() if k != "canonical"}
        return {"folder": str(self.folder), **body}


def read_run(folder: Path) -> Run:
    """The run kept in `folder`; HistoryError when it is not a run folder."""
    try:
        data = (folder / SUMMARY).read_bytes()[: SUMMARY_LIMIT + 1]
        summary = json.loads(data)
        if not isinstance(summary, dict):
            raise ValueError("not an object")
        return Run(folder, summary)
    except FileNotFoundError:
        if (folder / MANIFEST).is_file():
            return Run(folder, {})
        raise HistoryError(f"{folder} is not a run folder (no {SUMMARY})") from None
    except (OSError, ValueError) as e:
        raise HistoryError(f"{folder / SUMMARY} cannot be read: {e}") from None


def list_runs(root: Path) -> list[Run]:
    """Every run folder under `root`, newest first (by the time it started, then name)."""
    try:
        folders = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return []
    runs = []
    for folder in folders:
        try:
            runs.append(read_run(folder))
        except HistoryError:
            continue
    return sorted(runs, key=lambda r: (r.started, r.name), reverse=True)


def find_run(given: str, root: Path) -> Run:
    """A run named by its folder, its folder's name under `root`, or its place in the list
    (`1` the newest)."""
    path = Path(given)
    if path.is_dir():
        return read_run(path)
    if (root / given).is_dir():
        return read_run(root / given)
    if given.isdigit() and int(given) >= 1:
        runs = list_runs(root)
        if int(given) <= len(runs):
            return runs[int(given) - 1]
    names = [r.name for r in list_runs(root)]
    near = [n for n in names if given in n][:3]
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise HistoryError(f"no run `{given}` (not a folder, nor a run in {root}){hint}")


def curve(run: Run) -> Series | None:
    """The run's loss by round from its metrics (the last row of a round wins: a resumed
    launch reports rounds again), as evenly spaced points at the spacing most rows have."""
    losses: dict[int, float] = {}
    try:
        with (run.folder / METRICS).open(encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                try:
                    losses[int(row["round"])] = float(row["loss"] or "nan")
                except (KeyError, TypeError, ValueError):
                    continue
    except OSError:
        return None
    if not losses:
        return None
    rounds = sorted(losses)
    steps = Counter(b - a for a, b in zip(rounds, rounds[1:], strict=False))
    every = max(1, steps.most_common(1)[0][0] if steps else 1)
    first, last = rounds[0], rounds[-1]
    count = (last - first) // every + 1
    while count > CURVE_POINTS:
        every *= 2
        count = (last - first) // every + 1
    values = tuple(losses.get(first + i * every, math.nan) for i in range(count))
    return Series(run.name, first, values, every)


@dataclass(frozen=True)
class Comparison:
    a: Run
    b: Run
    differences: list[str]  # configuration items, a → b
    rows: list[tuple[str, str, str]]  # (what, a, b)
    same_parameters: bool | None  # None: one has no final digest
    series: list[Series]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "differences": self.differences,
            "same_parameters": self.same_parameters,
        }


def _show(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return show_loss(v)
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _seconds(v: Any) -> str:
    return f"{float(v):.1f} s" if isinstance(v, int | float) else "–"


def compare(a: Run, b: Run) -> Comparison:
    """What differs between two runs, and their curves."""
    before = configuration(str(a.get("canonical") or ""))
    after = configuration(str(b.get("canonical") or ""))
    rows = [(key, _show(a.get(key)), _show(b.get(key))) for key in ("system", "plan", "steps")]
    rows += [
        ("state", _show(a.get("state")), _show(b.get("state"))),
        ("result", a.result(), b.result()),
        ("started", a.started or "–", b.started or "–"),
        ("seconds", _seconds(a.get("seconds")), _seconds(b.get("seconds"))),
        ("identity", _show(a.get("identity")), _show(b.get("identity"))),
        ("params sha256", _show(a.get("params_sha256")), _show(b.get("params_sha256"))),
    ]
    pa, pb = a.get("params_sha256"), b.get("params_sha256")
    same = None if not pa or not pb else pa == pb
    series = [s for s in (curve(a), curve(b)) if s is not None]
    return Comparison(a, b, differences(before, after), rows, same, series)
