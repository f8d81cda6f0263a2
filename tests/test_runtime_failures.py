"""Failures of the machine a role runs on, refused by name: a checkpoint folder or a parameter
file that cannot be written, and memory that cannot be had (an address-space limit). Each exits
3 with its refusal as the last event, and writes no parameter file."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, cli, run_exe

BIG = """system big {
  data train: synthetic(rows: 16, features: 3000, classes: 10, seed: 1, holdout: 8)
  batch 8 leaves 1
  param w: f32[3000, 3000] = normal(0.0, 0.01, seed: 1)
  param v: f32[3000, 10] = normal(0.0, 0.01, seed: 2)
  fn model(x: f32[B, 3000]) -> f32[B, 10] {
    return relu(x @ w) @ v
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.01)
  steps 1
}
"""


def build(source: Path, out: Path, *args: str) -> str:
    built = cli("build", str(source), "-o", str(out), "--json", *args)
    assert built.returncode == 0, built.stderr
    return str(json.loads(built.stdout)["executables"][0]["path"])


@pytest.fixture
def in_the_way(tmp_path: Path) -> Path:
    """A regular file where a folder is needed."""
    path = tmp_path / "a-file"
    path.write_text("not a folder\n")
    return path


def test_a_checkpoint_folder_that_cannot_be_made(tmp_path: Path, in_the_way: Path) -> None:
    exe = build(
        EXAMPLES / "blobs.alpha",
        tmp_path / "b",
        "--checkpoint-every",
        "50",
        "--checkpoint-dir",
        str(in_the_way / "ckpt"),
    )
    code, events, stderr = run_exe(exe, "--quiet", "--params-out", str(tmp_path / "p"))
    assert code == 3, stderr
    last = events[-1]
    assert last["event"] == "refused" and last["name"] == "checkpoint-write-failed", last
    # checked at start-up (issue 9, item 4): refused before round 0, not after round 50
    assert str(in_the_way / "ckpt") in str(last["message"]) and last["round"] is None
    assert not [e for e in events if e["event"] == "step"]
    assert "error[checkpoint-write-failed]" in stderr
    assert not (tmp_path / "p").exists()


def test_a_parameter_file_that_cannot_be_written(tmp_path: Path, in_the_way: Path) -> None:
    exe = build(EXAMPLES / "blobs.alpha", tmp_path / "b")
    code, events, stderr = run_exe(exe, "--quiet", "--params-out", str(in_the_way / "p"))
    assert code == 3, stderr
    assert events[-1]["name"] == "params-write-failed", events[-1]
    assert str(in_the_way / "p") in str(events[-1]["message"])
    assert [e for e in events if e["event"] == "done"] == []


def test_memory_that_cannot_be_had(tmp_path: Path) -> None:
    """9,030,000 parameters (36 MB a copy) under a 64 MiB address-space limit."""
    source = tmp_path / "big.alpha"
    source.write_text(BIG)
    exe = build(source, tmp_path / "b")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (64 << 20, 64 << 20))

    run = subprocess.run(
        [exe, "--quiet", "--params-out", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=120,
    )
    assert run.returncode == 3, run.stderr
    last = json.loads(run.stdout.splitlines()[-1])
    # The first vector that does not fit: the parameters, or a gradient piece (n_params + 1:
    # with the learning state updated in place the role holds one parameter vector, not two).
    assert last["name"] == "out-of-memory", last
    assert any(f"{n} x 4 bytes" in last["message"] for n in (9030000, 9030001)), last
    assert "Traceback" not in run.stderr and not (tmp_path / "p").exists()
