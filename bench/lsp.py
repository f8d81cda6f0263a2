"""Editor latency: the time from a one-line `didChange` to the `publishDiagnostics` for it.

The real server runs as a subprocess over stdio, driven by pygls's client, with its debounce
set to 0 (an editor sees this latency plus the debounce, 50 ms by default). For each example
and for a generated file of about 5,000 lines (many systems, each with a plan) it makes N
one-line edits in turn, each waiting for its diagnostics, and prints the median and p95. Beside
them, measured in the same run: the same edit made to the file's first system (which moves every
declaration after it), a cold full check (a fresh workspace and every memo emptied), the first
`didOpen` → diagnostics, and for the middle edit the split between parsing and checking.
Then, as an editor meets it, an independent client (bench/lsp_fullsync.py: its own JSON-RPC,
whole-text changes, the server's default settings) on the same generated file: edit →
diagnostics, and a 200-edit burst.

    .venv/bin/python bench/lsp.py [--edits N] [--lines L] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from alpha_core.syntax import parser
from alpha_core.workspace.analysis import Workspace, clear_memos

ROOT = Path(__file__).resolve().parents[1]


def generated(lines: int) -> str:
    """Systems of 24 lines each (a two-layer model on synthetic data, and a plan for it)."""

    def one(i: int) -> str:
        return f"""system s{i} {{
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: {i})
  batch 8 leaves 4 shuffle(seed: {i})
  param w1: f32[4, 8] = normal(0.0, 0.1, seed: {i})
  param b1: f32[8] = zeros
  param w2: f32[8, 3] = uniform(-0.1, 0.1, seed: {i + 1})
  param b2: f32[3] = zeros
  fn hidden(x: f32[B, 4]) -> f32[B, 8] {{
    let h = x @ w1 + b1
    return relu(h)
  }}
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    return hidden(x) @ w2 + b2
  }}
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps {100 + i}
}}

plan p{i} for s{i} {{
  roles worker[4]
  topology hierarchy(fanout: 2)
}}

"""

    return "".join(one(i) for i in range(lines // 24 + 1))


@dataclass
class Case:
    name: str
    lines: int
    cold_check_ms: float
    open_ms: float
    edit_median_ms: float
    edit_p95_ms: float
    first_median_ms: float
    first_p95_ms: float
    parse_ms: float
    check_ms: float
    edits: int


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("alpha-lsp-bench", "0")
        self.arrivals: dict[tuple[str, int | None], float] = {}
        self.arrived = asyncio.Event()


def make_client() -> Client:
    client = Client()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(ls: Client, params: types.PublishDiagnosticsParams) -> None:
        ls.arrivals[(params.uri, params.version)] = time.perf_counter()
        ls.arrived.set()

    return client


async def wait_for(client: Client, uri: str, version: int) -> float:
    while True:
        client.arrived.clear()
        if (uri, version) in client.arrivals:
            return client.arrivals[(uri, version)]
        await asyncio.wait_for(client.arrived.wait(), 600)


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]  # nearest rank


def cold_check(path: str, text: str) -> float:
    times = []
    for _ in range(3):
        clear_memos()
        t = time.perf_counter()
        Workspace().analyze(path, text)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def split(path: str, text: str, edited: str) -> tuple[float, float]:
    """Parse and check times of the edited text, in a workspace warm from `text`: what the
    server does for the edit, in two halves (`Workspace.analyze` is `parse_file` then
    `Workspace.check`)."""
    ws = Workspace()
    ws.analyze(path, text)
    t = time.perf_counter()
    parsed = parser.parse_file(edited)
    t_parse = time.perf_counter() - t
    t = time.perf_counter()
    ws.check(path, parsed)
    return t_parse * 1000, (time.perf_counter() - t) * 1000


def edit_site(text: str, which: str = "middle") -> tuple[int, int, int]:
    """The `steps` line of the middle (or first) system: (line, first column of the count, its
    length)."""
    lines = text.split("\n")
    steps = [i for i, line in enumerate(lines) if line.strip().startswith("steps ")]
    line = steps[len(steps) // 2] if which == "middle" else steps[0]
    m = re.search(r"\d+", lines[line])
    assert m is not None
    return line, m.start(), m.end() - m.start()


async def edits(
    client: Client, uri: str, text: str, which: str, first_version: int, count: int
) -> list[float]:
    """`count` one-line edits at a site, each timed to its diagnostics; then all undone."""
    line, col, width = edit_site(text, which)
    base = 1000 if which == "middle" else 2000  # no item text of the other site's
    samples: list[float] = []
    current = text.split("\n")[line][col : col + width]
    version = first_version
    for k in range(count + 1):
        # a different count each time, one character longer (a leading zero more), so the text
        # is never a memoized one and every declaration after it moves to a new offset, as
        # when typing; then back to the original
        new = "0" * k + str(base + k) if k < count else text.split("\n")[line][col : col + width]
        t0 = time.perf_counter()
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
        arrived = await wait_for(client, uri, version)
        if k < count:
            samples.append((arrived - t0) * 1000)
        current = new
        version += 1
    return samples


async def measure(client: Client, name: str, path: Path, text: str, edits_: int) -> Case:
    uri = path.as_uri()
    t0 = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="alpha", version=1, text=text)
        )
    )
    open_ms = (await wait_for(client, uri, 1) - t0) * 1000
    samples = await edits(client, uri, text, "middle", 2, edits_)
    first = await edits(client, uri, text, "first", 3 + edits_, edits_)
    line, col, width = edit_site(text)
    lines_ = text.split("\n")
    edited_line = lines_[line][:col] + "99999" + lines_[line][col + width :]  # longer: moves
    edited = "\n".join(lines_[:line] + [edited_line] + lines_[line + 1 :])
    parse_ms, check_ms = split(str(path), text, edited)
    return Case(
        name,
        text.count("\n") + 1,
        cold_check(str(path), text),
        open_ms,
        statistics.median(samples),
        p95(samples),
        statistics.median(first),
        p95(first),
        parse_ms,
        check_ms,
        edits_,
    )


def machine() -> dict[str, Any]:
    model = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        found = re.search(r"Model name:\s*(.+)", out)
        model = found.group(1).strip() if found else model
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load": round(os.getloadavg()[0], 2),
    }


async def run(edits: int, lines: int) -> list[Case]:
    client = make_client()
    await client.start_io(sys.executable, "-m", "alpha_lsp")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options={"debounceMs": 0}
        )
    )
    client.initialized(types.InitializedParams())
    cases: list[Case] = []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "generated.alpha"
        big.write_text(generated(lines))
        # a first small document builds the grammar's tables: not part of any figure
        warm = ROOT / "examples" / "warm-up.alpha"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=warm.as_uri(), language_id="alpha", version=1, text="system w {\n}\n"
                )
            )
        )
        await wait_for(client, warm.as_uri(), 1)
        for name, path in (
            ("examples/digits.alpha", ROOT / "examples" / "digits.alpha"),
            ("examples/blobs.alpha", ROOT / "examples" / "blobs.alpha"),
            (f"generated ({lines:,} lines)", big),
        ):
            cases.append(await measure(client, name, path, path.read_text(), edits))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return cases


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edits", type=int, default=30, help="one-line edits per file")
    p.add_argument("--lines", type=int, default=5000, help="lines of the generated file")
    p.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = p.parse_args()
    m = machine()
    print(f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, load {m['load']}")
    cases = asyncio.run(run(args.edits, args.lines))
    print(
        "| file | lines | edit → diagnostics, median | p95 | first system's edit, median "
        "| p95 | edit: parse | edit: check | cold full check | first open |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in cases:
        print(
            f"| {c.name} | {c.lines:,} | {c.edit_median_ms:.1f} ms | {c.edit_p95_ms:.1f} ms "
            f"| {c.first_median_ms:.1f} ms | {c.first_p95_ms:.1f} ms "
            f"| {c.parse_ms:.1f} ms | {c.check_ms:.1f} ms | {c.cold_check_ms:.1f} ms "
            f"| {c.open_ms:.1f} ms |"
        )
    from lsp_fullsync import run as run_fullsync

    full = run_fullsync(args.edits, args.lines, 200)
    print(
        f"independent full-sync client, default settings, {full.lines:,} lines: median "
        f"{full.median_ms:.1f} ms, p95 {full.p95_ms:.1f} ms; a {full.burst}-edit burst: "
        f"{full.burst_checked} versions checked, ends with the final text's diagnostics: "
        f"{full.burst_final_ok}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"machine": m, "cases": [asdict(c) for c in cases], "fullsync": asdict(full)},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
