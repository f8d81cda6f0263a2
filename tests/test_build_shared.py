"""Building a plan: the program part (ALPHA_PROGRAM and the embedded data) and the kernels are
compiled once and shared by every role and by later builds; roles are linked side by side and
come out as if each were built alone; a role that cannot be written is refused by name."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import run_exe

from alpha_core.build.executables import build_plan, build_program, kernels_file, kernels_object
from alpha_core.build.outputs import BuiltExecutable, Deployment
from alpha_core.check.program import Program
from alpha_core.codegen.program_c import program_c, program_part
from alpha_core.link.link import link_executable
from alpha_core.link.object_cache import c_object
from alpha_core.link.toolchain import LinkError, cache_root
from alpha_core.plan.model import Plan
from alpha_core.run.launch import free_port_base
from alpha_core.workspace.analysis import Workspace


def source(seed: int, rows: int = 300) -> str:
    return f"""system s {{
  data train: synthetic(rows: {rows}, features: 6, classes: 3, seed: {seed}, holdout: 60)
  batch 16 leaves 4
  param w: f32[6, 3] = normal(0.0, 0.1, seed: 1)
  fn model(x: f32[B, 6]) -> f32[B, 3] {{
    return x @ w
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 2
}}
plan p for s {{
  roles worker[4]
  topology hierarchy(fanout: 2)
}}
"""


def checked_plan(text: str, folder: Path) -> Plan:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "s.alpha"
    path.write_text(text)
    plan, _, diags = Workspace().analyze_file(str(path)).plan("p")
    assert plan is not None, [(d.name, d.message) for d in diags]
    return plan


def program_object(program: Program) -> Path:
    """Where the build keeps the system's program part for x86_64 (found, not made, once
    a build has made it)."""
    part = program_part(program, None)
    return c_object("program", "x86_64-linux-musl", part.c, part.blobs)


def deployment() -> Deployment:
    return Deployment(port_base=free_port_base(4))


def test_roles_and_later_builds_share_the_program_part_and_kernels(tmp_path: Path) -> None:
    # a data set no earlier run made, so this build is the one that compiles its program part
    plan = checked_plan(source(uuid.uuid4().int % 1_000_000), tmp_path)
    d = deployment()
    build_plan(plan, None, tmp_path / "first", d)
    part = program_object(plan.system)
    kernels = kernels_file(plan.system, "x86_64")
    made = (part.stat().st_mtime_ns, part.stat().st_ino, kernels.stat().st_mtime_ns)
    again = build_plan(plan, None, tmp_path / "second", d)
    # found again, not made again
    assert (part.stat().st_mtime_ns, part.stat().st_ino, kernels.stat().st_mtime_ns) == made
    first = sorted((tmp_path / "first").glob("worker-*"))
    assert [p.read_bytes() for p in first] == [Path(e.path).read_bytes() for e in again.executables]


def test_parallel_roles_are_the_roles_built_alone(tmp_path: Path) -> None:
    plan = checked_plan(source(5), tmp_path)
    d = deployment()
    told: list[tuple[str, int, int]] = []

    def on_built(exe: BuiltExecutable, done: int, total: int) -> None:
        told.append((exe.role, done, total))

    whole = build_plan(plan, None, tmp_path / "all", d, on_built=on_built)
    assert [e.role for e in whole.executables] == [f"worker[{i}]" for i in range(4)]
    assert sorted(r for r, _, _ in told) == [e.role for e in whole.executables]
    assert [(done, total) for _, done, total in told] == [(i, 4) for i in range(1, 5)]
    for i, exe in enumerate(whole.executables):
        alone = build_plan(plan, None, tmp_path / f"alone-{i}", d, roles=[i])
        assert alone.executables[0].sha256 == exe.sha256, exe.role
        assert Path(alone.executables[0].path).read_bytes() == Path(exe.path).read_bytes()


def test_concurrent_builds_of_a_new_program_agree(tmp_path: Path) -> None:
    plan = checked_plan(source(uuid.uuid4().int % 1_000_000), tmp_path)
    d = deployment()
    results: dict[int, list[str]] = {}

    def build(n: int) -> None:
        results[n] = [e.sha256 for e in build_plan(plan, None, tmp_path / f"b{n}", d).executables]

    threads = [threading.Thread(target=build, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and results[0] == results[1]
    # no staged leftovers of this program's objects (another test's build may be staging its own)
    made = program_object(plan.system)
    assert not list(made.parent.glob(f".{made.name}.*"))


def test_a_killed_builds_staged_files_are_swept(tmp_path: Path) -> None:
    """SIGKILL skips a build's cleanup and leaves its staged file in the shared cache: the next
    write there removes staged files over an hour old, and leaves a running build's alone."""
    plan = checked_plan(source(uuid.uuid4().int % 1_000_000), tmp_path)  # a new program part
    cache = cache_root() / "shared" / "x86_64-linux-musl"
    cache.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex
    stale, fresh = cache / f".killed-{tag}.o.x", cache / f".running-{tag}.o.x"
    stale.write_bytes(b"")
    fresh.write_bytes(b"")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    try:
        build_plan(plan, None, tmp_path / "b", deployment())
        assert not stale.exists() and fresh.exists()
    finally:
        stale.unlink(missing_ok=True)
        fresh.unlink(missing_ok=True)


def test_a_role_that_cannot_be_written_is_refused_by_name(tmp_path: Path) -> None:
    plan = checked_plan(source(5), tmp_path)
    out = tmp_path / "out"
    (out / "worker-2").mkdir(parents=True)
    (out / "worker-2" / "keep").write_text("a folder where worker[2]'s executable goes")
    with pytest.raises(LinkError) as refused:
        build_plan(plan, None, out, deployment())
    assert refused.value.name == "output-unwritable"
    assert str(out / "worker-2") in refused.value.message
    assert not (out / "alpha-build.json").exists()


def test_a_shared_cache_that_cannot_be_written_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a cache root whose toolchain folders are the real, warm ones and whose shared/ is a file
    real = cache_root()
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in ("zig", "runtime"):
        (cache / name).symlink_to(real / name)
    (cache / "shared").write_text("a file where the shared objects go")
    monkeypatch.setenv("ALPHA_CACHE_DIR", str(cache))
    plan = checked_plan(source(5), tmp_path)
    with pytest.raises(LinkError) as refused:
        build_plan(plan, None, tmp_path / "out", deployment())
    assert refused.value.name == "cache-unusable"
    assert str(cache / "shared") in refused.value.message


def test_embedded_data_is_included_as_bytes_with_the_bits_of_literals(tmp_path: Path) -> None:
    small = checked_plan(source(7), tmp_path / "small").system
    big = checked_plan(source(7, rows=40_000), tmp_path / "big").system
    # the C does not grow with the rows: they are files the assembler includes
    part = program_part(big, None)
    assert len(part.c) < len(program_part(small, None).c) + 64
    assert sum(len(data) for _, data in part.blobs) == 40_000 * (6 + 1) * 4
    included = build_program(big, tmp_path / "included").executables[0].path
    # the same system with its rows spelled as C literals, linked by hand with the same kernels
    literal = link_executable(
        "x86_64-linux-musl",
        kernels_object(big, "x86_64"),
        program_c(big, None),
        tmp_path / "literal",
    )
    shas = []
    for exe in (included, str(literal)):
        code, events, stderr = run_exe(exe, "--quiet")  # the runtime checks the data's SHA-256
        assert code == 0, stderr
        shas.append(events[-1]["params_sha256"])
    assert shas[0] == shas[1]
