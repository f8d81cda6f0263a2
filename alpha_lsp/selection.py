"""Selection range ("expand selection"): the word, then each node around it, its declaration,
the file (alpha_core/query/selection.py)."""

from __future__ import annotations

from lsprotocol import types

from alpha_core.query.selection import selection_chain
from alpha_lsp.kernel import AlphaServer, guarded


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_SELECTION_RANGE)
    @guarded(list)
    def selection_ranges(
        ls: AlphaServer, params: types.SelectionRangeParams
    ) -> list[types.SelectionRange]:
        snap = ls.snapshot(params.text_document.uri)
        module = snap.analysis.module
        out = []
        for position in params.positions:
            parent: types.SelectionRange | None = None
            for span in reversed(selection_chain(module, snap.text, snap.lines.offset(position))):
                parent = types.SelectionRange(range=snap.lines.range(span), parent=parent)
            assert parent is not None  # the chain always holds the whole file
            out.append(parent)
        return out
