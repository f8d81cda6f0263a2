"""Issue 9, item 5: peers authenticate. Real executables built by the real compiler from
examples/digits.alpha, real sockets on loopback, and a Python test process as the attacker: it
knows the plan identity (read from alpha-build.json), joins first, replays a recorded launch
into the next one, replays frames inside a link and splices frames between two links through a
relay it controls. Every attempt is refused by name, and the real run either completes with
the single-process parameters or refuses by name: it never ends `done` with other parameters.
Also: the launch secret's sources and refusals, and a soak of the handshake against a role
whose whole runtime traps on undefined behaviour. Nothing sleeps to synchronise: the tests
wait on events, sockets and exits, each with a deadline."""

from __future__ import annotations

import json
import os
import queue
import random
import socket
import struct
import subprocess
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from auth_peer import connect, connect_local, read_exactly, write_secret
from conftest import EXAMPLES, run_exe

from alpha_core.build.executables import build_plan, build_program
from alpha_core.build.outputs import Deployment
from alpha_core.diagnostics.registry import REGISTRY
from alpha_core.link import frames
from alpha_core.run.launch import Launch, RoleOutcome, free_port_base, new_secret, run_roles
from alpha_core.workspace.analysis import Analysis, Workspace

DIGITS = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
SHORT = DIGITS.replace("steps 300", "steps 12")
WAIT = 60.0


def analysis(tmp: Path) -> Analysis:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "digits.alpha"
    path.write_text(SHORT)
    a = Workspace().analyze_file(str(path))
    assert a.diagnostics == [], [(d.name, d.message) for d in a.diagnostics]
    return a


@pytest.fixture(scope="module")
def single_sha(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("single")
    program, _ = analysis(tmp).program()
    assert program is not None
    code, events, stderr = run_exe(build_program(program, tmp / "out").executables[0].path)
    assert code == 0, stderr
    return str(events[-1]["params_sha256"])


def build(
    tmp: Path, plan_name: str, port_base: int, roles: list[int] | None = None, **deploy: object
) -> tuple[dict[str, str], str]:
    """The executables of the plan's roles (all, or those asked for) by role name, and the plan
    identity as alpha-build.json gives it (what any local process can read)."""
    plan, _, diags = analysis(tmp).plan(plan_name)
    assert plan is not None, diags
    d = replace(Deployment(port_base, "127.0.0.1", None, 30_000, 30_000), **deploy)  # type: ignore[arg-type]
    result = build_plan(plan, None, tmp / f"{plan_name}-{port_base}", d, roles)
    identity = json.loads(Path(result.manifest).read_text())["identity"]
    assert isinstance(identity, str) and len(identity) == 64
    return {e.role: e.path for e in result.executables}, identity


class Started:
    """Roles of one launch started together with a given secret; events read as they come."""

    def __init__(self, commands: list[tuple[str, list[str]]], secret: bytes) -> None:
        self.arrived: queue.Queue[tuple[str, dict[str, object]]] = queue.Queue()
        self.launch = Launch(commands, self._event, keep_events=True, secret=secret)

    def _event(self, role: str, event: dict[str, object]) -> None:
        self.arrived.put((role, event))

    def next_dropped(self) -> dict[str, object]:
        """The next stranger-dropped event (failing if the role ends or WAIT passes first)."""
        while True:
            _, event = self.arrived.get(timeout=WAIT)
            assert event["event"] not in ("refused", "done"), event
            if event["event"] == "stranger-dropped":
                return event

    def wait(self) -> list[RoleOutcome]:
        return self.launch.wait()


def command(exes: dict[str, str], tmp: Path, role: str) -> tuple[str, list[str]]:
    return role, [exes[role], "--params-out", str(tmp / f"{role}.params")]


def assert_done_with(outcomes: list[RoleOutcome], sha: str) -> None:
    assert all(o.exit_code == 0 for o in outcomes), [
        (o.role, o.refusal, o.message) for o in outcomes
    ]
    written = {
        o.done.get("params_sha256") for o in outcomes if o.done and o.done.get("params_sha256")
    }
    assert written == {sha}


def assert_never_done(outcomes: list[RoleOutcome]) -> None:
    """No role ends `done`: every one refused by a registered name."""
    for o in outcomes:
        assert o.exit_code == 3 and o.done is None, (o.role, o.exit_code, o.refusal, o.message)
        assert o.refusal in REGISTRY, o.refusal


# ---- a relay the attacker controls ------------------------------------------------------------


def read_message(conn: socket.socket, position: int) -> bytes | None:
    """One message of the dialler's stream: HELLO, AUTH, then frames with their MACs."""
    try:
        if position == 0:
            return read_exactly(conn, frames.HELLO_BYTES)
        if position == 1:
            return read_exactly(conn, frames.AUTH_BYTES)
        header = read_exactly(conn, frames.HEADER_BYTES)
        (payload,) = struct.unpack_from("<Q", header, 48)
        return header + read_exactly(conn, payload + frames.MAC_BYTES)
    except (AssertionError, OSError):
        return None


Tamper = Callable[["Relay", int, int, bytes], bytes]


class Relay:
    """Listens where the dialling roles were built to connect and forwards every connection to
    the real listener, recording what the diallers send, message by message; `tamper(relay,
    connection, position, message)` decides what is forwarded instead."""

    def __init__(self, port: int, target: int, tamper: Tamper | None = None) -> None:
        self.server = socket.create_server(("127.0.0.1", port))
        self.target = target
        self.tamper = tamper
        self.messages: dict[int, list[bytes]] = {}
        self.senders: dict[int, int] = {}
        self.changed = threading.Condition()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        index = 0
        while True:
            try:
                dialler, _ = self.server.accept()
            except OSError:
                return
            listener = connect(self.target, timeout=WAIT)  # retried until it listens
            listener.settimeout(None)
            for target, args in ((self._up, (index, dialler, listener)),
                                 (self._down, (listener, dialler))):  # fmt: skip
                thread = threading.Thread(target=target, args=args, daemon=True)
                thread.start()
                self.threads.append(thread)
            index += 1

    def _up(self, index: int, dialler: socket.socket, listener: socket.socket) -> None:
        with self.changed:
            self.messages[index] = []
        position = 0
        while (message := read_message(dialler, position)) is not None:
            with self.changed:
                if position == 0:
                    self.senders[index] = struct.unpack_from("<I", message, 8)[0]
                self.messages[index].append(message)
                self.changed.notify_all()
            sent = self.tamper(self, index, position, message) if self.tamper else message
            try:
                listener.sendall(sent)
            except OSError:
                break
            position += 1
        for s in (listener, dialler):
            s.close()

    def _down(self, listener: socket.socket, dialler: socket.socket) -> None:
        try:
            while chunk := listener.recv(1 << 16):
                dialler.sendall(chunk)
        except OSError:
            pass
        for s in (listener, dialler):
            s.close()

    def message_of(self, sender: int, position: int) -> bytes:
        """The message at `position` from the dialler that said it is role `sender`, waiting for
        it to arrive."""
        with self.changed:
            assert self.changed.wait_for(
                lambda: any(
                    self.senders.get(i) == sender and len(m) > position
                    for i, m in self.messages.items()
                ),  # fmt: skip
                timeout=WAIT,
            ), f"no message {position} from role {sender}"
            [index] = [i for i, s in self.senders.items() if s == sender]
            return self.messages[index][position]

    def close(self) -> None:
        self.server.close()


# ---- the launch secret ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    exes, _ = build(tmp_path_factory.mktemp("pair"), "pair", free_port_base(2))
    return exes


def without_secret_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "ALPHA_SECRET_FD"}


def refused_secret(
    exe: str, args: list[str], env: dict[str, str], **popen: object
) -> dict[str, object]:
    proc = subprocess.run(
        [exe, *args], capture_output=True, text=True, timeout=30, env=env, **popen
    )  # type: ignore[call-overload]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    assert events[-1]["event"] == "refused", events
    assert proc.stderr.startswith(f"error[{events[-1]['name']}]: ")
    assert not any(e["event"] == "step" for e in events)
    return dict(events[-1])


def world_readable(folder: Path) -> str:
    path = write_secret(folder / "s", bytes(32))
    os.chmod(path, 0o644)
    return path


def fifo(folder: Path) -> str:
    os.mkfifo(folder / "f", 0o600)  # no writer: a blocking read would never return
    return str(folder / "f")


SECRET_FILES: dict[str, tuple[Callable[[Path], str], str]] = {
    "missing": (lambda d: str(d / "nothing-here"), "secret-missing"),
    "short": (lambda d: write_secret(d / "s", bytes(31)), "secret-unreadable"),
    "long": (lambda d: write_secret(d / "s", bytes(33)), "secret-unreadable"),
    "empty": (lambda d: write_secret(d / "s", b""), "secret-unreadable"),
    "world-readable": (world_readable, "secret-unreadable"),
    "directory": (lambda d: str(d), "secret-unreadable"),
    "fifo": (fifo, "secret-unreadable"),
    "dev-zero": (lambda d: "/dev/zero", "secret-unreadable"),
}


@pytest.mark.parametrize("case", sorted(SECRET_FILES))
def test_a_secret_file_that_cannot_serve_is_refused_at_start_up(
    pair: dict[str, str], tmp_path: Path, case: str
) -> None:
    make, name = SECRET_FILES[case]
    path = make(tmp_path)
    refused = refused_secret(pair["worker[0]"], ["--secret-file", path], without_secret_env())
    assert refused["name"] == name and refused["round"] is None
    assert path in str(refused["message"])


def test_a_role_with_links_and_no_secret_at_all_is_refused(pair: dict[str, str]) -> None:
    refused = refused_secret(pair["worker[1]"], [], without_secret_env())
    assert refused["name"] == "secret-missing"
    assert "--secret-file" in str(refused["message"])


@pytest.mark.parametrize(
    ("value", "content", "name"),
    [("99", None, "secret-missing"), ("x1", None, "secret-unreadable"),
     ("PIPE", bytes(10), "secret-unreadable"), ("PIPE", bytes(40), "secret-unreadable")],
)  # fmt: skip
def test_an_inherited_descriptor_that_cannot_serve_is_refused(
    pair: dict[str, str], value: str, content: bytes | None, name: str
) -> None:
    env, fds = without_secret_env(), tuple[int, ...]()
    if value == "PIPE":
        read_end, write_end = os.pipe()
        os.write(write_end, content or b"")
        os.close(write_end)
        env["ALPHA_SECRET_FD"], fds = str(read_end), (read_end,)
    else:
        env["ALPHA_SECRET_FD"] = value
    try:
        refused = refused_secret(pair["worker[0]"], [], env, pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert refused["name"] == name, refused


def test_a_single_process_build_needs_no_secret(single_sha: str, tmp_path: Path) -> None:
    program, _ = analysis(tmp_path).program()
    assert program is not None
    exe = build_program(program, tmp_path / "out").executables[0].path
    done = subprocess.run(
        [exe], capture_output=True, text=True, timeout=60, env=without_secret_env()
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["params_sha256"] == single_sha


def test_a_compiled_in_secret_file_is_a_path_and_never_the_secret(
    single_sha: str, tmp_path: Path
) -> None:
    """`alpha build --secret-file PATH` (Deployment.secret_file): the path is compiled in, the
    roles read it at start-up, and the secret's bytes appear in no executable."""
    secret = new_secret()
    path = write_secret(tmp_path / "launch.secret", secret)
    exes, _ = build(tmp_path, "pair", free_port_base(2), secret_file=path)
    procs = [subprocess.Popen([exe, "--params-out", str(tmp_path / f"{i}.params")],
                              stdout=subprocess.PIPE, text=True, env=without_secret_env())
             for i, exe in enumerate(exes.values())]  # fmt: skip
    outs = [p.communicate(timeout=WAIT)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    shas = {json.loads(o.splitlines()[-1]).get("params_sha256") for o in outs} - {None}
    assert shas == {single_sha}
    for exe in exes.values():
        content = Path(exe).read_bytes()
        assert path.encode() in content and secret not in content


def test_each_launch_has_its_own_secret(tmp_path: Path) -> None:
    """Two roles of one build started by two launches (two secrets) never open their link:
    worker[1] refuses the answer it gets, worker[0] drops it and waits out its deadline."""
    plan_roles = build(tmp_path, "pair", free_port_base(2), connect_timeout_ms=3_000)[0]
    first = Started([command(plan_roles, tmp_path, "worker[0]")], new_secret())
    second = Started([command(plan_roles, tmp_path, "worker[1]")], new_secret())
    dropped = first.next_dropped()
    [dialler] = second.wait()
    [listener] = first.wait()
    assert dialler.refusal == "peer-unauthenticated", (dialler.refusal, dialler.message)
    assert dropped["name"] in ("peer-lost", "frame-corrupt"), dropped
    assert listener.refusal == "peer-unreachable" and "stranger" in str(listener.message)


# ---- the attacker -----------------------------------------------------------------------------


def test_an_impostor_that_joins_first_is_dropped_and_the_real_run_completes(
    single_sha: str, tmp_path: Path
) -> None:
    """The original failure: a process knowing the plan identity joined worker[0] first and fed
    it its own gradients. Now it cannot prove the secret: dropped, and the real peer joins."""
    base = free_port_base(2)
    exes, identity = build(tmp_path, "pair", base)
    secret = new_secret()
    listener = Started([command(exes, tmp_path, "worker[0]")], secret)
    impostor = frames.Hello(bytes.fromhex(identity), 1, 0, 1, 2, random.randbytes(32))
    with connect(base) as s:  # HELLO as worker[1], an AUTH under a guessed secret
        s.sendall(impostor.encode())
        answer = frames.Hello.parse(read_exactly(s, frames.HELLO_BYTES))
        assert answer.plan_identity == bytes.fromhex(identity) and answer.sender == 0
        guess = frames.proof(random.randbytes(32), True, impostor, impostor.nonce, answer.nonce)
        s.sendall(frames.auth(1, guess))
        dropped = listener.next_dropped()
        assert dropped["name"] == "peer-unauthenticated", dropped
    with connect(base) as s:  # HELLO, then its forged gradients straight away
        s.sendall(impostor.encode())
        piece = frames.piece(1, 0, 8, 16, bytes(4 * 12))
        s.sendall(frames.seal(random.randbytes(32), 0, piece))
        dropped = listener.next_dropped()  # 12 elements where an AUTH's 8 belong
        assert dropped["name"] == "frame-oversize", dropped
    real = Started([command(exes, tmp_path, "worker[1]")], secret)
    assert_done_with(listener.wait() + real.wait(), single_sha)


def test_a_recorded_launch_replayed_into_the_next_is_dropped(
    single_sha: str, tmp_path: Path
) -> None:
    """The attacker relays a whole launch (which completes: a relay is no peer, it only carries
    bytes) and records worker[1]'s side. In the next launch it replays the recording into
    worker[0] before the real worker[1] comes: the old proof does not cover the new nonce."""
    listen, relay_base = free_port_base(2), free_port_base(2)
    exes, _ = build(tmp_path, "pair", listen, [0])
    diallers, _ = build(tmp_path, "pair", relay_base, [1])
    relay = Relay(relay_base, listen)
    try:
        secret = new_secret()
        first = run_roles([command(exes, tmp_path, "worker[0]"),
                           command(diallers, tmp_path, "worker[1]")], secret=secret)  # fmt: skip
        assert_done_with(first, single_sha)
        recorded = b"".join(relay.message_of(1, p) for p in range(6))
        listener = Started([command(exes, tmp_path, "worker[0]")], secret)  # even the same secret
        with connect(listen) as s:
            s.sendall(recorded)
            dropped = listener.next_dropped()
            assert dropped["name"] == "peer-unauthenticated", dropped
        real = Started([command(diallers, tmp_path, "worker[1]")], secret)
        assert_done_with(listener.wait() + real.wait(), single_sha)
    finally:
        relay.close()


def test_a_frame_replayed_inside_a_link_is_forged(tmp_path: Path) -> None:
    """In round 3 the relay forwards worker[1]'s round-2 frame again (a valid frame with a
    valid MAC, at the wrong place): worker[0] refuses it as forged; no role ends done."""
    listen, relay_base = free_port_base(2), free_port_base(2)
    exes, _ = build(tmp_path, "pair", listen, [0])
    diallers, _ = build(tmp_path, "pair", relay_base, [1])

    def replay(relay: Relay, index: int, position: int, message: bytes) -> bytes:
        return relay.messages[index][3] if position == 4 else message

    relay = Relay(relay_base, listen, replay)
    try:
        both = [command(exes, tmp_path, "worker[0]"), command(diallers, tmp_path, "worker[1]")]
        outcomes = run_roles(both, keep_events=True)
    finally:
        relay.close()
    assert_never_done(outcomes)
    worker0 = outcomes[0]
    assert worker0.refusal == "frame-forged", (worker0.refusal, worker0.message)
    assert "round 3" in str(worker0.message)
    assert not list(tmp_path.glob("*.params"))


def test_frames_spliced_between_two_links_are_forged(tmp_path: Path) -> None:
    """Plan star: four workers dial the hub through the relay. In round 3 the relay sends
    worker[0]'s gradient piece (same size, a valid MAC of its own link) on worker[1]'s link:
    the hub refuses it as forged, and no role ends done."""
    listen, relay_base = free_port_base(5), free_port_base(5)
    hub, _ = build(tmp_path, "star", listen, [0])
    workers, _ = build(tmp_path, "star", relay_base, [1, 2, 3, 4])

    def splice(relay: Relay, index: int, position: int, message: bytes) -> bytes:
        if position == 4 and relay.senders.get(index) == 2:  # worker[1] (role index 2)
            other = relay.message_of(1, 4)  # worker[0]'s round-3 frame
            assert len(other) == len(message)
            return other
        return message

    relay = Relay(relay_base, listen, splice)
    try:
        commands = [command(hub, tmp_path, "hub")]
        commands += [command(workers, tmp_path, f"worker[{i}]") for i in range(4)]
        outcomes = run_roles(commands, keep_events=True)
    finally:
        relay.close()
    assert_never_done(outcomes)
    assert outcomes[0].refusal == "frame-forged", (outcomes[0].refusal, outcomes[0].message)
    assert "worker[1]" in str(outcomes[0].message) and "round 3" in str(outcomes[0].message)
    assert not list(tmp_path.glob("*.params"))


# ---- a soak of the handshake against a UB-trapping runtime ------------------------------------


def attacks(identity: bytes, secret: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    """What strangers send a listener: random bytes, truncations, flips, reorderings and
    replays of handshakes (a real proof, made with the secret, for another nonce)."""

    def hello(sender: int = 1, receiver: int = 0) -> frames.Hello:
        return frames.Hello(identity, sender, receiver, 1, 2, rng.randbytes(32))

    out: list[tuple[str, bytes]] = []
    for _ in range(14):
        out.append(("random", rng.randbytes(rng.randint(1, 400))))
    for _ in range(8):
        good = hello().encode()
        out.append(("truncated", good[: rng.randint(1, len(good) - 1)]))
    for _ in range(8):
        flipped = bytearray(hello().encode())
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        out.append(("flipped", bytes(flipped) + frames.auth(1, rng.randbytes(32))))
    for _ in range(4):
        h = hello()
        replayed = frames.proof(secret, True, h, h.nonce, rng.randbytes(32))
        out.append(("replayed-proof", h.encode() + frames.auth(1, replayed)))
    out.append(("auth-first", frames.auth(1, rng.randbytes(32)) + hello().encode()))
    out.append(("hello-twice", hello().encode() + hello().encode()))
    out.append(("auth-of-another-role", hello().encode() + frames.auth(0, bytes(32))))
    forged = frames.seal(rng.randbytes(32), 0, frames.piece(1, 0, 8, 16, bytes(48)))
    out.append(("frames-without-auth", forged))
    out.append(("wrong-role", hello(sender=7).encode() + frames.auth(7, rng.randbytes(32))))
    rng.shuffle(out)
    return out


def test_a_soak_of_strangers_against_a_ub_trapping_role(single_sha: str, tmp_path: Path) -> None:
    """Thirty-nine strangers, one after another, at a listener whose runtime traps on undefined
    behaviour, alternately on its TCP port and on the local socket beside it: each is dropped
    by a registered name (no trap, no refusal), then the real peer joins (over the local
    socket) and the run gives the single-process bits."""
    from conftest import link_checked

    from alpha_core.plan.projection import project

    plan, _, diags = analysis(tmp_path).plan("pair")
    assert plan is not None, diags
    base = free_port_base(2)
    exes = {}
    for index in (0, 1):
        role = replace(project(plan, index, base), connect_timeout_ms=120_000)
        exes[role.name] = link_checked(plan.system, role, tmp_path / f"checked-{index}")
    secret = new_secret()
    listener = Started([command(exes, tmp_path, "worker[0]")], secret)
    names = []
    battery = attacks(bytes.fromhex(plan.identity()), secret, random.Random(9))
    for i, (kind, data) in enumerate(battery):
        with (connect_local if i % 2 else connect)(base) as s:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)  # a truncation ends here
            except OSError:  # dropped already, as soon as its first bytes were judged
                pass
            dropped = listener.next_dropped()
        assert dropped["name"] in REGISTRY and str(dropped["message"]), (kind, dropped)
        names.append(dropped["name"])
    assert len(names) == len(battery) == 39
    assert {"peer-unauthenticated", "frame-corrupt", "frame-unexpected"} <= set(names)
    real = Started([command(exes, tmp_path, "worker[1]")], secret)
    outcomes = listener.wait() + real.wait()
    assert_done_with(outcomes, single_sha)
    for outcome in outcomes:
        (links,) = [e["links"] for e in outcome.events if e.get("event") == "links"]
        # the digits system's frames are small: the socket carries them whole
        assert links == [{"peer": links[0]["peer"], "transport": "local", "shared_pages": False}]


def test_alpha_build_compiles_in_the_secret_file_path(tmp_path: Path) -> None:
    """`alpha build --secret-file PATH`: each role's executable names the path (resolved)."""
    from conftest import cli

    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)
    secret = write_secret(tmp_path / "launch.secret", new_secret())
    out = tmp_path / "build"
    done = cli("build", str(source), "--plan", "pair", "-o", str(out), "--secret-file", secret)
    assert done.returncode == 0, done.stderr
    for exe in ("worker-0", "worker-1"):
        assert secret.encode() in (out / exe).read_bytes()
