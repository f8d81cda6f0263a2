"""Random edits never stop the server: after half-typed tokens, unbalanced braces, binary junk
and huge lines it still publishes diagnostics for the latest version and answers hover,
completion, symbols, tokens, definitions, code actions, signature help, highlights, selection
ranges, rename, formatting, inlay hints, folding and code lenses, and logs no failure."""

from __future__ import annotations

import re

import pytest
import pytest_lsp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from test_lsp_session import CONFIG, EXAMPLES, Client, doc, init_params

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
DIGITS = (EXAMPLES / "digits.alpha").read_text()
URI = (EXAMPLES / "fuzzed.alpha").as_uri()  # beside data/, so the data set is read
MODEL = DIGITS.index("h @ w2")

HALF_TYPED = [
    "param w: f32[",
    "fn m(x: f32[B, ",
    "learner ad",
    "learner adam(lr: ",
    "loss softmax_cross_entropy(model(",
    "plan p for ",
    "pairing q for pa",
    "system ",
    "roles worker[",
    "roles worker[99999999999999999999]",
    "worker[0..",
    "  worker[*]: host ",
    "topology hierarchy(fanout: ",
    "round {\n each worker",
    "batch 64 leaves 0",
    "let = ",
    "return h @",
    '"unterminated',
    "# a comment",
    "1e",
    ".",
    "->",
    "@@",
    "\t",
    "\r\n",
    "\r",
]
JUNK = st.one_of(
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
    st.text(st.characters(categories=["Cs", "Co", "Cc", "Zl", "Zp"]), max_size=8),
)
HUGE = st.sampled_from(
    ["x" * 60_000, "1" * 5_000, "(" * 2_000, "[" * 2_000, "{" * 2_000, "}" * 500, "h @ " * 500]
)
TEXT = st.one_of(
    st.sampled_from(HALF_TYPED),
    st.text(alphabet=st.sampled_from(list('{}()[]:,=@+-*/ \n#"._xwB0123456789')), max_size=20),
    st.text(max_size=12),
    JUNK,
    HUGE,
)


@st.composite
def edits(draw: st.DrawFn) -> tuple[int, int, str]:
    """(start, end, new text): a replacement, its offsets clipped to the text when applied."""
    a = draw(st.integers(0, len(DIGITS) + 100))
    b = a + draw(st.sampled_from([0, 0, 1, 5, 50, 2_000]))
    return a, b, draw(TEXT)


def apply(text: str, edit: tuple[int, int, str]) -> str:
    a, b, new = edit
    return text[: min(a, len(text))] + new + text[min(b, len(text)) :]


def _origin(message: str) -> str:
    """The file of the innermost frame of a logged traceback."""
    frames = re.findall(r'File "([^"]+)"', message)
    return frames[-1] if frames else ""


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(init_params(debounce_ms=0))
    assert await lsp_client.published_for(URI, lsp_client.open(URI, DIGITS)) == []
    yield
    await lsp_client.shutdown_session()


POSITIONS = st.tuples(st.integers(0, 80), st.integers(0, 200))


@IN_MODULE_LOOP
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# a long chain of operators in the model (deep trees), a data path with a NUL in it, and one
# that is not a regular file (the server's own input): each once, whatever hypothesis draws
@example(changes=[(MODEL, MODEL, "h + " * 600)], at=[(10, 12), (10, 400)])
@example(
    changes=[(0, 0, 'system d {\n  data t: table("a\x00", features: 1)\n}\n')], at=[(1, 3)] * 2
)
@example(
    changes=[(0, 0, 'system d {\n  data t: table("/dev/stdin", features: 1)\n}\n')], at=[(1, 3)] * 2
)
@given(
    changes=st.lists(edits(), min_size=1, max_size=4),
    at=st.lists(POSITIONS, min_size=2, max_size=2),
)
async def test_random_edits_never_stop_the_server(
    client: Client, changes: list[tuple[int, int, str]], at: list[tuple[int, int]]
) -> None:
    text = DIGITS
    version = 0
    for change in changes:
        text = apply(text, change)
        version = client.replace(URI, text)
    diags = await client.published_for(URI, version)
    assert all(d.source == "alpha" and d.code for d in diags)
    for line, character in at:
        pos = types.Position(line=line, character=character)
        await client.text_document_hover_async(
            types.HoverParams(text_document=doc(URI), position=pos)
        )
        completion = await client.text_document_completion_async(
            types.CompletionParams(text_document=doc(URI), position=pos)
        )
        assert completion is not None
        await client.text_document_definition_async(
            types.DefinitionParams(text_document=doc(URI), position=pos)
        )
        await client.text_document_signature_help_async(
            types.SignatureHelpParams(text_document=doc(URI), position=pos)
        )
        await client.text_document_document_highlight_async(
            types.DocumentHighlightParams(text_document=doc(URI), position=pos)
        )
        ranges = await client.text_document_selection_range_async(
            types.SelectionRangeParams(text_document=doc(URI), positions=[pos])
        )
        assert ranges is not None and len(ranges) == 1
        try:
            await client.text_document_prepare_rename_async(
                types.PrepareRenameParams(text_document=doc(URI), position=pos)
            )
        except JsonRpcException as refused:  # no name there: a refusal, never a failure
            assert refused.code == -32803
    formatting = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=doc(URI), options=types.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    assert formatting is not None
    everything = types.Range(start=types.Position(0, 0), end=types.Position(10_000, 0))
    await client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document=doc(URI), range=everything)
    )
    await client.text_document_folding_range_async(types.FoldingRangeParams(text_document=doc(URI)))
    await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc(URI)))
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc(URI))
    )
    assert symbols is not None
    tokens = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(URI))
    )
    assert tokens is not None and len(tokens.data) % 5 == 0
    await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc(URI),
            range=types.Range(start=types.Position(0, 0), end=types.Position(10_000, 0)),
            context=types.CodeActionContext(diagnostics=list(diags)),
        )
    )
    # the server's own code never fails; a failure of the checker is contained (it is logged
    # and published as an `internal-error` diagnostic) and every request is still answered
    failures = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
    assert [f for f in failures if "/alpha_core/" not in _origin(f)] == []
    assert client._server is not None and client._server.returncode is None
    # back to the example for the next case: it is refused by nothing
    assert await client.published_for(URI, client.replace(URI, DIGITS)) == []
