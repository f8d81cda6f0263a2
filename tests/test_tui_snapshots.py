"""Snapshots of alpha-tui's main screens at 80x24 and 120x40, as text: before a run, after a
run of a plan, a role's panes and the help. The header (it names the file's path) and the log
(it names temporary folders and executable sizes) are masked; everything else is compared
whole. `ALPHA_UPDATE_GOLDEN=1` rewrites them after an intended change of the layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import EXAMPLES
from test_tui import until
from textual.pilot import Pilot

from alpha_tui.app import AlphaTui

IN_LOOP = pytest.mark.asyncio
GOLDEN = Path(__file__).parent / "golden" / "tui"
DIGITS = str(EXAMPLES / "digits.alpha")


def snapshot(app: AlphaTui) -> str:
    lines = [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]
    if app.screen is app.screen_stack[0]:
        lines[0] = "<header: the file's path>"
        log = app.query_one("#log").region
        for y in range(log.y, log.y + log.height):
            lines[y] = "<log>"
    return "\n".join(lines) + "\n"


def compare(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("ALPHA_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{name}: the screen changed"


async def run_to_end(pilot: Pilot[None], app: AlphaTui) -> None:
    await pilot.press("r")
    await until(pilot, lambda: app.result is not None, "the run to end")
    await pilot.pause(0.2)  # one more tick: the last redraw


@IN_LOOP
@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_screens_before_and_after_a_run(size: tuple[int, int]) -> None:
    name = f"{size[0]}x{size[1]}"
    app = AlphaTui(DIGITS, plan="tree")
    async with app.run_test(size=size) as pilot:
        # the first frames come in parts: under load one pause may end before the footer is
        # drawn, so wait for it (its keys) rather than for a tick
        await until(pilot, lambda: "Quit" in snapshot(app).splitlines()[-1], "the footer")
        await pilot.pause()
        compare(f"before-{name}", snapshot(app))
        await run_to_end(pilot, app)
        compare(f"tree-done-{name}", snapshot(app))
        await pilot.press("down", "p")  # worker[1]'s projection
        await pilot.pause()
        compare(f"projection-{name}", snapshot(app))
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        compare(f"help-{name}", snapshot(app))
