"""Refusals as LSP diagnostics, published on open and, debounced, after edits.

An edit schedules a check `debounce_ms` later and cancels the one still waiting, so a burst of
keystrokes costs one analysis. Each diagnostic carries the refusal's name as its `code`, a link
to its entry in docs/refusals.md, its related spans, and the text `alpha check` prints in
`data.rendered`.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.render import render
from alpha_lsp.server import AlphaServer, Snapshot

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
    """One pending check per document; a newer edit cancels the older one."""

    def __init__(self, ls: AlphaServer) -> None:
        self.ls = ls
        self.pending: dict[str, asyncio.Task[None]] = {}

    def cancel(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

    def schedule(self, uri: str) -> None:
        self.cancel(uri)
        self.pending[uri] = asyncio.get_running_loop().create_task(self._later(uri))

    async def _later(self, uri: str) -> None:
        await asyncio.sleep(self.ls.debounce_ms / 1000)
        self.pending.pop(uri, None)
        publish(self.ls, uri)


def register(server: AlphaServer) -> None:
    debouncer = Debouncer(server)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AlphaServer, params: types.DidOpenTextDocumentParams) -> None:
        debouncer.cancel(params.text_document.uri)
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AlphaServer, params: types.DidChangeTextDocumentParams) -> None:
        debouncer.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AlphaServer, params: types.DidSaveTextDocumentParams) -> None:
        debouncer.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AlphaServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        debouncer.cancel(uri)
        ls.forget(uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )
