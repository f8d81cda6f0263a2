"""`alpha inspect` and `alpha eval` on a real capture written by a real executable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, cli, run_exe


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
