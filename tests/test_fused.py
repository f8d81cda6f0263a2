"""`arithmetic fused`: every sum of products adds each term with one correctly rounded fused
multiply-add, in the declared order, and stays exact everywhere.

The fused variant of each example equals the NumPy reference computing the same fmas
(alpha_core/semantics/numpy_fma.py) bit for bit, and differs from the unfused bits (so the
arithmetic is really in the code). The same SHA-256 comes back at x86-64-v3 and v4, at 1-3
threads, for every plan (pair, hierarchies, a hub, partitioned state), after a resume on another
owner count, on AArch64 under qemu-user and from GPU roles in the host shadow, whose PTX holds
`fma.rn.f32` (allowed by the lint in a fused system only). A CPU without FMA, a capture of the
other arithmetic and `--cpu x86-64-v2` are refused by name.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, build, cli, program_of, run_exe, runs_here
from reference import train
from test_cnn_gemm import SOURCE as CNN
from test_cpu_levels import run_at
from test_gemm import SOURCE
from test_partitioned import SHORT, build_plan_roles, build_single, plan_text, written_sha

from alpha_core.autodiff.reverse import training_step
from alpha_core.build.executables import build_program
from alpha_core.check.program import Program
from alpha_core.codegen.gpu_kernels import build_gpu_kernels
from alpha_core.codegen.ptx import emit_ptx, lint_ptx

WIDE = SOURCE % {"steps": 3}  # products on the packed GEMM and leaf gradients on register trees


def fused(source: str, steps: int | None = None) -> str:
    """The source with `arithmetic fused` after its (first) steps item, at `steps` if given."""

    def item(m: re.Match[str]) -> str:
        return f"{m.group(1)}steps {steps or m.group(2)}\n{m.group(1)}arithmetic fused"

    out, n = re.subn(r"(?m)^(\s*)steps (\d+)$", item, source, count=1)
    assert n == 1
    return out


def example(name: str) -> str:
    return (EXAMPLES / f"{name}.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')


def exact(src: str, tmp: Path) -> tuple[Program, str]:
    """Builds and runs `src`, asserts its parameters are the reference's, returns the digest."""
    tmp.mkdir(parents=True, exist_ok=True)
    program = program_of(src, tmp / "s.alpha")
    result = build(program, tmp / "build")
    code, events, stderr = run_exe(result.executables[0].path, "--params-out", str(tmp / "p"))
    assert code == 0, stderr
    done = events[-1]
    ref = train(program)
    assert done["params_sha256"] == ref.sha256
    steps = [float(e["loss"]) for e in events if e["event"] == "step"]  # type: ignore[arg-type]
    assert steps == pytest.approx(ref.losses, rel=1e-6)
    return program, str(done["params_sha256"])


@pytest.mark.parametrize(
    ("name", "steps"), [("digits", 12), ("digits_cnn", 22), ("transformer", 22), ("blobs", 12)]
)
def test_each_fused_example_is_the_fused_reference(name: str, steps: int, tmp_path: Path) -> None:
    program, fused_sha = exact(fused(example(name), steps), tmp_path / "fused")
    assert program.fused and "arithmetic fused" in program.canonical()
    short = re.sub(r"(?m)^(\s*)steps \d+$", rf"\1steps {steps}", example(name), count=1)
    unfused, unfused_sha = exact(short, tmp_path / "unfused")
    assert not unfused.fused and "arithmetic" not in unfused.canonical()
    assert fused_sha != unfused_sha  # the fmas are in the code, not only in the identity


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A fused system whose products take the packed, threaded GEMM and the register trees of
    leaf weight gradients: its default executable and the reference's digest."""
    src = fused(WIDE)
    tmp = tmp_path_factory.mktemp("wide")
    program = program_of(src, tmp / "s.alpha")
    exe = build(program, tmp / "build").executables[0].path
    return exe, train(program).sha256


def _sha_at(exe: str, level: str | None, threads: int, params: Path) -> str:
    done = run_at(exe, level, "--quiet", "--threads", str(threads), "--params-out", str(params))
    assert done.returncode == 0, done.stderr[-600:]
    return str(json.loads(done.stdout.splitlines()[-1])["params_sha256"])


def test_fused_products_are_exact_at_every_level_and_thread_count(
    wide: tuple[str, str], tmp_path: Path
) -> None:
    exe, reference = wide
    seen = 0
    for level in ("x86-64-v3", "x86-64-v4"):
        if not runs_here(level):  # this CPU lacks it: refused by name, tested elsewhere
            continue
        for threads in (1, 2, 3):
            assert _sha_at(exe, level, threads, tmp_path / "p") == reference, (level, threads)
            seen += 1
    assert seen >= 3
    refused = run_at(exe, "x86-64-v2", "--quiet")
    assert refused.returncode != 0 and "cpu-level-unsupported" in refused.stderr
    assert "x86-64-v3, x86-64-v4" in refused.stderr  # what it carries: no v2 copy


def test_a_fused_cnn_on_the_gemm_is_exact_at_every_level_and_thread_count(tmp_path: Path) -> None:
    """Convolutions and their adjoints as packed products (codegen/conv_gemm.py), fused."""
    program = program_of(fused(CNN), tmp_path / "g.alpha")
    exe = build(program, tmp_path / "build").executables[0].path
    reference = train(program).sha256
    for level in ("x86-64-v3", "x86-64-v4"):
        if runs_here(level):
            for threads in (1, 2):
                assert _sha_at(exe, level, threads, tmp_path / "p") == reference, (level, threads)


def test_a_cpu_without_fma_is_refused_at_start_up_before_reading_anything(
    wide: tuple[str, str], tmp_path: Path
) -> None:
    """qemu-user emulating a Nehalem (SSE4.2, no AVX or FMA): the fused executable names why."""
    assert shutil.which("qemu-x86_64"), "this test needs qemu-x86_64 (apt: qemu-user)"
    exe, _ = wide
    params = tmp_path / "p"
    done = subprocess.run(
        ["qemu-x86_64", "-cpu", "Nehalem", exe, "--params-out", str(params)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr[-600:]
    refused = json.loads(done.stdout.splitlines()[-1])
    assert refused["name"] == "cpu-level-unsupported"
    assert "fused" in refused["message"] and "FMA" in refused["message"]
    assert not params.exists()
    assert not any(json.loads(x)["event"] == "start" for x in done.stdout.splitlines())


def test_a_build_for_a_cpu_without_fma_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.alpha"
    path.write_text(fused(example("digits"), 5))
    done = cli("build", str(path), "--cpu", "x86-64-v2", "-o", str(tmp_path / "v2"))
    assert done.returncode != 0
    assert "error[unsupported-on-target]" in done.stderr and "arithmetic fused" in done.stderr
    assert not (tmp_path / "v2" / "digits").exists()
    ok = cli("build", str(path), "--cpu", "haswell", "-o", str(tmp_path / "haswell"))
    assert ok.returncode == 0, ok.stderr
    manifest = json.loads((tmp_path / "haswell" / "alpha-build.json").read_text())
    assert manifest["arithmetic"] == "fused"  # the build manifest names it, as the identity does


def test_fused_aarch64_gives_the_x86_bits(wide: tuple[str, str], tmp_path: Path) -> None:
    assert shutil.which("qemu-aarch64"), "this test needs qemu-aarch64 (apt: qemu-user)"
    _, reference = wide
    program = program_of(fused(WIDE), tmp_path / "s.alpha")
    result = build_program(program, tmp_path / "arm", target="aarch64")
    params = tmp_path / "p"
    done = subprocess.run(
        ["qemu-aarch64", result.executables[0].path, "--quiet", "--threads", "2"]
        + ["--params-out", str(params)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-600:]
    assert json.loads(done.stdout.splitlines()[-1])["params_sha256"] == reference


FUSED_SHORT = fused(SHORT)


@pytest.fixture(scope="module")
def fused_single(tmp_path_factory: pytest.TempPathFactory) -> str:
    built = build_single(FUSED_SHORT, tmp_path_factory.mktemp("single"))
    return written_sha(built.run("--quiet"))


@pytest.mark.parametrize(
    ("owners", "layout"), [(2, "optimizer"), (3, "params"), (5, "grads"), (8, "params")]
)
def test_every_fused_plan_gives_the_single_process_bits(
    owners: int, layout: str, fused_single: str, tmp_path: Path
) -> None:
    built = build_plan_roles(plan_text(owners, layout, system=FUSED_SHORT), tmp_path)
    assert written_sha(built.run("--quiet")) == fused_single


def test_a_fused_capture_resumes_on_another_owner_count_and_not_unfused(
    fused_single: str, tmp_path: Path
) -> None:
    pair = build_plan_roles(plan_text(2, "params", system=FUSED_SHORT), tmp_path / "pair")
    assert written_sha(pair.run("--quiet")) == fused_single
    capture = pair.folder / "checkpoints" / "round-00000020"
    top = json.loads(_top_manifest(capture))
    assert top["arithmetic"] == "fused"
    four = build_plan_roles(plan_text(4, "params", system=FUSED_SHORT), tmp_path / "four")
    into = tmp_path / "into"
    outcomes = four.run("--resume", str(capture), "--checkpoint-dir", str(into))
    assert written_sha(outcomes) == fused_single
    # the unfused system's executable refuses the fused capture, naming both arithmetics
    unfused = build_single(SHORT, tmp_path / "unfused")
    refused = unfused.run("--resume", str(capture))
    assert {o.refusal for o in refused} == {"arithmetic-mismatch"}, [o.message for o in refused]
    assert "arithmetic fused" in refused[0].message and "unfused" in refused[0].message
    # and `alpha run` refuses it before building anything
    source = tmp_path / "u.alpha"
    source.write_text(SHORT)
    done = cli("run", str(source), "--resume", str(capture), "-o", str(tmp_path / "never"))
    assert done.returncode != 0 and "error[arithmetic-mismatch]" in done.stderr
    assert not (tmp_path / "never").exists()


def _top_manifest(capture: Path) -> str:
    from alpha_core.checkpoint.pack import TOP, split

    return split((capture / TOP).read_bytes(), 64 << 20).manifest


def test_fused_gpu_roles_in_the_shadow_give_the_bits_and_lint_their_fmas(
    fused_single: str, tmp_path: Path
) -> None:
    program = program_of(FUSED_SHORT, tmp_path / "s.alpha")
    module, _ = build_gpu_kernels(program, training_step(program), "ptx")
    ptx = emit_ptx(module)
    assert "fma.rn.f32" in ptx
    assert lint_ptx(ptx, fused=True) == [], lint_ptx(ptx, fused=True)[:5]
    assert any("fused" in p.why for p in lint_ptx(ptx))  # not in an unfused system
    path = tmp_path / "g.alpha"
    path.write_text(FUSED_SHORT)  # digits' own plan `pair` and pairing `two_gpus`
    run = ["--plan", "pair", "--pairing", "two_gpus", "--gpu-shadow", "--json"]
    done = cli("run", str(path), *run, "-o", str(tmp_path / "out"))
    report = json.loads(done.stdout)
    assert report["ok"], report
    assert {r["params_sha256"] for r in report["roles"] if r["params_sha256"]} == {fused_single}
