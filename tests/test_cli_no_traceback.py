"""No Python traceback reaches a user: the `alpha` command on junk answers with a refusal or a
usage error, and a known exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

JUNK_FILES: dict[str, bytes] = {
    "binary": bytes(range(256)) * 4,
    "empty": b"",
    "huge-line": b"system tiny { " + b"x + " * 25_000 + b"}\n",
    "bad-utf8": b"system \xff\xfe {\n  param w: f32[\xc3] = zeros\n}\n",
}
NOT_FILES = ("directory", "missing")
JUNK = [*JUNK_FILES, *NOT_FILES]
COMMANDS = ("check", "build")
# --json shares the analysis with plain output, so build is run plain only: each run costs an
# interpreter start
FLAGS = {"check": ("", "--json"), "build": ("",)}

JUNK_ARGUMENTS: dict[str, list[str]] = {
    "control-chars": ["explain", "\x7fjunk\u202e"],
    "huge-name": ["explain", "x" * 100_000],
    "empty-name": ["explain", ""],
    "file-as-name": ["explain", "binary.alpha"],
    "no-file": ["check"],
    "bad-target": ["build", "--target", "sparc", "x.alpha"],
}

Run = subprocess.CompletedProcess[str]


def _alpha(args: list[str], cwd: Path) -> Run:
    return subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "100"},
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Run]:
    """Every junk input through every command: run side by side, as each run is mostly
    interpreter start-up."""
    root = tmp_path_factory.mktemp("junk")
    paths = {name: root / f"{name}.alpha" for name in JUNK}
    for name, content in JUNK_FILES.items():
        paths[name].write_bytes(content)
    paths["directory"].mkdir()
    jobs: dict[tuple[str, ...], list[str]] = {}
    for name, path in paths.items():
        for command in COMMANDS:
            out = ["-o", str(root / f"out-{name}-{command}")] if command == "build" else []
            for flag in FLAGS[command]:
                jobs[(name, command, flag)] = [command, str(path), *out, *([flag] if flag else [])]
    for name, args in JUNK_ARGUMENTS.items():
        jobs[("argument", name)] = args
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        futures = {key: pool.submit(_alpha, args, root) for key, args in jobs.items()}
        results = {key: f.result() for key, f in futures.items()}
    assert not list(root.glob("out-*")), "a refused build wrote something"
    return results


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("junk", JUNK)
def test_junk_files_are_refused_without_a_traceback(
    command: str, junk: str, runs: dict[tuple[str, ...], Run]
) -> None:
    for flag in FLAGS[command]:
        result = runs[(junk, command, flag)]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        assert result.returncode in {0, 1, 2}, (result.returncode, result.stderr[-3000:])
        if junk in NOT_FILES:  # refused by what the path is, not "usage: no such file"
            assert result.returncode == 1
            assert "error[source-unreadable]" in result.stderr or (
                flag and '"name": "source-unreadable"' in result.stdout
            ), (result.stdout, result.stderr)
        elif junk == "empty" and command == "check":
            assert result.returncode == 0  # nothing in it is wrong; there is just nothing
        else:
            assert result.returncode == 1  # refused: none of the junk is a buildable system
            if flag:
                assert '"ok": false' in result.stdout
            else:
                assert "refused" in result.stderr


@pytest.mark.parametrize("name", sorted(JUNK_ARGUMENTS))
def test_junk_arguments_are_usage_errors(name: str, runs: dict[tuple[str, ...], Run]) -> None:
    result = runs[("argument", name)]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 2
    assert result.stderr
