"""The server refuses what it must not read, answers every request with a documented code and a
one-line message, and logs one line, never a traceback (issue 9, items 10 and 18).

A request may name a document the editor never opened; the server then reads it from disk, and
only a regular file within the size limit: a FIFO (whose open() blocks until a writer comes),
/dev/stdin (the server's own protocol stream) and /dev/zero (which never ends) are refused with
DocumentUnreadable (-32001), and the server answers the next request. Every wait is bounded, so
a server that hangs fails the test instead of stopping the suite. The server's stderr goes to a
file, read at the end for tracebacks.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig
from test_lsp_session import EXAMPLES, Client, doc, init_params, make_client

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
DIGITS = (EXAMPLES / "digits.alpha").read_text()
URI = (EXAMPLES / "digits.alpha").as_uri()
WAIT = 20.0  # seconds: far above an answer's time, far below the suite's patience

HERE = Path(tempfile.mkdtemp(prefix="alpha-lsp-refusals-"))
STDERR = HERE / "server.err"
# the real server, its stderr (fd 2) sent to a file the tests read
SERVER = [
    sys.executable,
    "-c",
    "import os, sys\n"
    f"fd = os.open({str(STDERR)!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
    "os.dup2(fd, 2)\n"
    "sys.argv = ['alpha-lsp', '--log-level', 'INFO']\n"
    "from alpha_lsp.server import main\n"
    "main()\n",
]
CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(init_params())
    assert await lsp_client.published_for(URI, lsp_client.open(URI, DIGITS)) == []
    yield
    await lsp_client.shutdown_session()


async def _request(client: Client, method: str, params: Any) -> Any:
    """A request with params as JSON, exactly as given (the client's own typed methods would
    refuse to send what does not fit), answered within WAIT seconds."""
    msg_id = str(uuid.uuid4())
    answer: Future[Any] = Future()
    client.protocol._request_futures[msg_id] = answer
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(answer), WAIT)


async def _refused(client: Client, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await _request(client, method, params)
    return caught.value


async def _still_answers(client: Client) -> None:
    """A request about the open document is answered (the server did not hang or die)."""
    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=doc(URI), position=types.Position(line=1, character=2))
        ),
        WAIT,
    )
    assert hover is None or hover.contents is not None
    symbols = await asyncio.wait_for(
        client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=doc(URI))
        ),
        WAIT,
    )
    assert symbols


def _projection(uri: str) -> dict[str, str]:
    return {"uri": uri, "plan": "pair", "role": "worker[0]"}


@IN_MODULE_LOOP
async def test_a_fifo_is_refused_without_blocking(client: Client) -> None:
    fifo = HERE / "plan.alpha"
    os.mkfifo(fifo)  # no writer ever comes: open() without O_NONBLOCK would wait forever
    error = await _refused(client, "alpha/projection", _projection(fifo.as_uri()))
    assert error.code == -32001
    assert error.message == f"{fifo.as_uri()} is not open, and {fifo} is a FIFO, not a regular file"
    await _still_answers(client)


@IN_MODULE_LOOP
async def test_dev_stdin_is_not_read_from_the_protocol_stream(client: Client) -> None:
    # the server's stdin is the client's pipe: reading it would swallow the next requests
    error = await _refused(client, "alpha/projection", _projection("file:///dev/stdin"))
    assert error.code == -32001
    assert "/dev/stdin is a FIFO, not a regular file" in error.message
    await _still_answers(client)
    # a feature request names it too: refused the same way, not answered with an empty result
    error = await _refused(
        client,
        "textDocument/hover",
        {"textDocument": {"uri": "file:///dev/stdin"}, "position": {"line": 0, "character": 0}},
    )
    assert error.code == -32001
    await _still_answers(client)


@IN_MODULE_LOOP
async def test_dev_zero_is_refused_before_it_is_read(client: Client) -> None:
    error = await _refused(client, "alpha/projection", _projection("file:///dev/zero"))
    assert error.code == -32001
    assert "/dev/zero is a character device, not a regular file" in error.message
    await _still_answers(client)


@IN_MODULE_LOOP
async def test_a_missing_file_and_a_uri_that_is_no_file(client: Client) -> None:
    missing = HERE / "missing.alpha"
    error = await _refused(client, "alpha/projection", _projection(missing.as_uri()))
    assert error.code == -32001
    assert error.message.endswith(f"cannot open {missing}: no such file or directory")
    error = await _refused(client, "alpha/projection", _projection("http://example.com/a.alpha"))
    assert error.code == -32602
    assert error.message == "`http://example.com/a.alpha` is not open and is not a file: URI"


@IN_MODULE_LOOP
async def test_a_regular_file_not_open_is_read(client: Client) -> None:
    on_disk = HERE / "on_disk.alpha"
    on_disk.write_text(DIGITS.replace('"data/digits.csv"', f'"{EXAMPLES}/data/digits.csv"'))
    result = await _request(client, "alpha/projection", _projection(on_disk.as_uri()))
    assert "role worker[0]" in result.text  # the client reads JSON objects as named tuples


@IN_MODULE_LOOP
async def test_params_that_do_not_fit_are_answered_invalid_params(client: Client) -> None:
    # pygls alone logs a traceback for these and never answers: the client would wait forever
    error = await _refused(
        client, "textDocument/hover", {"textDocument": 5, "position": {"line": 0}}
    )
    assert error.code == -32602
    assert error.message.startswith("invalid params for textDocument/hover: ")
    assert "\n" not in error.message
    error = await _refused(client, "alpha/projection", {"uri": URI, "plan": "pair"})
    assert error.code == -32602
    # a notification that does not fit is refused in the log alone
    client.protocol._send_data(
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": 3}}
    )
    await _still_answers(client)
    # an expected refusal is no error in the server: nothing is shown to the user (pygls showed
    # "Error in server: " after each, which an editor puts on screen and in its log)
    assert [m.message for m in client.messages if m.type == types.MessageType.Error] == []


@IN_MODULE_LOOP
async def test_refused_plans_answer_request_failed_in_one_line(client: Client) -> None:
    error = await _refused(
        client, "alpha/projection", {"uri": URI, "plan": "pair", "role": "worker[7]"}
    )
    assert error.code == -32803
    assert error.message == "plan `pair` has no role `worker[7]` (its roles: worker[0..2])"
    assert error.data is None


@IN_MODULE_LOOP
async def test_no_error_carries_a_traceback_and_stderr_has_none(client: Client) -> None:
    # every refusal above went through the server; now its log, one line per record
    await _still_answers(client)
    log = STDERR.read_text()
    assert "Traceback" not in log
    assert 'File "' not in log
    assert "invalid params for textDocument/hover" in log
