"""What a run leaves behind, and what a resume says before building (issue 26, items 5 and 7):
the real `alpha` command, the real compiler and executables. `alpha run` keeps each role's
events (JSONL), a metrics file (CSV) and a summary (JSON) in its run folder; `alpha runs` lists
the runs and compares two; `--resume` and `alpha eval --checkpoint` of a capture made by
another version of the system name the differing items, and build nothing."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES

DIGITS_SHA = "5e1513e5f1af481bd39ea8996636710dc3a22d6ba4d85623d38f82cb6fdf2c6f"


def alpha(cwd: Path, *args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "ALPHA_RUNS_DIR": str(cwd / "runs")}
    if cache is not None:
        env["ALPHA_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def digits_copy(folder: Path, edit: tuple[str, str] | None = None) -> Path:
    """examples/digits.alpha and its data in `folder`, with one text replaced."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES / "data" / "digits.csv", folder / "data" / "digits.csv")
    text = (EXAMPLES / "digits.alpha").read_text()
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    path = folder / "digits.alpha"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of digits in one runs folder: 300 steps with captures, then 600 steps."""
    cwd = tmp_path_factory.mktemp("runs")
    source = str(digits_copy(cwd))
    first = alpha(cwd, "run", source, "--checkpoint-every", "100")
    assert first.returncode == 0, first.stderr
    second = alpha(cwd, "run", source, "--steps", "600")
    assert second.returncode == 0, second.stderr
    return cwd


def folders(cwd: Path) -> list[Path]:
    return sorted((cwd / "runs").iterdir())


def test_a_run_keeps_its_events_metrics_and_summary(two_runs: Path) -> None:
    first = folders(two_runs)[0]
    summary = json.loads((first / "summary.json").read_text())
    assert summary["format"] == "alpha-run/1"
    assert summary["state"] == "done" and summary["system"] == "digits"
    assert summary["plan"] is None and summary["steps"] == 300 and summary["rounds"] == 300
    assert summary["params_sha256"] == DIGITS_SHA
    assert summary["final_loss"] == pytest.approx(0.040045, abs=1e-6)
    assert summary["holdout_accuracy"] == pytest.approx(0.9697, abs=1e-4)
    assert summary["configuration"]["steps"] == "300"
    assert summary["configuration"]["lr"] == "0.01"
    assert summary["started"].endswith("Z") and summary["seconds"] >= 0
    assert Path(summary["params_file"]).is_file()
    # the event stream, as the runtime wrote it
    events = [json.loads(line) for line in (first / "events" / "main.jsonl").open()]
    assert [e["event"] for e in events][0] == "start"
    assert sum(e["event"] == "step" for e in events) == 300
    assert events[-1]["event"] == "done" and events[-1]["params_sha256"] == DIGITS_SHA
    # one metrics row per round, the loss as the step event said it
    with (first / "metrics.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["launch", "round", "loss", "loss_bits", "seconds"]
    assert [int(r["round"]) for r in rows] == list(range(1, 301))
    steps = [e for e in events if e["event"] == "step"]
    assert [r["loss_bits"] for r in rows] == [e["loss_bits"] for e in steps]
    # the checkpoint folder holds captures alone; the canonical text is in the summary
    assert sorted(p.name for p in (first / "checkpoints").iterdir()) == [
        f"round-{r:08d}" for r in (100, 200, 300)
    ]
    assert hashlib.sha256(summary["canonical"].encode()).hexdigest() == summary["identity"]


def test_runs_are_listed_newest_first_and_compared(two_runs: Path) -> None:
    listed = alpha(two_runs, "runs")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    older, newer = (f.name for f in folders(two_runs))
    assert [line.split()[0] for line in lines] == [newer, older]
    assert "600 steps" in lines[0] and "loss 0.040045, accuracy 0.9697" in lines[1]
    shown = alpha(two_runs, "runs", "compare", "2", "1", "--width", "80")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "configuration: 1 difference (A → B)\n  steps: 300 → 600\n" in text
    assert DIGITS_SHA in text and "final parameters: differ" in text
    assert "loss of the two runs, rounds 1–600" in text
    assert any(0x2800 < ord(c) <= 0x28FF for c in text), "no curve drawn"
    as_json = json.loads(alpha(two_runs, "runs", "compare", older, newer, "--json").stdout)
    assert as_json["differences"] == ["steps: 300 → 600"]
    assert as_json["same_parameters"] is False
    missing = alpha(two_runs, "runs", "compare", "nowhere", "1")
    assert missing.returncode == 1 and "error[run-not-found]" in missing.stderr


def test_a_resume_of_another_version_names_what_differs_before_building(
    two_runs: Path,
) -> None:
    captures = folders(two_runs)[0] / "checkpoints"
    before = folders(two_runs)
    refused = alpha(two_runs, "run", "digits.alpha", "--steps", "450", "--resume", str(captures))
    assert refused.returncode == 1
    assert "error[checkpoint-identity-mismatch]" in refused.stderr
    assert "steps: 300 → 450" in refused.stderr and "nothing was built" in refused.stderr
    assert "resuming at round" not in refused.stderr
    assert folders(two_runs) == before  # no run folder: nothing was built


def test_eval_of_an_edited_source_names_the_learning_rate(two_runs: Path, tmp_path: Path) -> None:
    captures = folders(two_runs)[0] / "checkpoints"
    edited = digits_copy(tmp_path, ("lr: 0.01", "lr: 0.02"))
    refused = alpha(tmp_path, "eval", str(edited), "--checkpoint", str(captures), "--json")
    assert refused.returncode == 1
    [refusal] = json.loads(refused.stdout)["refusals"]
    assert refusal["name"] == "checkpoint-identity-mismatch"
    assert "(capture → source): lr: 0.01 → 0.02" in refusal["message"]
    same = alpha(two_runs, "eval", "digits.alpha", "--checkpoint", str(captures))
    assert same.returncode == 0, same.stderr
    assert DIGITS_SHA in same.stdout


def test_a_capture_without_its_canonical_text_is_refused_by_identity(
    two_runs: Path, tmp_path: Path
) -> None:
    """A capture whose canonical text is kept nowhere here (made before alpha kept it, or on
    another machine; out of its run folder, and another cache): the identities are named,
    and the refusal still comes before anything is built."""
    old = tmp_path / "old"
    shutil.copytree(folders(two_runs)[0] / "checkpoints", old)
    edited = digits_copy(tmp_path, ("lr: 0.01", "lr: 0.02"))
    refused = alpha(
        tmp_path, "eval", str(edited), "--checkpoint", str(old), cache=tmp_path / "cache"
    )
    assert refused.returncode == 1
    assert "error[checkpoint-identity-mismatch]" in refused.stderr
    assert "the differing items cannot be named" in refused.stderr
    summary = json.loads((folders(two_runs)[0] / "summary.json").read_text())
    assert summary["identity"] in refused.stderr


def test_a_long_run_keeps_a_bounded_record(tmp_path: Path) -> None:
    """20,000 rounds: a step event every 2 rounds (and the last), so 10,000 metrics rows."""
    source = str(digits_copy(tmp_path))
    done = alpha(tmp_path, "run", source, "--steps", "20000", "--json")
    assert done.returncode == 0, done.stderr
    record = Path(json.loads(done.stdout)["record"])
    with (record / "metrics.csv").open(newline="") as f:
        rounds = [int(r["round"]) for r in csv.DictReader(f)]
    assert rounds == list(range(2, 20001, 2))
    summary = json.loads((record / "summary.json").read_text())
    assert summary["rounds"] == 20000 and summary["state"] == "done"


def test_the_items_of_a_canonical_text_and_what_differs() -> None:
    """The items are read from the canonical text itself (check/program.py), so an old
    record and a new source compare item by item; many changed graph nodes are counted."""
    from alpha_core.run.identity import configuration, differences

    def text(lr: float, steps: int, nodes: int, clip: str = "") -> str:
        graph = "".join(f"%{i} = relu({i},) (-1, 4) ()\n" for i in range(nodes))
        return (
            "system s\ndata table features=4 label=class outputs=2 rows=10 holdout=2 "
            "sha256=ab seed=0 noise=0.0\nbatch 8 leaves 2 shuffle 7\n"
            "param w (4, 2) InitSpec(kind='normal', a=0.0, b=0.1, seed=1)\n"
            f"{graph}output %0\nloss softmax_cross_entropy smoothing=0.1\n"
            f"learner sgd (('lr', {lr!r}),) schedule cosine(100){clip}\nsteps {steps}\n"
        )

    before = configuration(text(0.01, 200000, 2))
    assert before["lr"] == "0.01" and before["learner"] == "sgd"
    assert before["schedule"] == "cosine(100)" and before["smoothing"] == "0.1"
    assert before["leaves"] == "2" and before["data rows"] == "10"
    assert before["param w"] == "(4, 2) init(kind='normal', a=0.0, b=0.1, seed=1)"
    after = configuration(text(0.02, 250000, 2, " clip 1.0"))
    assert differences(before, after) == [
        "lr: 0.01 → 0.02",
        "clip: (none) → 1.0",
        "steps: 200000 → 250000",
    ]
    grown = differences(before, configuration(text(0.01, 200000, 7)))
    assert grown[:3] == [f"model %{i}: (none) → relu({i},) (-1, 4) ()" for i in (2, 3, 4)]
    assert grown[3:] == ["model: 2 more graph nodes differ"]
