"""The runtime's SHA-256 (runtime/sha256.c), which every checkpoint shard, manifest and digest
check goes through: built alone into a shared library (undefined-behaviour checks that trap),
with the SHA extensions when the CPU has them and with the portable rounds alone, it gives
hashlib's digests for every length and every way of cutting the input into updates; so does
the Armv8 path, built for AArch64 and run under qemu-user."""

from __future__ import annotations

import ctypes
import hashlib
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alpha_core.link.toolchain import run_zig, runtime_dir

MACHINE = platform.machine().lower()
TARGET = {"amd64": "x86_64", "arm64": "aarch64"}.get(MACHINE, MACHINE) + "-linux-gnu"


@pytest.fixture(scope="module", params=["native", "portable"])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    out = tmp_path_factory.mktemp("sha") / f"libsha-{request.param}.so"
    flags = ["-std=c11", "-O1", "-fPIC", "-Wall", "-Wextra", "-Werror"]
    flags += ["-fsanitize=undefined", "-fsanitize-trap=undefined"]
    if request.param == "portable":
        flags.append("-U__x86_64__")  # the SHA-NI path compiled out
    source = str(runtime_dir() / "sha256.c")
    run_zig(["cc", "-shared", "-target", TARGET, *flags, source, "-o", str(out)], cwd=out.parent)
    library = ctypes.CDLL(str(out))
    library.sha256_update.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    return library


def digest(lib: ctypes.CDLL, data: bytes, cuts: list[int]) -> str:
    state = ctypes.create_string_buffer(256)  # struct sha256 is 112 bytes
    lib.sha256_init(state)
    at = 0
    for cut in sorted(cuts) + [len(data)]:
        cut = min(cut, len(data))
        lib.sha256_update(state, data[at:cut], cut - at)
        at = max(at, cut)
    raw = ctypes.create_string_buffer(32)
    lib.sha256_final(state, raw)
    return raw.raw.hex()


def test_every_length_up_to_a_few_blocks(lib: ctypes.CDLL) -> None:
    data = bytes((7 * i + 3) % 251 for i in range(600))
    for n in range(600):
        assert digest(lib, data[:n], []) == hashlib.sha256(data[:n]).hexdigest(), n


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=5000), cuts=st.lists(st.integers(0, 5000), max_size=8))
def test_any_cut_into_updates(lib: ctypes.CDLL, data: bytes, cuts: list[int]) -> None:
    assert digest(lib, data, cuts) == hashlib.sha256(data).hexdigest()


def test_a_large_input(lib: ctypes.CDLL) -> None:
    data = hashlib.shake_256(b"alpha").digest(3 << 20)
    out = ctypes.create_string_buffer(65)
    lib.sha256_text(data, ctypes.c_size_t(len(data)), out)
    assert out.value.decode() == hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def aarch64_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runtime's SHA-256 in a static AArch64 program, run under qemu-user (whose CPU has
    the SHA-2 instructions, so the Armv8 rounds are the ones taken)."""
    out = tmp_path_factory.mktemp("sha-a64") / "sha256_stdin"
    fixture = Path(__file__).parent / "fixtures" / "runtime" / "sha256_stdin.c"
    flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{runtime_dir()}"]
    sources = [str(fixture), str(runtime_dir() / "sha256.c")]
    run_zig(
        ["cc", "-target", "aarch64-linux-musl", *flags, *sources, "-o", str(out)], cwd=out.parent
    )
    return out


@pytest.mark.skipif(shutil.which("qemu-aarch64") is None, reason="qemu-aarch64 not installed")
@settings(max_examples=25, deadline=None)
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(0, 3000), max_size=6))
def test_the_aarch64_rounds_give_the_same_digests(
    aarch64_exe: Path, data: bytes, cuts: list[int]
) -> None:
    run = subprocess.run(
        ["qemu-aarch64", str(aarch64_exe), *map(str, sorted(cuts))],
        input=data,
        capture_output=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode().strip() == hashlib.sha256(data).hexdigest()


@pytest.mark.skipif(shutil.which("qemu-aarch64") is None, reason="qemu-aarch64 not installed")
def test_the_aarch64_rounds_on_a_large_input(aarch64_exe: Path) -> None:
    data = hashlib.shake_256(b"alpha").digest(3 << 20)
    run = subprocess.run(["qemu-aarch64", str(aarch64_exe)], input=data, capture_output=True)
    assert run.stdout.decode().strip() == hashlib.sha256(data).hexdigest()
