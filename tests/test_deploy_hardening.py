"""What `alpha deploy` writes, against a hostile or a repeated output folder (issue 22, items 1,
5 and 8): a launch secret is never written through a link planted in its place and is mode
0600 from its creation; emitting twice into one folder replaces the first emit (a fresh
secret) instead of failing with an internal error; the Kubernetes values are checked as
Kubernetes reads them. The real CLI in a subprocess, on real files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import cli
from test_partitioned import SHORT

IMAGE = "registry.example/alpha-digits:1"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "digits.alpha"
    path.write_text(SHORT)
    return path


def k8s(source: Path, into: Path, *extra: str) -> tuple[int, str]:
    proc = cli("deploy", "k8s", str(source), "--plan", "star", "-o", str(into), *extra)
    return proc.returncode, proc.stdout + proc.stderr


def slurm_emit(source: Path, into: Path) -> tuple[int, str]:
    proc = cli(
        "deploy", "slurm", str(source), "--plan", "star", "--emit", str(into),
        "--nodelist", "n1,n2", "--node-dir", "/tmp",
    )  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


def _planted(into: Path, name: str, tmp_path: Path) -> Path:
    into.mkdir()
    target = tmp_path / "elsewhere.txt"
    target.write_text("someone else's file\n")
    target.chmod(0o644)
    (into / name).symlink_to(target)
    return target


def test_k8s_refuses_a_link_planted_where_the_secret_goes(source: Path, tmp_path: Path) -> None:
    into = tmp_path / "out"
    target = _planted(into, "secret.yaml", tmp_path)
    code, said = k8s(source, into, "--image", IMAGE)
    assert code == 1, said
    assert "error[secret-file-unsafe]" in said and "symbolic link" in said
    assert "Traceback" not in said
    assert target.read_text() == "someone else's file\n"  # nothing went through the link
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert (into / "secret.yaml").is_symlink()


def test_slurm_emit_refuses_a_link_planted_where_the_secret_goes(
    source: Path, tmp_path: Path
) -> None:
    into = tmp_path / "emit"
    target = _planted(into, "secret", tmp_path)
    code, said = slurm_emit(source, into)
    assert code == 1, said
    assert "error[secret-file-unsafe]" in said and "Traceback" not in said
    assert target.read_text() == "someone else's file\n"


def test_a_fifo_in_the_secrets_place_is_refused_without_blocking(
    source: Path, tmp_path: Path
) -> None:
    into = tmp_path / "out"
    into.mkdir()
    os.mkfifo(into / "secret.yaml")
    code, said = k8s(source, into, "--image", IMAGE)
    assert code == 1 and "error[secret-file-unsafe]" in said and "a FIFO" in said, said


def test_emitting_twice_into_one_folder_replaces_the_first(source: Path, tmp_path: Path) -> None:
    into = tmp_path / "emit"
    code, said = slurm_emit(source, into)
    assert code == 0, said
    first = (into / "secret").read_bytes()
    code, said = slurm_emit(source, into)
    assert code == 0, said
    assert "internal-error" not in said
    second = (into / "secret").read_bytes()
    assert len(second) == 32 and second != first  # a new launch: a new secret
    assert stat.S_IMODE((into / "secret").stat().st_mode) == 0o600
    code, said = k8s(source, tmp_path / "k", "--image", IMAGE)
    assert code == 0, said
    code, said = k8s(source, tmp_path / "k", "--image", IMAGE)
    assert code == 0, said
    assert stat.S_IMODE((tmp_path / "k" / "secret.yaml").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--image", "", "is not an image reference"),
        ("--image", "my image", "is not an image reference"),
        ("--image", "Registry.example/Alpha", "is not an image reference"),
        ("--namespace", "prod\nkind: Secret", "is not a Kubernetes namespace"),
        ("--namespace", "Prod", "is not a Kubernetes namespace"),
        ("--namespace", "x" * 64, "is not a Kubernetes namespace"),
    ],
)
def test_k8s_values_are_checked_as_kubernetes_reads_them(
    source: Path, tmp_path: Path, flag: str, value: str, said: str
) -> None:
    args = ["--image", IMAGE, flag, value] if flag != "--image" else [flag, value]
    code, out = k8s(source, tmp_path / "out", *args)
    assert code == 1, out
    assert "error[bad-argument]" in out and said in out
    assert not (tmp_path / "out" / "secret.yaml").exists()  # refused before anything is written


def test_a_valid_namespace_and_digest_reference_are_accepted(source: Path, tmp_path: Path) -> None:
    image = "registry.example.com:5000/team/alpha-digits@sha256:" + "ab" * 32
    code, out = k8s(source, tmp_path / "out", "--image", image, "--namespace", "ml-prod")
    assert code == 0, out
    assert 'namespace: "ml-prod"' in (tmp_path / "out" / "jobset.yaml").read_text()
