"""Name resolution within a role's deadline, against a real resolver.

Each role runs in a network namespace of its own (`ip netns exec`), which binds the files of
/etc/netns/NS over /etc/hosts and /etc/resolv.conf: the static executable's own resolver
(musl's) reads them, and asks the name server they name, a UDP server this test starts inside
the namespace at 127.0.0.53:53. That server answers every question "no such name" at once,
except about a name whose first label is `unanswered`: those it never answers, as a name server
that is down or unreachable would not, and musl's resolver waits its own timeout for it (5 s
here, resolv.conf's `options timeout:5`).

- A peer whose name the name server never answers is refused `peer-unresolvable` at the
  connect deadline (2 s), not after the resolver's 5 s.
- A role whose own listening name does not resolve when it starts (no such name) but does a
  second later (it is added to /etc/hosts) keeps looking it up, listens, and runs to the end with
  its peer, which dials that name.
- A listening name that never resolves (no such name, or no answer) is refused `listen-failed`
  at the deadline, naming it.

The elapsed times asserted are bounds on a deadline (2 s, with a generous margin still far
below the resolver's 5 s), not a benchmark."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from auth_peer import write_secret
from test_net_roles import NET, System, system  # noqa: F401  (system: the fixture)

from alpha_core.link import link_executable

NAME_SERVER = "127.0.0.53"
PORT = 47131  # this file's range: 47100-47199
DEADLINE_MS = 2000
WITHIN_S = 4.0  # the deadline and a generous margin; the resolver alone waits 5 s

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="network namespaces need root and iproute2",
)

# The name server: one question a datagram (musl asks for A and AAAA of each name); prints the
# name of every question it gets, so the test knows the resolver really asked.
SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
print("ready", flush=True)
while True:
    query, sender = s.recvfrom(4096)
    if len(query) < 12:
        continue
    at, labels = 12, []
    while at < len(query) and query[at]:
        labels.append(query[at + 1 : at + 1 + query[at]].decode("ascii", "replace"))
        at += 1 + query[at]
    name = ".".join(labels)
    print(name, flush=True)
    if labels and labels[0] == "unanswered":
        continue
    question = query[12 : at + 5]
    # the same id; a response, recursion desired and available, rcode 3 (no such name); the
    # question echoed, no answer, authority or additional records
    s.sendto(query[:2] + b"\x81\x83\x00\x01" + bytes(6) + question, sender)
"""


@dataclass
class Namespace:
    name: str
    server: subprocess.Popen[str]
    asked: list[str] = field(default_factory=list)

    @property
    def etc(self) -> Path:
        return Path("/etc/netns") / self.name  # `ip netns exec` binds these files over /etc

    def add_host(self, address: str, name: str) -> None:
        """Appends to the namespace's /etc/hosts in place: the bind mount shows the same file
        (a rename would leave the old one mounted), and musl reads it at every lookup."""
        with (self.etc / "hosts").open("a") as hosts:
            hosts.write(f"{address} {name}\n")

    def questions(self, name: str) -> int:
        return sum(asked == name for asked in list(self.asked))


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def namespace() -> Iterator[Namespace]:
    name = f"alpha-res-{secrets.token_hex(3)}"
    etc = Path("/etc/netns") / name
    server: subprocess.Popen[str] | None = None
    try:
        _ip("netns", "add", name)
        _ip("-n", name, "link", "set", "lo", "up")
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text("127.0.0.1 localhost\n")
        (etc / "resolv.conf").write_text(f"nameserver {NAME_SERVER}\noptions timeout:5\n")
        server = subprocess.Popen(
            ["ip", "netns", "exec", name, sys.executable, "-c", SERVER, NAME_SERVER],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready"
        ns = Namespace(name, server)

        def listen() -> None:
            assert server is not None and server.stdout is not None
            for line in server.stdout:
                ns.asked.append(line.strip())

        threading.Thread(target=listen, daemon=True).start()
        yield ns
    finally:
        if server is not None:
            server.kill()
            server.wait(timeout=10)
        pids = subprocess.run(
            ["ip", "netns", "pids", name], capture_output=True, text=True, timeout=30
        ).stdout.split()
        for pid in pids:  # every process in it was started by this test
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        shutil.rmtree(etc, ignore_errors=True)
        try:
            Path("/etc/netns").rmdir()  # when no other namespace keeps files there
        except OSError:
            pass


def build_pair(system: System, index: int, host: str, timeout_ms: int, out: Path) -> Path:  # noqa: F811
    """A role of tests/fixtures/net/pair.c.in ("left" listens, "right" dials it) whose listening
    host, and the host its peer dials, is `host`; `timeout_ms` is its connect deadline."""
    values = {
        **system.fields,
        "LEAVES": 4,
        "BATCH": 4 * int(str(system.fields["LEAF_SIZE"])),
        "PORT_0": PORT,
        "CONNECT_TIMEOUT_MS": timeout_ms,
    }
    text = (NET / "program.c.in").read_text()
    text += f"\n#define ALPHA_FIXTURE_ROLE {index}\n\n" + (NET / "pair.c.in").read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", str(value))
    assert "@" not in text and text.count('"127.0.0.1"') == 2, text
    text = text.replace('"127.0.0.1"', f'"{host}"')
    return link_executable("x86_64-linux-musl", system.kernels, text, out)


@dataclass
class Ended:
    code: int
    stdout: str
    stderr: str
    seconds: float


def start(namespace: Namespace, exe: Path, folder: Path) -> tuple[subprocess.Popen[str], float]:
    secret = folder / "launch.secret"
    if not secret.exists():
        write_secret(secret, hashlib.sha256(folder.name.encode()).digest())
    command = ["ip", "netns", "exec", namespace.name, str(exe), "--secret-file", str(secret)]
    command += ["--params-out", str(exe) + ".params", "--quiet"]
    began = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, began


def finish(proc: subprocess.Popen[str], began: float, timeout: float = 30) -> Ended:
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    return Ended(proc.returncode, stdout, stderr, time.monotonic() - began)


def assert_refused_at_deadline(ended: Ended, name: str) -> str:
    assert ended.code == 3, (ended.code, ended.stdout, ended.stderr)
    assert ended.stderr.startswith(f"error[{name}]: "), ended.stderr
    # not before the deadline (the name might still have appeared), and well before the
    # resolver's own 5 s
    assert DEADLINE_MS / 1000 - 0.05 <= ended.seconds < WITHIN_S, ended
    return ended.stderr


def test_a_peer_the_name_server_never_answers_is_refused_at_the_deadline(
    namespace: Namespace,
    system: System,  # noqa: F811
    tmp_path: Path,
) -> None:
    host = f"unanswered.{secrets.token_hex(3)}.alpha.test"
    right = build_pair(system, 1, host, DEADLINE_MS, tmp_path / "right")
    ended = finish(*start(namespace, right, tmp_path))
    message = assert_refused_at_deadline(ended, "peer-unresolvable")
    assert f"cannot resolve {host}, the host of left, within {DEADLINE_MS} ms" in message
    assert message.rstrip().endswith("no answer yet from the name server")
    assert namespace.questions(host) >= 1  # the real resolver asked the silent name server


def test_a_listening_name_that_resolves_late_is_retried_and_the_run_ends(
    namespace: Namespace,
    system: System,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Both roles look the name up: left to listen on it, right to dial it. For the first second
    there is no such name; then it is added to /etc/hosts, and both find it."""
    host = f"late.{secrets.token_hex(3)}.alpha.test"
    left = build_pair(system, 0, host, 10000, tmp_path / "left")
    right = build_pair(system, 1, host, 10000, tmp_path / "right")
    started = [start(namespace, exe, tmp_path) for exe in (left, right)]
    time.sleep(1.0)  # the name is published a second after the roles started
    namespace.add_host("127.0.0.2", host)
    ended = [finish(*s) for s in started]
    for role in ended:
        assert role.code == 0, role
        assert '"event":"done"' in role.stdout, role
    assert ended[0].seconds >= 1.0
    assert (tmp_path / "left.params").exists() and (tmp_path / "right.params").exists()
    assert namespace.questions(host) >= 4  # each role asked, and at least one asked again


@pytest.mark.parametrize("answer", ["no-such-name", "unanswered"])
def test_a_listening_name_that_never_resolves_is_refused_at_the_deadline(
    namespace: Namespace,
    system: System,  # noqa: F811
    tmp_path: Path,
    answer: str,
) -> None:
    first = "never" if answer == "no-such-name" else "unanswered"
    host = f"{first}.{secrets.token_hex(3)}.alpha.test"
    left = build_pair(system, 0, host, DEADLINE_MS, tmp_path / "left")
    ended = finish(*start(namespace, left, tmp_path))
    message = assert_refused_at_deadline(ended, "listen-failed")
    assert f"cannot listen on {host}:{PORT}" in message
    assert f"the name did not resolve within {DEADLINE_MS} ms" in message
    if answer == "no-such-name":  # looked up again and again (A and AAAA each time)
        assert message.rstrip().endswith("Name does not resolve")  # musl's reason
        assert namespace.questions(host) >= 6
    else:
        assert message.rstrip().endswith("no answer yet from the name server")
