"""An executable whose standard output cannot be written (issue 9, item 12): it used to die of
SIGPIPE (status 141) the moment its reader went away, losing the parameters of a whole run. Now
it trains on quietly, writes its parameters, and refuses `events-unwritable` at the end."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, cli, run_exe


@pytest.fixture(scope="module")
def blobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The built blobs executable and the SHA-256 of the parameters of a normal run."""
    out = tmp_path_factory.mktemp("blobs")
    built = cli("build", str(EXAMPLES / "blobs.alpha"), "-o", str(out))
    assert built.returncode == 0, built.stderr
    exe = out / "blobs"
    code, events, stderr = run_exe(str(exe), "--params-out", str(out / "normal.params"))
    assert code == 0, stderr
    return exe, str(events[-1]["params_sha256"])


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refusal(stderr: str) -> str:
    [line] = [x for x in stderr.splitlines() if x.startswith("error[")]
    assert line.startswith("error[events-unwritable]: "), stderr
    return line


def test_a_pipe_closed_before_the_start_keeps_the_parameters(
    blobs: tuple[Path, str], tmp_path: Path
) -> None:
    exe, sha = blobs
    params = tmp_path / "p.params"
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [str(exe), "--params-out", str(params)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)  # not -13: SIGPIPE is ignored
    line = _refusal(proc.stderr)
    assert "broken pipe" in line and str(params) in line
    assert _sha(params) == sha


def test_a_reader_that_leaves_mid_run_costs_no_parameters(
    blobs: tuple[Path, str], tmp_path: Path
) -> None:
    exe, sha = blobs
    params = tmp_path / "p.params"
    proc = subprocess.Popen(
        [str(exe), "--params-out", str(params)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert '"event":"start"' in proc.stdout.readline()  # as `| head -1` reads
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(timeout=300) == 3, stderr
    assert "broken pipe" in _refusal(stderr)
    assert _sha(params) == sha


def test_a_full_device_as_stdout_keeps_the_parameters(
    blobs: tuple[Path, str], tmp_path: Path
) -> None:
    exe, sha = blobs
    params = tmp_path / "p.params"
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [str(exe), "--params-out", str(params)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 3, proc.stderr
    assert "no space left on device" in _refusal(proc.stderr).lower()
    assert _sha(params) == sha


def test_sigpipe_is_ignored_on_aarch64_too(blobs: tuple[Path, str], tmp_path: Path) -> None:
    """events_init calls rt_sigaction with the kernel's struct itself: the same layout must
    hold on AArch64 (run under qemu-user, as the mixed-host tests run it)."""
    from alpha_core.run.launch import command_for

    _, sha = blobs
    built = cli("build", str(EXAMPLES / "blobs.alpha"), "-o", str(tmp_path), "--target", "aarch64")
    assert built.returncode == 0, built.stderr
    params = tmp_path / "p.params"
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [*command_for(str(tmp_path / "blobs"), "aarch64"), "--params-out", str(params)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
    finally:
        os.close(write)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert "broken pipe" in _refusal(proc.stderr)
    assert _sha(params) == sha  # the same bits on either instruction set
