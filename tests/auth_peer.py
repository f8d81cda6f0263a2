"""A Python test process that speaks the authenticated protocol (alpha_core/link/frames.py) on a
real socket: as the role a real executable dials (`accept_handshake`) or as a role dialling a
real executable's port (`dial_handshake`). With the launch's secret it is a genuine peer (for
tests that make a peer misbehave after authenticating); without it, an impostor."""

from __future__ import annotations

import functools
import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, replace

from alpha_core.link import frames


def read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        assert chunk, f"closed after {len(data)} of {n} bytes"
        data += chunk
    return data


def connect(port: int, timeout: float = 10.0) -> socket.socket:
    """Connects to a role's port, polling until it listens."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=timeout)
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            threading.Event().wait(0.01)


def connect_local(port: int, timeout: float = 10.0) -> socket.socket:
    """Connects to the local socket beside a role's loopback port (`alpha/127.0.0.1:PORT`),
    polling until it listens."""
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(f"\0alpha/127.0.0.1:{port}")
            return s
        except ConnectionRefusedError:
            s.close()
            assert time.monotonic() < deadline, f"no local socket beside port {port}"
            threading.Event().wait(0.01)


def write_secret(path: os.PathLike[str] | str, secret: bytes) -> str:
    """A secret file as a deployment keeps it: 32 bytes, readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secret)
    return str(path)


@dataclass
class Link:
    """An open link from this side: its socket, keys and sequence numbers."""

    conn: socket.socket
    send_key: bytes
    recv_key: bytes
    sent: int = 0
    received: int = 0

    def send(self, frame: bytes) -> None:
        self.conn.sendall(frames.seal(self.send_key, self.sent, frame))
        self.sent += 1

    def receive(self, payload_bytes: int) -> bytes:
        """One frame with its MAC checked (the frame without the MAC)."""
        data = read_exactly(self.conn, frames.HEADER_BYTES + payload_bytes + frames.MAC_BYTES)
        body, tag = data[: -frames.MAC_BYTES], data[-frames.MAC_BYTES :]
        assert frames.mac(self.recv_key, self.received, body) == tag, "a MAC that does not verify"
        self.received += 1
        return body


def accept_handshake(
    conn: socket.socket, secret: bytes, identity: bytes | str, me: int, n_roles: int, epoch: int = 1
) -> Link:
    """Answers a real dialler as role `me`: reads its HELLO, proves the secret, checks its AUTH."""
    theirs = frames.Hello.parse(read_exactly(conn, frames.HELLO_BYTES))
    mine = frames.Hello(bytes.fromhex(identity) if isinstance(identity, str) else identity, me,
                        theirs.sender, epoch, n_roles, os.urandom(32))  # fmt: skip
    mine = replace(mine, proof=frames.proof(secret, False, mine, theirs.nonce, mine.nonce))
    conn.sendall(mine.encode())
    auth = read_exactly(conn, frames.AUTH_BYTES)
    assert auth[frames.HEADER_BYTES :] == frames.proof(secret, True, theirs, theirs.nonce,
                                                       mine.nonce)  # fmt: skip
    to_acceptor, to_dialer = frames.link_keys(secret, theirs, mine.nonce)
    return Link(conn, to_dialer, to_acceptor)


def dial_handshake(
    conn: socket.socket,
    secret: bytes,
    identity: bytes | str,
    me: int,
    peer: int,
    n_roles: int,
    epoch: int = 1,
) -> Link:
    """Joins a real listener as role `me`: HELLO, its answer checked, then AUTH."""
    mine = frames.Hello(bytes.fromhex(identity) if isinstance(identity, str) else identity, me,
                        peer, epoch, n_roles, os.urandom(32))  # fmt: skip
    conn.sendall(mine.encode())
    theirs = frames.Hello.parse(read_exactly(conn, frames.HELLO_BYTES))
    assert theirs.proof == frames.proof(secret, False, theirs, mine.nonce, theirs.nonce)
    conn.sendall(frames.auth(me, frames.proof(secret, True, mine, mine.nonce, theirs.nonce)))
    to_acceptor, to_dialer = frames.link_keys(secret, mine, theirs.nonce)
    return Link(conn, to_acceptor, to_dialer)


@functools.lru_cache(maxsize=1)
def launch_secret_file() -> str:
    """A secret file (a fresh secret, mode 0600) for tests that start roles with Popen rather
    than through alpha_core.run.launch, which hands each launch its own: pass it as
    `--secret-file`."""
    folder = tempfile.mkdtemp(prefix="alpha-secret-")
    return write_secret(os.path.join(folder, "launch.secret"), os.urandom(32))
