"""`alpha inspect` and `alpha eval` on a real capture written by a real executable."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, cli, run_exe

from alpha_core.checkpoint import read_checkpoint


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("capture")
    built = cli(
        "build",
        str(EXAMPLES / "blobs.alpha"),
        "-o",
        str(tmp / "b"),
        "--checkpoint-dir",
        str(tmp / "c"),
        "--checkpoint-every",
        "50",
        "--json",
    )
    assert built.returncode == 0, built.stderr
    exe = json.loads(built.stdout)["executables"][0]["path"]
    code, events, stderr = run_exe(exe, "--quiet", "--params-out", str(tmp / "p"))
    assert code == 0, stderr
    return tmp / "c", str(events[-1]["params_sha256"])


def test_inspect_verifies_and_describes(capture: tuple[Path, str]) -> None:
    ckpt, _ = capture
    proc = cli("inspect", str(ckpt), "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["ok"] and body["round"] == 200
    text = cli("inspect", str(ckpt)).stdout
    assert "every SHA-256 verified" in text and "round 200" in text


def test_inspect_refuses_a_flipped_byte(capture: tuple[Path, str], tmp_path: Path) -> None:
    ckpt, _ = capture
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(ckpt, copy)
    pack = next(p for p in copy.rglob("*.pack"))
    data = bytearray(pack.read_bytes())
    data[0] ^= 1
    pack.write_bytes(bytes(data))
    proc = cli("inspect", str(copy))
    assert proc.returncode == 1
    assert "error[checkpoint-digest-mismatch]" in proc.stderr


def test_eval_gives_the_trained_accuracy_and_refuses_another_system(
    capture: tuple[Path, str],
) -> None:
    ckpt, sha = capture
    proc = cli("eval", str(EXAMPLES / "blobs.alpha"), "--checkpoint", str(ckpt), "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["params_sha256"] == sha and 0.0 <= body["holdout_accuracy"] <= 1.0
    other = cli("eval", str(EXAMPLES / "digits.alpha"), "--checkpoint", str(ckpt))
    assert other.returncode == 1
    assert "checkpoint-identity-mismatch" in other.stderr


def _run(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = cli("run", str(EXAMPLES / "blobs.alpha"), "--checkpoint-every", "50", "--json", *args)
    return proc, json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_run_keeps_the_newest_captures_and_resumes(
    capture: tuple[Path, str], tmp_path: Path
) -> None:
    """`alpha run --checkpoint-keep 2` leaves rounds 150 and 200 of 50, 100, 150, 200; `alpha run
    --resume` from 150 into the same folder ends with the uninterrupted bits, and with a keep of
    1 only the capture it published last is left."""
    _, sha = capture
    into = tmp_path / "c"
    proc, body = _run("--checkpoint-dir", str(into), "--checkpoint-keep", "2")
    assert proc.returncode == 0 and body["roles"][0]["params_sha256"] == sha, proc.stderr
    assert sorted(p.name for p in into.iterdir()) == ["round-00000150", "round-00000200"]
    proc, body = _run(
        "--checkpoint-dir",
        str(into),
        "--resume",
        str(into / "round-00000150"),
        "--checkpoint-keep",
        "1",
    )
    assert proc.returncode == 0 and body["roles"][0]["params_sha256"] == sha, proc.stderr
    assert [p.name for p in into.iterdir()] == ["round-00000200"]
    assert read_checkpoint(into).round == 200


def test_a_keep_of_zero_is_refused_with_its_range() -> None:
    proc = cli("run", str(EXAMPLES / "blobs.alpha"), "--checkpoint-keep", "0")
    assert proc.returncode == 1, proc.stderr
    assert "error[bad-argument]: --checkpoint-keep 0 is out of range: 1 to" in proc.stderr


def test_the_root_removes_abandoned_partial_captures(
    capture: tuple[Path, str], tmp_path: Path
) -> None:
    """A publication that crashed (the before-publish failpoint) leaves a partial capture; moved
    to round 120, which the next run never writes again, it is removed by that run's
    --checkpoint-keep once a later round is published. Another plan's partial is left alone."""
    exe = str(next((capture[0].parent / "b").glob("blobs")))
    into = tmp_path / "c"
    crashed = subprocess.run(
        [exe, "--quiet", "--checkpoint-dir", str(into), "--params-out", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        env={**os.environ, "ALPHA_FAILPOINT": "before-publish:100"},
        timeout=300,
    )
    assert crashed.returncode == 9
    [crashed_at] = into.glob("round-00000100.partial-*")
    inspected = cli("inspect", str(into), "--json")
    assert inspected.returncode == 0, inspected.stderr
    listed = json.loads(inspected.stdout)["captures"]
    assert [(c["name"], c["state"]) for c in listed] == [
        ("round-00000050", "published"),
        (crashed_at.name, "partial"),
    ]
    assert "round-00000050: published (this one)" in cli("inspect", str(into)).stdout
    partial = into / crashed_at.name.replace("round-00000100", "round-00000120")
    crashed_at.rename(partial)
    other = into / "round-00000120.partial-000000000000"
    other.mkdir()
    code, events, stderr = run_exe(
        exe, "--quiet", "--checkpoint-dir", str(into), "--checkpoint-keep", "3"
    )
    assert code == 0, stderr
    names = sorted(p.name for p in into.iterdir())
    kept = ["round-00000100", other.name, "round-00000150", "round-00000200"]
    assert names == kept, names
    assert not partial.exists()
    code, events, stderr = run_exe(exe, "--checkpoint-keep", "x")
    assert code == 2 and events[-1]["name"] == "usage"


def test_resume_is_a_deployment_input(capture: tuple[Path, str], tmp_path: Path) -> None:
    """`alpha build --resume` compiles the resume path in: the executable resumes with no
    argument, `--fresh` starts from round 0, and both end with the uninterrupted bits."""
    ckpt, sha = capture
    at = ckpt / "round-00000100"
    built = cli(
        "build", str(EXAMPLES / "blobs.alpha"), "-o", str(tmp_path / "b"), "--resume", str(at)
    )
    assert built.returncode == 0, built.stderr
    exe = str(tmp_path / "b" / "blobs")
    code, events, stderr = run_exe(exe, "--quiet", "--params-out", str(tmp_path / "p"))
    assert code == 0, stderr
    assert [e["round"] for e in events if e["event"] == "resumed"] == [100]
    assert events[-1]["params_sha256"] == sha
    code, events, stderr = run_exe(exe, "--fresh", "--quiet", "--params-out", str(tmp_path / "q"))
    assert code == 0 and not [e for e in events if e["event"] == "resumed"], stderr
    assert events[-1]["params_sha256"] == sha
    helped = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert str(at) in helped.stdout and "--fresh" in helped.stdout


def test_retention_is_a_deployment_input(tmp_path: Path) -> None:
    """`alpha build --checkpoint-keep 1` compiles the count in; the executable's own flag
    overrides it."""
    into = tmp_path / "c"
    built = cli(
        "build",
        str(EXAMPLES / "blobs.alpha"),
        "-o",
        str(tmp_path / "b"),
        "--checkpoint-every",
        "50",
        "--checkpoint-dir",
        str(into),
        "--checkpoint-keep",
        "1",
    )
    assert built.returncode == 0, built.stderr
    exe = str(tmp_path / "b" / "blobs")
    code, _, stderr = run_exe(exe, "--quiet", "--params-out", str(tmp_path / "p"))
    assert code == 0, stderr
    assert [p.name for p in into.iterdir()] == ["round-00000200"]
    code, _, stderr = run_exe(
        exe, "--quiet", "--params-out", str(tmp_path / "p"), "--checkpoint-keep", "3"
    )
    assert code == 0, stderr
    assert sorted(p.name for p in into.iterdir()) == [f"round-{r:08d}" for r in (100, 150, 200)]
    helped = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert "(default: 1)" in helped.stdout
