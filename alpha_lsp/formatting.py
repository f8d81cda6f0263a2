"""`textDocument/formatting`: the canonical layout of alpha_core/syntax/format.py, sent as the
few line edits that turn the editor's text into it (the cursor and folds stay put elsewhere);
`textDocument/rangeFormatting`: those of the edits that meet the range's lines."""

from __future__ import annotations

import difflib
import re

from lsprotocol import types

from alpha_core.syntax.format import format_text
from alpha_lsp.kernel import AlphaServer, Snapshot, guarded

# lines with their breaks, cut where the server's line index cuts (\n, \r\n, \r: not at the
# other characters str.splitlines breaks at)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _lines(text: str) -> list[str]:
    return _LINE.findall(text)


def edits(snap: Snapshot) -> list[types.TextEdit]:
    formatted = format_text(snap.text)
    if formatted == snap.text:
        return []
    old = _lines(snap.text)
    new = _lines(formatted)
    starts = snap.lines.starts
    out: list[types.TextEdit] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # old lines i1..i2 become new lines j1..j2
        a = starts[i1] if i1 < len(starts) else len(snap.text)
        b = starts[i2] if i2 < len(starts) else len(snap.text)
        b = max(a, min(b, len(snap.text)))
        range_ = types.Range(start=snap.lines.position(a), end=snap.lines.position(b))
        out.append(types.TextEdit(range=range_, new_text="".join(new[j1:j2])))
    return out


def _touches(edit: types.TextEdit, want: types.Range) -> bool:
    """Whether an edit's lines meet the lines of `want` (a range is formatted by lines)."""
    first, last = edit.range.start.line, max(edit.range.start.line, edit.range.end.line - 1)
    return first <= want.end.line and want.start.line <= last


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    @guarded(list)
    def formatting(ls: AlphaServer, params: types.DocumentFormattingParams) -> list[types.TextEdit]:
        return edits(ls.snapshot(params.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_RANGE_FORMATTING)
    @guarded(list)
    def range_formatting(
        ls: AlphaServer, params: types.DocumentRangeFormattingParams
    ) -> list[types.TextEdit]:
        """The same layout, only the edits on the lines of the range (Neovim's `gq`)."""
        found = edits(ls.snapshot(params.text_document.uri))
        return [e for e in found if _touches(e, params.range)]
