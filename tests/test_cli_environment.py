"""The user's environment refused by name, never `internal-error` (issue 9, items 12, 13, 14 and
20): sources that are not regular files, output folders that cannot be written (a file in the
way, a full disk), an unusable object cache, a standard output that is closed, full or a broken
pipe, CPU names LLVM does not know, and deployment inputs out of range. Every case is the real
`alpha` command in a subprocess against real files, FIFOs, devices, pipes and a real tmpfs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, cli

from alpha_core.build.deployment_check import deployment_refusals
from alpha_core.build.outputs import Deployment
from alpha_core.codegen.target import TARGETS, known_cpus
from alpha_core.run.launch import free_port_base
from alpha_core.support.ports import DEFAULT_PORT_BASE, ephemeral_range

BLOBS = str(EXAMPLES / "blobs.alpha")
DIGITS = str(EXAMPLES / "digits.alpha")
COMMAND = [sys.executable, "-m", "alpha_cli.main"]
Run = subprocess.CompletedProcess[str]


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "internal-error" not in proc.stderr, proc.stderr


def refused(proc: subprocess.CompletedProcess[str], name: str) -> str:
    """The message of refusal `name`, which must be the command's one refusal (exit 1)."""
    _no_traceback(proc)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error[")]
    assert len(lines) == 1 and lines[0].startswith(f"error[{name}]: "), proc.stderr
    return lines[0].removeprefix(f"error[{name}]: ")


@contextmanager
def tmpfs(folder: Path, kib: int) -> Iterator[Path]:
    """A real tmpfs of `kib` KiB mounted at folder (the tests run as root), unmounted after."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


# ---- item 20 (and 12): sources that are not regular files -------------------------------------


def test_a_folder_a_fifo_and_a_device_are_refused_by_what_they_are(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.alpha"
    os.mkfifo(fifo)  # no writer: a blocking open would hang the command
    cases = {
        str(tmp_path): "is a directory, not a regular file",
        str(fifo): "is a FIFO, not a regular file",
        "/dev/null": "is a character device, not a regular file",
        str(tmp_path / "absent.alpha"): "no such file or directory",
    }
    for path, why in cases.items():
        for command in ("check", "build", "project"):
            extra = ["--plan", "pair"] if command == "project" else []
            extra += ["-o", str(tmp_path / "out")] if command == "build" else []
            message = refused(cli(command, path, *extra), "source-unreadable")
            assert path in message and why in message, message
    assert not (tmp_path / "out").exists()
    body = json.loads(cli("check", str(fifo), "--json").stdout)
    assert body["ok"] is False and body["refusals"][0]["name"] == "source-unreadable"


def test_inspect_names_its_refusal_once(tmp_path: Path) -> None:
    message = refused(cli("inspect", str(tmp_path / "nothing")), "checkpoint-incomplete")
    assert not message.startswith("checkpoint-incomplete"), message
    body = json.loads(cli("inspect", str(tmp_path / "nothing"), "--json").stdout)
    assert "checkpoint-incomplete" not in body["refusals"][0]["message"]


# ---- item 12: the build's output folder, the object cache ---------------------------------------


def test_an_output_folder_that_is_a_file_or_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    message = refused(cli("build", BLOBS, "-o", str(blocker)), "output-unwritable")
    assert str(blocker) in message and "not a folder" in message
    below = blocker / "out"
    message = refused(cli("build", BLOBS, "-o", str(below)), "output-unwritable")
    assert str(below) in message and "not a directory" in message
    assert blocker.read_text() == "not a folder"


def test_a_full_disk_is_refused_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", 64) as small:  # far smaller than an executable
        message = refused(cli("build", BLOBS, "-o", str(small)), "output-unwritable")
        assert "no space left on device" in message and str(small / "blobs") in message
        assert sorted(small.iterdir()) == []
    # room for the executable and not one page more: the manifest is what fails
    whole = cli("build", BLOBS, "-o", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    size = (tmp_path / "whole" / "blobs").stat().st_size
    with tmpfs(tmp_path / "exact", (size + 4095) // 4096 * 4) as exact:
        message = refused(cli("build", BLOBS, "-o", str(exact)), "output-unwritable")
        assert "no space left on device" in message and "alpha-build.json" in message
        assert [p.name for p in exact.iterdir()] == ["blobs"]  # no alpha-build.tmp


def test_an_unusable_cache_is_refused_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "cache-file"
    blocker.write_text("")
    env = {**os.environ, "COLUMNS": "200", "ALPHA_CACHE_DIR": str(blocker)}
    proc = subprocess.run(
        [*COMMAND, "build", BLOBS, "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    message = refused(proc, "cache-unusable")
    assert str(blocker) in message and "ALPHA_CACHE_DIR" in message


# ---- item 12: standard output closed, full, or a pipe nobody reads -----------------------------


def _with_stdout(stdout: int | None, *args: str, shell_close: bool = False) -> Run:
    command = [*COMMAND, *args]
    if shell_close:  # the command starts with descriptor 1 closed
        command = ["sh", "-c", 'exec "$@" >&-', "sh", *command]
    return subprocess.run(
        command, stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=600
    )


def test_a_closed_full_or_broken_stdout_is_refused_by_name() -> None:
    message = refused(_with_stdout(None, "check", DIGITS, shell_close=True), "stdout-unwritable")
    assert message == "standard output is closed"
    with open("/dev/full", "w") as full:
        message = refused(_with_stdout(full.fileno(), "check", DIGITS), "stdout-unwritable")
    assert "no space left on device" in message
    for args in (("check", DIGITS, "--json"), ("explain", "bad-argument")):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the first byte, as after `| head -c0`
        try:
            message = refused(_with_stdout(write, *args), "stdout-unwritable")
        finally:
            os.close(write)
        assert "broken pipe" in message
        assert "Exception ignored" not in message


# ---- item 13: CPU names -------------------------------------------------------------------------


def test_a_cpu_llvm_does_not_know_is_refused_with_the_valid_ones(tmp_path: Path) -> None:
    out = tmp_path / "out"
    message = refused(cli("build", BLOBS, "-o", str(out), "--cpu", "skylak"), "bad-argument")
    assert "--cpu skylak" in message and "did you mean skylake" in message
    assert "x86-64-v3" in message.partition("valid ones:")[2]
    proc = cli("build", BLOBS, "-o", str(out), "--cpu", "native")
    message = refused(proc, "bad-argument")
    assert "(this machine)" in message and "LLVM ERROR" not in proc.stderr
    assert "is not a recognized processor" not in proc.stderr
    assert not out.exists()
    named = cli("build", BLOBS, "-o", str(out), "--cpu", "x86-64-v3")  # a known name still builds
    assert named.returncode == 0 and (out / "blobs").is_file(), named.stderr


def test_the_default_cpus_are_known_to_llvm() -> None:
    for name, target in TARGETS.items():
        assert target.cpu in known_cpus(name)
    assert "neoverse-v1" in known_cpus("aarch64") and "x86-64-v3" not in known_cpus("aarch64")


# ---- item 14: deployment inputs in range, ports outside the ephemeral range -------------------


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--checkpoint-every", str(2**40)], "--checkpoint-every 1099511627776 is out of range"),
        (["--checkpoint-every", "-3"], "--checkpoint-every -3 is out of range: 0 to"),
        (["--timeout-ms", str(2**40)], "--timeout-ms 1099511627776 is out of range: 1 to"),
        (["--timeout-ms", "-5"], "--timeout-ms -5 is out of range: 1 to 86,400,000"),
        (["--checkpoint-keep", str(2**40)], "--checkpoint-keep 1099511627776 is out of range"),
        (["--port-base", "70000"], "--port-base 70000 is out of range"),
        (["--port-base", "-1"], "--port-base -1 is out of range"),
        (["--host", "not a host!"], "--host 'not a host!' is neither"),
        # the hosts file's rule: dotted digits that are no address are no host name either
        (["--host", "10.0.1"], "--host '10.0.1' is neither"),
    ],
)
def test_deployment_inputs_out_of_range_are_refused(
    flags: list[str], said: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    message = refused(
        cli("build", DIGITS, "--plan", "star", "-o", str(out), *flags), "bad-argument"
    )
    assert message.startswith(said), message
    assert not out.exists()


def test_the_port_range_of_the_roles_is_checked_at_its_ends() -> None:
    from alpha_core.run.runs import role_ports
    from alpha_core.workspace.analysis import Workspace

    a = Workspace().analyze(DIGITS, Path(DIGITS).read_text())
    plan, _, _ = a.plan("tree")
    assert plan is not None
    roles = list(range(plan.membership.total))
    listens = role_ports(plan, roles, Deployment(port_base=1000))
    assert listens is not None and listens[0] == 1000
    span = listens[1] - listens[0]
    for base, ok in ((65535 - span, True), (65536 - span, False), (1, True), (0, False)):
        d = Deployment(port_base=base)
        assert (deployment_refusals(d, ["x86_64"], role_ports(plan, roles, d)) == []) is ok


def test_ports_are_drawn_and_defaulted_below_the_ephemeral_range() -> None:
    low, high = ephemeral_range()
    assert (low, high) == tuple(
        int(w) for w in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    )
    assert DEFAULT_PORT_BASE + 64 < low
    for count in (1, 9, 64):
        for _ in range(20):
            base = free_port_base(count)
            assert base + count - 1 < low or base > high


def test_a_port_base_in_the_ephemeral_range_is_warned_about(tmp_path: Path) -> None:
    low, high = ephemeral_range()
    inside = cli(
        "build", DIGITS, "--plan", "pair", "-o", str(tmp_path / "a"), "--port-base", str(low)
    )
    assert inside.returncode == 0, inside.stderr
    assert f"warning: ports {low}..{low + 1} overlap the kernel's ephemeral range" in inside.stderr
    below = cli(
        "build", DIGITS, "--plan", "pair", "-o", str(tmp_path / "b"), "--port-base", "20000"
    )
    assert below.returncode == 0 and "warning" not in below.stderr, below.stderr
