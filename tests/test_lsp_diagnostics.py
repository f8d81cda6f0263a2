"""Diagnostics over the protocol: every refusal of a file with its name, link, related spans and
rendered text; edits that fix one refusal update them; closing clears them."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from test_lsp_session import CONFIG, EXAMPLES, ROOT, Client, init_params

from alpha_core.diagnostics.render import render
from alpha_core.workspace.analysis import Workspace

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")

MULTI = """system tiny {
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 3
  param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)
  param b: f32[3] = zeros
  param b: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    return x @ ww + b
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(l: 0.1)
  steps 10
}

system good {
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 4
  param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)
  param b: f32[3] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    let h = x @ w
    return h + b
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 10
}

plan duo for good {
  roles hub, worker[3]
  topology star(hub)
}

pairing half for duo {
  worker[0]: host x86_64
}
"""


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(init_params())
    yield
    await lsp_client.shutdown_session()


def _uri(name: str) -> str:
    return (ROOT / "tests" / "fixtures" / name).as_uri()


def _names(diags: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diags)


@IN_MODULE_LOOP
async def test_several_refusals_each_with_name_link_and_rendered_text(client: Client) -> None:
    uri = _uri("multi.alpha")
    diags = await client.published_for(uri, client.open(uri, MULTI))
    assert _names(diags) == [
        "bad-argument",
        "batch-not-divisible",
        "duplicate-name",
        "pairing-incomplete",
        "unknown-name",
    ]
    core = Workspace().analyze(str(ROOT / "tests" / "fixtures" / "multi.alpha"), MULTI)
    by_name = {d.name: d for d in core.diagnostics}
    for d in diags:
        assert d.source == "alpha"
        assert d.severity == types.DiagnosticSeverity.Error
        assert d.code_description is not None
        assert d.code_description.href.endswith(f"docs/refusals.md#{d.code}")
        assert d.code_description.href.startswith("file://")
        expected = by_name[str(d.code)]
        assert d.message.splitlines()[0] == expected.message
        assert d.data["rendered"] == render(expected, MULTI, core.path)
    unknown = next(d for d in diags if d.code == "unknown-name")
    # `ww` on line 8 (0-based 7), column of the name
    assert unknown.range.start == types.Position(line=7, character=15)
    assert unknown.range.end == types.Position(line=7, character=17)
    assert "did you mean `w`?" in unknown.message
    dup = next(d for d in diags if d.code == "duplicate-name")
    assert dup.related_information is not None
    (first,) = dup.related_information
    assert first.message == "first declared here"
    assert first.location.uri == uri
    assert first.location.range.start.line == 4
    client.close(uri)


@IN_MODULE_LOOP
async def test_an_edit_that_fixes_one_refusal_updates_the_diagnostics(client: Client) -> None:
    uri = _uri("fixing.alpha")
    before = await client.published_for(uri, client.open(uri, MULTI))
    assert "unknown-name" in _names(before)
    # replace `ww` with `w` on line 7 by an incremental edit
    version = client.edit(uri, (7, 15), (7, 17), "w")
    after = await client.published_for(uri, version)
    assert _names(after) == sorted(set(_names(before)) - {"unknown-name"})
    # and `leaves 3` → `leaves 4`: the batch now divides
    version = client.edit(uri, (2, 17), (2, 18), "4")
    after = await client.published_for(uri, version)
    assert "batch-not-divisible" not in _names(after)
    # breaking it again brings the refusal back
    version = client.edit(uri, (2, 17), (2, 18), "5")
    assert "batch-not-divisible" in _names(await client.published_for(uri, version))
    client.close(uri)


@IN_MODULE_LOOP
async def test_closing_clears_the_diagnostics(client: Client) -> None:
    uri = _uri("closing.alpha")
    assert await client.published_for(uri, client.open(uri, MULTI))
    client.arrived.clear()
    count = len(client.published)
    client.close(uri)
    while len(client.published) == count:
        await client.arrived.wait()
        client.arrived.clear()
    last = client.published[-1]
    assert last.uri == uri
    assert list(last.diagnostics) == []


@IN_MODULE_LOOP
async def test_a_burst_of_edits_ends_with_the_final_texts_diagnostics(client: Client) -> None:
    """200 whole-text edits sent without waiting, at the default settings: edits that come
    faster than checks are coalesced (far fewer versions checked than sent), and the last
    diagnostics published are those of the final text. Before, every edit waited a fixed
    debounce; checking at once when idle must not lose this."""
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"alpha": {"debounceMs": 50}})
    )
    uri = _uri("burst.alpha")
    text = (EXAMPLES / "blobs.alpha").read_text()
    assert await client.published_for(uri, client.open(uri, text)) == []
    count = len(client.published)
    # the final text says `steps 0`: refused, so its diagnostics differ from every other's
    versions = [
        client.replace(uri, text.replace("steps 200", f"steps {n}")) for n in range(199, -1, -1)
    ]
    final = await client.published_for(uri, versions[-1])
    expected = Workspace().analyze(
        str(ROOT / "tests" / "fixtures" / "burst.alpha"), text.replace("steps 200", "steps 0")
    )
    assert _names(final) == sorted(d.name for d in expected.diagnostics) != []
    checked = [p.version for p in client.published[count:] if p.uri == uri]
    assert checked[-1] == versions[-1]
    assert len(checked) < len(versions) // 2, checked
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"alpha": {"debounceMs": 5}})
    )
    client.close(uri)


@IN_MODULE_LOOP
async def test_columns_count_utf16_code_units(client: Client) -> None:
    uri = _uri("wide.alpha")
    # `𝔁` is one character and two UTF-16 code units: everything after it on its line moves
    line = '  data train: table("𝔁.csv", features: 4, classes: 3, bogus: 1)'
    text = MULTI.replace(
        "  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)", line, 1
    )
    diags = await client.published_for(uri, client.open(uri, text))
    bogus = next(d for d in diags if "bogus" in d.message)
    column = line.index("bogus") + 1
    assert bogus.range.start == types.Position(line=1, character=column)
    assert bogus.range.end == types.Position(line=1, character=column + len("bogus"))
    # an astral character outside a string is refused where it stands, one character wide
    text = text.replace("return x @ ww + b", "return 𝔁 @ w + b")
    diags = await client.published_for(uri, client.replace(uri, text))
    syntax = next(d for d in diags if d.code == "syntax-error")
    assert syntax.range.start == types.Position(line=7, character=11)
    assert syntax.range.end == types.Position(line=7, character=13)
    client.close(uri)
