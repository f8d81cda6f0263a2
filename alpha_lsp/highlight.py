"""Document highlight: the declaration of the name under the cursor (Write) and its uses
(Read), from the same table as find references."""

from __future__ import annotations

from lsprotocol import types

from alpha_core import query
from alpha_lsp.kernel import AlphaServer, guarded


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    @guarded(list)
    def highlight(
        ls: AlphaServer, params: types.DocumentHighlightParams
    ) -> list[types.DocumentHighlight]:
        snap = ls.snapshot(params.text_document.uri)
        a = snap.analysis
        spans = query.references_at(a.module, a.checked, snap.lines.offset(params.position))
        kind = types.DocumentHighlightKind
        return [
            types.DocumentHighlight(
                range=snap.lines.range(s), kind=kind.Write if i == 0 else kind.Read
            )
            for i, s in enumerate(spans)
        ]
