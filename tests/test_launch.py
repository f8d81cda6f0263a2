"""The launcher (alpha_core.run.launch), with real processes: a role that cannot be started is
refused by name (`launch-failed`) before any role is left waiting for it, and a role can be
killed by name while the others run on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli

from alpha_core.run.launch import Launch, LaunchError

SLEEPER = [
    sys.executable,
    "-c",
    "import os, sys, time; print(os.getpid(), flush=True); time.sleep(60)",
]


def test_a_program_that_is_not_there_starts_nothing() -> None:
    with pytest.raises(LaunchError) as refused:
        Launch([("a", SLEEPER), ("b", ["alpha-no-such-program"])])
    assert refused.value.name == "launch-failed"
    assert "cannot start b: alpha-no-such-program is not installed" in str(refused.value)


def test_a_file_that_cannot_be_executed_stops_the_roles_already_started(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\x01 not a program")
    junk.chmod(0o755)
    marker = f"alpha-launch-test-{os.getpid()}-{tmp_path.name}"
    first = [sys.executable, "-c", f"import time; time.sleep(60)  # {marker}"]
    with pytest.raises(LaunchError) as refused:
        Launch([("a", first), ("b", [str(junk)])])
    assert "cannot start b:" in str(refused.value) and "Exec format error" in str(refused.value)
    # the first role was started, then killed and reaped before the refusal: no process of it
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                alive.append(proc.name)
        except OSError:
            continue
    assert alive == []


def test_a_role_is_killed_by_name(tmp_path: Path) -> None:
    exits: dict[str, tuple[int, bool]] = {}
    launch = Launch(
        [("a", SLEEPER), ("b", [sys.executable, "-c", 'print(\'{"event": "done"}\')'])],
        on_exit=lambda role, code, killed: exits.__setitem__(role, (code, killed)),
    )
    deadline = time.monotonic() + 30
    while "b" not in exits and time.monotonic() < deadline:
        time.sleep(0.05)
    assert launch.kill("a") and launch.running() in (True, False)
    outcomes = {o.role: o for o in launch.wait()}
    assert exits == {"a": (-9, True), "b": (0, False)}
    assert outcomes["a"].refusal == "role-crashed" and outcomes["b"].done == {"event": "done"}
    assert not launch.kill("a")  # already ended


def test_alpha_run_names_a_missing_emulator(tmp_path: Path) -> None:
    """A pairing with an AArch64 role, and no qemu-aarch64 on PATH."""
    source = tmp_path / "mixed.alpha"
    digits = Path(__file__).resolve().parents[1] / "examples" / "digits.alpha"
    text = digits.read_text().replace('"data/', f'"{digits.parent}/data/')
    source.write_text(
        text + "\npairing arm for pair {\n  worker[0]: host x86_64\n  worker[1]: host aarch64\n}\n"
    )
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    args = [sys.executable, "-m", "alpha_cli.main", "run", str(source), "--plan", "pair"]
    run = subprocess.run(
        [*args, "--pairing", "arm", "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 1, run.stderr
    [refusal] = json.loads(run.stdout)["refusals"]
    assert refusal["name"] == "launch-failed"
    assert refusal["message"] == "cannot start worker[1]: qemu-aarch64 is not installed"
    plain = subprocess.run(
        [*args, "--pairing", "arm"], capture_output=True, text=True, env=env, timeout=300
    )
    assert plain.returncode == 1 and "error[launch-failed]" in plain.stderr
    assert "Traceback" not in plain.stderr
    assert cli("explain", "launch-failed").returncode == 0
