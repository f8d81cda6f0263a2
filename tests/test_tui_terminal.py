"""The real `alpha-tui` command in a real terminal (tmux), at the sizes people use: at 80x24
every role of `tree` and its state is readable off the captured pane after a run, and at
120x40 the loss plot is there with its axis and round range (issue 14, items 4 and 5)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT

TUI = str(Path(sys.executable).parent / "alpha-tui")


class Terminal:
    """One tmux server of our own (its own socket), one window of a given size."""

    def __init__(self, socket: str, width: int, height: int, command: list[str]) -> None:
        self.socket = socket
        args = ["new-session", "-d", "-x", str(width), "-y", str(height), "-s", "t"]
        self.tmux(*args, subprocess.list2cmdline(["env", "-u", "COLUMNS", "-u", "LINES", *command]))
        # without a client tmux may keep its default size (80x24) whatever -x and -y said
        self.tmux("resize-window", "-t", "t", "-x", str(width), "-y", str(height))

    def tmux(self, *args: str) -> str:
        # COLUMNS and LINES (pytest sets them) would override the terminal's own size
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, cwd=ROOT, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def pane(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def until(self, seen: Callable[[str], bool], what: str, seconds: float = 180) -> str:
        """Polls the pane until `seen` holds of it and the pane is the same on two captures in
        a row: a capture taken while the app is redrawing can show new lines above old ones
        (a title already at round 300 over an axis still at round 10)."""
        start = time.monotonic()
        last = None
        while True:
            text = self.pane()
            if seen(text) and text == last:
                return text
            last = text
            assert time.monotonic() - start < seconds, f"timed out waiting for {what}:\n{text}"
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Callable[[int, int, list[str]], Terminal]]:
    assert shutil.which("tmux"), "tmux is needed (.ci/run installs it)"
    opened: list[Terminal] = []

    def open_terminal(width: int, height: int, args: list[str]) -> Terminal:
        t = Terminal(f"alpha-{tmp_path.name}-{len(opened)}", width, height, [TUI, *args])
        opened.append(t)
        return t

    yield open_terminal
    for t in opened:
        t.close()


def test_every_role_of_tree_is_readable_at_80x24(
    terminal: Callable[[int, int, list[str]], Terminal],
) -> None:
    t = terminal(80, 24, [str(EXAMPLES / "digits.alpha"), "--plan", "tree"])
    t.until(lambda s: "no run yet" in s, "the app to start")
    t.keys("r")
    text = t.until(lambda s: " done: final loss" in s, "the run to end")
    lines = text.splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
    header = next(line for line in lines if line.startswith(" role "))
    assert header.split() == ["role", "round", "loss", "rate", "rss", "capt", "agree", "state"]
    for i in range(8):
        [row] = [line for line in lines if line.startswith(f" worker[{i}] ")]
        cells = row.split()
        assert cells[1] == "300" and cells[2] == "0.040045" and cells[-1] == "done", row
        assert cells[-3:-1] == ["✓", "300"], row
    t.keys("q")


def test_the_plot_is_visible_at_120x40(
    terminal: Callable[[int, int, list[str]], Terminal],
) -> None:
    t = terminal(120, 40, [str(EXAMPLES / "digits.alpha"), "--plan", "star"])
    t.until(lambda s: "no run yet" in s, "the app to start")
    t.keys("r")

    def plotted(s: str) -> bool:  # the run's end, and the plot redrawn at its end
        return " done: final loss" in s and "rounds 1–300" in s

    lines = t.until(plotted, "the run to end").splitlines()
    [title] = [line for line in lines if line.startswith("loss of hub, rounds 1–300")]
    top = lines.index(title)
    assert lines[top + 1].startswith("2.310643 ┤")
    axis = next(i for i in range(top, len(lines)) if "└" in lines[i])
    assert axis - top >= 8, "\n".join(lines)  # rows enough to show the curve
    assert lines[axis + 1].split() == ["1", "300"]
    area = "".join(lines[top + 1 : axis])
    assert any(0x2800 < ord(c) <= 0x28FF for c in area), "no braille dots drawn"
    t.keys("q")


def test_the_run_folder_is_named_at_80x24(
    terminal: Callable[[int, int, list[str]], Terminal], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run trained is kept in its run folder, and the header names it (issue 26,
    item 6): at 80x24, under a short ALPHA_RUNS_DIR, whole."""
    import tempfile

    runs = Path(tempfile.mkdtemp(prefix="ar-", dir="/tmp"))
    monkeypatch.setenv("ALPHA_RUNS_DIR", str(runs))  # the tmux server, and so the app, has it
    try:
        t = terminal(80, 24, [str(EXAMPLES / "digits.alpha")])
        t.until(lambda s: "no run yet" in s, "the app to start")
        t.keys("r")
        text = t.until(lambda s: " done: final loss" in s, "the run to end")
        [run] = list(runs.iterdir())
        lines = text.splitlines()
        assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
        assert f"alpha-tui — run {run}" in lines[0], lines[0]  # no room for the file's name
        assert (run / "digits.params").is_file() and (run / "summary.json").is_file()
        t.keys("q")
        time.sleep(1)
        assert (run / "digits.params").is_file()  # kept after q
    finally:
        shutil.rmtree(runs, ignore_errors=True)
