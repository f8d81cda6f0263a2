"""Roles as real processes on loopback: executables linked from the fixture kernels
(tests/fixtures/runtime/linear_kernels.c) and hand-written ALPHA_ROLE schedules
(tests/fixtures/net/). Covers training split over two and three roles (bit-identical to the
single-process build), strangers and impostors on a role's port (dropped by name while the
role waits for its real peer), peers that answer wrongly, never come, fall silent or trickle,
and a role killed mid-run. Every role reads the test's launch secret from a file
(--secret-file); the Python peers that know it speak the protocol through tests/auth_peer.py.
Nothing here sleeps to synchronise: tests wait on events, sockets and process exits, each with
a deadline."""

from __future__ import annotations

import hashlib
import json
import queue
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from auth_peer import accept_handshake, connect, read_exactly, write_secret

from alpha_core.link import compile_c, frames, link_executable
from alpha_core.link.toolchain import runtime_dir

TARGET = "x86_64-linux-musl"
HERE = Path(__file__).parent
NET = HERE / "fixtures" / "net"
RUNTIME_FIXTURES = HERE / "fixtures" / "runtime"
PLAN = "cd" * 32
OTHER_PLAN = "ef" * 32
FEATURES, OUTPUTS = 4, 3
N_PARAMS = FEATURES * OUTPUTS + OUTPUTS


# ---- building ---------------------------------------------------------------------------------


@dataclass
class System:
    folder: Path
    kernels: bytes  # the linear model of tests/fixtures/runtime
    wide: bytes  # tests/fixtures/net/wide_kernels.c: as many parameters as the program says
    fields: dict[str, object]


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> System:
    folder = tmp_path_factory.mktemp("net")
    rng = np.random.default_rng(3)
    rows, holdout = 80, 16
    x = rng.normal(size=(rows, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 1)
    lines = [
        ",".join([*(np.format_float_positional(v, unique=True) for v in row), str(int(c))])
        for row, c in zip(x, y, strict=True)
    ]
    data = folder / "train.csv"
    data.write_text("\n".join(lines) + "\n")
    obj = folder / "linear.o"
    compile_c(TARGET, "linear_kernels.c", obj, cwd=RUNTIME_FIXTURES, include_dirs=[runtime_dir()])
    wide = folder / "wide.o"
    compile_c(TARGET, "wide_kernels.c", wide, cwd=NET, include_dirs=[runtime_dir()])
    fields: dict[str, object] = {
        "IDENTITY": "ab" * 32, "N_PARAMS": N_PARAMS, "FEATURES": FEATURES, "OUTPUTS": OUTPUTS,
        "LEAF_SIZE": 3, "STEPS": 25, "ROWS": rows, "HOLDOUT": holdout, "DATA_PATH": data,
        "DATA_SHA256": hashlib.sha256(data.read_bytes()).hexdigest(), "PLAN_IDENTITY": PLAN,
        "EPOCH": 1, "CONNECT_TIMEOUT_MS": 10000, "IO_TIMEOUT_MS": 10000,
    }  # fmt: skip
    return System(folder, obj.read_bytes(), wide.read_bytes(), fields)


def build(system: System, layout: str, index: int, out: Path, **fields: object) -> Path:
    """One role of a layout (single, pair, trio) as an executable; WIDE=True links the wide
    kernels instead of the linear ones."""
    values = {**system.fields, **fields}
    wide = bool(values.pop("WIDE", False))
    values["BATCH"] = int(str(values["LEAVES"])) * int(str(values["LEAF_SIZE"]))
    text = (NET / "program.c.in").read_text()
    text += f"\n#define ALPHA_FIXTURE_ROLE {index}\n\n" + (NET / f"{layout}.c.in").read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", str(value))
    assert "@" not in text, text
    return link_executable(TARGET, system.wide if wide else system.kernels, text, out)


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


# ---- running ----------------------------------------------------------------------------------


class Role:
    """A started executable whose events are read as they come."""

    def __init__(self, exe: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.events: list[dict[str, object]] = []
        self.arrived: queue.Queue[dict[str, object] | None] = queue.Queue()
        self.stderr = ""
        self.threads = [
            threading.Thread(target=self._read_events, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self.threads:
            t.start()

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            self.events.append(event)
            self.arrived.put(event)
        self.arrived.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def wait_for(self, wanted: Callable[[dict[str, object]], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no such event within {timeout} s: {self.events[-3:]}"
            try:
                event = self.arrived.get(timeout=left)
            except queue.Empty:
                continue
            assert event is not None, f"exited first: {self.events[-3:]} {self.stderr}"
            if wanted(event):
                return

    def finish(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        for t in self.threads:
            t.join(timeout=10)
        return code

    def steps(self) -> list[dict[str, object]]:
        return [e for e in self.events if e["event"] == "step"]

    def last(self) -> dict[str, object]:
        return self.events[-1]


@pytest.fixture
def secret() -> bytes:
    """This test's launch secret (fresh per test, as per launch)."""
    return random.randbytes(32)


@pytest.fixture
def roles(tmp_path: Path, secret: bytes) -> Iterator[Callable[..., Role]]:
    """Starts a role with the test's secret (--secret-file)."""
    started: list[Role] = []
    secret_file = write_secret(tmp_path / "launch.secret", secret)

    def start(exe: Path, *args: str) -> Role:
        role = Role(exe, "--secret-file", secret_file, *args)
        started.append(role)
        return role

    yield start
    for role in started:
        if role.proc.poll() is None:
            role.proc.kill()
        role.proc.wait(timeout=10)


def assert_refused(role: Role, names: set[str], within: float) -> dict[str, object]:
    start = time.monotonic()
    code = role.finish(timeout=within + 10)
    assert time.monotonic() - start < within, "the refusal took too long"
    assert code == 3, (code, role.events, role.stderr)
    refused = role.last()
    assert refused["event"] == "refused" and refused["name"] in names, refused
    assert role.stderr.startswith(f"error[{refused['name']}]: ")
    return refused


# ---- (a) training across roles equals the single process --------------------------------------


def single_run(
    system: System, tmp_path: Path, leaves: int, **fields: object
) -> tuple[list[str], bytes]:
    exe = build(system, "single", 0, tmp_path / "single", LEAVES=leaves, **fields)
    done = subprocess.run([str(exe), "--params-out", str(tmp_path / "single.params")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    steps = [e for e in events if e["event"] == "step"]
    assert all(e["combine"] and e["role"] == "main" for e in steps)
    return [str(e["loss_bits"]) for e in steps], (tmp_path / "single.params").read_bytes()


def test_a_pair_trains_to_the_bits_of_one_process(
    system: System, tmp_path: Path, roles: Callable[..., Role]
) -> None:
    losses, params = single_run(system, tmp_path, leaves=4)
    (port,) = free_ports(1)
    left = build(system, "pair", 0, tmp_path / "left", LEAVES=4, PORT_0=port)
    right = build(system, "pair", 1, tmp_path / "right", LEAVES=4, PORT_0=port)
    # The connecting role starts first: it retries until the other listens.
    b = roles(right, "--params-out", str(tmp_path / "right.params"))
    a = roles(left, "--params-out", str(tmp_path / "left.params"))
    assert a.finish(60) == 0 and b.finish(60) == 0, (a.stderr, b.stderr)
    assert (tmp_path / "left.params").read_bytes() == params
    assert (tmp_path / "right.params").read_bytes() == params
    for role, name, first in ((a, "left", "0:2=0:1+1:2"), (b, "right", "2:4=2:3+3:4")):
        steps = role.steps()
        assert [e["loss_bits"] for e in steps] == losses
        assert {e["role"] for e in steps} == {name}
        assert all(e["combine"] == [first, "0:4=0:2+2:4"] for e in steps)
        assert role.last()["event"] == "done" and role.last()["role"] == name


def test_three_roles_reduce_to_a_hub_and_broadcast(
    system: System, tmp_path: Path, roles: Callable[..., Role]
) -> None:
    losses, params = single_run(system, tmp_path, leaves=5)
    (port,) = free_ports(1)
    exes = [build(system, "trio", i, tmp_path / f"r{i}", LEAVES=5, PORT_0=port) for i in range(3)]
    outs = [tmp_path / f"r{i}.params" for i in range(3)]
    started = [roles(exes[i], "--params-out", str(outs[i])) for i in (2, 0, 1)]
    w2, hub, w1 = started
    assert [r.finish(60) for r in started] == [0, 0, 0], [r.stderr for r in started]
    assert outs[0].read_bytes() == params
    assert not outs[1].exists() and not outs[2].exists()  # only the hub writes
    expected = {
        hub: ["0:2=0:1+1:2", "0:4=0:2+2:4", "0:5=0:4+4:5"],
        w1: ["2:4=2:3+3:4"],
        w2: [],
    }
    for role, combine in expected.items():
        assert [e["loss_bits"] for e in role.steps()] == losses
        assert all(e["combine"] == combine for e in role.steps())
    assert "params_file" in hub.last() and "holdout_accuracy" in hub.last()
    assert w1.last()["event"] == "done" and "params_file" not in w1.last()


def test_large_pieces_cross_without_blocking_each_other(
    system: System, tmp_path: Path, roles: Callable[..., Role]
) -> None:
    """Both roles send 8 MiB to each other at once, far beyond the sockets' buffers: each keeps
    sending while it waits to receive, so neither blocks the other."""
    wide = {"WIDE": True, "N_PARAMS": 1 << 21, "STEPS": 3, "IO_TIMEOUT_MS": 5000}
    losses, params = single_run(system, tmp_path, leaves=4, **wide)
    (port,) = free_ports(1)
    exes = [build(system, "pair", i, tmp_path / f"r{i}", LEAVES=4, PORT_0=port, **wide)
            for i in range(2)]  # fmt: skip
    started = [roles(exes[i], "--params-out", str(tmp_path / f"r{i}.params")) for i in range(2)]
    assert [r.finish(60) for r in started] == [0, 0], [r.stderr for r in started]
    for i, role in enumerate(started):
        assert [e["loss_bits"] for e in role.steps()] == losses
        assert (tmp_path / f"r{i}.params").read_bytes() == params


# ---- (b) strangers on a role's port -----------------------------------------------------------


def corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


GOOD_HELLO = frames.hello(PLAN, 1, 0, 1, 2, random.Random(2).randbytes(32))
# What a stranger sends, and the name it is dropped by. A HELLO of the protocol is answered;
# the AUTH after it, without the secret, cannot prove anything.
NO_PROOF = frames.auth(1, random.Random(3).randbytes(32))
STRANGERS = {
    "random-bytes": (random.Random(1).randbytes(200), "frame-corrupt"),
    "oversize": (frames.Header(frames.HELLO, 1, count=1 << 20).encode(), "frame-oversize"),
    "header-checksum": (corrupt(GOOD_HELLO, 20), "frame-corrupt"),
    "payload-checksum": (corrupt(GOOD_HELLO, 70), "frame-corrupt"),
    "version": (
        frames.Header(frames.HELLO, 1, count=frames.HELLO_COUNT, version=1).encode(),
        "frame-version-mismatch",
    ),  # fmt: skip
    "version-2": (  # a role of frame version 2 (HMAC-SHA256 frame MACs): its whole HELLO
        frames.Header(frames.HELLO, 1, count=frames.HELLO_COUNT, version=2).encode()
        + GOOD_HELLO[frames.HEADER_BYTES :],
        "frame-version-mismatch",
    ),  # fmt: skip
    "no-proof": (GOOD_HELLO + NO_PROOF, "peer-unauthenticated"),
    "wrong-role": (
        frames.hello(PLAN, 5, 0, 1, 2) + frames.auth(5, bytes(32)),
        "peer-unauthenticated",
    ),
    "epoch": (frames.hello(PLAN, 1, 0, 2, 2) + NO_PROOF, "peer-unauthenticated"),
    "other-plan": (frames.hello(OTHER_PLAN, 1, 0, 1, 2) + NO_PROOF, "peer-unauthenticated"),
    "left-half-way": (GOOD_HELLO[:100], "frame-corrupt"),
}


@pytest.mark.parametrize("case", sorted(STRANGERS))
def test_a_stranger_on_the_port_is_dropped_by_name_and_the_real_peer_still_joins(
    system: System, tmp_path: Path, roles: Callable[..., Role], case: str
) -> None:
    """Issue 9, item 6: a stranger's bad connection stopped the role (the whole run failed).
    Now it is dropped by name in the event stream and the role goes on waiting for its peer."""
    (port,) = free_ports(1)
    exes = [build(system, "pair", i, tmp_path / f"r{i}", LEAVES=4, PORT_0=port) for i in (0, 1)]
    left = roles(exes[0], "--params-out", str(tmp_path / "l.params"))
    sent, name = STRANGERS[case]
    with connect(port) as s:
        s.sendall(sent)
        if case == "left-half-way":
            s.shutdown(socket.SHUT_WR)
        left.wait_for(lambda e: e["event"] == "stranger-dropped", timeout=8.0)
        dropped = [e for e in left.events if e["event"] == "stranger-dropped"]
        assert [e["name"] for e in dropped] == [name], dropped
        assert str(s.getsockname()[1]) in str(dropped[0]["from"]), dropped
        assert dropped[0]["role"] == "left" and dropped[0]["message"]
        if sent.startswith(frames.hello(OTHER_PLAN, 1, 0, 1, 2)):
            # A HELLO is answered with the role's own (its plan identity is no secret).
            answer = read_exactly(s, frames.HELLO_BYTES)
            expect = frames.Expect(frames.HELLO, 0, 0, 0, 0, 0, frames.HELLO_COUNT)
            assert frames.decode(answer, expect)[1] is None
            assert answer[64:96] == bytes.fromhex(PLAN)
    right = roles(exes[1], "--params-out", str(tmp_path / "r.params"))
    assert left.finish(60) == 0 and right.finish(60) == 0, (left.stderr, right.stderr)
    assert (tmp_path / "l.params").read_bytes() == (tmp_path / "r.params").read_bytes()
    assert left.last()["event"] == "done"


def test_strangers_filling_every_slot_cannot_keep_the_peer_out(
    system: System, tmp_path: Path, roles: Callable[..., Role]
) -> None:
    """Twenty silent connections (more than the role keeps waiting on): the oldest make room,
    and the real peer joins."""
    (port,) = free_ports(1)
    exes = [build(system, "pair", i, tmp_path / f"r{i}", LEAVES=4, PORT_0=port) for i in (0, 1)]
    left = roles(exes[0], "--params-out", str(tmp_path / "l.params"))
    strangers = [connect(port) for _ in range(20)]
    try:
        right = roles(exes[1], "--params-out", str(tmp_path / "r.params"))
        assert left.finish(60) == 0 and right.finish(60) == 0, (left.stderr, right.stderr)
    finally:
        for s in strangers:
            s.close()
    dropped = [e for e in left.events if e["event"] == "stranger-dropped"]
    assert dropped and {e["name"] for e in dropped} == {"peer-unauthenticated"}


def test_a_peer_in_its_handshake_outlasts_a_burst_of_silent_strangers(
    system: System, tmp_path: Path, roles: Callable[..., Role], secret: bytes
) -> None:
    """The real peer accepted first, its HELLO answered, then twenty silent connections: the
    silent ones make room (four go), never the connection in its handshake, which then proves
    itself and opens the link. (Oldest first alone dropped it: under load a role can accept a
    peer's local socket before a backlog of strangers.)"""
    (port,) = free_ports(1)
    exe = build(system, "pair", 0, tmp_path / "left", LEAVES=4, PORT_0=port)
    role = roles(exe, "--params-out", str(tmp_path / "p"))
    with connect(port) as peer:
        mine = frames.Hello(bytes.fromhex(PLAN), 1, 0, 1, 2, bytes(range(32)))
        peer.sendall(mine.encode())
        theirs = frames.Hello.parse(read_exactly(peer, frames.HELLO_BYTES))
        strangers = [connect(port) for _ in range(20)]
        try:
            for _ in range(4):
                role.wait_for(lambda e: e["event"] == "stranger-dropped", timeout=10.0)
            host, at = peer.getsockname()[:2]
            here = f"{host}:{at}"
            dropped = [e for e in role.events if e["event"] == "stranger-dropped"]
            assert len(dropped) == 4 and all(e["from"] != here for e in dropped), dropped
            proof = frames.proof(secret, True, mine, mine.nonce, theirs.nonce)
            peer.sendall(frames.auth(1, proof))
            role.wait_for(lambda e: e["event"] == "links", timeout=10.0)
        finally:
            for s in strangers:
                s.close()


def test_an_authenticated_peer_that_disagrees_refuses_the_run(
    system: System, tmp_path: Path, roles: Callable[..., Role], secret: bytes
) -> None:
    """A connection that proves the secret is part of the launch: when it then claims a role
    the listener does not expect, the run is refused by name (not dropped)."""
    (port,) = free_ports(1)
    exe = build(system, "pair", 0, tmp_path / "left", LEAVES=4, PORT_0=port)
    role = roles(exe, "--params-out", str(tmp_path / "p"))
    from auth_peer import dial_handshake

    with connect(port) as s:
        dial_handshake(s, secret, PLAN, 5, 0, 2)
        refused = assert_refused(role, {"role-identity-mismatch"}, within=8.0)
    assert "role index 5" in str(refused["message"]) and refused["round"] is None
    assert not (tmp_path / "p").exists()


def fake_left(port: int) -> tuple[socket.socket, Callable[[], socket.socket]]:
    """A listening socket standing in for role "left"; accept() gives the connection."""
    server = socket.create_server(("127.0.0.1", port))
    server.settimeout(10)

    def accept() -> socket.socket:
        conn, _ = server.accept()
        conn.settimeout(10)
        return conn

    return server, accept


PIECE = (N_PARAMS + 1) * 4


def answer(conn: socket.socket, secret: bytes, **fields: object) -> frames.Hello:
    """Reads right's HELLO and answers it as left would, with `fields` changed (the proof
    still made with the secret unless `proof` is given)."""
    theirs = frames.Hello.parse(read_exactly(conn, frames.HELLO_BYTES))
    assert (theirs.plan_identity, theirs.sender, theirs.receiver) == (bytes.fromhex(PLAN), 1, 0)
    mine = frames.Hello(bytes.fromhex(PLAN), 0, 1, 1, 2, random.randbytes(32))
    mine = replace(mine, **fields)  # type: ignore[arg-type]
    if "proof" not in fields:
        mine = replace(mine, proof=frames.proof(secret, False, mine, theirs.nonce, mine.nonce))
    conn.sendall(mine.encode())
    return theirs


WRONG_ANSWERS: dict[str, tuple[dict[str, Any], str]] = {
    "other-plan": ({"plan_identity": bytes.fromhex(OTHER_PLAN)}, "plan-identity-mismatch"),
    "impostor": ({"sender": 1}, "role-identity-mismatch"),
    "epoch": ({"epoch": 2}, "membership-epoch-mismatch"),
    "no-proof": ({"proof": bytes(32)}, "peer-unauthenticated"),
}
BAD_PIECES = {
    "wrong-round": (frames.piece(0, 1, 0, 2, bytes(PIECE)), "frame-unexpected"),
    "wrong-node": (frames.piece(0, 0, 2, 4, bytes(PIECE)), "frame-unexpected"),
    "wrong-sender": (frames.piece(1, 0, 0, 2, bytes(PIECE)), "frame-unexpected"),
    "oversize": (frames.piece(0, 0, 0, 2, bytes(PIECE + 4)), "frame-oversize"),
}


@pytest.mark.parametrize(
    "case",
    sorted(WRONG_ANSWERS) + ["garbage"] + sorted(BAD_PIECES) + ["forged", "zero-mac", "damaged"],
)
def test_a_connecting_role_checks_what_it_is_answered(
    system: System, tmp_path: Path, roles: Callable[..., Role], secret: bytes, case: str
) -> None:
    (port,) = free_ports(1)
    exe = build(system, "pair", 1, tmp_path / "right", LEAVES=4, PORT_0=port)
    server, accept = fake_left(port)
    with server:
        role = roles(exe, "--params-out", str(tmp_path / "p"))
        with accept() as conn:
            if case == "garbage":
                read_exactly(conn, frames.HELLO_BYTES)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n" * 10)
                assert_refused(role, {"frame-corrupt"}, within=4.0)
            elif case in WRONG_ANSWERS:
                fields, name = WRONG_ANSWERS[case]
                answer(conn, secret, **fields)
                refused = assert_refused(role, {name}, within=4.0)
                assert refused["round"] is None
            else:
                link = accept_handshake(conn, secret, PLAN, 0, 2)
                link.receive(PIECE)  # right's half of round 1, its MAC checked
                good = frames.piece(0, 0, 0, 2, bytes(PIECE))
                if case == "forged":  # the right frame under a MAC of another key
                    conn.sendall(frames.seal(random.randbytes(32), 0, good))
                    name = "frame-forged"
                elif case == "zero-mac":  # as an unauthenticated sender would fill it
                    conn.sendall(good + bytes(frames.MAC_BYTES))
                    name = "frame-forged"
                elif case == "damaged":  # a payload byte flipped on the way, after its MAC
                    # (frame version 3 has no payload CRC of its own: the MAC names it)
                    conn.sendall(corrupt(frames.seal(link.send_key, 0, good), 90))
                    name = "frame-forged"
                else:
                    link.send(BAD_PIECES[case][0])
                    name = BAD_PIECES[case][1]
                refused = assert_refused(role, {name}, within=4.0)
                assert refused["round"] == 1 and "left" in str(refused["message"])
    assert not role.steps() and not (tmp_path / "p").exists()


# ---- (c) peers that never come, or fall silent ------------------------------------------------


@pytest.mark.parametrize(("index", "peer"), [(1, "left"), (0, "right")])
def test_a_peer_that_never_comes_is_unreachable_after_the_deadline(
    system: System, tmp_path: Path, roles: Callable[..., Role], index: int, peer: str
) -> None:
    (port,) = free_ports(1)
    exe = build(system, "pair", index, tmp_path / "role", LEAVES=4, PORT_0=port,
                CONNECT_TIMEOUT_MS=500)  # fmt: skip
    started = time.monotonic()
    role = roles(exe, "--params-out", str(tmp_path / "p"))
    refused = assert_refused(role, {"peer-unreachable"}, within=5.0)
    assert time.monotonic() - started >= 0.45
    assert peer in str(refused["message"]) and str(port) in str(refused["message"])
    assert not (tmp_path / "p").exists()


def test_a_port_in_use_is_refused(
    system: System, tmp_path: Path, roles: Callable[..., Role]
) -> None:
    (port,) = free_ports(1)
    exe = build(system, "pair", 0, tmp_path / "left", LEAVES=4, PORT_0=port)
    with socket.create_server(("127.0.0.1", port)):
        refused = assert_refused(roles(exe), {"listen-failed"}, within=5.0)
    assert f"127.0.0.1:{port}" in str(refused["message"])


def test_a_probe_that_connects_and_leaves_is_ignored(
    system: System, tmp_path: Path, roles: Callable[..., Role]
) -> None:
    (port,) = free_ports(1)
    exes = [build(system, "pair", i, tmp_path / f"r{i}", LEAVES=4, PORT_0=port) for i in (0, 1)]
    left = roles(exes[0], "--params-out", str(tmp_path / "l.params"))
    connect(port).close()  # a readiness probe: connects, sends nothing, leaves
    right = roles(exes[1], "--params-out", str(tmp_path / "r.params"))
    assert left.finish(60) == 0 and right.finish(60) == 0, (left.stderr, right.stderr)
    assert (tmp_path / "l.params").read_bytes() == (tmp_path / "r.params").read_bytes()


def test_a_peer_that_accepts_but_never_answers_times_out(
    system: System, tmp_path: Path, roles: Callable[..., Role]
) -> None:
    (port,) = free_ports(1)
    exe = build(system, "pair", 1, tmp_path / "right", LEAVES=4, PORT_0=port,
                CONNECT_TIMEOUT_MS=500)  # fmt: skip
    server, accept = fake_left(port)
    with server:
        role = roles(exe)
        with accept():
            refused = assert_refused(role, {"peer-timeout"}, within=5.0)
    assert "left" in str(refused["message"])


def test_a_peer_silent_in_a_round_times_out(
    system: System, tmp_path: Path, roles: Callable[..., Role], secret: bytes
) -> None:
    (port,) = free_ports(1)
    exe = build(system, "pair", 1, tmp_path / "right", LEAVES=4, PORT_0=port,
                IO_TIMEOUT_MS=500)  # fmt: skip
    server, accept = fake_left(port)
    with server:
        role = roles(exe, "--params-out", str(tmp_path / "p"))
        with accept() as conn:
            accept_handshake(conn, secret, PLAN, 0, 2)
            started = time.monotonic()
            refused = assert_refused(role, {"peer-timeout"}, within=5.0)
            assert time.monotonic() - started >= 0.45
    assert refused["round"] == 1 and "500 ms" in str(refused["message"])
    assert not (tmp_path / "p").exists()


def test_a_peer_trickling_a_frame_is_refused_at_the_frame_deadline(
    system: System, tmp_path: Path, roles: Callable[..., Role], secret: bytes
) -> None:
    """Issue 9, item 7: a peer sending its frame one byte at a time held the role far past its
    1,500 ms deadline, because every byte restarted it. The deadline covers the whole frame:
    the role refuses while the trickle has most of its 60 bytes still to send."""
    (port,) = free_ports(1)
    exe = build(system, "pair", 1, tmp_path / "right", LEAVES=4, PORT_0=port,
                IO_TIMEOUT_MS=1500)  # fmt: skip
    server, accept = fake_left(port)
    with server:
        role = roles(exe, "--params-out", str(tmp_path / "p"))
        with accept() as conn:
            link = accept_handshake(conn, secret, PLAN, 0, 2)
            link.receive(PIECE)
            frame = frames.seal(link.send_key, 0, frames.piece(0, 0, 0, 2, bytes(PIECE)))
            sent = 0
            for byte in frame[:60]:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the role has closed the connection
                    break
                sent += 1
                try:  # the attacker's pace: a byte every 0.4 s, unless the role ends first
                    role.proc.wait(timeout=0.4)
                    break
                except subprocess.TimeoutExpired:
                    continue
            refused = assert_refused(role, {"peer-timeout"}, within=30.0)
    assert sent < 60, "the role waited out the whole trickle"
    assert refused["round"] == 1 and "1500 ms" in str(refused["message"])


def test_a_peer_trickling_its_handshake_is_refused_at_the_connect_deadline(
    system: System, tmp_path: Path, roles: Callable[..., Role], secret: bytes
) -> None:
    """The handshake's deadline is the whole of it too: an acceptor answering one byte every
    0.4 s is refused when connect_timeout_ms (1,500 ms) has passed, most of its HELLO unsent."""
    (port,) = free_ports(1)
    exe = build(system, "pair", 1, tmp_path / "right", LEAVES=4, PORT_0=port,
                CONNECT_TIMEOUT_MS=1500)  # fmt: skip
    server, accept = fake_left(port)
    with server:
        role = roles(exe, "--params-out", str(tmp_path / "p"))
        with accept() as conn:
            theirs = frames.Hello.parse(read_exactly(conn, frames.HELLO_BYTES))
            mine = frames.Hello(bytes.fromhex(PLAN), 0, 1, 1, 2, random.randbytes(32))
            mine = replace(mine, proof=frames.proof(secret, False, mine, theirs.nonce, mine.nonce))
            sent = 0
            for byte in mine.encode()[:60]:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    break
                sent += 1
                try:  # the attacker's pace, unless the role ends first
                    role.proc.wait(timeout=0.4)
                    break
                except subprocess.TimeoutExpired:
                    continue
            refused = assert_refused(role, {"peer-timeout"}, within=30.0)
    assert sent < 60, "the role waited out the whole trickle"
    assert refused["round"] is None and "1500 ms" in str(refused["message"])


# ---- (d) a role killed mid-run ----------------------------------------------------------------


@pytest.mark.parametrize("victim", ["right", "left"])
def test_a_killed_peer_stops_the_other_promptly(
    system: System, tmp_path: Path, roles: Callable[..., Role], victim: str
) -> None:
    (port,) = free_ports(1)
    exes = {
        name: build(
            system,
            "pair",
            i,
            tmp_path / name,
            LEAVES=4,
            PORT_0=port,
            STEPS=1_000_000,
            IO_TIMEOUT_MS=3000,
        )  # fmt: skip
        for i, name in enumerate(("left", "right"))
    }
    running = {n: roles(exes[n], "--params-out", str(tmp_path / f"{n}.params")) for n in exes}
    survivor = running["left" if victim == "right" else "right"]
    survivor.wait_for(lambda e: e["event"] == "step" and int(str(e["step"])) >= 20, timeout=30)
    running[victim].proc.send_signal(signal.SIGKILL)
    refused = assert_refused(survivor, {"peer-lost", "peer-timeout"}, within=2.0)
    steps = [int(str(e["step"])) for e in survivor.steps()]
    assert steps == list(range(1, len(steps) + 1))
    assert refused["round"] == steps[-1] + 1  # no step for the round that failed
    assert refused["role"] != victim and victim in str(refused["message"])
    assert not (tmp_path / "left.params").exists() and not (tmp_path / "right.params").exists()
