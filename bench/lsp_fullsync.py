"""Editor latency as an independent client sees it: no pygls on the client side, the server's
default settings (no `debounceMs` sent), every change sent as the whole new text.

The client speaks JSON-RPC over the server's stdio itself (Content-Length frames, one reader
thread). For a generated file of about 5,000 lines it times N one-line edits of the middle
system's `steps`, each waiting for the diagnostics of its version (median, p95), then sends a
burst of 200 edits without waiting and reports how many versions were checked and whether the
last diagnostics published are those of the final text.

    .venv/bin/python bench/lsp_fullsync.py [--edits N] [--lines L] [--burst B] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp import edit_site, generated, machine, p95  # noqa: E402


class RawClient:
    """A minimal LSP client: frames out on the server's stdin, a thread reading its stdout."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.inbox: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, out: IO[bytes]) -> None:
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = out.read(length)
            self.inbox.put((time.perf_counter(), json.loads(body)))

    def send(self, message: dict[str, Any]) -> float:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        t = time.perf_counter()
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.stdin.flush()
        return t

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        while True:
            _, msg = self.inbox.get(timeout=600)
            if msg.get("id") == ident and "method" not in msg:
                return msg.get("result")

    def notify(self, method: str, params: Any) -> float:
        return self.send({"method": method, "params": params})

    def diagnostics(self, uri: str, version: int) -> tuple[float, list[dict[str, Any]], int]:
        """Wait for the diagnostics of `version`: (arrival, diagnostics, publications seen)."""
        seen = 0
        while True:
            at, msg = self.inbox.get(timeout=600)
            if msg.get("method") != "textDocument/publishDiagnostics":
                continue
            params = msg["params"]
            if params["uri"] != uri:
                continue
            seen += 1
            if params.get("version") == version:
                return at, params["diagnostics"], seen

    def close(self) -> None:
        self.request("shutdown", None)
        self.notify("exit", None)
        self.proc.wait(timeout=60)


@dataclass
class FullSync:
    lines: int
    edits: int
    median_ms: float
    p95_ms: float
    burst: int
    burst_checked: int  # publications during the burst (its versions checked)
    burst_final_ok: bool  # the last diagnostics are the final text's


def run(edits: int, lines: int, burst: int) -> FullSync:
    client = RawClient([sys.executable, "-m", "alpha_lsp"])
    client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    client.notify("initialized", {})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "generated.alpha"
        text = generated(lines)
        path.write_text(text)
        uri = path.as_uri()
        item = {"uri": uri, "languageId": "alpha", "version": 1, "text": text}
        client.notify("textDocument/didOpen", {"textDocument": item})
        client.diagnostics(uri, 1)
        line, col, width = edit_site(text)
        rows = text.split("\n")

        def with_steps(count: str) -> str:
            edited = rows[line][:col] + count + rows[line][col + width :]
            return "\n".join(rows[:line] + [edited] + rows[line + 1 :])

        def change(version: int, new_text: str) -> float:
            return client.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": new_text}],
                },
            )

        samples = []
        version = 1
        for k in range(edits):
            version += 1
            sent = change(version, with_steps("0" * k + str(1000 + k)))
            arrived, _, _ = client.diagnostics(uri, version)
            samples.append((arrived - sent) * 1000)
        # the burst: every edit sent at once; the final text refuses `steps 0` (steps-zero)
        first = version + 1
        for k in range(burst):
            version += 1
            change(version, with_steps(str(burst - 1 - k)))
        _, final, seen = client.diagnostics(uri, version)
        codes = {d.get("code") for d in final}
        client.close()
    return FullSync(
        lines=text.count("\n") + 1,
        edits=edits,
        median_ms=statistics.median(samples),
        p95_ms=p95(samples),
        burst=burst,
        burst_checked=seen,
        burst_final_ok=bool(codes) and version == first + burst - 1,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edits", type=int, default=40, help="one-line edits, each waited for")
    p.add_argument("--lines", type=int, default=5000, help="lines of the generated file")
    p.add_argument("--burst", type=int, default=200, help="edits of the burst")
    p.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = p.parse_args()
    m = machine()
    print(f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, load {m['load']}")
    r = run(args.edits, args.lines, args.burst)
    print(
        f"full-sync client, default settings, {r.lines:,} lines: edit → diagnostics median "
        f"{r.median_ms:.1f} ms, p95 {r.p95_ms:.1f} ms over {r.edits} edits; a burst of "
        f"{r.burst} edits: {r.burst_checked} checked, final diagnostics of the final text: "
        f"{r.burst_final_ok}"
    )
    if args.json:
        args.json.write_text(json.dumps({"machine": m, "fullsync": asdict(r)}, indent=2))


if __name__ == "__main__":
    main()
