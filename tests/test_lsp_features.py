"""Hover, navigation, completion, symbols, semantic tokens and code actions over the protocol,
on the real examples and on a file with refusals."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from test_lsp_diagnostics import MULTI
from test_lsp_session import CONFIG, EXAMPLES, ROOT, Client, doc, init_params, position_of

from alpha_core.check.learner_check import LEARNERS
from alpha_core.plan.admission import admit
from alpha_core.plan.profiles import machine_profile
from alpha_core.support.sizes import human_bytes
from alpha_core.workspace.analysis import Workspace

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
DIGITS = (EXAMPLES / "digits.alpha").read_text()
BLOBS = (EXAMPLES / "blobs.alpha").read_text()
DIGITS_URI = (EXAMPLES / "digits.alpha").as_uri()
BLOBS_URI = (EXAMPLES / "blobs.alpha").as_uri()
MULTI_URI = (ROOT / "tests" / "fixtures" / "features-multi.alpha").as_uri()


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    result = await lsp_client.initialize_session(init_params())
    provider = result.capabilities.semantic_tokens_provider
    assert provider is not None
    lsp_client.legend = provider.legend  # type: ignore[attr-defined]
    assert await lsp_client.published_for(DIGITS_URI, lsp_client.open(DIGITS_URI, DIGITS)) == []
    assert await lsp_client.published_for(BLOBS_URI, lsp_client.open(BLOBS_URI, BLOBS)) == []
    assert await lsp_client.published_for(MULTI_URI, lsp_client.open(MULTI_URI, MULTI))
    yield
    await lsp_client.shutdown_session()


async def _hover(
    client: Client, uri: str, text: str, needle: str, nth: int = 0, delta: int = 0
) -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=position_of(text, needle, nth, delta))
    )
    assert result is not None, needle
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


# ---- hover ---------------------------------------------------------------------------------


@IN_MODULE_LOOP
async def test_hover_shows_shapes_of_names_and_expressions(client: Client) -> None:
    assert "h: f32[B, 32]" in await _hover(client, DIGITS_URI, DIGITS, "h @ w2")
    assert "w2: f32[32, 10]" in await _hover(client, DIGITS_URI, DIGITS, "h @ w2", delta=4)
    # on the operator: the smallest expression around it is the product
    assert "h @ w2: f32[B, 10]" in await _hover(client, DIGITS_URI, DIGITS, "h @ w2", delta=2)
    assert "x / 16.0: f32[B, 64]" in await _hover(client, DIGITS_URI, DIGITS, "x / 16.0", delta=2)
    assert "model(x): f32[B, 10]" in await _hover(
        client, DIGITS_URI, DIGITS, "model(x), y", delta=5
    )
    # declarations show what they declare
    assert "param w1: f32[64, 32]" in await _hover(client, DIGITS_URI, DIGITS, "w1:")
    assert "fn model(x: f32[B, 64]) -> f32[B, 10]" in await _hover(
        client, DIGITS_URI, DIGITS, "model(x: f32", delta=1
    )
    # a user function's call: its signature and the shape it gives
    text = await _hover(client, BLOBS_URI, BLOBS, "hidden(x) @", delta=2)
    assert "fn hidden(x: f32[B, 8]) -> f32[B, 16]" in text
    assert "hidden(x): f32[B, 16]" in text


@IN_MODULE_LOOP
async def test_hover_describes_built_ins(client: Client) -> None:
    text = await _hover(client, DIGITS_URI, DIGITS, "adam(", delta=1)
    assert "adam(lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-08" in text
    assert "Adam" in text
    text = await _hover(client, BLOBS_URI, BLOBS, "momentum(", delta=2)
    assert "momentum(lr: float, mu: float = 0.9" in text
    text = await _hover(client, DIGITS_URI, DIGITS, "normal(", delta=2)
    assert "normal(mean: float, std: float, seed: int)" in text
    text = await _hover(client, DIGITS_URI, DIGITS, "softmax_cross_entropy", delta=3)
    assert "softmax_cross_entropy(model(x), y)" in text and "class labels" in text
    text = await _hover(client, DIGITS_URI, DIGITS, "relu(", delta=1)
    assert "relu(t)" in text and "relu((x / 16.0) @ w1 + b1): f32[B, 32]" in text
    assert "zeros" in await _hover(client, DIGITS_URI, DIGITS, "zeros", delta=1)


@IN_MODULE_LOOP
async def test_hover_on_roles_shows_memory_admission(client: Client) -> None:
    a = Workspace().analyze_file(str(EXAMPLES / "digits.alpha"))
    plan, pairing = a.checked.plans["pair"], a.checked.pairings["local"]
    # in the pairing: the profile the pairing gives, the breakdown and the headroom
    text = await _hover(client, DIGITS_URI, DIGITS, "worker[*]: host", delta=1)
    expected = admit(plan, pairing, 0)
    assert expected.show() in text
    assert f"{expected.headroom:,} bytes" in text
    assert "pairing `local`" in text
    # a plan's role family: its members whose demands differ
    # without a pairing: against this machine, as `alpha build` admits it (the CLI's figures)
    machine = machine_profile()
    tree = a.checked.plans["tree"]
    text = await _hover(client, DIGITS_URI, DIGITS, "roles worker[8]", delta=8)
    first, last = admit(tree, None, 0, machine), admit(tree, None, 7, machine)
    assert first.show() in text and last.show() in text
    assert "8 roles of plan `tree`" in text and f"on {machine.name}" in text
    assert human_bytes(min(first.headroom, last.headroom)) in text or (
        f"{min(first.headroom, last.headroom):,} bytes" in text
    )
    # the hub of the star, where the topology names it
    star = a.checked.plans["star"]
    text = await _hover(client, DIGITS_URI, DIGITS, "star(hub)", delta=6)
    assert admit(star, None, 0, machine).show() in text
    assert "hub on" in text and "headroom" in text


@IN_MODULE_LOOP
async def test_hover_on_learner_names_every_learner(client: Client) -> None:
    text = await _hover(client, DIGITS_URI, DIGITS, "learner adam")
    for name in LEARNERS:
        assert f"`{name}(...)`" in text or f"`learner {name}(...)`" in text, name


@IN_MODULE_LOOP
async def test_hover_outside_anything_answers_nothing(client: Client) -> None:
    result = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(DIGITS_URI), position=types.Position(0, 3))
    )
    assert result is None  # a comment


# ---- navigation ----------------------------------------------------------------------------


async def _definition(
    client: Client, uri: str, text: str, needle: str, nth: int = 0
) -> types.Range:
    result = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=position_of(text, needle, nth))
    )
    assert isinstance(result, types.Location), needle
    assert result.uri == uri
    return result.range


@IN_MODULE_LOOP
async def test_go_to_definition(client: Client) -> None:
    # a parameter used in the model → its `param` item
    assert await _definition(client, DIGITS_URI, DIGITS, "w1 + b1") == types.Range(
        start=position_of(DIGITS, "w1:"), end=position_of(DIGITS, "w1:", delta=2)
    )
    # a local → its `let`
    got = await _definition(client, DIGITS_URI, DIGITS, "h @ w2")
    assert got.start == position_of(DIGITS, "h = relu")
    # a call of a user function → the function
    got = await _definition(client, BLOBS_URI, BLOBS, "hidden(x) @")
    assert got.start == position_of(BLOBS, "hidden(x: f32")
    # a plan → its system; a pairing → its plan
    got = await _definition(client, DIGITS_URI, DIGITS, "digits {", nth=1)
    assert got.start == position_of(DIGITS, "digits {")
    got = await _definition(client, DIGITS_URI, DIGITS, "pair {")
    assert got.start == position_of(DIGITS, "pair for digits", delta=0)
    # a role in a round, a topology and a pairing → its declaration in the plan's `roles`
    got = await _definition(client, DIGITS_URI, DIGITS, "worker computes")
    assert got.start == position_of(DIGITS, "worker[2]")
    got = await _definition(client, DIGITS_URI, DIGITS, "hub)")
    assert got.start == position_of(DIGITS, "hub, worker[4]")
    got = await _definition(client, DIGITS_URI, DIGITS, "worker[*]")
    assert got.start == position_of(DIGITS, "worker[2]")


@IN_MODULE_LOOP
async def test_find_references(client: Client) -> None:
    async def refs(needle: str, include: bool = True) -> list[types.Position]:
        result = await client.text_document_references_async(
            types.ReferenceParams(
                text_document=doc(DIGITS_URI),
                position=position_of(DIGITS, needle),
                context=types.ReferenceContext(include_declaration=include),
            )
        )
        assert result is not None
        return [loc.range.start for loc in result]

    # the system: its declaration and the four plans naming it
    got = await refs("digits {")
    assert got[0] == position_of(DIGITS, "digits {")
    assert got[1:] == [position_of(DIGITS, "for digits", n, 4) for n in range(4)]
    # from a use, the same set
    assert await refs("digits {\n  roles hub") == got
    assert await refs("digits {", include=False) == got[1:]
    # the workers of plan `pair`: declared once, used in the round twice and in the pairing
    got = await refs("worker[2]")
    assert [
        position_of(DIGITS, "worker[2]"),
        position_of(DIGITS, "worker computes"),
        position_of(DIGITS, "worker applies"),
    ] == got[:3]
    # and in every entry of the pairings for `pair` (the other plans' workers are others)
    pairing_lines = [DIGITS.split("\n")[p.line] for p in got[3:]]
    assert pairing_lines and all(line.startswith("  worker[") for line in pairing_lines)


# ---- completion ----------------------------------------------------------------------------


async def _complete(
    client: Client, uri: str, text: str, marker: str = "‸"
) -> list[types.CompletionItem]:
    """Completion at the marker, in a copy of the text opened under its own URI."""
    at = position_of(text, marker)
    uri = uri.replace(".alpha", f"-completion-{abs(hash(text))}.alpha")
    client.open(uri, text.replace(marker, "", 1))
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=at)
    )
    client.close(uri)
    assert isinstance(result, types.CompletionList)
    return list(result.items)


def _labels(items: list[types.CompletionItem]) -> list[str]:
    return [i.label for i in items]


@IN_MODULE_LOOP
async def test_completion_of_items_by_context(client: Client) -> None:
    system = await _complete(client, DIGITS_URI, DIGITS.replace("  steps 300", "  ‸\n  steps 300"))
    assert {"data", "batch", "param", "fn", "loss", "learner", "steps"} <= set(_labels(system))
    assert "roles" not in _labels(system)
    body = await _complete(
        client, DIGITS_URI, DIGITS.replace("    return h", "    ‸\n    return h")
    )
    assert {"let", "return", "h", "x", "w1", "b2"} <= set(_labels(body))
    plan = await _complete(client, DIGITS_URI, DIGITS.replace("  topology pair", "  ‸"))
    assert {"roles", "topology", "round", "contract", "leaves"} <= set(_labels(plan))
    assert "param" not in _labels(plan)
    stmts = await _complete(
        client, DIGITS_URI, DIGITS.replace("    each worker applies learner", "    ‸")
    )
    assert any(i.insert_text == "each ${1:worker} applies learner" for i in stmts)
    top = await _complete(client, DIGITS_URI, DIGITS + "\n‸")
    assert set(_labels(top)) == {"system", "plan", "pairing"}


@IN_MODULE_LOOP
async def test_completion_of_built_ins_as_snippets(client: Client) -> None:
    learners = await _complete(client, DIGITS_URI, DIGITS.replace("learner adam", "learner ‸adam"))
    by_label = {i.label: i for i in learners}
    assert {"sgd", "momentum", "adam"} <= set(by_label)
    adam = by_label["adam"]
    assert adam.insert_text_format == types.InsertTextFormat.Snippet
    assert adam.insert_text is not None and adam.insert_text.startswith(
        "adam(lr: ${1:0.01}, beta1: ${2:0.9}, beta2: ${3:0.999}, eps: ${4:1e-08}"
    )
    inits = await _complete(client, DIGITS_URI, DIGITS.replace("f32[10] = zeros", "f32[10] = ‸"))
    normal = next(i for i in inits if i.label == "normal")
    assert normal.insert_text == "normal(${1:0.0}, ${2:0.1}, seed: ${3:1})"
    assert {"uniform", "zeros"} <= set(_labels(inits))
    losses = await _complete(client, DIGITS_URI, DIGITS.replace("loss softmax", "loss ‸softmax"))
    assert {"softmax_cross_entropy", "mse"} <= set(_labels(losses))
    kwargs = await _complete(
        client, DIGITS_URI, DIGITS.replace("adam(lr: 0.01, beta1: 0.9, ", "adam(lr: 0.01, ‸")
    )
    assert {"beta1:", "beta2:", "eps:"} <= set(_labels(kwargs))
    assert "lr:" not in _labels(kwargs)
    # inside a function: every built-in function, the layer ones included, with how it is called
    body = await _complete(client, DIGITS_URI, DIGITS.replace("return h @ w2", "return ‸h @ w2"))
    by_label = {i.label: i for i in body}
    assert {"relu", "softmax", "conv2d", "max_pool", "embed", "dropout", "clamp"} <= set(by_label)
    assert by_label["softmax"].detail == "softmax(t, axis: k)"
    assert "convolution" in str(by_label["conv2d"].documentation)
    topologies = await _complete(client, DIGITS_URI, DIGITS.replace("topology pair", "topology ‸"))
    assert {"pair", "star", "hierarchy"} == set(_labels(topologies))


@IN_MODULE_LOOP
async def test_completion_in_pairings_and_headers(client: Client) -> None:
    hosts = await _complete(client, DIGITS_URI, DIGITS.replace("host x86_64", "host ‸"))
    assert set(_labels(hosts)) == {"x86_64", "aarch64"}
    gpus = await _complete(client, DIGITS_URI, DIGITS.replace("host x86_64", "gpu ‸"))
    assert {"h200", "rtx3090", "a100_80gb"} <= set(_labels(gpus))
    entries = await _complete(client, DIGITS_URI, DIGITS.replace("  worker[*]: host x86_64", "  ‸"))
    assert any(i.insert_text == "worker[*]: host ${1|x86_64,aarch64|}" for i in entries)
    systems = await _complete(client, DIGITS_URI, DIGITS + "\nplan p for ‸")
    assert _labels(systems) == ["digits"]
    plans = await _complete(client, DIGITS_URI, DIGITS + "\npairing p for ‸")
    assert _labels(plans) == ["pair", "star", "tree", "uneven"]


# ---- symbols and tokens --------------------------------------------------------------------


@IN_MODULE_LOOP
async def test_document_symbols_nest_items_in_declarations(client: Client) -> None:
    result = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc(DIGITS_URI))
    )
    assert result is not None
    top = [(s.name, s.kind) for s in result]  # type: ignore[union-attr]
    K = types.SymbolKind
    assert top == [
        ("digits", K.Module),
        ("pair", K.Namespace),
        ("star", K.Namespace),
        ("tree", K.Namespace),
        ("uneven", K.Namespace),
        *[(d.split()[1], K.Package) for d in DIGITS.split("\n") if d.startswith("pairing ")],
    ]
    digits = result[0]
    assert isinstance(digits, types.DocumentSymbol) and digits.children is not None
    assert [c.name for c in digits.children] == [
        "train", "batch", "w1", "b1", "w2", "b2", "model", "loss", "learner", "steps",
    ]  # fmt: skip
    model = next(c for c in digits.children if c.name == "model")
    assert model.kind == K.Function and [c.name for c in model.children or []] == ["h"]
    star = result[2]
    assert isinstance(star, types.DocumentSymbol) and star.children is not None
    roles = star.children[0]
    assert [c.name for c in roles.children or []] == ["hub", "worker"]
    pairing = result[5]
    assert isinstance(pairing, types.DocumentSymbol)
    assert [(c.name, c.detail) for c in pairing.children or []] == [("worker[*]", "host x86_64")]
    for s in result:
        assert isinstance(s, types.DocumentSymbol)
        assert s.range.start <= s.selection_range.start and s.selection_range.end <= s.range.end


def _decode(data: list[int], legend: types.SemanticTokensLegend, text: str) -> dict[str, str]:
    """Token text → token type (the last seen for repeated words)."""
    lines = text.split("\n")
    out: dict[str, str] = {}
    line = col = 0
    for i in range(0, len(data), 5):
        dl, dc, length, kind, _ = data[i : i + 5]
        line += dl
        col = dc if dl else col + dc
        out[lines[line][col : col + length]] = legend.token_types[kind]
    return out


@IN_MODULE_LOOP
async def test_semantic_tokens_classify_the_words(client: Client) -> None:
    result = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(DIGITS_URI))
    )
    assert result is not None and len(result.data) % 5 == 0
    tokens = _decode(list(result.data), client.legend, DIGITS)  # type: ignore[attr-defined]
    assert tokens["system"] == "keyword" and tokens["learner"] == "keyword"
    assert tokens["digits"] == "namespace"
    assert tokens["w1"] == "variable" and tokens["h"] == "variable"
    assert tokens["model"] == "function"
    assert tokens["relu"] == "function" and tokens["adam"] == "function"
    assert tokens["worker"] == "class" and tokens["hub"] == "class"
    assert tokens["300"] == "number" and tokens["1e-8"] == "number"
    assert tokens['"data/digits.csv"'] == "string"
    assert tokens["f32"] == "type"
    assert tokens["lr"] == "property"
    assert any(k.startswith("# Handwritten") and v == "comment" for k, v in tokens.items())


# ---- code actions --------------------------------------------------------------------------


async def _actions(
    client: Client, uri: str, diags: list[types.Diagnostic]
) -> list[types.CodeAction]:
    out: list[types.CodeAction] = []
    for d in diags:
        result = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=doc(uri),
                range=d.range,
                context=types.CodeActionContext(diagnostics=[d]),
            )
        )
        out += [a for a in result or [] if isinstance(a, types.CodeAction)]
    return out


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        a = starts[e.range.start.line] + e.range.start.character
        b = starts[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


@IN_MODULE_LOOP
async def test_code_actions_fix_refusals_mechanically(client: Client) -> None:
    uri = MULTI_URI.replace(".alpha", "-actions.alpha")
    diags = await client.published_for(uri, client.open(uri, MULTI))
    actions = await _actions(client, uri, diags)
    titles = sorted(a.title for a in actions)
    assert titles == [
        "Pair hub, worker[1..3] with host x86_64",
        "Replace with `lr`",
        "Replace with `w`",
    ]
    for a in actions:
        assert a.kind == types.CodeActionKind.QuickFix and a.diagnostics
    text = MULTI
    for a in actions:
        assert a.edit is not None and a.edit.changes is not None
        text = _apply(text, list(a.edit.changes[uri]))
    assert "pairing half for duo {\n  worker[0]: host x86_64\n  hub: host x86_64\n" in text
    assert "worker[1..3]: host x86_64\n}" in text
    fixed = await client.published_for(uri, client.replace(uri, text))
    # what is left has no mechanical fix
    assert sorted(str(d.code) for d in fixed) == ["batch-not-divisible", "duplicate-name"]
    client.close(uri)


@IN_MODULE_LOOP
@pytest.mark.parametrize(
    ("broken", "why"),
    [
        (DIGITS.replace("relu((x / 16.0)", "rleu((x / 16.0)"), "unknown-name"),
        (DIGITS.replace("@ w1 + b1)\n", "@ w1 + b1\n"), "syntax-error"),
    ],
)
async def test_hover_answers_inside_a_function_that_holds_a_refusal(
    client: Client, broken: str, why: str
) -> None:
    """A user hovers most exactly when something is broken: `w2` in `return h @ w2 + b2`
    still has its declared type when `relu` is misspelt or a parenthesis is left open."""
    uri = (EXAMPLES / f"broken-{why}.alpha").as_uri()  # beside its data; never written
    published = await client.published_for(uri, client.open(uri, broken))
    assert [d.code for d in published] == [why]
    assert "w2: f32[32, 10]" in await _hover(client, uri, broken, "h @ w2", delta=4)
    assert "b2: f32[10]" in await _hover(client, uri, broken, "w2 + b2", delta=5)
