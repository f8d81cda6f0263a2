"""The language server's memory over a long session: resident memory across N edits.

The real server runs as a subprocess over stdio, driven by pygls's client (debounce 0). A
document is opened and edited N times, one incremental change at a time, each waiting for its
diagnostics and then (for the small document, and for the big one with `--tokens`) asking for
the semantic tokens (what an editor does after each edit, and what makes the server place the
whole tree; on the big file that costs about a second an edit): the `steps` count of the
middle system becomes a
new number each time, so no text repeats. The server's VmRSS (from /proc) is sampled after
every edit. Two documents: examples/digits.alpha (small) and a generated file of about 1 MB
(systems and plans, as in bench/lsp.py). Reported: RSS after opening, the peak, the last, and
the growth per edit over the second half (where bounded memo tables are full).

    .venv/bin/python bench/lsp_memory.py [--edits N] [--megabytes M] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from lsprotocol import types

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from lsp import Client, edit_site, generated, make_client, wait_for  # noqa: E402
from machine import machine  # noqa: E402

ROOT = BENCH.parent


@dataclass
class Case:
    name: str
    bytes: int
    edits: int
    open_mb: float
    peak_mb: float
    last_mb: float
    growth_kb_per_edit: float
    seconds: float


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def session(
    client: Client, pid: int, name: str, path: Path, text: str, n: int, tokens: bool
) -> Case:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="alpha", version=1, text=text)
        )
    )
    await wait_for(client, uri, 1)
    opened = rss_mb(pid)
    line, col, width = edit_site(text)
    current = text.split("\n")[line][col : col + width]
    samples: list[float] = []
    t0 = time.perf_counter()
    for k in range(n):
        new = str(1000 + k * 7919 % 100_000)  # counts of 4 and 5 digits: lengths change
        version = k + 2
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line, col),
                            end=types.Position(line, col + len(current)),
                        ),
                        text=new,
                    )
                ],
            )
        )
        await wait_for(client, uri, version)
        if tokens:
            await client.text_document_semantic_tokens_full_async(
                types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
        current = new
        samples.append(rss_mb(pid))
    seconds = time.perf_counter() - t0
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    half = samples[len(samples) // 2 :]
    growth = (half[-1] - half[0]) * 1024 / max(1, len(half) - 1)
    return Case(name, len(text.encode()), n, opened, max(samples), samples[-1], growth, seconds)


async def run(edits: int, megabytes: float, tokens: bool) -> list[Case]:
    client = make_client()
    await client.start_io(sys.executable, "-m", "alpha_lsp")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options={"debounceMs": 0}
        )
    )
    client.initialized(types.InitializedParams())
    server = client._server
    assert server is not None
    pid = server.pid
    cases = []
    digits = ROOT / "examples" / "digits.alpha"
    cases.append(
        await session(client, pid, "examples/digits.alpha", digits, digits.read_text(), edits, True)
    )
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.alpha"
        text = generated(int(megabytes * 1e6 / 25))
        big.write_text(text)
        systems = text.count("\nsystem ") + 1
        name = f"generated, {len(text) / 1e6:.2f} MB ({systems:,} systems and plans)"
        cases.append(await session(client, pid, name, big, text, edits, tokens))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return cases


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edits", type=int, default=1000)
    p.add_argument("--megabytes", type=float, default=1.0, help="size of the generated file")
    p.add_argument(
        "--tokens", action="store_true", help="semantic tokens after each edit of the big file too"
    )
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    m = machine()
    print(f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}")
    cases = asyncio.run(run(args.edits, args.megabytes, args.tokens))
    print("| document | edits | RSS after open | peak | last | growth, 2nd half | time |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in cases:
        print(
            f"| {c.name} | {c.edits:,} | {c.open_mb:,.0f} MB | {c.peak_mb:,.0f} MB "
            f"| {c.last_mb:,.0f} MB | {c.growth_kb_per_edit:+.1f} KB/edit | {c.seconds:.0f} s |"
        )
    if args.json:
        args.json.write_text(json.dumps({"machine": m, "cases": [asdict(c) for c in cases]}))


if __name__ == "__main__":
    main()
