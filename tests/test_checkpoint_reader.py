"""The checkpoint reader (alpha_core.checkpoint) on a real capture, then fuzzed: flipped,
truncated, extended, replaced and deleted files; manifests rewritten with arbitrary JSON (their
digests made to match, so the checks behind the digests are reached); garbage text. The reader
raises nothing but CheckpointError, and on byte-level damage it names the same refusal as the
runtime's own reader (`--resume PATH --evaluate-only`)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_partitioned import (  # noqa: F401  (_kernels_once: the autouse fixture)
    SHORT,
    Built,
    _kernels_once,
    build_plan_roles,
    build_single,
    plan_text,
    written_sha,
)

from alpha_core.checkpoint import REFUSALS, CheckpointError, kind_names, read_checkpoint
from alpha_core.checkpoint.pack import split, with_manifest


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Built]:
    """Four owners with everything partitioned (captures at 20 and 40), and the single-process
    build of the same system that resumes from them."""
    four = build_plan_roles(plan_text(4, "params", every=20), tmp_path_factory.mktemp("four"))
    written_sha(four.run("--quiet"))
    single = build_single(SHORT, tmp_path_factory.mktemp("single"))
    return four, single


@pytest.fixture(scope="module")
def pristine(built: tuple[Built, Built]) -> Path:
    return built[0].folder / "checkpoints"


@pytest.fixture(scope="module")
def identity(built: tuple[Built, Built]) -> str:
    start = subprocess.run(
        [built[1].roles[0][1], "--resume", "/nonexistent"], capture_output=True, text=True
    )
    return str(json.loads(start.stdout.splitlines()[0])["identity"])


def test_a_capture_reads_back_whole(pristine: Path, built: tuple[Built, Built]) -> None:
    ckpt = read_checkpoint(pristine)
    assert ckpt.latest and ckpt.path.name == "round-00000040" and ckpt.round == 40
    assert ckpt.kinds == kind_names("adam", 2, 2) == ("params", "adam.m", "adam.v", "adam.scalars")
    assert [m.role for m in ckpt.manifests()] == [
        "worker[0]",
        "worker[1]",
        "worker[2]",
        "worker[3]",
    ]
    assert ckpt.values("params").tobytes() == (built[0].folder / "out.params").read_bytes()
    b1, b2 = ckpt.values("adam.scalars")
    assert b1 == pytest.approx(0.9**40, rel=1e-5) and b2 == pytest.approx(0.999**40, rel=1e-5)
    text = ckpt.summary()
    assert "round 40" in text and "worker[3]" in text and "every SHA-256 verified" in text
    data = json.loads(json.dumps(ckpt.to_json()))
    assert data["round"] == 40 and data["bytes"] == 4 * (3 * ckpt.n_params + 2)
    assert {s["role"] for s in data["shards"] if s["kind"] == "adam.v"} == {
        f"worker[{w}]" for w in range(4)
    }
    earlier = read_checkpoint(pristine / "round-00000020")
    assert not earlier.latest and earlier.round == 20


def test_the_identity_is_checked_when_given(pristine: Path, identity: str) -> None:
    assert read_checkpoint(pristine, identity=identity).identity == identity
    with pytest.raises(CheckpointError) as refused:
        read_checkpoint(pristine, identity="0" * 64)
    assert refused.value.name == "checkpoint-identity-mismatch"
    assert identity in refused.value.message and "0" * 64 in refused.value.message


# ---- fuzzing ----------------------------------------------------------------------------------


@pytest.fixture
def scratch(pristine: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def _fresh(pristine: Path, scratch: Path) -> Path:
    work = scratch / "c"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work, copy_function=shutil.copyfile)
    return work


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _damage(path: Path, how: str, data: st.DataObject) -> None:
    if how == "delete":
        path.unlink()
        return
    content = bytearray(path.read_bytes())
    if how == "flip" and content:
        i = data.draw(st.integers(0, len(content) - 1))
        content[i] ^= 1 << data.draw(st.integers(0, 7))
    elif how == "truncate":
        del content[data.draw(st.integers(0, max(0, len(content) - 1))) :]
    elif how == "extend":
        content += data.draw(st.binary(min_size=1, max_size=8))
    else:
        content = bytearray(data.draw(st.binary(max_size=64)))
    path.write_bytes(bytes(content))


def _verdict(path: Path, identity: str | None) -> str | None:
    try:
        read_checkpoint(path, identity=identity)
    except CheckpointError as error:
        assert error.name in REFUSALS, error.name
        return error.name
    return None


HOW = st.sampled_from(["flip", "truncate", "extend", "replace", "delete"])
FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.data(), how=HOW)
def test_damaged_files_raise_only_checkpoint_errors(
    pristine: Path, scratch: Path, data: st.DataObject, how: str
) -> None:
    work = _fresh(pristine, scratch)
    name = data.draw(st.sampled_from(_files(work)))
    _damage(work / name, how, data)
    verdict = _verdict(work, None)
    # damage to the newest capture is always refused; the older one is never read
    read = name.startswith("round-00000040/")
    assert (verdict is not None) == read, (name, how, verdict)


def _json_values() -> st.SearchStrategy[Any]:
    scalars: st.SearchStrategy[Any] = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.text(max_size=12),
        st.floats(allow_nan=False, allow_infinity=False),
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=12,
    )


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _packs(capture: Path) -> list[str]:
    """The capture's packs: top.pack, then every parts/<role>.pack."""
    return ["top.pack", *(f"parts/{n}" for n in _files(capture / "parts"))]


def _manifest(capture: Path, pack: str) -> Any:
    return json.loads(split((capture / pack).read_bytes(), 1 << 30).manifest)


def _resign(capture: Path, file: str, text: bytes) -> None:
    """Puts a manifest into pack `file` (its trailer remade) and makes every digest above it
    match again, up to the top."""
    (capture / file).write_bytes(with_manifest((capture / file).read_bytes(), text))
    digest = hashlib.sha256(text).hexdigest()
    for parent in (p for p in _packs(capture) if p != file):
        m = _manifest(capture, parent)
        children = m.get("children") if isinstance(m, dict) else None
        for child in children if isinstance(children, list) else []:
            if isinstance(child, dict) and child.get("file") == file:
                child["sha256"] = digest
                _resign(capture, parent, json.dumps(m, indent=1).encode())
                return


def _rewrite_one(capture: Path, data: st.DataObject) -> None:
    """One value somewhere in one pack's manifest replaced by arbitrary JSON (or the whole
    manifest), every digest and trailer above it made to match."""
    file = data.draw(st.sampled_from(_packs(capture)))
    manifest = _manifest(capture, file)
    path = data.draw(st.sampled_from(_paths(manifest)))
    value = data.draw(_json_values())
    if path:
        holder = manifest
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = value
    else:
        manifest = value
    _resign(capture, file, json.dumps(manifest).encode())


@FUZZ
@given(data=st.data())
def test_rewritten_manifests_raise_only_checkpoint_errors(
    pristine: Path, scratch: Path, data: st.DataObject
) -> None:
    work = _fresh(pristine, scratch)
    capture = work / "round-00000040"
    file = data.draw(st.sampled_from(_packs(capture)))
    manifest = _manifest(capture, file)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(manifest)))
        value = data.draw(_json_values())
        if not path:
            manifest = value
            continue
        holder = manifest
        for step in path[:-1]:
            holder = holder[step]
        if data.draw(st.booleans()) and isinstance(holder, dict):
            del holder[path[-1]]
        else:
            holder[path[-1]] = value
    _resign(capture, file, json.dumps(manifest).encode())
    event(str(_verdict(work, None)))


@FUZZ
@given(text=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_garbage_manifests_are_malformed(pristine: Path, scratch: Path, text: bytes) -> None:
    work = _fresh(pristine, scratch)
    _resign(work / "round-00000040", "top.pack", text)
    assert _verdict(work, None) == "checkpoint-malformed"


def test_deep_and_huge_manifests_are_malformed(pristine: Path, scratch: Path) -> None:
    for text in (b"[" * 100_000, b'{"a":' * 50_000, b"1" * 5000, b'{"round": 1e999}'):
        work = _fresh(pristine, scratch)
        _resign(work / "round-00000040", "top.pack", text)
        assert _verdict(work, None) == "checkpoint-malformed"


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), how=HOW)
def test_the_runtime_names_the_same_refusal(
    built: tuple[Built, Built],
    pristine: Path,
    scratch: Path,
    identity: str,
    data: st.DataObject,
    how: str,
) -> None:
    work = _fresh(pristine, scratch)
    name = data.draw(st.sampled_from(_files(work)))
    _damage(work / name, how, data)
    python = _verdict(work, identity)
    run = subprocess.run(
        [built[1].roles[0][1], "--resume", str(work), "--evaluate-only"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    events = [json.loads(line) for line in run.stdout.splitlines()]
    runtime = events[-1].get("name") if events[-1]["event"] == "refused" else None
    assert runtime == python, (name, how, events[-1])
    assert run.returncode == (0 if python is None else 3)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_runtime_survives_rewritten_manifests(
    built: tuple[Built, Built], pristine: Path, scratch: Path, data: st.DataObject
) -> None:
    """Manifests rewritten with arbitrary JSON, digests made to match: the runtime's reader
    (json.c, resume.c) resumes or refuses by a checkpoint name, and never crashes."""
    work = _fresh(pristine, scratch)
    capture = work / "round-00000040"
    _rewrite_one(capture, data)
    run = subprocess.run(
        [built[1].roles[0][1], "--resume", str(work), "--evaluate-only"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    last = json.loads(run.stdout.splitlines()[-1])
    assert run.returncode in (0, 3), (run.returncode, run.stderr[-300:])
    if run.returncode == 3:
        assert last["event"] == "refused" and last["name"] in REFUSALS, last


# ---- the runtime's reader, with undefined behaviour trapping ---------------------------------


@pytest.fixture(scope="module")
def checked_exe(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The single-process build of SHORT with a runtime that traps on undefined behaviour."""
    from conftest import link_checked
    from test_partitioned import analysis

    from alpha_core.plan.schedule import single_process

    work = tmp_path_factory.mktemp("checked")
    program, _ = analysis(SHORT, work).program()
    assert program is not None
    role = single_process(program.leaves, program.identity(), program.n_params)
    return link_checked(program, role, work / "checked")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), how=HOW, rewrite=st.booleans())
def test_the_checked_runtime_never_traps_on_a_damaged_capture(
    checked_exe: str, pristine: Path, scratch: Path, data: st.DataObject, how: str, rewrite: bool
) -> None:
    """Damaged bytes, or a manifest rewritten with arbitrary JSON (digests and trailers made to
    match): the UB-trapping runtime resumes or refuses by a checkpoint name, and never traps
    (a trap is SIGILL)."""
    work = _fresh(pristine, scratch)
    capture = work / "round-00000040"
    if rewrite:
        _rewrite_one(capture, data)
    else:
        name = data.draw(st.sampled_from(_files(work)))
        _damage(work / name, how, data)
    run = subprocess.run(
        [checked_exe, "--resume", str(work), "--evaluate-only"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode in (0, 3), (run.returncode, run.stderr[-300:])
    if run.returncode == 3:
        last = json.loads(run.stdout.splitlines()[-1])
        assert last["event"] == "refused" and last["name"] in REFUSALS, last
