"""Roles die with whoever started them, whatever signal it gets (issue 22, item 2).

`alpha run` and the real alpha-tui (in tmux) start a `pair` run of digits long enough not to
end by itself; SIGINT, SIGTERM or SIGKILL goes to the launcher alone (as an IDE, a job runner
or the OOM killer sends it), and the role processes, counted from /proc, must all be gone
within 5 s. SIGINT and SIGTERM end with one line: the round reached, the newest published
capture and the command that resumes it; that command is run and does resume."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT

ALPHA = str(Path(sys.executable).parent / "alpha")
TUI = str(Path(sys.executable).parent / "alpha-tui")
DIGITS = str(EXAMPLES / "digits.alpha")
LONG = ["--plan", "pair", "--steps", "2000000", "--checkpoint-every", "300"]
GONE_WITHIN_S = 5.0


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def _alive(roles: dict[int, str]) -> list[int]:
    """The role processes still there: the same pid running the same executable, not a
    zombie."""
    left = []
    for pid, exe in roles.items():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and _exe(pid) == exe:
            left.append(pid)
    return left


def _wait_for(what: str, seen: Callable[[], object], seconds: float = 120) -> object:
    start = time.monotonic()
    while not (got := seen()):
        assert time.monotonic() - start < seconds, f"timed out waiting for {what}"
        time.sleep(0.05)
    return got


def _roles_of(launcher: int, folder: Path) -> dict[int, str]:
    """The launcher's two role processes, once both run (their executables under `folder`)."""

    def both() -> dict[int, str]:
        roles = {p: e for p in _children(launcher) if (e := _exe(p)) and e.startswith(str(folder))}
        return roles if len(roles) == 2 else {}

    found = _wait_for("both roles", both)
    assert isinstance(found, dict)
    return found


def _published(folder: Path) -> bool:
    """A published capture: a `round-<R>` folder holding the root's pack (a partial one is
    `round-<R>.partial-*` until it is renamed whole)."""
    return any(
        re.fullmatch(r"round-\d+", p.name) and (p / "top.pack").is_file()
        for p in folder.glob("round-*")
    )


def _gone(roles: dict[int, str]) -> float:
    start = time.monotonic()
    while _alive(roles):
        assert time.monotonic() - start < GONE_WITHIN_S, f"roles left: {_alive(roles)}"
        time.sleep(0.02)
    return time.monotonic() - start


LINE = re.compile(
    r"interrupted by (SIG[A-Z]+) at round ([\d,]+) of 2,000,000; newest capture: round "
    r"([\d,]+) in (\S+); resume with: (alpha run .*)$"
)


def _start_run(out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [ALPHA, "run", DIGITS, *LONG, "-o", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=out.parent,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_alpha_run_stops_every_role_on_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "run"
    run = _start_run(out)
    roles = _roles_of(run.pid, out)
    _wait_for("a published capture", lambda: _published(out / "checkpoints"))
    run.send_signal(sig)
    _gone(roles)
    _, stderr = run.communicate(timeout=30)
    assert run.returncode == (128 + sig if sig != signal.SIGKILL else -sig)
    if sig == signal.SIGKILL:
        return
    line = stderr.strip().splitlines()[-1]
    m = LINE.fullmatch(line)
    assert m is not None, stderr
    assert m.group(1) == sig.name
    assert int(m.group(2).replace(",", "")) >= int(m.group(3).replace(",", "")) > 0
    assert Path(m.group(4), "top.pack").is_file()


def test_the_line_after_ctrl_c_resumes_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = _start_run(out)
    _roles_of(run.pid, out)
    _wait_for("a published capture", lambda: _published(out / "checkpoints"))
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=30)
    first = LINE.fullmatch(stderr.strip().splitlines()[-1])
    assert first is not None, stderr
    capture_round = int(first.group(3).replace(",", ""))
    argv = shlex.split(first.group(5))
    assert argv[:3] == ["alpha", "run", DIGITS] and argv[-2:] == ["--resume", first.group(4)]
    for p in out.glob("checkpoints/round-*"):  # only the capture named survives: it is used
        if str(p) != first.group(4):
            subprocess.run(["rm", "-rf", str(p)], check=True)
    again = subprocess.Popen(
        [ALPHA, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    _roles_of(again.pid, out)
    newer = lambda: [  # noqa: E731
        p
        for p in (out / "checkpoints").glob("round-*")
        if re.fullmatch(r"round-\d+", p.name)
        and str(p) != first.group(4)
        and (p / "top.pack").is_file()
    ]
    _wait_for("a capture after the resumed one", newer)
    again.send_signal(signal.SIGINT)
    _, stderr = again.communicate(timeout=30)
    assert f"resuming at round {capture_round} of 2000000" in stderr.replace(",", "")
    second = LINE.fullmatch(stderr.strip().splitlines()[-1])
    assert second is not None, stderr
    assert int(second.group(3).replace(",", "")) > capture_round


def _tui_pid(marker: Path) -> int:
    def find() -> int:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if any(b"alpha-tui" in c for c in cmd) and str(marker).encode() in cmd:
                    return int(entry)
        return 0

    found = _wait_for("alpha-tui", find, 30)
    assert isinstance(found, int)
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_alpha_tui_stops_every_role_on_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    captures = tmp_path / "captures"
    tui = [TUI, DIGITS, *LONG, "--checkpoint-dir", str(captures)]
    # the line comes after the app has left the screen (Textual draws on stderr)
    shell = f"{shlex.join(tui)}; echo $? >{tmp_path}/rc; sleep 60"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    socket = f"alpha-signals-{tmp_path.name}"
    tmux = ["tmux", "-L", socket]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "100", "-y", "30", "-s", "t", "bash", "-c", shell],
        check=True,
        cwd=ROOT,
        env=env,
    )
    try:
        pid = _tui_pid(captures)
        pane = lambda: (  # noqa: E731
            subprocess.run(  # -J: a line the terminal wrapped, whole
                [*tmux, "capture-pane", "-p", "-J", "-t", "t"], capture_output=True, text=True
            ).stdout
        )
        _wait_for("the plan checked", lambda: "0 refusals" in pane(), 60)
        subprocess.run([*tmux, "send-keys", "-t", "t", "r"], check=True)
        roles = _wait_for(  # type: ignore[assignment]
            "both roles",
            lambda: (
                r
                if len(r := {p: e for p in _children(pid) if (e := _exe(p)) and "worker" in e}) == 2
                else {}
            ),
        )
        _wait_for("a published capture", lambda: _published(captures / "run-1"))
        os.kill(pid, sig)
        _gone(roles)
        if sig == signal.SIGKILL:
            return
        rc = _wait_for("alpha-tui's exit", lambda: (tmp_path / "rc").is_file(), 30)
        assert rc
        assert (tmp_path / "rc").read_text().strip() == str(128 + sig)
        line = next((x for x in pane().splitlines() if x.startswith("interrupted")), "")
        m = LINE.fullmatch(line.strip())
        assert m is not None, line
        assert m.group(1) == sig.name and str(captures / "run-1") in m.group(4)
        assert Path(m.group(4), "top.pack").is_file()
        assert shlex.split(m.group(5))[:5] == ["alpha", "run", DIGITS, "--plan", "pair"]
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_alpha_tui_whose_terminal_closes_stops_its_roles_and_exits(tmp_path: Path) -> None:
    """SIGHUP as a person sends it: the terminal goes (here its tmux server is killed). The
    roles stop, and alpha-tui itself exits instead of waiting on a terminal that is gone."""
    captures = tmp_path / "captures"
    tui = [TUI, DIGITS, *LONG, "--checkpoint-dir", str(captures)]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    tmux = ["tmux", "-L", f"alpha-hup-{tmp_path.name}"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "100", "-y", "30", "-s", "t", shlex.join(tui)],
        check=True,
        cwd=ROOT,
        env=env,
    )
    try:
        pid = _tui_pid(captures)

        def pane() -> str:
            return subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True
            ).stdout

        _wait_for("the plan checked", lambda: "0 refusals" in pane(), 60)
        subprocess.run([*tmux, "send-keys", "-t", "t", "r"], check=True)
        found = _wait_for(
            "both roles",
            lambda: (
                r
                if len(r := {p: e for p in _children(pid) if (e := _exe(p)) and "worker" in e}) == 2
                else {}
            ),
        )
        assert isinstance(found, dict)
        roles: dict[int, str] = found
        _wait_for("a published capture", lambda: _published(captures / "run-1"))
        tui_exe = _exe(pid)
        assert tui_exe is not None
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    _gone(roles)
    _gone({pid: tui_exe})  # alpha-tui itself, within the same 5 s
