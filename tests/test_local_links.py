"""Roles on one machine link over a local socket: a peer at a loopback address is dialled by the
Unix stream socket its listener opens beside the TCP port (abstract name `alpha/HOST:PORT`),
with the same handshake, frames and MACs. Real compiled roles, real processes:
- a `pair` on 127.0.0.1 says `local` for its link and trains the reference's bits;
- where the local name is taken (here by the test), the acceptor refuses listen-failed by name;
- a stranger on the local socket is dropped by name, as on TCP, and the run goes on.
A dialler that finds no local socket at a loopback port goes on to TCP: the Python peers of
tests/test_net_roles.py and tests/test_auth_fuzz.py listen on TCP alone, and roles reach them.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import program_of
from reference import train

from alpha_core.build.executables import build_plan
from alpha_core.build.outputs import Deployment
from alpha_core.run.launch import RoleOutcome, free_port_base, run_roles
from alpha_core.workspace.analysis import Workspace

SOURCE = """system local_pair {
  data train: synthetic(rows: 64, features: 24, classes: 3, seed: 5, holdout: 0)
  batch 8 leaves 4
  param w: f32[24, 3] = normal(0.0, 0.1, seed: 1)
  param b: f32[3] = zeros
  fn model(x: f32[B, 24]) -> f32[B, 3] {
    return x @ w + b
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.05)
  steps 12
}

plan pair for local_pair {
  roles worker[2]
  topology pair
}
"""


def _build(tmp_path: Path) -> tuple[list[tuple[str, list[str]]], int, str]:
    path = tmp_path / "local.alpha"
    reference = train(program_of(SOURCE, path)).sha256
    plan, _, diags = Workspace().analyze_file(str(path)).plan("pair")
    assert plan is not None, diags
    base = free_port_base(plan.membership.total)
    result = build_plan(plan, None, tmp_path / "out", Deployment(base, "127.0.0.1"))
    commands = [
        (e.role, [str(e.path), "--params-out", str(tmp_path / f"{i}.params")])
        for i, e in enumerate(result.executables)
    ]
    return commands, base, reference


def _links(outcome: RoleOutcome) -> list[dict[str, object]]:
    events = [e for e in outcome.events if e.get("event") == "links"]
    assert len(events) == 1, outcome
    links = events[0]["links"]
    assert isinstance(links, list)
    return links


def _written(outcomes: list[RoleOutcome]) -> list[object]:
    """The parameters' SHA-256 of the role that writes them (worker[0])."""
    return [o.done.get("params_sha256") for o in outcomes if o.done and "params_sha256" in o.done]


def _hold_local_name(port: int) -> socket.socket:
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.bind(f"\0alpha/127.0.0.1:{port}")
    holder.listen(1)
    return holder


def test_a_pair_on_one_machine_links_over_the_local_socket(tmp_path: Path) -> None:
    commands, _, reference = _build(tmp_path)
    outcomes = run_roles(commands, keep_events=True)
    assert [o.exit_code for o in outcomes] == [0, 0], [(o.refusal, o.message) for o in outcomes]
    for outcome in outcomes:
        assert [link["transport"] for link in _links(outcome)] == ["local"]
    assert _written(outcomes) == [reference]


def test_a_taken_local_name_is_refused_by_name_as_a_taken_port_is(tmp_path: Path) -> None:
    """Whoever holds the name would answer the peer's dial: the acceptor refuses listen-failed
    at once, naming the socket, rather than leave its peer's handshake to time out."""
    commands, base, _ = _build(tmp_path)
    holder = _hold_local_name(base)  # worker[0] listens on the base port
    try:
        (role, command), _ = commands
        outcome = run_roles([(role, command)])[0]
    finally:
        holder.close()
    assert outcome.exit_code == 3 and outcome.refusal == "listen-failed", outcome
    assert f"alpha/127.0.0.1:{base}" in str(outcome.message)


def test_a_stranger_on_the_local_socket_is_dropped_by_name(tmp_path: Path) -> None:
    commands, base, reference = _build(tmp_path)
    secret = tmp_path / "secret"
    secret.write_bytes(os.urandom(32))
    secret.chmod(0o600)
    (_, first), (_, second) = commands
    # the acceptor alone first, so that the stranger arrives while it waits for its peer
    acceptor = subprocess.Popen(
        [*first, "--quiet", "--secret-file", str(secret)], stdout=subprocess.PIPE, text=True
    )
    try:
        stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + 10
        while True:  # until it listens: retried against a deadline
            try:
                stranger.connect(f"\0alpha/127.0.0.1:{base}")
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    pytest.fail("the acceptor never opened its local socket")
                stranger.close()
                stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                time.sleep(0.01)
        stranger.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(200))
        assert acceptor.stdout is not None
        dropped = json.loads(acceptor.stdout.readline())
        while dropped["event"] in ("start", "data"):  # what a role says before its links
            dropped = json.loads(acceptor.stdout.readline())
        assert dropped["event"] == "stranger-dropped", dropped
        assert dropped["from"] == "a local socket"
        stranger.close()
        dialer = subprocess.run(
            [*second, "--quiet", "--secret-file", str(secret)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        rest, _ = acceptor.communicate(timeout=120)
    finally:
        acceptor.kill()
    assert dialer.returncode == 0 and acceptor.returncode == 0, dialer.stderr
    done = [json.loads(line) for line in rest.splitlines() if line.strip()][-1]
    assert done["event"] == "done" and done["params_sha256"] == reference
    params = Path(str(done["params_file"])).read_bytes()
    assert hashlib.sha256(params).hexdigest() == reference
