"""`workspace/symbol`: the declarations and named items of every open `.alpha` document and of
the `.alpha` files under the workspace's folders (read from disk like any document not open:
regular files only, at most MAX_FILES of them)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path, to_fs_path

from alpha_core import query
from alpha_core.query.symbols import flat
from alpha_lsp.kernel import AlphaServer, guarded
from alpha_lsp.symbols import KINDS

MAX_FILES = 500
SKIPPED = frozenset({".git", "node_modules", "__pycache__", "alpha-runs"})


def _files(root: str) -> list[str]:
    out: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith((".venv", ".")))
        out += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".alpha")]
        if len(out) >= MAX_FILES:
            return out[:MAX_FILES]
    return out


def uris(ls: AlphaServer) -> list[str]:
    """The open documents, then the files of the workspace folders not open."""
    seen = [uri for uri in ls.workspace.text_documents if uri.endswith(".alpha")]
    have = {unquote(u) for u in seen}
    for folder in ls.workspace.folders.values():
        root = to_fs_path(folder.uri)
        if not root or not Path(root).is_dir():
            continue
        for path in _files(root):
            uri = from_fs_path(path)
            if uri is not None and unquote(uri) not in have:
                have.add(unquote(uri))
                seen.append(uri)
    return seen


def register(server: AlphaServer) -> None:
    @server.feature(types.WORKSPACE_SYMBOL)
    @guarded(list)
    def workspace_symbols(
        ls: AlphaServer, params: types.WorkspaceSymbolParams
    ) -> list[types.WorkspaceSymbol]:
        out: list[types.WorkspaceSymbol] = []
        for uri in uris(ls):
            try:
                snap = ls.snapshot(uri)
            except JsonRpcException:  # a file that cannot be read has no symbols
                continue
            except Exception as error:  # one file's failure does not hide the others' symbols
                ls.report(f"workspace/symbol on {uri}", error)
                continue
            for f in flat(query.outline(snap.analysis.module, snap.text), params.query):
                out.append(
                    types.WorkspaceSymbol(
                        location=types.Location(
                            uri=uri, range=snap.lines.range(f.symbol.selection)
                        ),
                        name=f.symbol.name,
                        kind=KINDS.get(f.symbol.kind, types.SymbolKind.Object),
                        container_name=f.container or None,
                    )
                )
        return out
