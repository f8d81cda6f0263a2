"""Refusals as LSP diagnostics, published on open and after edits.

An edit is checked at once while edits come slower than checks; while they come faster (a
burst: a paste, a replay, fast typing on a large file) the check waits `debounce_ms` after the
latest edit, so the burst costs one analysis and ends with the diagnostics of its final text.
Each diagnostic carries the refusal's name as its `code`, a link to its entry in
docs/refusals.md, its related spans, and the text `alpha check` prints in `data.rendered`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.render import render
from alpha_lsp.kernel import AlphaServer, Snapshot

logger = logging.getLogger(__name__)
SOURCE = "alpha"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "refusals.md"
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
}


def doc_link(name: str) -> str:
    return f"{DOCS.as_uri()}#{name}"


def to_lsp(d: Diagnostic, snap: Snapshot) -> types.Diagnostic:
    message = d.message
    if d.help:
        message += f"\nhelp: {d.help}"
    for note in d.notes:
        message += f"\nnote: {note}"
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=snap.uri, range=snap.lines.range(r.span)),
            message=r.message,
        )
        for r in d.related
    ]
    return types.Diagnostic(
        range=snap.lines.range(d.span),
        message=message,
        severity=SEVERITY.get(d.severity, types.DiagnosticSeverity.Error),
        code=d.name,
        code_description=types.CodeDescription(href=doc_link(d.name)),
        source=SOURCE,
        related_information=related or None,
        data={"rendered": render(d, snap.text, snap.path), "help": d.help},
    )


def diagnostics_of(snap: Snapshot) -> list[types.Diagnostic]:
    return [to_lsp(d, snap) for d in snap.analysis.diagnostics]


def publish(ls: AlphaServer, uri: str) -> None:
    try:
        snap = ls.snapshot(uri)
        found = diagnostics_of(snap)
        version = snap.version
    except JsonRpcException as refusal:  # a save of a document not open, which cannot be read
        logger.warning("no diagnostics for %s: %s", uri, refusal.message)
        return
    except Exception as error:  # the checker failed: say so where the user looks
        ls.report("diagnostics", error)
        found = [
            types.Diagnostic(
                range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
                message=f"the checker failed on this text: {type(error).__name__}: {error}",
                severity=types.DiagnosticSeverity.Error,
                code="internal-error",
                code_description=types.CodeDescription(href=doc_link("internal-error")),
                source=SOURCE,
            )
        ]
        doc = ls.workspace.text_documents.get(unquote(uri))
        version = doc.version if doc is not None else None
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=found, version=version)
    )


class Debouncer:
    """When to check a document after an edit: at once when edits come slower than checks
    (a typist on a file whose check is quick), else `debounce_ms` after the latest edit, each
    newer edit cancelling the check still waiting (a burst costs one check).

    "Slower than checks": the time between this edit's arrival and the previous one's (as the
    reader saw them come, alpha_lsp/reading.py) is at least what the document's last check
    took, and no check of it is waiting. A check "at once" is still a task, so the edits
    already read from the pipe are applied before it runs."""

    def __init__(self, ls: AlphaServer) -> None:
        self.ls = ls
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.last_edit: dict[str, float] = {}
        self.cost: dict[str, float] = {}  # seconds the document's last check took

    def cancel(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

    def forget(self, uri: str) -> None:
        self.cancel(uri)
        self.last_edit.pop(uri, None)
        self.cost.pop(uri, None)

    def schedule(self, uri: str) -> None:
        now = self.ls.arrival()
        previous = self.last_edit.get(uri)
        self.last_edit[uri] = now
        waiting = uri in self.pending
        quick = previous is None or now - previous >= self.cost.get(uri, 0.0)
        delay = 0.0 if quick and not waiting else self.ls.debounce_ms / 1000
        self.cancel(uri)
        self.pending[uri] = asyncio.get_running_loop().create_task(self._later(uri, delay))

    def check(self, uri: str) -> None:
        """Publish now, and remember what it cost."""
        t = time.perf_counter()
        publish(self.ls, uri)
        self.cost[uri] = time.perf_counter() - t

    async def _later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self.pending.pop(uri, None)
        self.check(uri)


def register(server: AlphaServer) -> None:
    debouncer = Debouncer(server)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AlphaServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        debouncer.cancel(uri)
        debouncer.last_edit[uri] = ls.arrival()
        debouncer.check(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AlphaServer, params: types.DidChangeTextDocumentParams) -> None:
        debouncer.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AlphaServer, params: types.DidSaveTextDocumentParams) -> None:
        debouncer.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AlphaServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        debouncer.forget(uri)
        ls.forget(uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )
