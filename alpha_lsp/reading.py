"""The server's stdin, read ahead by a thread, each message stamped with when it arrived.

pygls reads stdin one line at a time through its thread pool, and only while the event loop is
free: during a check nothing is read, so every edit queued behind it seems to arrive when the
check ends. Deciding whether edits come faster than checks (diagnostics.Debouncer) needs the
time each one really arrived. Here a thread reads the pipe as bytes come and keeps them with
the time they came; the protocol loop reads messages from that buffer, and `arrival` is when
the last byte of the latest message read was received.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import deque

CHUNK = 1 << 16


class AheadReader:
    """An async reader (pygls's `readline` / `readexactly`) over a file descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.arrival = time.perf_counter()
        self._buffer = bytearray()
        self._lock = threading.Lock()
        # (how many bytes had arrived in all once this chunk came, when it came)
        self._chunks: deque[tuple[int, float]] = deque()
        self._received = 0  # bytes received since the start
        self._consumed = 0  # bytes handed to the protocol since the start
        self._eof = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def _start(self) -> asyncio.Event:
        if self._ready is None:
            self._loop = asyncio.get_running_loop()
            self._ready = asyncio.Event()
            self._thread = threading.Thread(target=self._pump, name="stdin", daemon=True)
            self._thread.start()
        return self._ready

    def _pump(self) -> None:
        assert self._loop is not None
        while True:
            try:
                data = os.read(self.fd, CHUNK)
            except OSError:
                data = b""
            now = time.perf_counter()
            with self._lock:
                if data:
                    self._buffer += data
                    self._received += len(data)
                    self._chunks.append((self._received, now))
                else:
                    self._eof = True
            try:
                self._loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop has closed: the server is stopping
                return
            if not data:
                return

    def _wake(self) -> None:
        if self._ready is not None:
            self._ready.set()

    def _take(self, n: int) -> bytes:
        """The first n bytes of the buffer (under the lock), noting when the last of them
        arrived."""
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        self._consumed += n
        while self._chunks and self._chunks[0][0] < self._consumed:
            self._chunks.popleft()
        if self._chunks:
            self.arrival = self._chunks[0][1]
        return out

    async def readline(self) -> bytes:
        ready = self._start()
        while True:
            with self._lock:
                end = self._buffer.find(b"\n")
                if end >= 0:
                    return self._take(end + 1)
                if self._eof:
                    return self._take(len(self._buffer))
                ready.clear()
            await ready.wait()

    async def readexactly(self, n: int) -> bytes:
        ready = self._start()
        while True:
            with self._lock:
                if len(self._buffer) >= n or self._eof:
                    return self._take(min(n, len(self._buffer)))
                ready.clear()
            await ready.wait()
