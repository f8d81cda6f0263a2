"""Semantic tokens: every word the core classifies (keywords, declarations, parameters,
functions, roles, numbers, strings, comments ...) mapped onto the standard token types."""

from __future__ import annotations

from lsprotocol import types

from alpha_core import query
from alpha_lsp.kernel import AlphaServer, Snapshot, guarded

TOKEN_TYPES = [
    "keyword",
    "comment",
    "string",
    "number",
    "namespace",
    "variable",
    "parameter",
    "function",
    "class",
    "enumMember",
    "property",
    "type",
]
TOKEN_MODIFIERS = ["declaration", "readonly", "defaultLibrary"]
TYPE_INDEX = {t: i for i, t in enumerate(TOKEN_TYPES)}
LEGEND = types.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=TOKEN_MODIFIERS)

# core word kind → (token type, modifier bits)
KINDS: dict[str, tuple[str, int]] = {
    "keyword": ("keyword", 0),
    "comment": ("comment", 0),
    "string": ("string", 0),
    "number": ("number", 0),
    "decl": ("namespace", 0),
    "param": ("variable", 0),
    "data": ("variable", 0),
    "local": ("variable", 2),
    "argument": ("parameter", 0),
    "fn": ("function", 0),
    "builtin": ("function", 4),
    "role": ("class", 0),
    "value": ("enumMember", 0),
    "kwarg": ("property", 0),
    "type": ("type", 0),
    "name": ("variable", 0),
}


def encode(snap: Snapshot) -> list[int]:
    """The protocol's relative encoding: five integers a token, each relative to the last."""
    a = snap.analysis
    data: list[int] = []
    last_line, last_col = 0, 0
    lines = snap.lines
    for w in query.words(snap.text, a.module, a.checked):
        token_type, modifiers = KINDS.get(w.kind, ("variable", 0))
        line, column = lines.line_column(w.start)
        end_line, end_column = lines.line_column(w.end)
        if end_line != line:  # a token may not cross a line: a lone `\r` in a string ends one
            end_column = lines.line_column(lines.ends[line])[1]
        if end_column <= column:
            continue
        delta_line = line - last_line
        delta_col = column - (last_col if delta_line == 0 else 0)
        data += [delta_line, delta_col, end_column - column, TYPE_INDEX[token_type], modifiers]
        last_line, last_col = line, column
    return data


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @guarded(lambda: types.SemanticTokens(data=[]))
    def semantic_tokens(
        ls: AlphaServer, params: types.SemanticTokensParams
    ) -> types.SemanticTokens:
        return types.SemanticTokens(data=encode(ls.snapshot(params.text_document.uri)))
