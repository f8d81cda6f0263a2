"""Issue 9, items 1-4, 8 and 9: the executables touch only files they made and never wait on a
file that is not one. Real executables built by the real compiler, real symbolic links, real
FIFOs and a real character device (made with mknod, a copy of /dev/null's 1:3): retention and
republication never follow a link nor touch another system's captures, the parameter file is
checked before round 0 and never replaces anything but a regular file, and a FIFO, a device or
a file of another size in place of a pack or of the data is refused by name, at once (each run
is bounded by a subprocess timeout, so a hang fails the test instead of hanging it)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, program_of

from alpha_core.build.executables import build_program
from alpha_core.build.outputs import Deployment
from alpha_core.checkpoint import read_checkpoint

BLOBS = (EXAMPLES / "blobs.alpha").read_text()
BOUND = 60  # seconds: every run here ends in well under one; a hang fails instead of hanging


def run(exe: Path | str, *args: str) -> tuple[int, list[dict[str, object]], str]:
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=BOUND)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, events, proc.stderr


def refused(result: tuple[int, list[dict[str, object]], str], name: str) -> str:
    """The message of the refusal `name`, which came before any round ran."""
    code, events, stderr = result
    assert code == 3, (code, stderr)
    assert events[-1]["event"] == "refused" and events[-1]["name"] == name, events[-1]
    assert not [e for e in events if e["event"] in ("step", "checkpoint")], stderr
    assert f"error[{name}]" in stderr
    return str(events[-1]["message"])


def blobs_exe(folder: Path, source: str = BLOBS, every: int = 50, into: Path | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = program_of(source, folder / "blobs.alpha")
    deployment = Deployment(checkpoint_dir=str(into or folder / "ckpt"), checkpoint_every=every)
    return Path(build_program(program, folder / "b", deployment=deployment).executables[0].path)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """blobs (200 rounds, embedded data), a capture every 50 rounds."""
    return blobs_exe(tmp_path_factory.mktemp("blobs"))


@pytest.fixture(scope="module")
def published(blobs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint folder holding blobs' captures of rounds 50, 100, 150 and 200."""
    into = tmp_path_factory.mktemp("published") / "ckpt"
    code, _, stderr = run(
        blobs, "--quiet", "--checkpoint-dir", str(into), "--params-out", str(into.parent / "p")
    )
    assert code == 0, stderr
    return into


def precious(folder: Path) -> Path:
    """A user's folder that nothing may remove: two files and a sub-folder."""
    folder.mkdir(parents=True)
    (folder / "thesis.tex").write_text("years of work\n")
    (folder / "inner").mkdir()
    (folder / "inner" / "data.bin").write_bytes(b"\x01" * 1000)
    return folder


def intact(folder: Path) -> None:
    assert (folder / "thesis.tex").read_text() == "years of work\n"
    assert (folder / "inner" / "data.bin").read_bytes() == b"\x01" * 1000


def plan12(exe: Path, tmp_path: Path) -> str:
    """The first 12 hex digits of the executable's plan identity, from a partial it leaves."""
    into = tmp_path / "probe"
    crashed = subprocess.run(
        [str(exe), "--quiet", "--checkpoint-dir", str(into), "--params-out", str(tmp_path / "x")],
        capture_output=True,
        env={**os.environ, "ALPHA_FAILPOINT": "before-publish"},
        timeout=BOUND,
    )
    assert crashed.returncode == 9
    [partial] = into.glob("round-00000050.partial-*")
    return partial.name.rsplit("-", 1)[1]


# ---- 1: retention and republication never follow a link ----------------------------------------


def test_retention_never_follows_a_link_nor_removes_a_strangers_folder(
    blobs: Path, tmp_path: Path
) -> None:
    """Links under published, partial and expiring names of earlier rounds, and a user's folder
    under a published name: --checkpoint-keep 1 removes only the captures the runtime wrote;
    every link and every file of the user's is where it was. (Before: the link's target was
    emptied, then the run refused.)"""
    p = plan12(blobs, tmp_path)
    into = tmp_path / "ckpt"
    into.mkdir()
    links = {
        "round-00000010": precious(tmp_path / "a"),
        f"round-00000020.partial-{p}": precious(tmp_path / "b"),
        f"round-00000030.expired-{p}": precious(tmp_path / "c"),
    }
    for name, target in links.items():
        (into / name).symlink_to(target, target_is_directory=True)
    stranger = precious(into / "round-00000040")  # a folder of the user's, not a capture
    code, events, stderr = run(
        blobs,
        "--quiet",
        "--checkpoint-dir",
        str(into),
        "--checkpoint-keep",
        "1",
        "--params-out",
        str(tmp_path / "p"),
    )
    assert code == 0, stderr
    for name, target in links.items():
        assert (into / name).is_symlink() and (into / name).resolve() == target.resolve()
        intact(target)
    intact(stranger)
    assert sorted(q.name for q in into.iterdir()) == sorted(
        [*links, "round-00000040", "round-00000200"]
    )
    assert read_checkpoint(into / "round-00000200").round == 200


def test_a_capture_holding_a_users_file_is_not_removed(
    blobs: Path, published: Path, tmp_path: Path
) -> None:
    """A capture of this system in which the user put a file of their own is not removed by
    retention (only what the runtime wrote is ever removed); the others are."""
    into = tmp_path / "ckpt"
    shutil.copytree(published, into)
    (into / "round-00000050" / "notes.txt").write_text("mine\n")
    shutil.rmtree(into / "round-00000200")
    resume = ("--resume", str(into / "round-00000150"))
    code, _, stderr = run(
        blobs,
        "--quiet",
        *resume,
        "--checkpoint-dir",
        str(into),
        "--checkpoint-keep",
        "1",
        "--params-out",
        str(tmp_path / "p"),
    )
    assert code == 0, stderr
    assert sorted(q.name for q in into.iterdir()) == ["round-00000050", "round-00000200"]
    assert (into / "round-00000050" / "notes.txt").read_text() == "mine\n"
    # Republishing round 50 would swap the user's file out with the folder: refused.
    message = refused(
        run(blobs, "--checkpoint-dir", str(into), "--params-out", str(tmp_path / "p")),
        "checkpoint-folder-foreign",
    )
    assert "round-00000050" in message and "notes.txt" in message, message


def test_publishing_over_a_link_is_refused_before_round_0(blobs: Path, tmp_path: Path) -> None:
    """round-00000050 is a link to a user's folder: the run would publish round 50 over it.
    Refused before round 0, naming it; the target is whole. (Before: 50 rounds were trained,
    then checkpoint-write-failed.)"""
    into = tmp_path / "ckpt"
    into.mkdir()
    target = precious(tmp_path / "mine")
    (into / "round-00000050").symlink_to(target, target_is_directory=True)
    message = refused(
        run(blobs, "--checkpoint-dir", str(into), "--params-out", str(tmp_path / "p")),
        "checkpoint-folder-foreign",
    )
    assert "round-00000050" in message and "symbolic link" in message, message
    intact(target)
    assert (into / "round-00000050").is_symlink()
    assert not (tmp_path / "p").exists()


def test_a_folder_put_there_during_the_run_is_not_published_over(
    blobs: Path, tmp_path: Path
) -> None:
    """The check is made again right before each publication: a user's folder put under
    round 50's name after round 1 (the run cannot be past round 30 then: its stdout is a 4 KiB
    pipe this test stops reading, which about 27 step events fill) is refused at round 50, the
    capture left under its partial name, the user's folder whole. (Before: it was swapped out
    with renameat2 and removed.)"""
    into = tmp_path / "ckpt"
    into.mkdir()
    # The pipe is made small before the run starts, so it never holds more than 4 KiB.
    fd, write_end = os.pipe()
    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen(
        [str(blobs), "--checkpoint-dir", str(into), "--params-out", str(tmp_path / "p")],
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)

    def line() -> dict[str, object]:
        """One event, read a byte at a time: nothing beyond it leaves the pipe."""
        got = b""
        while not got.endswith(b"\n"):
            byte = os.read(fd, 1)
            assert byte, got
            got += byte
        return dict(json.loads(got))

    try:
        assert line()["event"] == "start" and line()["step"] == 1
        target = precious(into / "round-00000050")
        out = b""
        while select.select([fd], [], [], BOUND)[0]:  # a silent run ends the loop: no hang
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            out += chunk
        _, err = proc.communicate(timeout=BOUND)
    finally:
        os.close(fd)
        proc.kill()
        proc.wait()
    last = json.loads(out.splitlines()[-1])
    assert proc.returncode == 3 and last["name"] == "checkpoint-folder-foreign", err.decode()
    assert last["round"] == 50 and "not a file this runtime writes" in str(last["message"])
    intact(target)
    assert sorted(q.name[:23] for q in into.iterdir()) == [
        "round-00000050",
        "round-00000050.partial-",
    ]


# ---- 2: captures belong to a system identity ---------------------------------------------------


def test_two_systems_share_a_checkpoint_folder(
    published: Path, blobs: Path, tmp_path: Path
) -> None:
    """Another system (other seeds) that would publish rounds blobs' captures hold is refused
    before round 0; a third, publishing rounds 60 ... 240 with --checkpoint-keep 1, removes
    only its own earlier captures. blobs' four captures read back whole, of blobs' identity.
    (Before: the second swapped blobs' round 50 out, the third removed all four.)"""
    into = tmp_path / "ckpt"
    shutil.copytree(published, into)
    ours = read_checkpoint(into / "round-00000050").identity
    other = blobs_exe(tmp_path / "o", BLOBS.replace("seed: 11", "seed: 12"), into=into)
    message = refused(run(other, "--params-out", str(tmp_path / "p")), "checkpoint-folder-foreign")
    assert "round-00000050" in message and "identity" in message, message
    longer = BLOBS.replace("steps 200", "steps 240")
    third = blobs_exe(tmp_path / "t", longer, every=60, into=into)
    code, _, stderr = run(
        third, "--quiet", "--checkpoint-keep", "1", "--params-out", str(tmp_path / "p")
    )
    assert code == 0, stderr
    names = sorted(q.name for q in into.iterdir())
    assert names == [f"round-{r:08d}" for r in (50, 100, 150, 200, 240)], names
    for r in (50, 100, 150, 200):
        assert read_checkpoint(into / f"round-{r:08d}", ours).round == r
    assert read_checkpoint(into / "round-00000240").identity != ours


# ---- 3 and 4: the parameter file and the checkpoint folder, checked before round 0 -------------


def test_params_out_is_never_a_device_a_fifo_or_a_link(blobs: Path, tmp_path: Path) -> None:
    """--params-out onto a character device (1:3, as /dev/null), a FIFO, a link, or with a link
    or a FIFO in place of its temporary: refused before round 0, each left as it was. (Before:
    the run trained, then renamed a regular file over the device or the FIFO.)"""
    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    kept = tmp_path / "kept.params"
    kept.write_bytes(b"old parameters")
    link = tmp_path / "link.params"
    link.symlink_to(kept)
    through = tmp_path / "through.params"
    (tmp_path / "through.params.tmp").symlink_to(kept)
    os.mkfifo(tmp_path / "waits.params.tmp")
    cases = {
        device: "a character device",
        fifo: "a FIFO",
        link: "a symbolic link",
        through: "a symbolic link",
        tmp_path / "waits.params": "a FIFO",
    }
    for path, kind in cases.items():
        args = ("--params-out", str(path), "--checkpoint-dir", str(tmp_path / "c"))
        message = refused(run(blobs, *args), "params-write-failed")
        assert kind in message and str(path) in message, message
    assert stat.S_ISCHR(device.lstat().st_mode) and device.lstat().st_rdev == os.makedev(1, 3)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert link.is_symlink() and kept.read_bytes() == b"old parameters"
    assert stat.S_ISFIFO((tmp_path / "waits.params.tmp").lstat().st_mode)
    assert not through.exists() and not (tmp_path / "c").exists()


def test_params_out_and_checkpoint_folder_are_checked_before_round_0(
    blobs: Path, tmp_path: Path
) -> None:
    """A folder as --params-out, a regular file above it, a checkpoint folder under a regular
    file or that is one: refused before round 0, leaving nothing behind (the probe is an
    unnamed O_TMPFILE; a missing folder is not made by a refused run). (Before: every round
    ran, then params-write-failed.) A folder that does not exist yet is made at the end, as the
    checkpoint folder is."""
    (tmp_path / "a-folder").mkdir()
    blocker = tmp_path / "blocker"
    blocker.write_text("a file\n")
    fine = ("--checkpoint-dir", str(tmp_path / "c"))
    message = refused(
        run(blobs, "--params-out", str(tmp_path / "a-folder"), *fine), "params-write-failed"
    )
    assert "a folder" in message, message
    message = refused(run(blobs, "--params-out", str(blocker / "p"), *fine), "params-write-failed")
    assert f"{blocker} is a regular file, not a folder" in message, message
    params = ("--params-out", str(tmp_path / "new" / "folder" / "p"))
    for into in (blocker / "ckpt", blocker):
        message = refused(
            run(blobs, *params, "--checkpoint-dir", str(into)), "checkpoint-write-failed"
        )
        assert f"{blocker} is a regular file, not a folder" in message, message
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a-folder", "blocker"]
    assert not list((tmp_path / "a-folder").iterdir())
    code, _, stderr = run(blobs, "--quiet", *params, *fine)
    assert code == 0 and (tmp_path / "new" / "folder" / "p").stat().st_size == 4 * 212, stderr


# ---- 8: a FIFO in a pack's place -----------------------------------------------------------------


def cli_bounded(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,  # alpha eval builds first; a hang still ends here
        env={**os.environ, "COLUMNS": "200"},
    )


def test_a_fifo_in_place_of_a_pack_is_refused_at_once(
    blobs: Path, published: Path, tmp_path: Path
) -> None:
    """top.pack replaced by a FIFO (nothing ever writes to it): --resume, `alpha inspect` and
    `alpha eval` refuse checkpoint-incomplete naming the FIFO. (Before: each waited forever in
    open().) A link in its place is refused too."""
    into = tmp_path / "ckpt"
    shutil.copytree(published, into)
    capture = into / "round-00000200"
    (capture / "top.pack").unlink()
    os.mkfifo(capture / "top.pack")
    for target in (capture, into):
        message = refused(
            run(blobs, "--resume", str(target), "--evaluate-only"), "checkpoint-incomplete"
        )
        assert "top.pack" in message and "a FIFO, not a regular file" in message, message
    inspected = cli_bounded("inspect", str(capture))
    assert inspected.returncode == 1, inspected.stderr
    assert "error[checkpoint-incomplete]" in inspected.stderr and "FIFO" in inspected.stderr
    evaluated = cli_bounded("eval", str(EXAMPLES / "blobs.alpha"), "--checkpoint", str(capture))
    assert evaluated.returncode == 1, evaluated.stderr
    assert "checkpoint-incomplete" in evaluated.stderr and "FIFO" in evaluated.stderr
    (capture / "top.pack").unlink()
    (capture / "top.pack").symlink_to(published / "round-00000200" / "top.pack")
    message = refused(
        run(blobs, "--resume", str(capture), "--evaluate-only"), "checkpoint-incomplete"
    )
    assert "symbolic link" in message, message


# ---- 9: the data file: only a regular file of the size built against ---------------------------

TABLE = """system tabled {
  data train: table("rows.csv", features: 2, label: last, classes: 2, holdout: 2)
  batch 4 leaves 2
  param w: f32[2, 2] = normal(0.0, 0.1, seed: 1)
  param b: f32[2] = zeros
  fn model(x: f32[B, 2]) -> f32[B, 2] {
    return x @ w + b
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 5
}
"""


def test_data_that_is_not_the_regular_file_built_against_is_refused_unread(
    tmp_path: Path,
) -> None:
    """--data naming a FIFO, /dev/zero, a folder or a sparse 16 GiB file: refused at once, the
    last by its size before a byte is read. (Before: the FIFO waited forever; /dev/zero and the
    large file were read whole, RSS growing until memory ran out.)"""
    rows = "".join(f"{i % 3}.5,{i % 5}.25,{i % 2}\n" for i in range(12))
    (tmp_path / "rows.csv").write_text(rows)
    program = program_of(TABLE, tmp_path / "tabled.alpha")
    assert program.data.size == len(rows)
    exe = build_program(program, tmp_path / "b").executables[0].path
    out = ("--params-out", str(tmp_path / "p"))
    code, events, stderr = run(exe, "--quiet", *out)
    assert code == 0, stderr
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    message = refused(run(exe, "--data", str(fifo), *out), "data-unreadable")
    assert "a FIFO, not a regular file" in message, message
    message = refused(run(exe, "--data", "/dev/zero", *out), "data-unreadable")
    assert "a character device, not a regular file" in message, message
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as f:
        f.write(rows.encode())
        f.truncate(16 << 30)  # sparse: nothing is stored, a reader would see 16 GiB
    message = refused(run(exe, "--data", str(huge), *out), "data-digest-mismatch")
    assert f"{16 << 30} bytes" in message and f"{len(rows)} bytes" in message, message
    message = refused(run(exe, "--data", str(tmp_path), *out), "data-unreadable")
    assert "a folder, not a regular file" in message, message
