"""Signature help inside a call: the built-in's or the function's signature, its summary, and
the argument being written (alpha_core/query/calls.py)."""

from __future__ import annotations

from lsprotocol import types

from alpha_core.query.calls import call_at
from alpha_lsp.kernel import AlphaServer, guarded


def register(server: AlphaServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_SIGNATURE_HELP,
        types.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=[":"]),
    )
    @guarded(lambda: None)
    def signature_help(
        ls: AlphaServer, params: types.SignatureHelpParams
    ) -> types.SignatureHelp | None:
        snap = ls.snapshot(params.text_document.uri)
        found = call_at(snap.analysis.module, snap.text, snap.lines.offset(params.position))
        if found is None:
            return None
        info = types.SignatureInformation(
            label=found.label,
            documentation=found.summary or None,
            parameters=[types.ParameterInformation(label=p) for p in found.parameters],
            active_parameter=found.active,
        )
        return types.SignatureHelp(
            signatures=[info], active_signature=0, active_parameter=found.active
        )
