"""Inlay hints: the shape of every `let`, after its name (`let h: f32[B, 32] = ...`), as the
checker computed it (alpha_core/query/inlay.py)."""

from __future__ import annotations

from lsprotocol import types

from alpha_core.query.inlay import let_shapes
from alpha_lsp.kernel import AlphaServer, guarded


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    @guarded(list)
    def inlay_hints(ls: AlphaServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        snap = ls.snapshot(params.text_document.uri)
        a = snap.analysis
        hints = let_shapes(a.module, a.checked, snap.lines.span(params.range))
        return [
            types.InlayHint(
                position=snap.lines.position(h.at),
                label=h.label,
                kind=types.InlayHintKind.Type,
                tooltip=h.tooltip,
            )
            for h in hints
        ]
