"""How the server says no: documented error codes, one-line messages, no tracebacks.

An error response carries a code from the table in docs/lsp.md and a one-line message; never a
traceback in `data`. A refusal the server expects (a bad param, a document it will not read, a
plan that is refused) is a `JsonRpcException` raised by the handler and is logged, if at all, as
one line. Anything else is a bug in the server: the client gets InternalError with the exception's
type and message, and stderr one line saying which request failed and why. pygls answers these
itself with the traceback in `data` and logs every one with `logger.exception`, so the protocol's
two result callbacks are replaced here, and the log formatter folds whatever traceback still
reaches it (pygls's own deserialization messages) into the line it belongs to.
"""

from __future__ import annotations

import logging
import sys
from concurrent.futures import Future
from typing import Any

import cattrs
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

logger = logging.getLogger(__name__)

INVALID_PARAMS = -32602  # JSON-RPC: a param missing, of the wrong type, or a URI that is no file
INTERNAL_ERROR = -32603  # JSON-RPC: a bug in the server (one line: the exception's type, message)
REQUEST_FAILED = -32803  # LSP: the request was valid but cannot be answered (a refused plan)
DOCUMENT_UNREADABLE = -32001  # server-defined: the document is not open and cannot be read


class RequestFailed(JsonRpcException):
    CODE = REQUEST_FAILED


class DocumentUnreadable(JsonRpcException):
    """A request named a document that is not open, and its path is not a readable regular file
    within the size limit (a FIFO, /dev/stdin, a device, a directory, a missing file)."""

    CODE = DOCUMENT_UNREADABLE


def one_line(error: BaseException) -> str:
    """`Type: message`, on one line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def response_error(error: BaseException) -> JsonRpcException:
    """The error response for what a handler raised: its own if it is a refusal, else
    InternalError with one line and no `data`."""
    if isinstance(error, JsonRpcException):
        message = " ".join(str(error.message).split())
        return JsonRpcException(message=message, code=error.code, data=error.data)
    return JsonRpcException(message=one_line(error), code=INTERNAL_ERROR)


class AlphaProtocol(LanguageServerProtocol):
    """pygls's protocol with the server's error policy (see the module's doc)."""

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        error = None if future.cancelled() else future.exception()
        if error is None:
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        if not isinstance(error, JsonRpcException):
            logger.error("request %s failed: %s", msg_id, one_line(error))
        self._send_response(msg_id, error=response_error(error).to_response_error())

    def structure_message(self, data: dict[str, Any]) -> Any:
        # a request whose params do not fit its method: pygls logs a traceback and never
        # answers it, so a client would wait forever; here it is answered InvalidParams
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            where = data.get("method", "a message")
            why = _why_unstructured(error)
            logger.warning("invalid params for %s: %s", where, why)
            if "id" in data and "method" in data:
                message = f"invalid params for {where}: {why}"
                self._send_response(
                    data["id"], error=JsonRpcException(message, INVALID_PARAMS).to_response_error()
                )
            raise Answered() from None

    def _check_handler_result(self, future: Future[Any]) -> None:
        error = None if future.cancelled() else future.exception()
        if error is not None:
            logger.error("a notification failed: %s", one_line(error))


class Answered(Exception):
    """A message refused while it was read, and answered already: nothing more to do."""


def _why_unstructured(error: JsonRpcException) -> str:
    cause = error.__cause__
    if isinstance(cause, cattrs.ClassValidationError):
        return "; ".join(cattrs.transform_error(cause)[:3])
    return one_line(cause) if cause is not None else one_line(error)


class _Deserialization(logging.Filter):
    """pygls's own "Unable to deserialize message" records (a traceback each): the protocol
    above says it in one line instead. And the read loop's record for a message answered
    already."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Unable to deserialize message"):
            return False
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, Answered)


class OneLineFormatter(logging.Formatter):
    """Every record on one line: a traceback, passed as exc_info or pasted into the message,
    becomes its last line (the exception's type and message). At DEBUG the whole traceback is
    kept, for whoever is debugging the server."""

    def __init__(self, keep_tracebacks: bool) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.keep = keep_tracebacks

    def format(self, record: logging.LogRecord) -> str:
        if self.keep:
            return super().format(record)
        message = record.getMessage()
        lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
        if len(lines) > 1:
            message = f"{lines[0]}: {lines[-1]}"
        if record.exc_info and record.exc_info[1] is not None:
            message = f"{message}: {one_line(record.exc_info[1])}"
        flat = logging.LogRecord(
            record.name, record.levelno, record.pathname, record.lineno, message, None, None
        )
        return super().format(flat)


def configure_logging(level: str) -> None:
    """stderr logging at `level`, one line a record (all of a traceback at DEBUG)."""
    handler = logging.StreamHandler(sys.stderr)
    numeric = logging.getLevelName(level.upper())
    numeric = numeric if isinstance(numeric, int) else logging.WARNING
    handler.setFormatter(OneLineFormatter(keep_tracebacks=numeric <= logging.DEBUG))
    handler.addFilter(_Deserialization())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
