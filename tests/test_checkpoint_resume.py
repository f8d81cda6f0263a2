"""Checkpoints and resume with real processes: a role killed with SIGKILL at a random round,
every role restarted with --resume, ends with the bits of an uninterrupted run; captures are
re-cut by element range (2 owners resume on 4 and 8, 4 on the single-process build, 8 on 3);
the before-publish failpoint leaves the previous capture published; a flipped byte, a missing
piece, an unpublished capture or a capture of another system are refused by name, with nothing
loaded and nothing written."""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from auth_peer import launch_secret_file
from test_partitioned import (  # noqa: F401  (_kernels_once: the autouse fixture)
    SHORT,
    Built,
    _kernels_once,
    build_plan_roles,
    build_single,
    plan_text,
    written_sha,
)

from alpha_core.checkpoint import CheckpointError, read_checkpoint
from alpha_core.run.launch import RoleOutcome

LONG = SHORT.replace("steps 40", "steps 120")
SECRET = launch_secret_file()  # for the roles started here with Popen (run_roles gives its own)


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The single-process build of SHORT, without checkpoints of its own."""
    return build_single(SHORT, tmp_path_factory.mktemp("single"))


@pytest.fixture(scope="module")
def reference(single: Built) -> str:
    return written_sha(single.run("--quiet"))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Two owners of the optimizer state, a capture every 10 rounds: rounds 10, 20, 30, 40."""
    built = build_plan_roles(plan_text(2, "optimizer"), tmp_path_factory.mktemp("pair"))
    written_sha(built.run("--quiet"))
    return built


def resumed_rounds(outcomes: Sequence[RoleOutcome]) -> set[int]:
    return {int(str(e["round"])) for o in outcomes for e in o.events if e.get("event") == "resumed"}


def first_steps(outcomes: Sequence[RoleOutcome]) -> set[int]:
    return {
        min(int(str(e["step"])) for e in o.events if e.get("event") == "step") for o in outcomes
    }


def test_a_killed_role_resumes_to_the_uninterrupted_bits(tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    reference = written_sha(build_single(LONG, tmp_path / "single").run("--quiet"))
    built = build_plan_roles(plan_text(4, "params", every=5, system=LONG), tmp_path / "run")
    victim = rng.choice(built.roles)[0]
    kill_at = rng.randrange(6, 60)
    why = f"seed {seed}: {victim} killed after step {kill_at}"
    procs = {
        role: subprocess.Popen(
            [*cmd, *(["--quiet"] if role != victim else []), "--secret-file", SECRET],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, cmd in built.commands()
    }
    out = procs[victim].stdout
    assert out is not None
    for line in out:
        if f'"step":{kill_at},' in line:
            break
    os.kill(procs[victim].pid, signal.SIGKILL)
    start = time.monotonic()
    for role, p in procs.items():
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            for q in procs.values():
                q.kill()
            raise AssertionError(f"{role} hung after a peer was killed ({why})") from None
        assert p.returncode != 0, (role, why, err[-300:])
    assert time.monotonic() - start < 20, why
    assert not (built.folder / "out.params").exists(), why

    published = read_checkpoint(built.folder / "checkpoints")
    assert published.round % 5 == 0 and 5 <= published.round < 120, why
    outcomes = built.run("--resume", str(built.folder / "checkpoints"))
    assert written_sha(outcomes) == reference, why
    assert resumed_rounds(outcomes) == {published.round}, why
    assert first_steps(outcomes) == {published.round + 1}, why


@pytest.mark.parametrize(
    ("source", "capture", "owners"),
    [("pair", 10, 4), ("pair", 10, 8), ("four", 20, 1), ("eight", 30, 3), ("four", 30, 5)],
    ids=["2-on-4", "2-on-8", "4-on-1", "8-on-3", "4-on-star"],
)
def test_captures_are_recut_for_another_owner_count(
    source: str,
    capture: int,
    owners: int,
    pair: Built,
    single: Built,
    reference: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    runs = _runs(pair, tmp_path_factory)
    origin = runs[source]
    path = origin.folder / "checkpoints" / f"round-{capture:08d}"
    target = single if owners == 1 else runs.get({4: "four", 8: "eight"}.get(owners, ""))
    if target is None:  # 3 workers, or 4 under a hub (which holds no state)
        target = build_plan_roles(plan_text(owners, "params"), tmp_path_factory.mktemp("other"))
    into = tmp_path_factory.mktemp("into")
    outcomes = target.run(
        "--resume", str(path), "--checkpoint-dir", str(into), params=into / "out.params"
    )
    assert written_sha(outcomes) == reference
    assert resumed_rounds(outcomes) == {capture}
    assert first_steps(outcomes) == {capture + 1}
    if owners > 1:  # it checkpoints on: the next captures are its own
        assert read_checkpoint(into).round == 40


_RUNS: dict[str, Built] = {}


def _runs(pair: Built, factory: pytest.TempPathFactory) -> dict[str, Built]:
    """4 and 8 owners with everything partitioned, each resumed from the pair's round 10 (so
    their captures of rounds 20, 30 and 40 are their own)."""
    if not _RUNS:
        _RUNS["pair"] = pair
        for name, owners in (("four", 4), ("eight", 8)):
            built = build_plan_roles(plan_text(owners, "params"), factory.mktemp(name))
            resume = pair.folder / "checkpoints" / "round-00000010"
            written_sha(built.run("--quiet", "--resume", str(resume)))
            _RUNS[name] = built
    return _RUNS


def test_a_failed_publication_leaves_the_previous_capture(
    pair: Built, reference: str, tmp_path: Path
) -> None:
    env = {**os.environ, "ALPHA_FAILPOINT": "before-publish:20"}
    into = tmp_path / "checkpoints"
    procs = {
        role: subprocess.Popen(
            [*cmd, "--quiet", "--checkpoint-dir", str(into), "--secret-file", SECRET],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for role, cmd in pair.commands(params=tmp_path / "out.params")
    }
    codes = {role: p.wait(timeout=30) for role, p in procs.items()}
    assert codes["worker[0]"] == 9, codes  # the root, right before renaming the capture
    assert codes["worker[1]"] != 0, codes
    assert not (into / "round-00000020").exists()
    [partial] = into.glob("round-00000020.partial-*")  # written, never published
    assert (partial / "top.pack").exists() and (partial / "parts" / "worker-1.pack").exists()
    assert read_checkpoint(into).round == 10
    with pytest.raises(CheckpointError) as unpublished:
        read_checkpoint(partial)
    assert unpublished.value.name == "checkpoint-incomplete"
    assert not (tmp_path / "out.params").exists()
    # resumed into the same folder: the abandoned partial capture is written over and published
    outcomes = pair.run(
        "--resume", str(into), "--checkpoint-dir", str(into), params=tmp_path / "out.params"
    )
    assert written_sha(outcomes) == reference
    assert resumed_rounds(outcomes) == {10}
    assert sorted(p.name for p in into.iterdir()) == [f"round-{r:08d}" for r in (10, 20, 30, 40)]


@pytest.mark.parametrize("how", ["swap", "no-swap"])
def test_a_round_published_again_replaces_its_capture(
    how: str, pair: Built, reference: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumed from round 10 into the folder that already holds rounds 20, 30 and 40: each is
    published again by swapping the new folder in (the name always holds a whole capture), or,
    as where the file system cannot swap, by moving the old one aside first; no partial or old
    folder is left behind."""
    if how == "no-swap":
        monkeypatch.setenv("ALPHA_FAILPOINT", "no-swap")
    into = tmp_path / "checkpoints"
    shutil.copytree(pair.folder / "checkpoints", into, copy_function=shutil.copyfile)
    before = {
        n: (into / n / "top.pack").stat().st_ino for n in ("round-00000020", "round-00000040")
    }
    outcomes = pair.run(
        "--resume",
        str(into / "round-00000010"),
        "--checkpoint-dir",
        str(into),
        params=tmp_path / "out.params",
    )
    assert written_sha(outcomes) == reference
    assert sorted(p.name for p in into.iterdir()) == [f"round-{r:08d}" for r in (10, 20, 30, 40)]
    for name, inode in before.items():
        assert (into / name / "top.pack").stat().st_ino != inode, name  # written anew
        assert read_checkpoint(into / name).round == int(name[6:])
    published = [e for o in outcomes for e in o.events if e.get("published") is True]
    assert [e["round"] for e in published] == [20, 30, 40]


def test_a_capture_of_many_packs_resumes_with_few_descriptors(
    pair: Built, single: Built, reference: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The eight owners' capture (eight packs) resumes in a process allowed six open files:
    packs are read one at a time, so a capture of 200,000 roles needs no more descriptors."""
    capture = _runs(pair, tmp_path_factory)["eight"].folder / "checkpoints" / "round-00000040"
    assert len(read_checkpoint(capture).manifests()) == 8

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (6, 6))

    run = subprocess.run(
        [single.roles[0][1], "--resume", str(capture), "--evaluate-only"],
        capture_output=True,
        text=True,
        preexec_fn=few_files,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout[-500:]
    done = json.loads(run.stdout.splitlines()[-1])
    assert done["params_sha256"] == reference


# ---- refusals ---------------------------------------------------------------------------------


def _copy(pair: Built, tmp_path: Path) -> Path:
    into = tmp_path / "copy"
    shutil.copytree(pair.folder / "checkpoints", into, copy_function=shutil.copyfile)
    return into


def _refused(built: Built, path: Path, tmp_path: Path, name: str) -> list[RoleOutcome]:
    """Resume from path is refused by name by every role; nothing is loaded or written."""
    out = tmp_path / "run"
    outcomes = built.run(
        "--resume", str(path), "--checkpoint-dir", str(out / "ckpt"), params=out / "p"
    )
    for o in outcomes:
        assert o.exit_code == 3 and o.refusal == name, (o.role, o.refusal, o.message)
        assert not any(e.get("event") in ("resumed", "step") for e in o.events)
    assert not out.exists()
    with pytest.raises(CheckpointError) as python:
        read_checkpoint(path, identity=_identity(built))
    assert python.value.name == name, python.value.message
    return outcomes


def _identity(built: Built) -> str:
    """The system identity the executable reports in its start event."""
    start = subprocess.run(
        [built.roles[0][1], "--resume", "/nonexistent/alpha"], capture_output=True, text=True
    )
    first = start.stdout.splitlines()[0]
    return first.split('"identity":"')[1].split('"')[0]


def test_a_flipped_byte_in_any_shard_is_refused(pair: Built, single: Built, tmp_path: Path) -> None:
    rng = random.Random(11)
    pristine = _copy(pair, tmp_path)
    capture = pristine / "round-00000040"
    shards = read_checkpoint(capture).shards()
    assert len(shards) >= 12
    assert len({s.file for s in shards}) == 2  # one pack file per writing role
    for shard in shards:
        work = tmp_path / shard.name.replace("/", "_")
        shutil.copytree(capture, work / "c", copy_function=shutil.copyfile)
        target = work / "c" / shard.file
        data = bytearray(target.read_bytes())
        data[shard.offset + rng.randrange(shard.bytes)] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(data))
        [o] = _refused(single, work / "c", work, "checkpoint-digest-mismatch")
        assert f"checkpoint shard {shard.name} (" in (o.message or ""), o.message


def test_every_role_refuses_a_corrupt_capture(pair: Built, tmp_path: Path) -> None:
    capture = _copy(pair, tmp_path) / "round-00000020"
    sub = capture / "parts" / "worker-1.pack"
    sub.write_bytes(sub.read_bytes().replace(b'"round": 20', b'"round": 21'))
    for o in _refused(pair, capture, tmp_path, "checkpoint-digest-mismatch"):
        assert "worker-1.pack" in (o.message or "")


@pytest.mark.parametrize("missing", ["part", "top", "entry", "unpublished", "nothing published"])
def test_a_missing_piece_is_refused(
    missing: str, pair: Built, single: Built, tmp_path: Path
) -> None:
    root = _copy(pair, tmp_path)
    capture = root / "round-00000030"
    path = capture
    if missing == "part":  # a child's pack: its shards and its manifest
        victim = read_checkpoint(capture).shards()[-1]
        assert victim.file == "parts/worker-1.pack"
        (capture / victim.file).unlink()
    elif missing == "top":
        (capture / "top.pack").unlink()
    elif missing == "entry":  # a shard dropped from the top manifest, the trailer remade
        import json

        from alpha_core.checkpoint.pack import split, with_manifest

        pack = (capture / "top.pack").read_bytes()
        top = json.loads(split(pack, 1 << 30).manifest)
        top["shards"] = top["shards"][1:]
        (capture / "top.pack").write_bytes(with_manifest(pack, json.dumps(top).encode()))
    elif missing == "unpublished":  # written whole, never renamed into place
        path = root / "round-00000030.partial-0123456789ab"
        capture.rename(path)
    else:
        for published in root.glob("round-*"):
            published.rename(published.with_name(published.name + ".partial-0123456789ab"))
        path = root
    _refused(single, path, tmp_path, "checkpoint-incomplete")


def test_a_capture_of_another_system_is_refused(pair: Built, tmp_path: Path) -> None:
    other = build_single(SHORT.replace("lr: 0.01,", "lr: 0.02,"), tmp_path / "other")
    capture = _copy(pair, tmp_path) / "round-00000010"
    [o] = _refused(other, capture, tmp_path, "checkpoint-identity-mismatch")
    mine, theirs = _identity(other), read_checkpoint(capture).identity
    assert mine != theirs and mine in (o.message or "") and theirs in (o.message or "")


def test_evaluate_only_reports_the_capture_and_writes_nothing(
    pair: Built, single: Built, reference: str, tmp_path: Path
) -> None:
    trained = single.run("--quiet", params=tmp_path / "trained.params")
    [done] = [o.done for o in trained if o.done]
    outcomes = single.run(
        "--resume", str(pair.folder / "checkpoints"), "--evaluate-only", params=tmp_path / "p"
    )
    [o] = outcomes
    assert o.exit_code == 0 and o.done is not None, (o.refusal, o.message)
    assert o.done["evaluate_only"] is True and o.done["params_file"] is None
    assert o.done["params_sha256"] == reference and o.done["steps"] == 40
    for key in ("holdout_accuracy", "final_loss_bits"):
        assert o.done[key] == done[key], key
    assert not any(e.get("event") == "step" for e in o.events)
    assert not (tmp_path / "p").exists()
    # resumed at the last round, a run trains nothing and writes the same parameters
    again = pair.run("--resume", str(pair.folder / "checkpoints"), params=tmp_path / "again")
    assert written_sha(again) == reference
    assert not any(e.get("event") == "step" for o in again for e in o.events)
    # --evaluate-only without --resume is a usage error
    [bad] = single.run("--evaluate-only")
    assert bad.exit_code == 2 and bad.refusal == "usage"
