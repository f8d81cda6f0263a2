"""Document symbols: systems, plans and pairings, with their items (and a function's `let`s, a
plan's roles) as children."""

from __future__ import annotations

from lsprotocol import types

from alpha_core import query
from alpha_lsp.kernel import AlphaServer, guarded
from alpha_lsp.positions import Lines

K = types.SymbolKind
KINDS = {
    "system": K.Module,
    "plan": K.Namespace,
    "pairing": K.Package,
    "data": K.Field,
    "batch": K.Property,
    "param": K.Variable,
    "fn": K.Function,
    "let": K.Variable,
    "loss": K.Property,
    "learner": K.Property,
    "steps": K.Property,
    "arithmetic": K.Property,
    "roles": K.Enum,
    "role": K.EnumMember,
    "topology": K.Property,
    "round": K.Event,
    "contract": K.Property,
    "leaves": K.Property,
    "entry": K.Field,
}


def to_lsp(s: query.Symbol, lines: Lines) -> types.DocumentSymbol:
    full = lines.range(s.span.cover(s.selection))  # the selection must lie inside the range
    return types.DocumentSymbol(
        name=s.name or "?",
        kind=KINDS.get(s.kind, K.Object),
        detail=s.detail or None,
        range=full,
        selection_range=lines.range(s.selection),
        children=[to_lsp(c, lines) for c in s.children],
    )


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded(list)
    def document_symbols(
        ls: AlphaServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol]:
        snap = ls.snapshot(params.text_document.uri)
        return [to_lsp(s, snap.lines) for s in query.outline(snap.analysis.module, snap.text)]
