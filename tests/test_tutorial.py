"""docs/tutorial.md and the README as a user follows them: every `sh` block of the tutorial
run in order in one empty folder, each `text` block after one checked against what it
printed; every `alpha` command of the README's shell blocks run from the repository (the
tutorial's `alpha-tui` line and the README's `bash scripts/test.sh`, the suite itself, are
the only commands not run here: the first is interactive, test_tui_terminal.py runs the real
alpha-tui)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

TUTORIAL = ROOT / "docs" / "tutorial.md"
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(path: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(path.read_text(encoding="utf-8"))]


def environment() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # alpha, alpha-tui and python3 of this install
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}", "COLUMNS": "200"}


def run(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def test_every_command_of_the_tutorial_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    env = environment()
    done: subprocess.CompletedProcess[str] | None = None
    shells = 0
    for lang, body in blocks(TUTORIAL):
        if lang == "sh":
            done = run(body, tmp_path, env)
            shells += 1
            assert done.returncode == 0, f"{body}\n---\n{done.stdout}\n{done.stderr}"
        elif lang == "text":
            assert done is not None, "an output block before any command"
            printed = [line.rstrip() for line in (done.stdout + done.stderr).splitlines()]
            for line in body.splitlines():
                if line.strip():
                    assert line.rstrip() in printed, f"{line!r} not printed by:\n{done.args}"
    assert shells >= 8
    # what the tutorial says it leaves behind
    assert (tmp_path / "run1" / "first.params").stat().st_size == 99 * 4
    assert sorted(p.name for p in (tmp_path / "ckpt2").iterdir()) == [
        "round-00000300",
        "round-00000400",
    ]


def readme_commands() -> list[str]:
    """The `alpha` lines of the README's shell blocks, and those of scripts/demo.sh, which
    the README's first block runs (in a virtual environment of its own)."""
    lines: list[str] = []
    for lang, body in blocks(README):
        if lang != "sh":
            continue
        for line in body.splitlines():
            command = line.split("#", 1)[0].strip()
            if command == "bash scripts/demo.sh":
                demo = (ROOT / "scripts" / "demo.sh").read_text().splitlines()
                lines += [d.replace(' "$@"', "") for d in demo if d.startswith("alpha ")]
            elif command.startswith("alpha"):
                lines.append(command)
            else:
                assert command in ("", "bash scripts/test.sh"), f"a README command not run: {line}"
    return lines


GPU_MISSING = ("gpu-driver-missing", "gpu-not-found")


@pytest.mark.parametrize("command", readme_commands())
def test_every_command_of_the_readme_runs(command: str, tmp_path: Path) -> None:
    args = shlex.split(command)
    # outputs go to a folder of the test's own, not into the checkout
    if args[1] == "run" and "-o" not in args:
        args += ["-o", str(tmp_path / "run")]
    args = [str(tmp_path / "build" / "digits") if a == "build/digits" else a for a in args]
    done = run(shlex.join(args), ROOT, environment())
    needs_gpu = "--pairing two_gpus" in command and "--gpu-shadow" not in command
    if needs_gpu and done.returncode != 0:
        # on a machine without an NVIDIA GPU the GPU roles refuse by name at start-up
        assert any(f"error[{name}]" in done.stderr for name in GPU_MISSING), done.stderr
        return
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    if args[1] == "run":
        assert "parameters sha256 5e1513e5f1af481bd39ea8996636710dc3a22d6b" in done.stdout
