"""alpha-lsp started as vscode-languageclient starts it. For a server command with
`TransportKind.stdio` (what the VS Code extension uses) the client appends `--stdio` to the
command line; for a node module it also appends `--clientProcessId=PID`. A server that refused
either exited 2 (`unrecognized arguments: --stdio`) and VS Code gave up after five crashes. Each
case here starts the installed `alpha-lsp` script with those arguments, in the workspace folder
(the client's cwd), and completes an initialize round trip, a diagnostic and a clean exit."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALPHA_LSP = Path(sys.executable).parent / "alpha-lsp"
CLIENT_MAIN = (
    ROOT / "vscode-extension/node_modules/vscode-languageclient/lib/node/main.js"
)  # present once vscode-extension/scripts/deps.sh has run


class Session:
    """A JSON-RPC session over the server's stdin and stdout, framed as LSP frames it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        assert proc.stdout is not None
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, out: IO[bytes]) -> None:
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            self.inbox.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any, timeout: float = 30) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        message = self.wait(lambda m: m.get("id") == self.next_id and "method" not in m, timeout)
        assert "error" not in message, message
        return message["result"]

    def wait(self, match: Any, timeout: float = 30) -> dict[str, Any]:
        while True:
            try:
                message = self.inbox.get(timeout=timeout)
            except queue.Empty:
                pytest.fail(f"no awaited message from alpha-lsp in {timeout} s")
            if message is None:
                assert self.proc.stderr is not None
                pytest.fail(f"alpha-lsp closed its output: {self.proc.stderr.read().decode()}")
            if match(message):
                return message


def start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen(
        [str(ALPHA_LSP), *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--stdio"],  # a command (Executable) with TransportKind.stdio: the VS Code extension
        ["--stdio", f"--clientProcessId={os.getpid()}"],  # a node module with stdio
        ["--log-level", "INFO", "--stdio", "--clientProcessId", str(os.getpid())],
        [],  # what other editors start
    ],
    ids=["command-stdio", "module-stdio", "settings-then-flags", "bare"],
)
def test_started_as_the_client_starts_it(args: list[str], tmp_path: Path) -> None:
    assert ALPHA_LSP.exists(), ALPHA_LSP
    source = tmp_path / "broken.alpha"
    text = (ROOT / "examples" / "blobs.alpha").read_text().replace("tanh(", "tnah(", 1)
    assert "tnah(" in text
    source.write_text(text)
    proc = start(args, tmp_path)
    try:
        session = Session(proc)
        result = session.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": tmp_path.as_uri(),
                "capabilities": {},
                "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "w"}],
            },
        )
        assert result["serverInfo"]["name"] == "alpha-lsp"
        assert result["capabilities"]["hoverProvider"]
        session.send({"method": "initialized", "params": {}})
        uri = source.as_uri()
        session.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "alphadsl",
                        "version": 1,
                        "text": text,
                    }
                },
            }
        )
        published = session.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            )
        )
        codes = {d["code"] for d in published["params"]["diagnostics"]}
        assert "unknown-name" in codes, published
        assert session.request("shutdown", None) is None
        session.send({"method": "exit"})
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_stdio_and_tcp_are_one_choice(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(ALPHA_LSP), "--stdio", "--tcp", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "not allowed with argument" in proc.stderr


def test_the_flags_are_those_the_client_appends() -> None:
    """vscode-languageclient (the version in the extension's lock file) appends `--stdio` for a
    stdio command and `--clientProcessId=PID` for a node module: the cases above."""
    assert CLIENT_MAIN.exists(), (
        "vscode-extension/node_modules is not installed (vscode-extension/scripts/deps.sh)"
    )
    client = CLIENT_MAIN.read_text()
    assert "args.push('--stdio')" in client
    assert "args.push(`--clientProcessId=${process.pid.toString()}`)" in client
    extension = (ROOT / "vscode-extension" / "src" / "extension.ts").read_text()
    assert "transport: TransportKind.stdio" in extension
