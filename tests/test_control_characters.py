"""Control characters in a source never reach a terminal or an editor raw (issue 9, item 19): an
`\\x1b[2J` in a file cleared the screen of whoever ran `alpha check`, and a BEL in a string
misaligned the carets (rich dropped it). Excerpts and messages draw them as rustc does: the
control pictures (U+241B ␛ for ESC, U+2400 ␀ for NUL), `\\u{9b}` for C1 controls and
bidirectional overrides; the carets stand under the drawn text. The CLI and the language server
are the real ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytest_lsp
from conftest import cli
from test_lsp_session import CONFIG, ROOT, Client, init_params

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")

# raw control characters a terminal acts on; a newline only ends a line
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

SOURCE = (
    "system tiny {\n"
    '  data train: table("a\x1b[2J\x07b\u202e.csv", features: 4, label: last, classes: 3)\n'
    "  batch 8 leaves 2 \x1b[31m\x00\n"
    "}\n"
)
SHOWN_PATH = '"a␛[2J␇b\\u{202e}.csv"'


def _excerpt(stderr: str, shown: str) -> tuple[str, str]:
    """The excerpt line that shows `shown` and the caret line under it."""
    lines = stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if shown in line)
    return lines[at], lines[at + 1]


def test_check_draws_control_characters_and_aligns_carets(tmp_path: Path) -> None:
    path = tmp_path / "tiny.alpha"
    path.write_text(SOURCE)
    proc = cli("check", str(path))
    assert proc.returncode == 1, proc.stderr
    assert not RAW.search(proc.stderr + proc.stdout), repr(proc.stderr)
    assert "error[syntax-error]: unexpected character `␛`" in proc.stderr
    line, carets = _excerpt(proc.stderr, "batch 8 leaves 2 ␛[31m␀")
    assert carets.index("^") == line.index("␛") and carets.count("^") == 1
    # the data path: the message echoes it drawn, and the carets cover the drawn string
    assert "cannot read `a␛[2J␇b\\u{202e}.csv`" in proc.stderr
    line, carets = _excerpt(proc.stderr, SHOWN_PATH)
    start = line.index(SHOWN_PATH)
    assert carets.index("^") == start and carets.rstrip().endswith("^")
    assert len(carets.rstrip()) == start + len(SHOWN_PATH)


def test_json_messages_carry_no_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "tiny.alpha"
    path.write_text(SOURCE)
    body = json.loads(cli("check", "--json", str(path)).stdout)
    messages = [r["message"] for r in body["refusals"]]
    assert any("a␛[2J␇b\\u{202e}.csv" in m for m in messages), messages
    assert not any(RAW.search(m) for m in messages)


def test_a_control_character_in_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "bad\x1b[2J.alpha"
    path.write_text("system tiny {\n  batch 8 leaves 3\n}\n")
    proc = cli("check", str(path))
    assert proc.returncode == 1
    assert "--> " + str(tmp_path) + "/bad␛[2J.alpha:" in proc.stderr
    assert not RAW.search(proc.stderr), repr(proc.stderr)


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(init_params())
    yield
    await lsp_client.shutdown_session()


@IN_MODULE_LOOP
async def test_language_server_messages_and_rendered_text(client: Client) -> None:
    uri = (ROOT / "tests" / "fixtures" / "control.alpha").as_uri()
    diags = await client.published_for(uri, client.open(uri, SOURCE))
    assert sorted(str(d.code) for d in diags) == ["data-unreadable", "syntax-error"]
    for d in diags:
        assert not RAW.search(d.message), repr(d.message)
        assert isinstance(d.data, dict)
        rendered = d.data["rendered"]
        assert not RAW.search(rendered.replace("\n", " ")), repr(rendered)
    unreadable = next(d for d in diags if d.code == "data-unreadable")
    assert "a␛[2J␇b\\u{202e}.csv" in unreadable.message


def test_a_refusal_outside_a_source_echoes_its_path_drawn(tmp_path: Path) -> None:
    """Refusals that are not about a source (a checkpoint path, the OS's messages) go through
    the CLI's one error line, which draws control characters too."""
    proc = cli("inspect", str(tmp_path / "no\x1b[2Jsuch"))
    assert proc.returncode != 0
    assert "no␛[2Jsuch" in proc.stderr
    assert not RAW.search(proc.stderr), repr(proc.stderr)
