"""Go to definition and find references, from the checker's use → definition table extended
with the roles named in plans and pairings, the system a plan is for and the plan a pairing is
for."""

from __future__ import annotations

from lsprotocol import types

from alpha_core import query
from alpha_lsp.kernel import AlphaServer, guarded


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guarded(lambda: None)
    def definition(ls: AlphaServer, params: types.DefinitionParams) -> types.Location | None:
        snap = ls.snapshot(params.text_document.uri)
        a = snap.analysis
        found = query.definition_at(a.module, a.checked, snap.lines.offset(params.position))
        if found is None:
            return None
        return types.Location(uri=snap.uri, range=snap.lines.range(found[1]))

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @guarded(list)
    def references(ls: AlphaServer, params: types.ReferenceParams) -> list[types.Location]:
        snap = ls.snapshot(params.text_document.uri)
        a = snap.analysis
        spans = query.references_at(
            a.module,
            a.checked,
            snap.lines.offset(params.position),
            include_definition=params.context.include_declaration,
        )
        return [types.Location(uri=snap.uri, range=snap.lines.range(s)) for s in spans]
