"""runtime/gpu_cuda.c, the NVIDIA driver backend of GPU roles, against the real machine (which
has no NVIDIA driver) and against tests/fixtures/gpu/libcuda_double.c: a test double of the
driver's answers (devices, UUIDs, memory, a failing JIT, a failing launch), built here into a
`libcuda.so.1` and found through LD_LIBRARY_PATH. The double never runs a kernel; nothing here
is evidence about GPU arithmetic.

The probe (tests/fixtures/gpu/probe.c) calls gpu.h in a role's order and writes its --out file
last, as a role writes its parameters: every refusal must exit 3 with a `refused` event as its
last line, `error[NAME]` on stderr, and no file."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from alpha_core.link.toolchain import (
    C_FLAGS,
    GPU_ZIG_TARGET,
    gpu_runtime_sources,
    run_zig,
    runtime_dir,
)

FIXTURES = Path(__file__).parent / "fixtures" / "gpu"
UUID_A = "GPU-0123abcd-4567-89ef-0123-456789abcdef"
UUID_B = "GPU-f00dfeed-0000-1111-2222-333344445555"

# Two kernels in the signature every GPU role's kernels have: (u64 args, u64 threads).
PTX = """.version 7.8
.target sm_80
.address_size 64
.visible .entry leaf_forward(.param .u64 args, .param .u64 threads)
{
  ret;
}
.visible .entry apply(.param .u64 args, .param .u64 threads)
{
  ret;
}
"""


@dataclass
class Built:
    probe: Path
    double_dir: Path  # holds libcuda.so.1, the test double
    ptx: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("gpu-driver")
    sources, link_flags = gpu_runtime_sources(shadow=False)
    runtime = runtime_dir()
    probe = out / "probe"
    run_zig(
        [
            "cc", "-target", GPU_ZIG_TARGET, *C_FLAGS, "-Werror", f"-I{runtime}",
            *map(str, sources), str(runtime / "refusal.c"), str(runtime / "events.c"),
            str(FIXTURES / "probe.c"), *link_flags, "-o", str(probe),
        ],
        cwd=out,
    )  # fmt: skip
    double_dir = out / "double"
    double_dir.mkdir()
    run_zig(
        [
            "cc", "-shared", "-fPIC", "-target", GPU_ZIG_TARGET, *C_FLAGS, "-Werror",
            str(FIXTURES / "libcuda_double.c"), "-o", str(double_dir / "libcuda.so.1"),
        ],
        cwd=out,
    )  # fmt: skip
    ptx = out / "kernels.ptx"
    ptx.write_text(PTX)
    return Built(probe, double_dir, ptx)


@dataclass
class Ran:
    code: int
    events: list[dict[str, object]]
    stderr: str
    wrote: bool


def _run(built: Built, tmp_path: Path, args: tuple[str, ...], env: dict[str, str]) -> Ran:
    out = tmp_path / "probe.out"
    out.unlink(missing_ok=True)
    proc = subprocess.run(
        [str(built.probe), *args, "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return Ran(proc.returncode, events, proc.stderr, out.exists())


def _plain_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALPHA_DOUBLE_")}
    env.pop("LD_LIBRARY_PATH", None)
    return env


def probe(built: Built, tmp_path: Path, *args: str, **answers: str) -> Ran:
    """The probe against the double, which answers as `answers` (ALPHA_DOUBLE_...) say."""
    env = {**_plain_environment(), "LD_LIBRARY_PATH": str(built.double_dir), **answers}
    return _run(built, tmp_path, args, env)


def refused(ran: Ran, name: str) -> dict[str, object]:
    """The refusal's event, after checking every mark a refusal leaves and that it wrote
    nothing."""
    assert ran.code == 3, (ran.code, ran.events, ran.stderr)
    last = ran.events[-1]
    assert last["event"] == "refused" and last["name"] == name, last
    assert f"error[{name}]: " in ran.stderr
    assert not ran.wrote, "a refused probe wrote its output"
    assert not [e for e in ran.events if e["event"] == "done"]
    return last


def test_this_machine_has_no_driver(built: Built, tmp_path: Path) -> None:
    """Nothing from CUDA is installed here: the loader's own reason, named."""
    ran = _run(built, tmp_path, (), _plain_environment())
    last = refused(ran, "gpu-driver-missing")
    message = str(last["message"])
    assert "libcuda.so.1: cannot open shared object file: No such file or directory" in message
    assert last["round"] is None and last["role"] == "probe"
    assert [e["event"] for e in ran.events] == ["refused"]


def test_cuinit_failing_is_named(built: Built, tmp_path: Path) -> None:
    ran = probe(built, tmp_path, ALPHA_DOUBLE_INIT_ERROR="999", ALPHA_DOUBLE_UUIDS=UUID_A)
    message = str(refused(ran, "gpu-driver-missing")["message"])
    assert "cuInit" in message and "CUDA_ERROR_UNKNOWN" in message


def test_device_by_index_and_by_uuid(built: Built, tmp_path: Path) -> None:
    answers = {
        "ALPHA_DOUBLE_UUIDS": f"{UUID_A},{UUID_B}",
        "ALPHA_DOUBLE_NAME": "double H200",
        "ALPHA_DOUBLE_TOTAL_BYTES": str(150_000_000_000),
        "ALPHA_DOUBLE_FREE_BYTES": str(149_000_000_000),
        "ALPHA_DOUBLE_CC": "9.0",
    }
    by_index = probe(built, tmp_path, "--index", "1", **answers)
    assert by_index.code == 0, by_index.stderr
    device = by_index.events[0]
    assert device == {
        "event": "device", "name": "double H200", "uuid": UUID_B,
        "total_bytes": 150_000_000_000, "free_bytes": 149_000_000_000, "cc": "9.0",
        "ordinal": 1, "shadow": 0,
    }  # fmt: skip
    assert {"event": "copied", "bytes": 256, "same": True} in by_index.events
    assert by_index.wrote

    # nvidia-smi prints lowercase; an uppercase or prefix-less UUID names the same card
    for asked in (UUID_A.upper(), UUID_A.removeprefix("GPU-")):
        by_uuid = probe(built, tmp_path, "--uuid", asked, "--index", "1", **answers)
        assert by_uuid.code == 0, by_uuid.stderr
        assert by_uuid.events[0]["uuid"] == UUID_A and by_uuid.events[0]["ordinal"] == 0

    default = probe(built, tmp_path, **{**answers, "ALPHA_DOUBLE_CC": "8.6"})
    assert default.events[0]["ordinal"] == 0 and default.events[0]["cc"] == "8.6"


def test_a_gpu_not_present_lists_those_that_are(built: Built, tmp_path: Path) -> None:
    two = {"ALPHA_DOUBLE_UUIDS": f"{UUID_A},{UUID_B}"}
    wrong = "GPU-00000000-4567-89ef-0123-456789abcdef"
    message = str(
        refused(probe(built, tmp_path, "--uuid", wrong, **two), "gpu-not-found")["message"]
    )
    assert wrong in message and f"0 {UUID_A}" in message and f"1 {UUID_B}" in message

    message = str(
        refused(probe(built, tmp_path, "--index", "2", **two), "gpu-not-found")["message"]
    )
    assert "index 2" in message and UUID_A in message and UUID_B in message

    none = refused(probe(built, tmp_path, ALPHA_DOUBLE_UUIDS=""), "gpu-not-found")
    assert "sees no device" in str(none["message"])


def test_too_little_free_memory_is_refused_with_the_breakdown(built: Built, tmp_path: Path) -> None:
    ran = probe(
        built, tmp_path, "--demand", "3145728",
        "--breakdown", "parameters 1.0 MiB, gradients 1.0 MiB, kernel buffers 1.0 MiB",
        ALPHA_DOUBLE_UUIDS=UUID_A, ALPHA_DOUBLE_FREE_BYTES="2097152",
    )  # fmt: skip
    message = str(refused(ran, "memory-admission")["message"])
    assert "3145728 bytes (3.0 MiB)" in message and "2097152 free (2.0 MiB of 1.0 GiB)" in message
    assert "parameters 1.0 MiB, gradients 1.0 MiB, kernel buffers 1.0 MiB" in message
    assert UUID_A in message
    # before anything was allocated on the card
    assert [e["event"] for e in ran.events] == ["device", "refused"]

    enough = probe(built, tmp_path, "--demand", "2097152", ALPHA_DOUBLE_UUIDS=UUID_A,
                   ALPHA_DOUBLE_FREE_BYTES="2097152")  # fmt: skip
    assert enough.code == 0 and {"event": "admitted", "demand": 2097152} in enough.events


def test_a_jit_failure_shows_the_log(built: Built, tmp_path: Path) -> None:
    log = "ptxas application ptx input, line 4; error   : Unknown symbol 'bogus'"
    load = ("--ptx", str(built.ptx), "--kernel", "leaf_forward")
    ran = probe(built, tmp_path, *load, ALPHA_DOUBLE_UUIDS=UUID_A, ALPHA_DOUBLE_JIT_LOG=log)
    message = str(refused(ran, "gpu-jit-failed")["message"])
    assert "CUDA_ERROR_INVALID_PTX" in message and log in message

    # a log longer than a message holds: the message has its start, stderr all of it
    long_log = "".join(f"line {i}: error : something the JIT said\n" for i in range(200))
    ran = probe(built, tmp_path, *load, ALPHA_DOUBLE_UUIDS=UUID_A, ALPHA_DOUBLE_JIT_LOG=long_log)
    assert "line 0: error" in str(refused(ran, "gpu-jit-failed")["message"])
    assert long_log.rstrip() in ran.stderr

    missing = probe(built, tmp_path, *load, "--kernel", "learner", ALPHA_DOUBLE_UUIDS=UUID_A)
    message = str(refused(missing, "gpu-jit-failed")["message"])
    assert "no kernel learner" in message and "CUDA_ERROR_NOT_FOUND" in message


def test_a_launch_failure_names_the_error_the_kernel_and_the_round(
    built: Built, tmp_path: Path
) -> None:
    load = ("--ptx", str(built.ptx), "--kernel", "leaf_forward", "--kernel", "apply")
    ran = probe(built, tmp_path, *load, "--round", "7", "--launch", "1:1000",
                ALPHA_DOUBLE_UUIDS=UUID_A)  # fmt: skip
    last = refused(ran, "gpu-launch-failed")
    assert last["round"] == 7
    message = str(last["message"])
    assert "CUDA_ERROR_NOT_SUPPORTED" in message and "kernel apply" in message

    # a fault that shows only when the host waits: the last kernel launched is named
    ran = probe(
        built, tmp_path, *load, "--round", "3", "--launch", "1:1000", "--launch", "0:40",
        ALPHA_DOUBLE_UUIDS=UUID_A, ALPHA_DOUBLE_LAUNCH_ERROR="0", ALPHA_DOUBLE_SYNC_ERROR="700",
    )  # fmt: skip
    last = refused(ran, "gpu-launch-failed")
    assert last["round"] == 3
    message = str(last["message"])
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message and "kernel leaf_forward" in message


def test_kernel_time_is_the_sum_over_launches(built: Built, tmp_path: Path) -> None:
    """Each launch's pair of events is read once at the wait; a launch of no threads is not
    made. The double reports the time the test chose for every launch."""
    ran = probe(
        built, tmp_path, "--ptx", str(built.ptx), "--kernel", "leaf_forward", "--kernel", "apply",
        "--launch", "0:1000", "--launch", "1:5", "--launch", "1:0", "--launch", "0:300",
        ALPHA_DOUBLE_UUIDS=UUID_A, ALPHA_DOUBLE_LAUNCH_ERROR="0", ALPHA_DOUBLE_KERNEL_MS="0.25",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert {"event": "synced", "launches": 4, "kernel_us": 750} in ran.events
    assert ran.wrote


# ---- GPU role executables (alpha build ... --pairing two_gpus) against the same driver -------

DIGITS = Path(__file__).parent.parent / "examples" / "digits.alpha"

# One GPU role and no peer: the system on one card, so a run goes past start-up alone.
SOLO = """
plan solo for digits {
  roles worker[1]
  topology hierarchy(fanout: 2)
}

pairing one_gpu for solo {
  worker[*]: host x86_64, gpu h200
}
"""


@dataclass
class Roles:
    pair: list[Path]  # worker-0, worker-1 of digits' `pair` plan on `two_gpus`
    solo: Path


def _build_roles(source: Path, plan: str, pairing: str, out: Path) -> list[Path]:
    from conftest import cli

    built = cli("build", str(source), "--plan", plan, "--pairing", pairing, "-o", str(out),
                "--json")  # fmt: skip
    assert built.returncode == 0, built.stderr
    executables = json.loads(built.stdout)["executables"]
    assert {e["target"] for e in executables} == {"gpu h200"}, executables
    return [Path(e["path"]) for e in executables]


@pytest.fixture(scope="module")
def roles(tmp_path_factory: pytest.TempPathFactory) -> Roles:
    out = tmp_path_factory.mktemp("gpu-roles")
    pair = _build_roles(DIGITS, "pair", "two_gpus", out / "pair")
    solo_source = out / "solo.alpha"
    data = DIGITS.parent / "data" / "digits.csv"
    solo_source.write_text(DIGITS.read_text().replace('"data/digits.csv"', f'"{data}"') + SOLO)
    [solo] = _build_roles(solo_source, "solo", "one_gpu", out / "solo")
    return Roles(pair, solo)


def run_role(
    exe: Path, tmp_path: Path, env: dict[str, str], *args: str
) -> tuple[Ran, list[dict[str, object]]]:
    """A role run with a secret, a parameter file and a checkpoint folder in tmp_path; `wrote`
    says whether either of them appeared."""
    secret = tmp_path / "secret"
    secret.write_bytes(os.urandom(32))
    secret.chmod(0o600)
    params, checkpoints = tmp_path / "role.params", tmp_path / "checkpoints"
    proc = subprocess.run(
        [str(exe), "--secret-file", str(secret), "--params-out", str(params),
         "--checkpoint-dir", str(checkpoints), *args],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    wrote = params.exists() or Path(f"{params}.tmp").exists() or checkpoints.exists()
    steps = [e for e in events if e["event"] == "step"]
    return Ran(proc.returncode, events, proc.stderr, wrote), steps


def test_a_gpu_role_on_this_machine_is_refused_at_start_up(roles: Roles, tmp_path: Path) -> None:
    """No NVIDIA driver here: each role of `two_gpus` stops before round 0, writing nothing."""
    for exe in roles.pair:
        ran, steps = run_role(exe, tmp_path, _plain_environment())
        last = refused(ran, "gpu-driver-missing")
        assert "libcuda.so.1: cannot open shared object file" in str(last["message"])
        assert last["round"] is None and not steps


def test_a_gpu_role_given_a_uuid_not_present(roles: Roles, built: Built, tmp_path: Path) -> None:
    env = {**_plain_environment(), "LD_LIBRARY_PATH": str(built.double_dir),
           "ALPHA_DOUBLE_UUIDS": f"{UUID_A},{UUID_B}"}  # fmt: skip
    wrong = "GPU-99999999-4567-89ef-0123-456789abcdef"
    ran, steps = run_role(roles.pair[1], tmp_path, env, "--gpu-uuid", wrong)
    message = str(refused(ran, "gpu-not-found")["message"])
    assert wrong in message and UUID_A in message and UUID_B in message and not steps


def test_a_gpu_role_is_admitted_against_the_cards_free_memory(
    roles: Roles, built: Built, tmp_path: Path
) -> None:
    env = {**_plain_environment(), "LD_LIBRARY_PATH": str(built.double_dir),
           "ALPHA_DOUBLE_UUIDS": UUID_A, "ALPHA_DOUBLE_FREE_BYTES": "4096"}  # fmt: skip
    ran, steps = run_role(roles.pair[0], tmp_path, env)
    message = str(refused(ran, "memory-admission")["message"])
    [device] = [e for e in ran.events if e["event"] == "device"]
    assert device["uuid"] == UUID_A and device["free"] == 4096
    assert f"needs {device['demand']} bytes" in message and "4096 free" in message
    assert "parameters" in message and not steps


def test_a_gpu_role_whose_ptx_the_jit_refuses(roles: Roles, built: Built, tmp_path: Path) -> None:
    log = "ptxas fatal   : Unresolved extern function 'alpha_missing'"
    env = {**_plain_environment(), "LD_LIBRARY_PATH": str(built.double_dir),
           "ALPHA_DOUBLE_UUIDS": UUID_A, "ALPHA_DOUBLE_JIT_LOG": log}  # fmt: skip
    ran, steps = run_role(roles.pair[0], tmp_path, env)
    assert log in str(refused(ran, "gpu-jit-failed")["message"]) and not steps


def test_a_gpu_role_whose_launch_fails_in_a_round(
    roles: Roles, built: Built, tmp_path: Path
) -> None:
    """The double accepts the first 200 launches (running nothing) and fails the next: the
    role stops in the round of that launch, naming the kernel, and writes nothing."""
    env = {**_plain_environment(), "LD_LIBRARY_PATH": str(built.double_dir),
           "ALPHA_DOUBLE_UUIDS": UUID_A, "ALPHA_DOUBLE_LAUNCH_FAIL_AFTER": "200"}  # fmt: skip
    ran, steps = run_role(roles.solo, tmp_path, env)
    last = refused(ran, "gpu-launch-failed")
    assert isinstance(last["round"], int) and 1 <= last["round"] <= 300, last
    assert "CUDA_ERROR_NOT_SUPPORTED" in str(last["message"])
    assert "kernel alpha_" in str(last["message"])
    assert len(steps) == last["round"] - 1


# ---- scripts/qualify-gpu: what can be shown without a GPU ----------------------------------

QUALIFY = Path(__file__).parent.parent / "scripts" / "qualify-gpu"


def qualify(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The script, with this interpreter's `alpha` on PATH and no driver double unless given."""
    import sys

    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", str(QUALIFY), *args], capture_output=True, text=True, timeout=300,
        env={**_plain_environment(), "PATH": path, "QUALIFY_GPU_NO_VENV": "1",
             "QUALIFY_GPU_BENCH": "0", **env},
    )  # fmt: skip


def test_qualify_gpu_is_valid_bash() -> None:
    assert os.access(QUALIFY, os.X_OK)
    checked = subprocess.run(["bash", "-n", str(QUALIFY)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_qualify_gpu_stops_at_once_without_a_driver(tmp_path: Path) -> None:
    """This machine has no NVIDIA driver: a clear line, a non-zero exit, nothing built."""
    for args in ((str(tmp_path / "q"),), ("run", str(tmp_path / "q"))):
        done = qualify(*args)
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert "no NVIDIA driver on this machine" in done.stderr
        assert "FAIL  driver" in done.stdout
        assert not (tmp_path / "q").exists()


def test_qualify_gpu_end_to_end_with_host_shadows(tmp_path: Path) -> None:
    """QUALIFY_GPU_SHADOW=1 runs the whole script here with every GPU role as its host shadow
    (a control of the script, labelled so): every run's SHA-256 is the host run's."""
    done = qualify(str(tmp_path / "q"), QUALIFY_GPU_SHADOW="1")
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = [line.split() for line in done.stdout.splitlines() if line[:4] in ("PASS", "FAIL")]
    labels = [" ".join(w[1 : w.index("sha256")]) for w in lines]
    assert labels == [
        "digits/host", "digits/one_gpu (shadow)", "digits/two_gpus (shadow)",
        "digits/gpu_and_host (shadow)",
    ], done.stdout  # fmt: skip
    shas = {w[w.index("sha256") + 1] for w in lines}
    assert len(shas) == 1 and all(w[0] == "PASS" for w in lines), done.stdout
    assert "kernels/round:" in done.stdout and "not a GPU qualification" in done.stderr


def test_qualify_gpu_reports_a_failed_run(built: Built, tmp_path: Path) -> None:
    """Built for the driver, run against the double (whose launches fail): the GPU run is a
    FAIL naming the refusal, the host run a PASS, and the exit status 1."""
    folder = tmp_path / "q"
    assert qualify("build", str(folder)).returncode == 0
    manifest = folder / "manifest.tsv"
    keep = ("digits/host\t", "digits/one_gpu\t")
    manifest.write_text(
        "".join(r for r in manifest.read_text().splitlines(True) if r.startswith(keep))
    )
    done = qualify("run", str(folder), LD_LIBRARY_PATH=str(built.double_dir),
                   ALPHA_DOUBLE_UUIDS=UUID_A)  # fmt: skip
    assert done.returncode == 1, (done.stdout, done.stderr)
    host, gpu = [line for line in done.stdout.splitlines() if line[:4] in ("PASS", "FAIL")]
    assert host.startswith("PASS  digits/host")
    assert gpu.startswith("FAIL  digits/one_gpu") and "gpu-launch-failed" in gpu
    assert "CUDA_ERROR_NOT_SUPPORTED" in gpu and "1 run(s) FAILED" in done.stderr


LENT = QUALIFY.parent / "lent-machine"


def test_lent_machine_is_valid_bash_and_runs_only_what_was_built(tmp_path: Path) -> None:
    """scripts/lent-machine (one call on a lent GPU machine) checks as bash, and `run` on a
    folder `build` never filled says so and stops before measuring anything."""
    assert os.access(LENT, os.X_OK)
    checked = subprocess.run(["bash", "-n", str(LENT)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    done = subprocess.run(
        ["bash", str(LENT), "run"], capture_output=True, text=True, timeout=60,
        env={**_plain_environment(), "LENT_MACHINE_DIR": str(tmp_path / "lent"),
             "OUT": str(tmp_path / "out")},
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "holds no build" in done.stderr and not (tmp_path / "out").exists()
