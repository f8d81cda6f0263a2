"""alpha-tui reads its file as the CLI does (issue 9, item 20): a file deleted or replaced by a
folder or a FIFO after the app opened it is refused `source-unreadable` and nothing is built
from the text it had (the old app built the old text), and bytes that are not UTF-8 are the
CLI's `syntax-error`, not Python's codec error. It range-checks deployment inputs as the CLI does
(item 14). The real app through Textual's pilot."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, cli
from test_tui import SIZE, status, until

from alpha_tui.app import AlphaTui

IN_LOOP = pytest.mark.asyncio


def _replace(path: Path, how: str) -> None:
    path.unlink()
    if how == "directory":
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path)  # no writer: reading it with a blocking open would hang the app


@IN_LOOP
@pytest.mark.parametrize("how", ["deleted", "directory", "fifo"])
async def test_a_file_gone_from_under_the_app_is_refused_not_built(
    tmp_path: Path, how: str
) -> None:
    source = tmp_path / "blobs.alpha"
    shutil.copy(EXAMPLES / "blobs.alpha", source)
    app = AlphaTui(str(source))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.chosen() == "system:blobs"
        _replace(source, how)
        await pilot.press("b")
        await until(pilot, lambda: "refused" in status(app), "the build to be refused")
        await pilot.pause()
        assert app.built is None and app.analysis is None
        shown = str(app.query_one("#refusals").render())
        assert shown.startswith("error[source-unreadable]: ") and str(source) in shown
        assert "source-unreadable" in status(app)
        expected = {"deleted": "no such file", "directory": "a directory", "fifo": "a FIFO"}
        assert expected[how] in shown
        # back in place, the next build reads it again and builds
        if how != "deleted":
            source.rmdir() if how == "directory" else source.unlink()
        shutil.copy(EXAMPLES / "blobs.alpha", source)
        await pilot.press("b")
        await until(pilot, lambda: app.built is not None, "the build of the restored file")
        assert str(app.query_one("#refusals").render()) == ""


@IN_LOOP
async def test_bytes_that_are_not_utf8_are_the_clis_syntax_error(tmp_path: Path) -> None:
    source = tmp_path / "bad.alpha"
    text = (EXAMPLES / "blobs.alpha").read_bytes()
    source.write_bytes(text.replace(b"tanh(", b"tanh\xff(", 1))
    checked = cli("check", str(source), "--json")
    names = [r["name"] for r in json.loads(checked.stdout)["refusals"]]
    assert "syntax-error" in names, names
    app = AlphaTui(str(source))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = str(app.query_one("#refusals").render())
        for name in set(names):  # the same refusals as the CLI, as many of each
            assert shown.count(f"error[{name}]") == names.count(name), shown
        assert "codec" not in shown and "codec" not in status(app)


@IN_LOOP
async def test_a_deployment_input_out_of_range_is_refused_by_the_tui_too() -> None:
    # the range checks live in alpha_core's build_choice, shared by both faces (item 14)
    app = AlphaTui(str(EXAMPLES / "blobs.alpha"), checkpoint_every=2**40)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("b")
        await until(pilot, lambda: "refused" in status(app), "the build to be refused")
        await pilot.pause()
        shown = str(app.query_one("#refusals").render())
        assert "error[bad-argument]" in shown and "--checkpoint-every 1099511627776" in shown
        assert app.built is None
