"""One run, two instruction sets: a pairing puts some roles on x86-64 and some on AArch64 (run
here under qemu-user, real processes on loopback). The frames, the combine order and the
captures are the same whatever ISA writes them, so a mixed run ends with the single-process
SHA-256, whichever ISA writes the parameters, and its capture resumes on the other ISA."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, cli

from alpha_core.checkpoint import read_checkpoint

DIGITS_SHA = "5e1513e5f1af481bd39ea8996636710dc3a22d6ba4d85623d38f82cb6fdf2c6f"
SOURCE = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
SOURCE += """
plan owners for digits {
  roles worker[4]
  topology hierarchy(fanout: 2)
  state { params partitioned over worker; optimizer partitioned over worker }
  checkpoint every 100 rounds
}

pairing arm_root for pair {
  worker[0]: host aarch64
  worker[1]: host x86_64
}

pairing halves for owners {
  worker[0..2]: host x86_64
  worker[2..4]: host aarch64
}

pairing arm for owners {
  worker[*]: host aarch64
}
"""

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-aarch64") is None, reason="qemu-aarch64 not installed"
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mixed") / "digits.alpha"
    path.write_text(SOURCE)
    return path


def run(*args: str) -> dict[str, object]:
    proc = cli("run", *args, "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    body = json.loads(proc.stdout)
    assert isinstance(body, dict) and body["ok"], body
    return body


def written_sha(body: dict[str, object]) -> str:
    roles = body["roles"]
    assert isinstance(roles, list)
    [sha] = {r["params_sha256"] for r in roles if r["params_sha256"] is not None}
    return str(sha)


def test_an_aarch64_root_and_an_x86_worker_end_with_the_single_process_bits(
    source: Path,
) -> None:
    body = run(str(source), "--plan", "pair", "--pairing", "arm_root")
    assert written_sha(body) == DIGITS_SHA


def test_a_mixed_partitioned_run_resumes_on_the_other_isa(source: Path, tmp_path: Path) -> None:
    """Four owners of partitioned parameters and optimizer state, two per ISA, capture every
    100 rounds; the capture of round 200 resumes on four AArch64 owners and on the
    single-process x86-64 build, each ending with the single-process bits."""
    mixed = tmp_path / "mixed"
    body = run(
        str(source), "--plan", "owners", "--pairing", "halves", "--checkpoint-dir", str(mixed)
    )
    assert written_sha(body) == DIGITS_SHA
    capture = mixed / "round-00000200"
    assert {m.role for m in read_checkpoint(capture).manifests()} == {
        f"worker[{w}]" for w in range(4)
    }
    arm = run(
        str(source),
        "--plan",
        "owners",
        "--pairing",
        "arm",
        "--resume",
        str(capture),
        "--checkpoint-dir",
        str(tmp_path / "arm"),
    )
    assert written_sha(arm) == DIGITS_SHA
    single = run(str(source), "--system", "digits", "--resume", str(capture))
    assert written_sha(single) == DIGITS_SHA
