"""alpha-tui as nvitop and k9s users expect it (issue 23): per role its rate, ETA, CPU and
resident memory while it runs (from its events and /proc), the built roles listed before a
run, the selector one key away, bytes in units at every width. The real app in a real
terminal (tmux) and through Textual's pilot, with real role processes."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from conftest import EXAMPLES
from test_tui import IN_LOOP, SIZE, until
from test_tui_terminal import Terminal, terminal  # noqa: F401  (the fixture)
from textual.widgets import DataTable, Select

from alpha_tui.app import AlphaTui

DIGITS = str(EXAMPLES / "digits.alpha")


def _rows(text: str) -> dict[str, list[str]]:
    return {
        m.group(1): line.split()
        for line in text.splitlines()
        if (m := re.match(r" (worker\[\d\]) ", line)) is not None
    }


def test_each_role_shows_its_rate_and_memory_at_80x24_while_it_runs(
    terminal: Callable[[int, int, list[str]], Terminal],  # noqa: F811
) -> None:
    t = terminal(80, 24, [DIGITS, "--plan", "tree", "--steps", "2000000"])
    t.until(lambda s: "no run yet" in s, "the app to start")
    t.keys("r")

    def every_role_measured(text: str) -> bool:
        rows = _rows(text)
        return len(rows) == 8 and all(
            r[3].endswith("/s") and r[5] in ("KiB", "MiB", "GiB") for r in rows.values()
        )

    text = t.until(every_role_measured, "every role's rate and memory", 120)
    header = next(line for line in text.splitlines() if line.startswith(" role "))
    assert header.split() == ["role", "round", "loss", "rate", "rss", "capt", "agree", "state"]
    for role, cells in _rows(text).items():
        rate = float(cells[3].removesuffix("/s").replace(",", ""))
        rss = float(cells[4])
        assert rate > 0 and 0 < rss, (role, cells)
    # a pane answers: m opens the role's memory with what it uses now, p its projection (the
    # time from the key to the first capture that shows it is printed, never asserted)
    began = time.monotonic()
    t.pane()
    capture = time.monotonic() - began
    print(f"\none capture of the pane takes {capture:.3f} s (both cores busy)")
    for key, seen in (("m", "now: resident"), ("p", "compute leaves"), ("Escape", " role ")):
        print(f"{key}: shown after {_first_seen(t, key, seen):.3f} s, captures included")
    t.keys("q")


def _first_seen(t: Terminal, key: str, text: str, seconds: float = 30) -> float:
    began = time.monotonic()
    t.keys(key)
    while text not in t.pane():
        assert time.monotonic() - began < seconds, f"nothing after {key}"
    return time.monotonic() - began


@IN_LOOP
async def test_built_roles_are_listed_before_a_run_and_c_opens_the_selector() -> None:
    app = AlphaTui(DIGITS, plan="tree")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("b")
        await until(pilot, lambda: app.built is not None, "the build")
        await pilot.pause(0.2)
        table = app.query_one(DataTable)
        assert table.row_count == 8
        states = {str(table.get_cell(f"worker[{i}]", "state")) for i in range(8)}
        assert states == {"built"}
        assert app.launch is None  # listed, not started
        await pilot.press("c")
        await pilot.pause()
        select = app.query_one("#target", Select)
        assert select.has_focus or select.expanded
        assert select.expanded
