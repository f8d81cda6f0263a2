"""The command's own environment, refused by name: a source that cannot be read, standard
output that is closed, full (/dev/full) or a pipe whose reader went away (`| head`).

Standard output is wrapped so that a failed write or flush raises StdoutUnwritable wherever it
happens (a `print`, a rich console, the flush at exit), and `main` turns that into the refusal
`stdout-unwritable` on standard error, never a traceback or Python's "Exception ignored" line.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any


class Refused(Exception):
    """A named refusal of the command itself (not of the source): `name` is registered."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


class StdoutUnwritable(Exception):
    """Standard output could not be written; the message says why."""


def _reason(error: OSError) -> str:
    if isinstance(error, BrokenPipeError):
        return "broken pipe (its reader closed it)"
    return (error.strerror or type(error).__name__).lower()


class _GuardedStdout(io.TextIOBase):
    """sys.stdout as it was, except that an OSError on write or flush is StdoutUnwritable."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        try:
            return int(self._inner.write(text))
        except OSError as error:
            raise StdoutUnwritable(f"cannot write standard output: {_reason(error)}") from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except OSError as error:
            raise StdoutUnwritable(f"cannot write standard output: {_reason(error)}") from None

    def isatty(self) -> bool:
        return bool(self._inner.isatty())

    def fileno(self) -> int:
        return int(self._inner.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(self._inner.encoding)

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._inner.errors  # type: ignore[no-any-return]


def guard_stdout() -> None:
    """Wraps sys.stdout; refuses `stdout-unwritable` at once when standard output is closed
    (Python then has no sys.stdout, and anything printed would vanish while the command
    reported success). Descriptor 1 is then held on /dev/null, so no file the command opens
    later can land on it and receive what a child writes to its standard output."""
    if sys.stdout is None:
        _hold_stdout()
        raise Refused("stdout-unwritable", "standard output is closed")
    if not isinstance(sys.stdout, _GuardedStdout):
        sys.stdout = _GuardedStdout(sys.stdout)


def _hold_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != 1:
        os.dup2(devnull, 1)
        os.close(devnull)


def drop_stdout() -> None:
    """After StdoutUnwritable: what is still buffered goes to /dev/null, so that the flush at
    exit succeeds quietly instead of printing Python's "Exception ignored" on stderr."""
    try:
        _hold_stdout()
    except OSError:
        pass
