"""The language server's composition root: the server (kernel.py) with every feature
registered on it, and the `alpha-lsp` command. Each feature lives in its own module and
registers its handlers in `register`; none imports this module."""

from __future__ import annotations

import argparse
import gc

from lsprotocol import types

from alpha_lsp.errors import configure_logging
from alpha_lsp.kernel import AlphaServer


def build() -> AlphaServer:
    from alpha_lsp import (
        code_actions,
        code_lens,
        completion,
        diagnostics,
        folding,
        formatting,
        highlight,
        hover,
        inlay_hints,
        navigation,
        projection,
        rename,
        selection,
        semantic_tokens,
        signature_help,
        symbols,
        workspace_symbols,
    )

    server = AlphaServer()
    for feature in (
        diagnostics,
        hover,
        navigation,
        completion,
        signature_help,
        symbols,
        workspace_symbols,
        semantic_tokens,
        code_actions,
        code_lens,
        formatting,
        rename,
        inlay_hints,
        folding,
        highlight,
        selection,
        projection,
    ):
        feature.register(server)

    @server.feature(types.INITIALIZE)
    def initialize(ls: AlphaServer, params: types.InitializeParams) -> None:
        ls.configure(params.initialization_options)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def changed(ls: AlphaServer, params: types.DidChangeConfigurationParams) -> None:
        ls.configure(params.settings)

    return server


def _tune_collector() -> None:
    """The server's heap holds whole trees and checked modules of every document version the
    workspace keeps; a full collection of it takes most of a second on a 5,000-line file, and
    with the default thresholds one came every few edits (the p95 of an edit tripled). The
    objects of start-up are frozen out of collection and the collector runs less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def main(argv: list[str] | None = None) -> None:
    from alpha_core.support.version import version_line

    parser = argparse.ArgumentParser(prog="alpha-lsp", description="The Alpha language server.")
    transport = parser.add_mutually_exclusive_group()
    # vscode-languageclient appends `--stdio` to the command of a stdio server, and
    # `--clientProcessId=PID` to a node module's: both are accepted, so the standard client
    # starts the server as it is.
    transport.add_argument(
        "--stdio", action="store_true", help="talk over stdin and stdout (the default)"
    )
    transport.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    parser.add_argument(
        "--clientProcessId",
        metavar="PID",
        type=int,
        help="the editor's process id, as vscode-languageclient passes it (accepted, unused: "
        "the server ends when its input closes)",
    )
    parser.add_argument("--log-level", default="WARNING", help="logging level on stderr")
    parser.add_argument("--version", action="version", version=version_line("alpha-lsp"))
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    server = build()
    _tune_collector()
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit():
            parser.error("--tcp takes HOST:PORT")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
