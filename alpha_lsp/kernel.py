"""What every feature of the server shares: the server class (one core Workspace fed the
editor's text, the settings, the open documents and the data files they read), the snapshot of
each open document (its text, analysis and line index) and the guard that keeps a failure in one
request from reaching the others. Features import this module; server.py, which registers them,
imports the features (as esbonio keeps its server apart from the registration of features)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from alpha_core.support.files import DATA_LIMIT, NotReadable, read_regular
from alpha_core.support.memo import Lru
from alpha_core.workspace.analysis import Analysis, Workspace
from alpha_lsp import __version__
from alpha_lsp.errors import (
    AlphaProtocol,
    Answered,
    DocumentUnreadable,
    one_line,
)
from alpha_lsp.positions import Lines
from alpha_lsp.reading import AheadReader

logger = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_DEBOUNCE_MS = 50


@dataclass(frozen=True)
class Snapshot:
    """One version of an open document, analysed."""

    uri: str
    path: str
    version: int | None
    text: str
    analysis: Analysis
    lines: Lines


# A document the editor has not opened is read from disk only when it is a regular file of at
# most this many bytes (a request naming /dev/stdin must not read the server's own input).
DOCUMENT_LIMIT = 64 << 20
DATA_KEPT_BYTES = 256 << 20  # the bytes of data files kept between checks, least recent out


class DataFiles:
    """The data files systems name, read from disk: regular files only (a system naming
    /dev/stdin must not read the server's own input), kept while their size and time stand,
    up to DATA_KEPT_BYTES of them."""

    def __init__(self) -> None:
        self._kept: Lru[str, tuple[tuple[int, int], bytes]] = Lru(
            "lsp.data_files", 256, DATA_KEPT_BYTES
        )

    def read(self, path: str) -> bytes | None:
        try:
            info = os.stat(path)
        except (OSError, ValueError):  # ValueError: a path with a NUL in it
            return None
        key = (info.st_mtime_ns, info.st_size)
        kept = self._kept.get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        try:
            content = read_regular(path, DATA_LIMIT)
        except NotReadable:
            return None
        self._kept.put(path, (key, content), len(content))
        return content


# a lone surrogate (valid JSON, never valid text) becomes U+FFFD: one character and one UTF-16
# unit either way, so every offset and position stays where it was
_SURROGATE = re.compile("[\ud800-\udfff]")


class AlphaServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("alpha-lsp", __version__, protocol_cls=AlphaProtocol)
        self.data_files = DataFiles()
        self.core = Workspace(read_file=self.data_files.read)
        self.debounce_ms = DEFAULT_DEBOUNCE_MS
        self._snapshots: dict[str, Snapshot] = {}
        self.reader: AheadReader | None = None

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve on stdio, stdin read ahead by a thread (alpha_lsp/reading.py) so that each
        message's arrival time is known even while a check holds the event loop."""
        self.reader = AheadReader((stdin or sys.stdin.buffer).fileno())
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(
                run_async(
                    stop_event=self._stop_event,
                    reader=self.reader,
                    protocol=self.protocol,
                    logger=logger,
                    error_handler=self.report_server_error,
                )
            )
        except BrokenPipeError:
            logger.error("the connection to the client is lost: stopping")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def arrival(self) -> float:
        """When the message being handled arrived (`time.perf_counter()`); over TCP, now."""
        return self.reader.arrival if self.reader is not None else time.perf_counter()

    def path_of(self, uri: str) -> str:
        path = to_fs_path(uri)
        # an unsaved buffer has no path: its data files are looked for from the working folder
        return path if path else os.path.join(os.getcwd(), "untitled.alpha")

    def document(self, uri: str) -> tuple[str, int | None]:
        """The text and version of a document: as the editor has it if it is open, else read
        from disk if its URI names a regular file (DocumentUnreadable if not)."""
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is not None:
            return doc.source, doc.version
        if not uri.startswith("file:"):
            raise JsonRpcInvalidParams(f"`{uri}` is not open and is not a file: URI")
        path = to_fs_path(uri)
        if not path:
            raise JsonRpcInvalidParams(f"`{uri}` names no file path")
        try:
            data = read_regular(path, DOCUMENT_LIMIT)
        except NotReadable as why:
            raise DocumentUnreadable(f"{uri} is not open, and {why}") from None
        return data.decode("utf-8", errors="replace"), None

    def snapshot(self, uri: str) -> Snapshot:
        """The document as the editor has it now, analysed (memoized by its text). Only open
        documents keep a snapshot; one read from disk is analysed anew each time (the
        workspace's memos make that a lookup while the file stands)."""
        source, version = self.document(uri)
        text = _SURROGATE.sub("\ufffd", source)
        old = self._snapshots.get(uri)
        encoding = str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)
        if old is not None and old.text == text and old.lines.encoding == encoding:
            # the data files it read may have changed on disk: the workspace re-validates
            analysis = self.core.analyze(old.path, text)
            if analysis is old.analysis:
                if old.version != version:  # an edit undone: the same text, a new version
                    old = dataclasses.replace(old, version=version)
                    self._snapshots[uri] = old
                return old
        path = self.path_of(uri)
        analysis = self.core.analyze(path, text)
        snap = Snapshot(uri, path, version, text, analysis, Lines(text, encoding))
        if unquote(uri) in self.workspace.text_documents:
            self._snapshots[uri] = snap
        return snap

    def forget(self, uri: str) -> None:
        self._snapshots.pop(uri, None)

    def configure(self, options: Any) -> None:
        """Settings from `initializationOptions` or `workspace/didChangeConfiguration`."""
        if isinstance(options, dict):
            options = options.get("alpha", options)
            value = options.get("debounceMs") if isinstance(options, dict) else None
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                self.debounce_ms = int(value)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls's report of an error outside a request: a `window/showMessage` for the user.
        A message refused while it was read (params that do not fit) has been answered with
        InvalidParams already: it is an expected refusal, not an error in the server (pygls
        showed "Error in server: " for it, in the editor and its log). Anything else is shown
        in one line."""
        if isinstance(error, Answered):
            return
        self.window_show_message(
            types.ShowMessageParams(
                message=f"alpha-lsp: {one_line(error)}", type=types.MessageType.Error
            )
        )

    def report(self, where: str, error: BaseException) -> None:
        """A failure inside a handler: one line to the editor's log and to stderr (the
        exception's type and message, no traceback), never fatal to the server."""
        logger.error("%s failed: %s", where, one_line(error))
        self.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Error, message=f"{where} failed: {one_line(error)}"
            )
        )


def guarded(default: Callable[[], object]) -> Callable[[F], F]:
    """Run a handler; a refusal (a JsonRpcException: a bad param, a document that cannot be
    read) is the request's error response; any other exception is logged and answered with
    `default()`."""

    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def run(ls: AlphaServer, params: Any) -> object:
            try:
                return handler(ls, params)
            except JsonRpcException:
                raise
            except Exception as error:  # an editor request must always get an answer
                ls.report(handler.__name__, error)
                return default()

        return cast(F, run)

    return wrap
