"""Folding ranges: declarations, items over several lines, runs of comments
(alpha_core/query/folding.py)."""

from __future__ import annotations

from lsprotocol import types

from alpha_core.query.folding import folds
from alpha_lsp.kernel import AlphaServer, guarded


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded(list)
    def folding_ranges(
        ls: AlphaServer, params: types.FoldingRangeParams
    ) -> list[types.FoldingRange]:
        snap = ls.snapshot(params.text_document.uri)
        out = []
        for f in folds(snap.analysis.module, snap.text):
            start, end = snap.lines.position(f.start).line, snap.lines.position(f.end).line
            if end > start:
                kind = types.FoldingRangeKind.Comment if f.kind == "comment" else None
                out.append(types.FoldingRange(start_line=start, end_line=end, kind=kind))
        return out
