"""The digits executable: reproducible, static, small, needs no Python, refuses other data."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, cli, run_exe

from alpha_core.build.executables import build_program
from alpha_core.workspace.analysis import Workspace

DIGITS = EXAMPLES / "digits.alpha"


def _digits_program() -> object:
    program, diags = Workspace().analyze_file(str(DIGITS)).program()
    assert program is not None, diags
    return program


@pytest.fixture(scope="module")
def digits_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("digits")
    result = build_program(_digits_program(), out)  # type: ignore[arg-type]
    return Path(result.executables[0].path)


def program_headers(path: Path) -> list[int]:
    """The p_type of every ELF program header."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2  # 64-bit
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    return [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]


def test_build_is_reproducible(digits_exe: Path, tmp_path: Path) -> None:
    again = build_program(_digits_program(), tmp_path)  # type: ignore[arg-type]
    assert Path(again.executables[0].path).read_bytes() == digits_exe.read_bytes()


def test_static_and_small(digits_exe: Path) -> None:
    types = program_headers(digits_exe)
    assert 3 not in types, "PT_INTERP: the executable asks for a dynamic loader"
    assert 2 not in types, "PT_DYNAMIC: the executable links shared libraries"
    size = digits_exe.stat().st_size  # the kernels three times (x86-64-v2, v3, v4): levels.py
    assert size < 256_000, f"{size} bytes"
    if shutil.which("file"):
        assert (
            "statically linked"
            in subprocess.run(["file", str(digits_exe)], capture_output=True, text=True).stdout
        )


def test_runs_without_python(digits_exe: Path, tmp_path: Path) -> None:
    """A bare environment: no PATH, no Python, no virtual environment, another directory."""
    exe = tmp_path / "digits"
    shutil.copy(digits_exe, exe)
    proc = subprocess.run(
        [str(exe), "--data", str(EXAMPLES / "data" / "digits.csv")],
        capture_output=True,
        text=True,
        env={},
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout.splitlines()[-1])
    assert done["event"] == "done"
    assert done["holdout_accuracy"] >= 0.93
    assert (tmp_path / "digits.params").stat().st_size == 2410 * 4


@pytest.mark.parametrize("edit", ["truncate", "flip-digit", "append-row"])
def test_other_data_is_refused_and_nothing_written(
    digits_exe: Path, tmp_path: Path, edit: str
) -> None:
    text = (EXAMPLES / "data" / "digits.csv").read_text()
    if edit == "truncate":
        text = text[: len(text) // 2]
    elif edit == "flip-digit":
        i = text.index("16")
        text = text[:i] + "15" + text[i + 2 :]
    else:
        text += text.splitlines()[0] + "\n"
    bad = tmp_path / "digits.csv"
    bad.write_text(text)
    out = tmp_path / "params"
    code, events, stderr = run_exe(str(digits_exe), "--data", str(bad), "--params-out", str(out))
    assert code == 3
    assert events[-1]["event"] == "refused"
    assert events[-1]["name"] == "data-digest-mismatch"
    assert "error[data-digest-mismatch]" in stderr
    assert not any(e["event"] == "step" for e in events)
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_cli_build_json(tmp_path: Path) -> None:
    proc = cli("build", str(DIGITS), "-o", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    [exe] = body["executables"]
    assert exe["target"] == "x86_64" and exe["size"] == Path(exe["path"]).stat().st_size
    manifest = json.loads((tmp_path / "alpha-build.json").read_text())
    assert manifest["identity"] == body["identity"] and manifest["params"] == 2410


def test_cli_run_json_reports_accuracy_and_digest() -> None:
    proc = cli("run", str(EXAMPLES / "blobs.alpha"), "--json")
    assert proc.returncode == 0, proc.stderr
    [role] = json.loads(proc.stdout)["roles"]
    assert role["exit_code"] == 0 and role["refusal"] is None
    assert len(role["params_sha256"]) == 64 and 0 <= role["holdout_accuracy"] <= 1


def test_cli_run_shows_progress_and_result() -> None:
    proc = cli("run", str(EXAMPLES / "blobs.alpha"))
    assert proc.returncode == 0, proc.stderr
    assert "held-out accuracy" in proc.stdout and "parameters sha256" in proc.stdout
    assert "200/200" in proc.stderr


def test_every_runtime_refusal_is_registered() -> None:
    """The runtime names its refusals in runtime/refusal.h; each has an entry in the registry."""
    import re

    from alpha_core.diagnostics.registry import REGISTRY

    header = (ROOT / "runtime" / "refusal.h").read_text()
    names = re.findall(r'#define REFUSAL_\w+ "([a-z-]+)"', header)
    assert len(names) >= 8
    assert [n for n in names if n not in REGISTRY] == []


def test_wider_vectors_change_speed_not_bits(tmp_path: Path) -> None:
    """x86-64-v3 (AVX2) kernels give the bits of the x86-64-v2 baseline."""
    assert " avx2" in Path("/proc/cpuinfo").read_text(), "this test needs an AVX2 machine"
    from alpha_core.build.outputs import Deployment

    program = _digits_program()
    shas = []
    for cpu in ("x86-64-v2", "x86-64-v3"):
        result = build_program(program, tmp_path / cpu, deployment=Deployment(cpu=cpu))  # type: ignore[arg-type]
        code, events, stderr = run_exe(result.executables[0].path, "--quiet")
        assert code == 0, stderr
        shas.append(events[-1]["params_sha256"])
    assert shas[0] == shas[1]
