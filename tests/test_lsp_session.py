"""The language server as an editor meets it: started over stdio (or TCP), it initialises with
every feature advertised; the helpers here drive it for the other test_lsp_* modules."""

from __future__ import annotations

import asyncio
import json
import queue
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SERVER = [sys.executable, "-m", "alpha_lsp"]


class Client(LanguageClient):
    """The test client, keeping every publishDiagnostics (with its version) as it arrives."""

    def __init__(self) -> None:
        super().__init__(converter_factory=default_converter)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.arrived = asyncio.Event()
        self.versions: dict[str, int] = {}

    async def published_for(
        self, uri: str, version: int, timeout: float = 20
    ) -> list[types.Diagnostic]:  # type: ignore[override]
        """The diagnostics the server published for `uri` at `version` (waiting for them)."""

        async def wait() -> list[types.Diagnostic]:
            while True:
                self.arrived.clear()
                for p in reversed(self.published):
                    if p.uri == uri and p.version == version:
                        return list(p.diagnostics)
                await self.arrived.wait()

        return await asyncio.wait_for(wait(), timeout)

    def open(self, uri: str, text: str) -> int:
        self.versions[uri] = 1
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="alpha", version=1, text=text
                )
            )
        )
        return 1

    def replace(self, uri: str, text: str) -> int:
        """Send the whole new text; the version it will be published under."""
        version = self.versions[uri] = self.versions[uri] + 1
        self.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return version

    def edit(self, uri: str, start: tuple[int, int], end: tuple[int, int], text: str) -> int:
        """Send one incremental change (positions as (line, UTF-16 column))."""
        version = self.versions[uri] = self.versions[uri] + 1
        self.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=types.Position(*start), end=types.Position(*end)),
                        text=text,
                    )
                ],
            )
        )
        return version

    def close(self, uri: str) -> None:
        self.versions.pop(uri, None)
        self.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )


def _published(client: Client, params: types.PublishDiagnosticsParams) -> None:
    client.published.append(params)
    client.arrived.set()


def make_client() -> Client:
    client = Client()
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _published
    register_lsp_features(client, features)
    return client


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


def init_params(debounce_ms: int = 5) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=ROOT.as_uri(),
        initialization_options={"debounceMs": debounce_ms},
    )


def position_of(text: str, needle: str, nth: int = 0, delta: int = 0) -> types.Position:
    """The position of the nth occurrence of `needle` (plus `delta` characters), ASCII text."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += delta
    line = text.count("\n", 0, at)
    return types.Position(line=line, character=at - (text.rfind("\n", 0, at) + 1))


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


# ---- tests of the session itself -----------------------------------------------------------


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    result = await lsp_client.initialize_session(init_params())
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")


@IN_MODULE_LOOP
async def test_every_feature_is_advertised(client: Client) -> None:
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.hover_provider
    assert caps.definition_provider
    assert caps.references_provider
    assert caps.document_symbol_provider
    assert caps.code_action_provider
    assert caps.completion_provider is not None
    assert caps.semantic_tokens_provider is not None
    assert "keyword" in caps.semantic_tokens_provider.legend.token_types
    assert caps.text_document_sync is not None
    assert client.init_result.server_info.name == "alpha-lsp"  # type: ignore[attr-defined]


@IN_MODULE_LOOP
async def test_an_example_opens_without_refusals(client: Client) -> None:
    uri = (EXAMPLES / "blobs.alpha").as_uri()
    version = client.open(uri, (EXAMPLES / "blobs.alpha").read_text())
    assert await client.published_for(uri, version) == []
    client.close(uri)


def _frame(body: dict[str, object]) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def _read_message(sock: socket.socket) -> dict[str, object]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(4096)
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(rest) < length:
        rest += sock.recv(4096)
    return json.loads(rest[:length])  # type: ignore[no-any-return]


def test_the_server_answers_over_tcp() -> None:
    # port 0: the system picks a free port, and the server logs the address it listens on
    proc = subprocess.Popen(
        [*SERVER, "--tcp", "127.0.0.1:0", "--log-level", "INFO"],
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def drain() -> None:  # read stderr to its end, so the server never blocks on a full pipe
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put("")

    threading.Thread(target=drain, daemon=True).start()
    try:
        port = None
        while port is None:
            line = lines.get(timeout=60)
            assert line, "the server exited before listening"
            found = re.search(r"Serving on \('127\.0\.0\.1', (\d+)\)", line)
            port = int(found.group(1)) if found else None
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            request = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
            sock.sendall(_frame({**request, "params": {"capabilities": {}}}))
            reply = _read_message(sock)
        assert reply["id"] == 1
        assert reply["result"]["serverInfo"]["name"] == "alpha-lsp"  # type: ignore[index]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
