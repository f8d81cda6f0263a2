"""`--step-every N`: a role reports every N-th round and its last, with the traffic since the
previous report, and trains the same bits (the events are what is thinned, never the rounds).
The real executables of a `pair` plan on loopback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import cli
from test_partitioned import SHORT

from alpha_core.run.launch import run_roles


def _steps(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in events if e.get("event") == "step"]


def test_every_nth_round_and_the_last_with_all_the_traffic(tmp_path: Path) -> None:
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)  # 40 steps
    out = tmp_path / "out"
    assert cli("build", str(source), "--plan", "pair", "-o", str(out)).returncode == 0
    roles = [("worker[0]", str(out / "worker-0")), ("worker[1]", str(out / "worker-1"))]
    runs = {}
    for every in (1, 7):
        commands = [(r, [exe, "--step-every", str(every)]) for r, exe in roles]
        runs[every] = run_roles(commands, keep_events=True)
    for thinned, full in zip(runs[7], runs[1], strict=True):
        assert thinned.exit_code == 0 and full.exit_code == 0
        steps = _steps(thinned.events)
        assert [s["step"] for s in steps] == [7, 14, 21, 28, 35, 40]
        for key in ("frames", "bytes"):
            assert sum(int(str(s[key])) for s in steps) == sum(
                int(str(s[key])) for s in _steps(full.events)
            )
        assert steps[-1]["loss"] == _steps(full.events)[-1]["loss"]
        assert thinned.done is not None and full.done is not None
        assert thinned.done.get("params_sha256") == full.done.get("params_sha256")


def test_a_count_that_is_not_one_is_refused_by_name(tmp_path: Path) -> None:
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)
    out = tmp_path / "out"
    assert cli("build", str(source), "-o", str(out)).returncode == 0
    done = subprocess.run(
        [str(out / "digits"), "--step-every", "0"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    refused = json.loads(done.stdout.splitlines()[-1])
    assert refused["name"] == "usage" and "--step-every needs a count" in refused["message"]
