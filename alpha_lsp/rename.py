"""Rename and prepareRename: every occurrence of a declared name (alpha_core/query/rename.py).
Where there is no symbol (a keyword, a comment, a space) prepareRename answers null: nothing to
rename, no message. A built-in, a name not declared in the file, or a new name that is no name or
is taken is refused with RequestFailed and a one-line message the editor shows."""

from __future__ import annotations

from lsprotocol import types

from alpha_core.query.rename import (
    NothingToRename,
    RenameRefused,
    RenameTarget,
    check_new_name,
    rename_target,
)
from alpha_lsp.errors import RequestFailed
from alpha_lsp.kernel import AlphaServer, Snapshot, guarded


def _target(snap: Snapshot, position: types.Position) -> RenameTarget:
    a = snap.analysis
    try:
        return rename_target(a.module, a.checked, snap.text, snap.lines.offset(position))
    except RenameRefused as why:
        raise RequestFailed(str(why)) from None


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
    @guarded(lambda: None)
    def prepare_rename(
        ls: AlphaServer, params: types.PrepareRenameParams
    ) -> types.PrepareRenamePlaceholder | None:
        snap = ls.snapshot(params.text_document.uri)
        a = snap.analysis
        try:
            target = rename_target(
                a.module, a.checked, snap.text, snap.lines.offset(params.position)
            )
        except NothingToRename:  # a keyword, a comment, a space: nothing, not an error
            return None
        except RenameRefused as why:  # a built-in, a name declared elsewhere: say why
            raise RequestFailed(str(why)) from None
        return types.PrepareRenamePlaceholder(
            range=snap.lines.range(target.span), placeholder=target.name
        )

    @server.feature(types.TEXT_DOCUMENT_RENAME, types.RenameOptions(prepare_provider=True))
    @guarded(lambda: None)
    def rename(ls: AlphaServer, params: types.RenameParams) -> types.WorkspaceEdit:
        snap = ls.snapshot(params.text_document.uri)
        target = _target(snap, params.position)
        try:
            check_new_name(snap.analysis.module, target, params.new_name)
        except RenameRefused as why:
            raise RequestFailed(str(why)) from None
        edits = [
            types.TextEdit(range=snap.lines.range(s), new_text=params.new_name)
            for s in target.spans
        ]
        return types.WorkspaceEdit(changes={snap.uri: edits})
