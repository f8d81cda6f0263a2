"""Large frames of a local link cross in shared pages (runtime/shared_pages.c): the header and
MAC on the Unix socket, the payload in a memory file the sender passed to its peer right after
the handshake. Real compiled roles, real processes on one machine, a system whose pieces and
parameter slices are 150 KB (over the 64 KB threshold):
- every plan (pair, hierarchy, star, partitioned parameters, gradients and state) says
  `shared_pages` for its links and ends with the single process's bits, checkpoints and a
  resume included;
- roles linked with a runtime that traps on undefined behaviour run it too;
- a role whose peer is killed mid-run is refused by name, not left waiting on a slot;
- a peer that offers pages of the wrong size (a Python peer that holds the launch secret) is
  refused `frame-unexpected`, naming the sizes.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
from auth_peer import connect_local, dial_handshake, launch_secret_file
from conftest import EXAMPLES, link_checked
from test_partitioned import Built, analysis, build_plan_roles, build_single, written_sha

from alpha_core.plan.projection import project
from alpha_core.run.launch import RoleOutcome, free_port_base

DIGITS = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
# 38,410 parameters: a piece is 153,644 bytes, a quarter of the parameters 38 KB (socket)
WIDE = (
    DIGITS.replace("steps 300", "steps 24")
    .replace("f32[64, 32]", "f32[64, 512]")
    .replace("f32[32]", "f32[512]")
    .replace("f32[32, 10]", "f32[512, 10]")
)
PLANS = {
    "pair": ("worker[2]", "pair", ""),
    "tree": ("worker[4]", "hierarchy(fanout: 2)", ""),
    "star": ("hub, worker[3]", "star(hub)", ""),
    "halves": (
        "worker[2]",
        "pair",
        "params partitioned over worker; grads partitioned over "
        "worker; optimizer partitioned over worker",
    ),  # fmt: skip
}


def _plan(name: str, every: int = 0) -> str:
    roles, topology, state = PLANS[name]
    body = f"  roles {roles}\n  topology {topology}\n"
    body += f"  state {{ {state} }}\n" if state else ""
    body += f"  checkpoint every {every} rounds\n" if every else ""
    return WIDE + f"\nplan p for digits {{\n{body}}}\n"


def _shared(outcomes: list[RoleOutcome]) -> set[object]:
    """Each link's shared_pages flag, over every role's links event."""
    flags: set[object] = set()
    for o in outcomes:
        (links,) = [e["links"] for e in o.events if e.get("event") == "links"]
        assert isinstance(links, list)
        flags |= {(link["transport"], link["shared_pages"]) for link in links}
    return flags


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    return written_sha(build_single(WIDE, tmp_path_factory.mktemp("single")).run("--quiet"))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_plans_over_shared_pages_have_the_single_process_bits(
    name: str, reference: str, tmp_path: Path
) -> None:
    outcomes = build_plan_roles(_plan(name), tmp_path).run()
    assert written_sha(outcomes) == reference
    assert _shared(outcomes) == {("local", True)}


def test_checkpoints_and_resume_over_shared_pages(reference: str, tmp_path: Path) -> None:
    """Capture acknowledgements (small, on the socket) between the large frames of checkpoint
    rounds; a resume from round 10 starts the slots' rounds afresh and ends with the bits."""
    built = build_plan_roles(_plan("tree", every=5), tmp_path)
    assert written_sha(built.run("--quiet")) == reference
    resumed = built.run("--quiet", "--resume", str(tmp_path / "checkpoints" / "round-00000010"))
    assert written_sha(resumed) == reference
    assert _shared(resumed) == {("local", True)}


def test_roles_with_a_trapping_runtime_cross_shared_pages(reference: str, tmp_path: Path) -> None:
    plan, _, diags = analysis(_plan("halves"), tmp_path).plan("p")
    assert plan is not None, diags
    base = free_port_base(plan.membership.total)
    roles = [
        (role.name, link_checked(plan.system, role, tmp_path / f"role-{role.index}"))
        for role in (project(plan, i, base) for i in range(plan.membership.total))
    ]
    outcomes = Built(roles, tmp_path).run()
    assert written_sha(outcomes) == reference
    assert _shared(outcomes) == {("local", True)}


def test_a_killed_peer_is_refused_by_name_not_waited_for(tmp_path: Path) -> None:
    built = build_plan_roles(_plan("pair").replace("steps 24", "steps 100000"), tmp_path, 3_000)
    procs = built.start("--quiet")
    time.sleep(1.0)
    victim, survivor = procs["worker[1]"], procs["worker[0]"]
    assert victim.poll() is None and survivor.poll() is None, "the pair ended before the kill"
    victim.kill()
    victim.wait()
    started = time.monotonic()
    _, err = survivor.communicate(timeout=30)
    assert survivor.returncode != 0
    assert "error[peer-lost]" in err or "error[peer-timeout]" in err, err[-400:]
    assert time.monotonic() - started < 10


def _listener_role(tmp_path: Path) -> tuple[subprocess.Popen[str], int, str]:
    """worker[0] of the pair, listening; returns it, its port and the plan's identity."""
    plan, _, diags = analysis(_plan("pair"), tmp_path).plan("p")
    assert plan is not None, diags
    base = free_port_base(2)
    role = replace(project(plan, 0, base), connect_timeout_ms=10_000)
    exe = link_checked(plan.system, role, tmp_path / "role-0")
    proc = subprocess.Popen(
        [exe, "--quiet", "--secret-file", launch_secret_file()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, base, plan.identity()


@pytest.mark.parametrize("offered", ["too small", "too large", "no file", "unsealed"])
def test_pages_of_the_wrong_size_are_refused_by_name(offered: str, tmp_path: Path) -> None:
    """Pages announced at another size than both schedules give, a size without its file, or
    the right size in a file that could shrink under the role's mapping (a plain file, not a
    memory file sealed against shrinking: a read past its end would be a SIGBUS)."""
    proc, port, identity = _listener_role(tmp_path)
    secret = Path(launch_secret_file()).read_bytes()
    try:
        with connect_local(port) as conn:
            dial_handshake(conn, secret, identity, 1, 0, 2)
            with tempfile.TemporaryFile() as pages:
                size = 64 + 2 * 153_664 + {"too small": -64, "too large": 4096}.get(offered, 0)
                os.ftruncate(pages.fileno(), size)
                message = struct.pack("<Q", size)
                if offered == "no file":
                    conn.sendall(message)
                else:
                    socket.send_fds(conn, [message], [pages.fileno()])
            _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "error[frame-unexpected]" in err, err[-400:]
    if offered == "unsealed":
        assert "sealed against shrinking" in err, err[-400:]
    else:
        assert "offered shared pages of" in err and "need 307392" in err, err[-400:]
        assert ("without their file" in err) == (offered == "no file"), err[-400:]
