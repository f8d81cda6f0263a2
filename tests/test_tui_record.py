"""alpha-tui keeps what it trained (issue 26, items 6 and 7): each run from the start gets a
run folder like `alpha run`'s (./alpha-runs/<system>[-<plan>]-<UTC>/, or in ALPHA_RUNS_DIR)
with its parameters, captures, events, metrics and summary, named on screen and left in place
on `q`; `u` on a capture made by another version of the file names what differs, and builds
nothing. The real app (Textual's pilot), compiler and role processes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES
from test_tui import status, until

from alpha_tui.app import AlphaTui

IN_LOOP = pytest.mark.asyncio
DIGITS_SHA = "5e1513e5f1af481bd39ea8996636710dc3a22d6ba4d85623d38f82cb6fdf2c6f"


def log_text(app: AlphaTui) -> str:
    return "\n".join(line.text for line in app.query_one("#log").lines)  # type: ignore[attr-defined]


@IN_LOOP
async def test_a_run_is_kept_in_its_folder_and_u_names_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALPHA_RUNS_DIR", str(tmp_path / "runs"))
    (tmp_path / "data").mkdir()
    shutil.copy(EXAMPLES / "data" / "digits.csv", tmp_path / "data" / "digits.csv")
    source = tmp_path / "digits.alpha"
    text = (EXAMPLES / "digits.alpha").read_text()
    source.write_text(text)
    app = AlphaTui(str(source))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.result is not None and app.result.ok
        [run] = app.kept
        assert run.parent == tmp_path / "runs" and run.name.startswith("digits-")
        assert app.sub_title == f"run {run}"  # the header names it (80 columns: no file)
        assert str(run) in log_text(app).replace("\n", "")
        # what it trained: parameters, captures, events, metrics, summary
        params = run / "digits.params"
        assert params.is_file() and params.stat().st_size == 2410 * 4
        assert (run / "checkpoints" / "round-00000300" / "top.pack").is_file()
        summary = json.loads((run / "summary.json").read_text())
        assert summary["state"] == "done" and summary["params_sha256"] == DIGITS_SHA
        assert summary["params_file"] == str(params)
        events = (run / "events" / "main.jsonl").read_text().splitlines()
        assert json.loads(events[-1])["event"] == "done"
        assert len((run / "metrics.csv").read_text().splitlines()) == 301

        # the file edited on disk, then u: what differs, before building
        source.write_text(text.replace("lr: 0.01", "lr: 0.02"))
        await pilot.press("u")
        await until(pilot, lambda: "refused" in status(app), "the resume to be refused")
        refusals = str(app.query_one("#refusals").render())
        assert "checkpoint-identity-mismatch" in refusals, refusals
        assert "lr: 0.01 → 0.02" in refusals.replace("\n", " "), refusals
        assert app.launches == 1 and app.built is None  # nothing built, nothing started
    # q: the temporary build folder goes, the run stays
    assert params.is_file() and (run / "summary.json").is_file()
