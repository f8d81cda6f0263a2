"""alpha-tui driven headless through Textual's pilot: the real app, the real compiler and real
role processes on loopback. It lists a file's choices, shows refusals, runs a plan to the
single-process bits, and refuses a role that cannot start; test_tui_defects.py kills a role
mid-run and resumes it to the bits of an uninterrupted run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import EXAMPLES
from textual.pilot import Pilot

from alpha_tui.app import AlphaTui

DIGITS_SHA = "5e1513e5f1af481bd39ea8996636710dc3a22d6ba4d85623d38f82cb6fdf2c6f"
IN_LOOP = pytest.mark.asyncio
SIZE = (140, 40)


async def until(pilot: Pilot[None], done: object, what: str, seconds: float = 180) -> None:
    """Lets the app run until done() holds (the pilot's pauses let the app's timers tick)."""
    assert callable(done)
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < seconds, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def status(app: AlphaTui) -> str:
    return str(app.query_one("#status").render())


@IN_LOOP
async def test_it_lists_the_choices_of_a_file() -> None:
    app = AlphaTui(str(EXAMPLES / "digits.alpha"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.targets[0] == "system:digits" and "plan:tree" in app.targets
        assert app.chosen() == "system:digits"
        assert "1 system, 4 plans" in status(app) and "0 refusals" in status(app)


@IN_LOOP
async def test_refusals_are_shown_and_nothing_is_built(tmp_path: Path) -> None:
    bad = tmp_path / "bad.alpha"
    bad.write_text((EXAMPLES / "blobs.alpha").read_text().replace("tanh(", "tanhx("))
    app = AlphaTui(str(bad))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = str(app.query_one("#refusals").render())
        assert "error[unknown-name]" in shown and "tanhx" in shown
        await pilot.press("r")
        await until(pilot, lambda: "refused" in status(app), "the build to be refused")
        assert app.built is None and app.launch is None


@IN_LOOP
async def test_a_file_fixed_on_disk_is_checked_again_and_runs(tmp_path: Path) -> None:
    source = tmp_path / "blobs.alpha"
    good = (EXAMPLES / "blobs.alpha").read_text()
    source.write_text(good.replace("tanh(", "tanhx("))
    app = AlphaTui(str(source), checkpoint_dir=str(tmp_path / "ck"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "tanhx" in str(app.query_one("#refusals").render())
        source.write_text(good)
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.result is not None and app.result.ok, app.result
        assert str(app.query_one("#refusals").render()) == ""
        assert app.chosen() == "system:blobs"
    # a system without a plan is captured every tenth of its steps, where it was asked to be
    # each run from the start publishes into a folder of its own (item 1)
    rounds = sorted(p.name for p in (tmp_path / "ck" / "run-1").iterdir())
    assert rounds == [f"round-{r:08d}" for r in range(20, 201, 20)]


@IN_LOOP
async def test_a_plan_runs_to_the_single_process_bits() -> None:
    app = AlphaTui(str(EXAMPLES / "digits.alpha"), plan="pair")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.chosen() == "plan:pair"
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.result is not None and app.result.ok, app.result
        assert app.result.params_sha256 == DIGITS_SHA
        assert DIGITS_SHA in status(app)
        assert app.state is not None
        for r in app.state.roles.values():
            assert (r.round, r.state, r.frames) == (300, "done", 600), r
            assert len(r.losses) == 300
        # the table shows what the state says
        table = app.query_one("DataTable")
        assert str(table.get_cell("worker[1]", "state")) == "done"  # type: ignore[attr-defined]
        assert table.get_cell("worker[1]", "round") == "300/300"  # type: ignore[attr-defined]


# A role killed mid-run and resumed to the uninterrupted bits: test_tui_defects.py (the exact
# sequence of issue 14, item 1).


@IN_LOOP
async def test_a_role_that_cannot_start_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An AArch64 role with no qemu-aarch64 on PATH: launch-failed, and nothing runs."""
    import sys

    source = tmp_path / "mixed.alpha"
    text = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
    arm = "\npairing arm for pair {\n  worker[0]: host x86_64\n  worker[1]: host aarch64\n}\n"
    source.write_text(text + arm)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    app = AlphaTui(str(source), plan="pair", pairing="arm")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: "launch-failed" in status(app), "the launch to be refused")
        assert "qemu-aarch64 is not installed" in status(app)
        assert app.launch is None and app.state is None
