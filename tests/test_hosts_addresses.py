"""Two roles of a hosts file at one HOST:PORT are refused when the plan is built, not at run
time as `role-identity-mismatch` or `peer-lost` (issue 22, item 6). The real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli
from test_partitioned import SHORT


@pytest.mark.parametrize(
    ("lines", "said", "line"),
    [
        # worker[1]'s port is given as worker[0]'s default (base + 1: hub is role 0)
        (["hub 127.0.0.1", "worker[0] 127.0.0.2", "worker[1] 127.0.0.2:{w0}"], "worker[1]", 3),
        (["hub 127.0.0.1:{p}", "worker[0] 127.0.0.1:{p}"], "worker[0]", 2),
        (["hub [::1]:{p}", "worker[0] [0::1]:{p}"], "worker[0]", 2),
        (["hub node-a:{p}", "worker[0] NODE-A.:{p}"], "worker[0]", 2),
    ],
)
def test_two_roles_at_one_address_are_refused_at_build(
    tmp_path: Path, lines: list[str], said: str, line: int
) -> None:
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)
    base = 27210
    rest = [f"worker[{w}] 127.0.0.{10 + w}" for w in range(4)]
    given = [x.format(w0=base + 1, p=base + 9) for x in lines]
    named = {x.split()[0] for x in given}
    hosts = tmp_path / "roles.hosts"
    hosts.write_text("\n".join(given + [r for r in rest if r.split()[0] not in named]) + "\n")
    out = tmp_path / "out"
    proc = cli(
        "build", str(source), "--plan", "star", "--hosts", str(hosts), "--port-base", str(base),
        "-o", str(out),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"error[hosts-duplicate]: role `{said}` is given " in proc.stderr
    assert "the address of" in proc.stderr and f"--> {hosts}:{line}:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(out.glob("worker-*"))  # nothing was compiled


def test_distinct_addresses_build(tmp_path: Path) -> None:
    source = tmp_path / "digits.alpha"
    source.write_text(SHORT)
    hosts = tmp_path / "roles.hosts"
    hosts.write_text(
        "hub 127.0.0.1\n" + "".join(f"worker[{w}] 127.0.0.1:{27230 + w}\n" for w in range(4))
    )
    proc = cli(
        "build", str(source), "--plan", "star", "--hosts", str(hosts), "--port-base", "27220",
        "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
