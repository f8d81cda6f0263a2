"""The editor on block arrays, over the protocol with the real server, on
examples/transformer_deep.alpha: hover on a member (its shape where used, its declaration and the
seed each block gives it), on the array and on a loop's index; inlay hints inside the loop, for
new values and for the array's size; rename of a member, of the array and of a loop's index,
and the renames a member's own namespace refuses."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from test_lsp_session import CONFIG, EXAMPLES, Client, doc, init_params, position_of

from alpha_core.workspace.analysis import Workspace

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
DEEP = (EXAMPLES / "transformer_deep.alpha").read_text()
DEEP_URI = (EXAMPLES / "transformer_deep.alpha").as_uri()


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(init_params())
    assert await lsp_client.published_for(DEEP_URI, lsp_client.open(DEEP_URI, DEEP)) == []
    yield
    await lsp_client.shutdown_session()


async def _hover(client: Client, needle: str, delta: int = 0) -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(DEEP_URI), position=position_of(DEEP, needle, 0, delta))
    )
    assert result is not None, needle
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


@IN_MODULE_LOOP
async def test_hover_on_a_member_shows_its_shape_declaration_and_seeds(client: Client) -> None:
    used = await _hover(client, "a @ p.wq", delta=6)
    assert "p.wq: f32[32, 32]" in used
    assert "member wq of blocks[12]: f32[32, 32] = normal(…)" in used
    assert "seed in block i: 10 + i·2^32 (block 0: 10; block 11: 47,244,640,266)" in used
    # the third name of a grouped declaration: seed 10 + 2
    declared = await _hover(client, "wv, wo", delta=1)
    assert "member wv of blocks[12]" in declared and "seed in block i: 12 + i·2^32" in declared
    zeros = await _hover(client, "n2, bo", delta=4)
    assert "member bo of blocks[12]: f32[32] = zeros" in zeros and "seed" not in zeros


@IN_MODULE_LOOP
async def test_hover_on_the_array_and_the_loop_index(client: Client) -> None:
    for needle, delta in (("param blocks[12] {\n", 7), ("h, blocks[i]", 4), ("p: blocks", 4)):
        text = await _hover(client, needle, delta)
        assert "param blocks[12]: 12 blocks × 13 tensors (156 tensors, 101,376 floats)" in text
        assert "block i's tensors are named blocks[i].g1" in text
    index = await _hover(client, "blocks[i]", delta=7)
    assert "for i in 0..12: i is an integer, 0 to 11" in index
    assert "argument p: blocks" in await _hover(client, "p: blocks")


@IN_MODULE_LOOP
async def test_inlay_hints_inside_blocks_and_loops(client: Client) -> None:
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=doc(DEEP_URI),
            range=types.Range(types.Position(0, 0), types.Position(len(DEEP.split("\n")), 0)),
        )
    )
    assert hints is not None
    got = {(h.position.line, h.position.character): h.label for h in hints}
    assert got[_at("param blocks[12] {\n", 16)] == " 156 tensors, 101,376 floats"
    assert got[_at("let s = softmax", 5)] == ": f32[B, 2, 12, 12]"
    assert got[_at("{ h = block", 3)] == ": f32[B, 12, 32]"  # the new value of `h`


def _at(needle: str, delta: int) -> tuple[int, int]:
    p = position_of(DEEP, needle, 0, delta)
    return p.line, p.character


async def _rename(client: Client, needle: str, new: str, delta: int = 0) -> str:
    result = await client.text_document_rename_async(
        types.RenameParams(
            text_document=doc(DEEP_URI), position=position_of(DEEP, needle, 0, delta), new_name=new
        )
    )
    assert result is not None and result.changes is not None
    text = DEEP
    for e in sorted(result.changes[DEEP_URI], key=lambda e: _offset(e.range.start), reverse=True):
        text = text[: _offset(e.range.start)] + e.new_text + text[_offset(e.range.end) :]
    assert Workspace().analyze(str(EXAMPLES / "renamed.alpha"), text).diagnostics == []
    return text


def _offset(p: types.Position) -> int:
    lines = DEEP.split("\n")
    return sum(len(line) + 1 for line in lines[: p.line]) + p.character


@IN_MODULE_LOOP
async def test_rename_a_member_the_array_and_the_loop_index(client: Client) -> None:
    # a member, from its use in a block argument: the declaration and every `p.wq`
    renamed = await _rename(client, "a @ p.wq", "query", delta=6)
    assert "    query, wk, wv, wo: f32[32, 32]" in renamed and "heads(a @ p.query)" in renamed
    assert "wq" not in renamed
    # a member may take a name the system uses elsewhere: members have their own namespace
    renamed = await _rename(client, "wk, wv", "tok")
    assert "wq, tok, wv, wo" in renamed and "heads(a @ p.tok).T" in renamed
    # the array: its declaration, the argument's type and the loop's `blocks[i]`
    renamed = await _rename(client, "param blocks[12] {\n", "layers", delta=7)
    assert "param layers[12] {" in renamed and "p: layers)" in renamed
    assert "h = block(h, layers[i])" in renamed and "blocks" not in renamed.split("system")[1]
    # the loop's index
    renamed = await _rename(client, "for i in", "k", delta=4)
    assert "for k in 0..12 { h = block(h, blocks[k]) }" in renamed


@IN_MODULE_LOOP
async def test_a_member_renamed_to_its_sibling_is_refused(client: Client) -> None:
    with pytest.raises(JsonRpcException, match="is a member of the same block array already"):
        await client.text_document_rename_async(
            types.RenameParams(
                text_document=doc(DEEP_URI),
                position=position_of(DEEP, "wq, wk"),
                new_name="wk",
            )
        )


async def _complete(client: Client, text: str, marker: str = "‸") -> list[types.CompletionItem]:
    """Completion at the marker, in a copy of the example opened under its own URI."""
    at = position_of(text, marker)
    uri = DEEP_URI.replace(".alpha", f"-completion-{abs(hash(text))}.alpha")
    client.open(uri, text.replace(marker, "", 1))
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=at)
    )
    client.close(uri)
    assert isinstance(result, types.CompletionList)
    return list(result.items)


@IN_MODULE_LOOP
async def test_completion_after_a_block_offers_its_members(client: Client) -> None:
    members = ["g1", "g2", "n1", "n2", "bo", "b2", "wq", "wk", "wv", "wo", "w1", "b1", "w2"]
    # a block argument, in a body that does not parse while `p.` is typed
    typing = DEEP.replace("    let a = norm(h, p.g1, p.n1)\n", "    let a = p.‸\n")
    items = await _complete(client, typing)
    assert [i.label for i in items] == members
    assert next(i for i in items if i.label == "w1").detail == "f32[32, 64]"
    # an indexed block in the model
    typing = DEEP.replace("    let h = embed(tok, x) + pos\n", "    let h = blocks[3].‸\n")
    assert [i.label for i in await _complete(client, typing)] == members
