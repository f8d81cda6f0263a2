"""The features an editor reaches for after diagnostics and hover, over the protocol against the
real server: signature help, formatting, rename (and prepareRename's refusals), workspace
symbols, inlay hints, folding ranges, document highlight, selection range, code lenses, and
completion and hover where they used to lose the context."""

from __future__ import annotations

import re

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from test_lsp_session import CONFIG, EXAMPLES, ROOT, Client, doc, init_params, position_of

from alpha_core.plan.profiles import DEVICE_PROFILES
from alpha_core.syntax.format import format_text
from alpha_core.workspace.analysis import Workspace

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
DIGITS = (EXAMPLES / "digits.alpha").read_text()
DIGITS_URI = (EXAMPLES / "digits.alpha").as_uri()
MESSY = DIGITS.replace("  param b1: f32[32] = zeros", "     param   b1 :f32[ 32 ]=zeros").replace(
    "return h @ w2 + b2", "return h@w2+b2      # the logits"
)
MESSY_URI = (EXAMPLES / "messy.alpha").as_uri()


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    params = init_params()
    params.workspace_folders = [types.WorkspaceFolder(uri=EXAMPLES.as_uri(), name="examples")]
    lsp_client.init_result = await lsp_client.initialize_session(params)  # type: ignore[attr-defined]
    assert await lsp_client.published_for(DIGITS_URI, lsp_client.open(DIGITS_URI, DIGITS)) == []
    yield
    await lsp_client.shutdown_session()


@IN_MODULE_LOOP
async def test_the_new_features_are_advertised(client: Client) -> None:
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.signature_help_provider is not None
    assert caps.document_formatting_provider and caps.document_range_formatting_provider
    assert caps.rename_provider == types.RenameOptions(prepare_provider=True)
    assert caps.workspace_symbol_provider
    assert caps.inlay_hint_provider
    assert caps.folding_range_provider
    assert caps.document_highlight_provider
    assert caps.selection_range_provider
    assert caps.code_lens_provider is not None


# ---- signature help --------------------------------------------------------------------------


async def _signature(
    client: Client, uri: str, text: str, needle: str, delta: int
) -> types.SignatureHelp | None:
    return await client.text_document_signature_help_async(
        types.SignatureHelpParams(
            text_document=doc(uri), position=position_of(text, needle, delta=delta)
        )
    )


@IN_MODULE_LOOP
async def test_signature_help_names_the_argument_being_written(client: Client) -> None:
    # inside adam(lr: 0.01, beta1: 0.9, ...): on beta1's value
    help_ = await _signature(client, DIGITS_URI, DIGITS, "beta1: 0.9", 8)
    assert help_ is not None
    sig = help_.signatures[0]
    assert sig.label.startswith("adam(lr: float, beta1: float = 0.9")
    assert help_.active_parameter == 1
    assert sig.parameters is not None and sig.parameters[1].label == "beta1: float = 0.9"
    # a user function: its declared signature
    help_ = await _signature(client, DIGITS_URI, DIGITS, "model(x), y", 6)
    assert help_ is not None
    assert help_.signatures[0].label == "fn model(x: f32[B, 64]) -> f32[B, 10]"
    # normal(0.0, |0.1 …): the second positional argument
    help_ = await _signature(client, DIGITS_URI, DIGITS, "0.1, seed: 1", 0)
    assert help_ is not None and help_.active_parameter == 1
    # outside any call: nothing
    assert await _signature(client, DIGITS_URI, DIGITS, "steps 300", 3) is None


# ---- formatting ------------------------------------------------------------------------------


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def offset(p: types.Position) -> int:
        return min(starts[p.line] + p.character, len(text)) if p.line < len(lines) else len(text)

    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
    return text


@IN_MODULE_LOOP
async def test_formatting_gives_the_canonical_layout_in_few_edits(client: Client) -> None:
    assert await client.published_for(MESSY_URI, client.open(MESSY_URI, MESSY)) == []
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=doc(MESSY_URI),
            options=types.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert edits is not None and len(edits) == 2  # the two lines that changed, nothing else
    formatted = _apply(MESSY, list(edits))
    assert formatted == format_text(MESSY)
    assert "  param b1: f32[32] = zeros\n" in formatted
    assert "    return h @ w2 + b2      # the logits\n" in formatted
    # a range: only the edits on its lines (the param's line, not the return's)
    line = MESSY.split("\n").index("     param   b1 :f32[ 32 ]=zeros")
    ranged = await client.text_document_range_formatting_async(
        types.DocumentRangeFormattingParams(
            text_document=doc(MESSY_URI),
            range=types.Range(start=types.Position(line, 0), end=types.Position(line, 3)),
            options=types.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert ranged is not None and len(ranged) == 1
    assert _apply(MESSY, list(ranged)).split("\n")[line] == "  param b1: f32[32] = zeros"
    # the example itself is in the canonical layout: no edit
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=doc(DIGITS_URI),
            options=types.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert not edits
    client.close(MESSY_URI)


# ---- rename ----------------------------------------------------------------------------------


async def _rename(client: Client, needle: str, new: str, nth: int = 0, delta: int = 0) -> str:
    result = await client.text_document_rename_async(
        types.RenameParams(
            text_document=doc(DIGITS_URI),
            position=position_of(DIGITS, needle, nth, delta),
            new_name=new,
        )
    )
    assert result is not None and result.changes is not None
    return _apply(DIGITS, list(result.changes[DIGITS_URI]))


def _analysis(text: str):  # type: ignore[no-untyped-def]
    return Workspace().analyze(str(EXAMPLES / "renamed.alpha"), text)


@IN_MODULE_LOOP
async def test_rename_changes_every_occurrence_and_nothing_else(client: Client) -> None:
    # a param, from a use
    renamed = await _rename(client, "@ w2", "w_out", delta=2)
    assert "param w_out: f32[32, 10]" in renamed and "h @ w_out + b2" in renamed
    assert "w2" not in renamed
    # a let, from its declaration
    renamed = await _rename(client, "let h", "hidden", delta=4)
    assert "let hidden = relu(" in renamed and "return hidden @ w2" in renamed
    # a function argument, which the let's expression uses
    renamed = await _rename(client, "x: f32[B, 64]", "pixels")
    assert "fn model(pixels: f32[B, 64])" in renamed and "(pixels / 16.0)" in renamed
    assert "loss softmax_cross_entropy(model(x), y)" in renamed  # the loss's `x` is another x
    # a function: its declaration and its call in the loss
    renamed = await _rename(client, "model(x), y", "net")
    assert "fn net(x" in renamed and "softmax_cross_entropy(net(x), y)" in renamed
    # a system: the `for` of every plan follows
    renamed = await _rename(client, "system digits", "mnist", delta=7)
    assert renamed.count("for mnist {") == 4 and "digits {" not in renamed.replace("# ", "")
    # a plan: the pairings' `for` follow
    renamed = await _rename(client, "plan pair", "duo", delta=5)
    assert "plan duo for digits" in renamed and renamed.count("for duo {") == 3
    # a role: its declaration, the round's statements and the pairings of that plan
    renamed = await _rename(client, "roles worker[2]", "peer", delta=6)
    assert "roles peer[2]" in renamed and "each peer computes grad" in renamed
    assert "peer[*]: host x86_64\n" in renamed and "peer[0]: host x86_64, gpu h200" in renamed
    assert "roles hub, worker[4]" in renamed  # another plan's worker is another role
    # a pairing
    renamed = await _rename(client, "pairing local", "here", delta=9)
    assert "pairing here for pair" in renamed
    # every rename leaves a file that checks as before
    for new in (renamed,):
        assert _analysis(new).diagnostics == []


async def _prepare(client: Client, needle: str, delta: int = 0) -> object:
    return await client.text_document_prepare_rename_async(
        types.PrepareRenameParams(
            text_document=doc(DIGITS_URI), position=position_of(DIGITS, needle, 0, delta)
        )
    )


async def _refusal(client: Client, needle: str, delta: int = 0, nth: int = 0) -> str:
    with pytest.raises(JsonRpcException) as refused:
        await client.text_document_prepare_rename_async(
            types.PrepareRenameParams(
                text_document=doc(DIGITS_URI), position=position_of(DIGITS, needle, nth, delta)
            )
        )
    assert refused.value.code == -32803
    return str(refused.value.message)


@IN_MODULE_LOOP
async def test_prepare_rename_is_null_on_keywords_and_refuses_built_ins(
    client: Client,
) -> None:
    found = await client.text_document_prepare_rename_async(
        types.PrepareRenameParams(
            text_document=doc(DIGITS_URI), position=position_of(DIGITS, "h @ w2")
        )
    )
    assert isinstance(found, types.PrepareRenamePlaceholder) and found.placeholder == "h"
    # a keyword, a comment: nothing to rename there, answered null without a message
    for needle, delta in (("batch 64", 0), ("topology pair", 0), ("host x86_64", 1)):
        assert await _prepare(client, needle, delta) is None, needle
    assert await _prepare(client, "# Handwritten", 3) is None
    assert "`relu` is a built-in" in await _refusal(client, "relu(")
    assert "`adam` is a built-in" in await _refusal(client, "adam(")
    # a new name that is taken, or no name, is refused by rename itself
    for new, why in (
        ("w1", "declared already"),
        ("let", "keyword"),
        ("relu", "built-in"),
        ("2x", "not a name"),
    ):
        with pytest.raises(JsonRpcException) as refused:
            await client.text_document_rename_async(
                types.RenameParams(
                    text_document=doc(DIGITS_URI),
                    position=position_of(DIGITS, "@ w2", delta=2),
                    new_name=new,
                )
            )
        assert why in str(refused.value.message), new


# ---- workspace symbols, inlay hints, folding, highlight, selection, lenses -------------------


@IN_MODULE_LOOP
async def test_workspace_symbols_search_every_file_of_the_workspace(client: Client) -> None:
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="w2"))
    assert found is not None
    names = {(s.name, s.container_name) for s in found}
    assert ("w2", "digits") in names
    # blobs.alpha is not open: read from the workspace folder
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="blobs"))
    assert found is not None
    assert any(s.location.uri.endswith("blobs.alpha") for s in found)  # type: ignore[union-attr]
    # fuzzy, any case: `TWG` finds `two_gpus`
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="TWG"))
    assert found is not None and "two_gpus" in [s.name for s in found]
    for s in found:  # each holds t, w, g in that order
        assert re.search("t.*w.*g", s.name, re.IGNORECASE), s.name
    assert "gpu_and_host" not in [s.name for s in found]


@IN_MODULE_LOOP
async def test_inlay_hints_show_the_shape_of_every_let(client: Client) -> None:
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=doc(DIGITS_URI),
            range=types.Range(
                start=types.Position(0, 0), end=types.Position(len(DIGITS.split("\n")), 0)
            ),
        )
    )
    assert hints is not None
    assert [(h.position, h.label, h.kind) for h in hints] == [
        (position_of(DIGITS, "let h", delta=5), ": f32[B, 32]", types.InlayHintKind.Type)
    ]


@IN_MODULE_LOOP
async def test_folding_ranges_cover_declarations_and_blocks(client: Client) -> None:
    folds = await client.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=doc(DIGITS_URI))
    )
    assert folds is not None
    ranges = {(f.start_line, f.end_line, f.kind) for f in folds}
    lines = DIGITS.split("\n")
    system = lines.index("system digits {")
    assert (system, lines.index("}", system), None) in ranges
    fn = next(i for i, line in enumerate(lines) if line.startswith("  fn model"))
    assert (fn, fn + 3, None) in ranges
    round_ = lines.index("  round {")
    assert (round_, round_ + 4, None) in ranges
    comment = next(i for i, line in enumerate(lines) if line.startswith("# Distribution"))
    assert (comment, comment + 1, types.FoldingRangeKind.Comment) in ranges


@IN_MODULE_LOOP
async def test_document_highlight_marks_the_declaration_and_the_uses(client: Client) -> None:
    found = await client.text_document_document_highlight_async(
        types.DocumentHighlightParams(
            text_document=doc(DIGITS_URI), position=position_of(DIGITS, "h @ w2")
        )
    )
    assert found is not None
    kinds = [(h.range.start, h.kind) for h in found]
    assert kinds == [
        (position_of(DIGITS, "let h", delta=4), types.DocumentHighlightKind.Write),
        (position_of(DIGITS, "h @ w2"), types.DocumentHighlightKind.Read),
    ]


@IN_MODULE_LOOP
async def test_selection_ranges_grow_from_the_word_to_the_file(client: Client) -> None:
    ranges = await client.text_document_selection_range_async(
        types.SelectionRangeParams(
            text_document=doc(DIGITS_URI), positions=[position_of(DIGITS, "w2 + b2")]
        )
    )
    assert ranges is not None
    (found,) = ranges
    chain = []
    node: types.SelectionRange | None = found
    while node is not None:
        chain.append(node.range)
        node = node.parent
    at = position_of(DIGITS, "w2 + b2")
    assert chain[0] == types.Range(start=at, end=types.Position(at.line, at.character + 2))
    assert chain[-1].start == types.Position(0, 0)
    texts = []
    for r in chain:
        a = sum(len(line) + 1 for line in DIGITS.split("\n")[: r.start.line]) + r.start.character
        b = sum(len(line) + 1 for line in DIGITS.split("\n")[: r.end.line]) + r.end.character
        texts.append(DIGITS[a:b])
    assert texts[:3] == ["w2", "h @ w2", "h @ w2 + b2"]
    assert any(t.startswith("fn model(") for t in texts)
    assert any(t.startswith("system digits {") for t in texts)
    for inner, outer in zip(texts, texts[1:], strict=False):
        assert inner in outer and inner != outer


@IN_MODULE_LOOP
async def test_code_lenses_run_project_and_build(client: Client) -> None:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=doc(DIGITS_URI))
    )
    assert lenses is not None
    by_line: dict[int, list[tuple[str, str, object]]] = {}
    for lens in lenses:
        assert lens.command is not None and lens.command.arguments is not None
        by_line.setdefault(lens.range.start.line, []).append(
            (lens.command.title, lens.command.command, lens.command.arguments[0])
        )
    lines = DIGITS.split("\n")
    assert by_line[lines.index("system digits {")] == [
        ("▶ Run", "alpha.run", {"uri": DIGITS_URI, "system": "digits"}),
        ("Build", "alpha.build", {"uri": DIGITS_URI, "system": "digits"}),
    ]
    assert by_line[lines.index("plan pair for digits {")] == [
        ("▶ Run plan", "alpha.runPlan", {"uri": DIGITS_URI, "plan": "pair"}),
        (
            "Project worker[0]",
            "alpha.projectRole",
            {"uri": DIGITS_URI, "plan": "pair", "role": "worker[0]"},
        ),
        ("Build", "alpha.build", {"uri": DIGITS_URI, "plan": "pair"}),
    ]


# ---- completion and hover in the places they lost the context ---------------------------------


async def _labels(client: Client, uri: str, text: str, at: int) -> list[str]:
    line = text.count("\n", 0, at)
    column = at - (text.rfind("\n", 0, at) + 1)
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=types.Position(line, column))
    )
    assert isinstance(result, types.CompletionList)
    return [i.label for i in result.items]


@IN_MODULE_LOOP
async def test_completion_keeps_the_scope_of_a_function_being_written(client: Client) -> None:
    uri = (EXAMPLES / "typing.alpha").as_uri()
    at = DIGITS.index("    return h @ w2")
    typing = DIGITS[:at] + "    let z = h @ w2 + \n" + DIGITS[at:]
    client.open(uri, typing)
    labels = await _labels(client, uri, typing, at + len("    let z = h @ w2 + "))
    assert {"x", "h", "model", "w1", "b2", "relu"} <= set(labels)
    assert "train" not in labels and "z" not in labels
    # an empty line of a function body: statements and values, never the data set's name
    empty = DIGITS[:at] + "    \n" + DIGITS[at:]
    client.replace(uri, empty)
    labels = await _labels(client, uri, empty, at + 4)
    assert {"let", "return", "x", "h", "w1"} <= set(labels)
    assert "train" not in labels
    client.close(uri)


async def _hover(client: Client, needle: str, delta: int = 0) -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=doc(DIGITS_URI), position=position_of(DIGITS, needle, delta=delta)
        )
    )
    assert result is not None, needle
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


@IN_MODULE_LOOP
async def test_hover_explains_keywords(client: Client) -> None:
    batch = await _hover(client, "batch 64")
    assert batch.startswith("**batch** (keyword)") and "leaves" in batch
    assert "**topology** (keyword)" in await _hover(client, "topology pair")
    assert "**combine** (keyword)" in await _hover(client, "combine grad")
    assert "**system** (keyword)" in await _hover(client, "system digits")


@IN_MODULE_LOOP
async def test_hover_on_a_gpu_pairing_entry_describes_the_profile(client: Client) -> None:
    h200 = DEVICE_PROFILES["h200"]
    text = await _hover(client, "worker[*]: host x86_64, gpu h200", delta=30)
    assert text.startswith(f"**GPU profile `h200`**: {h200.memory:,} bytes of device memory")
    assert "default host profile" not in text
    assert str(ROOT)  # the fixture's workspace folder is the repository's examples
