"""Quick fixes for refusals with a mechanical fix: the names a did-you-mean suggests, and the
entries a pairing misses (computed by the core from the plan's membership, not read from the
message)."""

from __future__ import annotations

import re

from lsprotocol import types

from alpha_core import query
from alpha_core.diagnostics import Diagnostic
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_lsp import diagnostics
from alpha_lsp.kernel import AlphaServer, Snapshot, guarded

DEFAULT_HOST = "x86_64"
_SUGGESTED = re.compile(r"`([^`]+)`")


def _overlaps(d: Diagnostic, want: Span) -> bool:
    return d.span is not None and d.span.start <= want.end and want.start <= d.span.end


def _edit(snap: Snapshot, span: Span, new_text: str) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        changes={snap.uri: [types.TextEdit(range=snap.lines.range(span), new_text=new_text)]}
    )


def did_you_mean(snap: Snapshot, d: Diagnostic) -> list[types.CodeAction]:
    if d.span is None or not d.help or not d.help.startswith("did you mean"):
        return []
    lsp = diagnostics.to_lsp(d, snap)
    return [
        types.CodeAction(
            title=f"Replace with `{name}`",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[lsp],
            edit=_edit(snap, d.span, name),
            is_preferred=i == 0,
        )
        for i, name in enumerate(_SUGGESTED.findall(d.help))
    ]


def pairing_fixes(snap: Snapshot, d: Diagnostic) -> list[types.CodeAction]:
    module = snap.analysis.module
    decl = next(
        (
            x
            for x in module.decls
            if x.kind == "pairing"
            and d.span is not None
            and x.span.start <= d.span.start < x.span.end
        ),
        None,
    )
    if decl is None or d.span is None:
        return []
    lsp = diagnostics.to_lsp(d, snap)
    if d.span != decl.name_span:  # one entry without a host: give it one
        item = next((i for i in decl.items if getattr(i, "span", None) == d.span), None)
        if not isinstance(item, ast.PairingItem):
            return []
        at = Span(item.span.end, item.span.end)
        return [
            types.CodeAction(
                title=f"Add `host {DEFAULT_HOST}`",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[lsp],
                edit=_edit(snap, at, f", host {DEFAULT_HOST}"),
                is_preferred=True,
            )
        ]
    plan = snap.analysis.checked.plans.get(decl.target or "")
    if plan is None:
        return []
    gaps = query.pairing_gaps(module, plan, decl)
    if not gaps:
        return []
    lines = [f"{query.range_text(fam, lo, hi)}: host {DEFAULT_HOST}" for fam, lo, hi in gaps]
    offset, text = query.pairing_insertion(snap.text, decl, lines)
    missing = ", ".join(query.range_text(fam, lo, hi) for fam, lo, hi in gaps)
    return [
        types.CodeAction(
            title=f"Pair {missing} with host {DEFAULT_HOST}",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[lsp],
            edit=_edit(snap, Span(offset, offset), text),
            is_preferred=True,
        )
    ]


FIXES = {
    "unknown-name": did_you_mean,
    "bad-argument": did_you_mean,
    "pairing-incomplete": pairing_fixes,
}


def actions(snap: Snapshot, want: Span) -> list[types.CodeAction]:
    out: list[types.CodeAction] = []
    for d in snap.analysis.diagnostics:
        fix = FIXES.get(d.name)
        if fix is not None and _overlaps(d, want):
            out += fix(snap, d)
    return out


def register(server: AlphaServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    @guarded(list)
    def code_action(ls: AlphaServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        snap = ls.snapshot(params.text_document.uri)
        return actions(snap, snap.lines.span(params.range))
