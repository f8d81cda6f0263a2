"""GPU roles without a GPU: the PTX of every example is exact by construction (the lint) and
assembles for sm_80, sm_86 and sm_90 (ptxas from the nvidia-cuda-nvcc wheel, a test tool only);
the host shadow, which runs the same kernels with the same launch geometry, gives the
single-process SHA-256; and on this machine, which has no NVIDIA driver, a GPU role refuses
`gpu-driver-missing` at start-up and writes nothing while the others refuse by name."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import nvidia
import pytest
from conftest import EXAMPLES, cli, program_of

from alpha_core.autodiff.reverse import training_step
from alpha_core.codegen.gpu_kernels import build_gpu_kernels
from alpha_core.codegen.ptx import PTX_CPU, emit_ptx, kernel_names, lint_ptx
from alpha_core.lower.gpu_support import gpu_unsupported

PTXAS = Path(next(iter(nvidia.__path__))) / "cu13" / "bin" / "ptxas"
ARCHES = ("sm_80", "sm_86", "sm_90")

DIGITS = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
PLANS = """
plan pair for {name} {{
  roles worker[2]
  topology pair
}}
plan split for {name} {{
  roles worker[3]
  topology hierarchy(fanout: 4)
  state {{ params partitioned over worker; grads partitioned over worker;
          optimizer partitioned over worker }}
}}
pairing two_gpus for pair {{
  worker[*]: host x86_64, gpu h200
}}
pairing gpu_and_host for pair {{
  worker[0]: host x86_64, gpu a100_40gb
  worker[1]: host x86_64
}}
pairing mixed for split {{
  worker[0]: host x86_64, gpu h100_80gb
  worker[1]: host x86_64
  worker[2]: host x86_64, gpu rtx3090
}}
"""
# exp, log (softmax cross-entropy) and tanh, with momentum
BLOBS = (EXAMPLES / "blobs.alpha").read_text() + PLANS.format(name="blobs")
# sigmoid and the squared error, with sgd
REGRESSION = """
system wave {
  data train: synthetic(rows: 300, features: 4, classes: 3, seed: 5, noise: 0.3, holdout: 60)
  batch 24 leaves 3
  param w1: f32[4, 12] = normal(0.0, 0.3, seed: 8)
  param b1: f32[12] = zeros
  param w2: f32[12, 3] = uniform(-0.2, 0.2, seed: 9)
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    return sigmoid(x @ w1 + b1) @ w2 - exp(x @ w1) @ w2 / 8.0
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 60
}
""" + PLANS.format(name="wave")


def _ptx_of(source: str, tmp: Path) -> str:
    program = program_of(source, tmp)
    module, _ = build_gpu_kernels(program, training_step(program), "ptx")
    return emit_ptx(module)


def _run(tmp: Path, source: str, *args: str) -> dict[str, object]:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "system.alpha"
    path.write_text(source)
    proc = cli("run", str(path), *args, "--json", "-o", str(tmp / "out"))
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    assert isinstance(report, dict)
    return report


def _sha(report: dict[str, object]) -> str:
    roles = report["roles"]
    assert isinstance(roles, list)
    shas = {r["params_sha256"] for r in roles if r["params_sha256"]}
    assert len(shas) == 1, roles
    return str(shas.pop())


def test_every_example_has_exact_ptx_that_assembles(tmp_path: Path) -> None:
    assert PTXAS.is_file(), f"ptxas is part of the dev extra (nvidia-cuda-nvcc): {PTXAS}"
    checked = 0
    # not the `_`-named copies another test writes there for a moment (tests run side by side)
    for example in sorted(e for e in EXAMPLES.glob("*.alpha") if not e.name.startswith("_")):
        source = example.read_text().replace('"data/', f'"{EXAMPLES}/data/')
        program = program_of(source, tmp_path / example.name)
        if gpu_unsupported(program):  # refused by name at the pairing: tested below
            continue
        ptx = _ptx_of(source, tmp_path / example.name)
        assert f".target {PTX_CPU}" in ptx and ".version 7.8" in ptx
        assert lint_ptx(ptx, program.fused) == [], (example.name, lint_ptx(ptx)[:5])
        assert len(kernel_names(ptx)) > 0
        ptx_file = tmp_path / f"{example.stem}.ptx"
        ptx_file.write_text(ptx)
        for arch in ARCHES:
            done = subprocess.run(
                [str(PTXAS), f"-arch={arch}", str(ptx_file), "-o", str(tmp_path / "k.cubin")],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, (example.name, arch, done.stderr[-2000:])
        checked += 1
    assert checked >= 2  # digits and blobs at least


def test_the_lint_names_every_kind_of_inexact_instruction() -> None:
    bad = "\n".join(
        [
            "\tadd.f32 \t%r1, %r2, %r3;",
            "\tfma.rn.f32 \t%r1, %r2, %r3, %r4;",
            "\tex2.approx.f32 \t%r1, %r2;",
            "\tdiv.full.f32 \t%r1, %r2, %r3;",
            "\tmul.rn.ftz.f32 \t%r1, %r2, %r3;",
            "\tmax.f32 \t%r1, %r2, 0f00000000;",
            "\tatom.global.add.f32 \t%r1, [%rd1], %r2;",
            "\tadd.rn.f32 \t%r1, %r2, %r3;  // fine",
            "\tadd.s64 \t%rd1, %rd2, %rd3;",
        ]
    )
    problems = lint_ptx(bad)
    flagged = {p.line for p in problems}
    assert flagged == {1, 2, 3, 4, 5, 6, 7}, problems
    assert any("fused" in p.why for p in problems)
    assert any("approximate" in p.why for p in problems)


def test_blobs_and_a_sigmoid_model_have_exact_ptx(tmp_path: Path) -> None:
    for name, source in (("blobs", BLOBS), ("wave", REGRESSION)):
        ptx = _ptx_of(source, tmp_path / f"{name}.alpha")
        assert lint_ptx(ptx) == [], lint_ptx(ptx)[:5]


@pytest.mark.parametrize(
    "source", [DIGITS, BLOBS, REGRESSION], ids=["digits-adam-relu", "blobs-tanh", "wave-sigmoid"]
)
def test_shadow_pairs_give_the_single_process_bits(tmp_path: Path, source: str) -> None:
    single = _sha(_run(tmp_path / "single", source))
    for pairing in ("two_gpus", "gpu_and_host"):
        report = _run(
            tmp_path / pairing, source, "--plan", "pair", "--pairing", pairing, "--gpu-shadow"
        )
        assert report["ok"], report
        assert _sha(report) == single, pairing
        roles = report["roles"]
        assert isinstance(roles, list)
        gpu = [r for r in roles if "device" in r]
        assert len(gpu) == (2 if pairing == "two_gpus" else 1)
        for r in gpu:
            assert r["device"]["shadow"] is True and "(shadow)" in r["device"]["target"]
            assert r["device"]["demand"] > 0 and r["kernel_ms_per_round"] is not None


def test_a_partitioned_plan_with_gpu_and_host_roles_gives_the_bits(tmp_path: Path) -> None:
    single = _sha(_run(tmp_path / "single", BLOBS))
    report = _run(
        tmp_path / "mixed", BLOBS, "--plan", "split", "--pairing", "mixed", "--gpu-shadow"
    )
    assert report["ok"], report
    assert _sha(report) == single


def test_a_gpu_role_without_a_driver_refuses_at_start_up_and_writes_nothing(
    tmp_path: Path,
) -> None:
    report = _run(tmp_path, DIGITS, "--plan", "pair", "--pairing", "gpu_and_host")
    assert report["ok"] is False
    roles = {r["role"]: r for r in report["roles"]}  # type: ignore[union-attr]
    assert roles["worker[0]"]["refusal"] == "gpu-driver-missing", roles
    assert "libcuda.so.1" in str(roles["worker[0]"]["message"])
    # the host role is refused by name too: its peer never came
    assert roles["worker[1]"]["refusal"] in ("peer-unreachable", "peer-lost", "peer-timeout")
    out = tmp_path / "out"
    assert not list(out.glob("*.params")) and not list(out.glob("*.checkpoints"))


def test_the_shadow_names_itself_in_its_device_event(tmp_path: Path) -> None:
    path = tmp_path / "d.alpha"
    path.write_text(DIGITS)
    built = cli(
        "build", str(path), "--plan", "pair", "--pairing", "two_gpus", "--gpu-shadow",
        "-o", str(tmp_path / "b"), "--role", "worker[0]", "--json",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    manifest = json.loads((tmp_path / "b" / "alpha-build.json").read_text())
    assert manifest["executables"][0]["target"] == "gpu h200 (shadow)"
    exe = manifest["executables"][0]["path"]
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert "host shadow" in proc.stdout
    # what `alpha run` prints: each role's target on its bar, and a line per GPU role
    shown = cli(
        "run", str(path), "--plan", "pair", "--pairing", "gpu_and_host", "--gpu-shadow",
        "-o", str(tmp_path / "r"),
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "gpu h200 (shadow) on host shadow" in shown.stderr  # the bars
    assert "x86_64" in shown.stderr
    line = next(x for x in shown.stdout.splitlines() if "(shadow) on host shadow:" in x)
    assert "worker[0]" in line and "device memory" in line and "ms/round" in line
    assert re.search(r"bus [\d.]+ KiB over, [\d.]+ KiB back", line), line  # its copies


def test_a_gpu_role_says_where_its_kernel_time_went(tmp_path: Path) -> None:
    path = tmp_path / "d.alpha"
    path.write_text(DIGITS + SOLO.format(name="digits"))
    built = cli(
        "build", str(path), "--plan", "solo", "--pairing", "one_gpu", "--gpu-shadow",
        "-o", str(tmp_path / "b"), "--json",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (exe,) = json.loads(built.stdout)["executables"]
    ran = subprocess.run([exe["path"]], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    events = [json.loads(line) for line in ran.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[-2:] == ["kernels", "done"], kinds[-3:]
    [device] = [e for e in events if e["event"] == "device"]
    kernels = events[-2]["kernels"]
    names = [k["name"] for k in kernels]
    assert len(set(names)) == len(names) <= device["kernels"]
    assert all(k["launches"] > 0 for k in kernels)
    assert [k["us"] for k in kernels] == sorted((k["us"] for k in kernels), reverse=True)
    # every launch of the run is counted once: the steps' leaves launch each step kernel
    steps = [e for e in events if e["event"] == "step"]
    program = program_of(path.read_text(), tmp_path / "p")
    leaves = len(steps) * program.leaves
    step_kernels = {
        k["name"]: k["launches"] for k in kernels if k["name"].startswith("alpha_step_")
    }
    assert step_kernels and set(step_kernels.values()) == {leaves}, step_kernels
    assert sum(k["us"] for k in kernels) >= sum(e["kernel_us"] for e in steps)


def test_a_refused_pairing_blocks_only_builds_that_use_it(tmp_path: Path) -> None:
    path = tmp_path / "d.alpha"
    path.write_text(DIGITS + "\npairing bad for pair {\n  worker[*]: host x86_64, gpu h900\n}\n")
    checked = cli("check", str(path))
    assert checked.returncode != 0 and "h900" in checked.stdout + checked.stderr
    choices = ([], ["--plan", "star"], ["--plan", "pair", "--pairing", "two_gpus"])
    for n, choice in enumerate(choices):  # a folder each: a build never mixes into another's
        built = cli("build", str(path), *choice, "--gpu-shadow", "-o", str(tmp_path / f"b{n}"))
        assert built.returncode == 0, (choice, built.stdout, built.stderr)
    refused = cli(
        "build", str(path), "--plan", "pair", "--pairing", "bad", "-o", str(tmp_path / "c")
    )
    assert refused.returncode != 0
    assert "unknown-name" in refused.stdout + refused.stderr


@pytest.mark.parametrize(
    "learner",
    [
        "adamw(lr: cosine(0.01, warmup: 5, final: 0.001), weight_decay: 0.1)",
        "momentum(lr: linear(0.05, warmup: 3, steps: 20, final: 0.01), mu: 0.9, nesterov: true)",
    ],
    ids=["adamw-cosine", "nesterov-linear"],
)
def test_learners_with_schedules_on_gpu_roles_give_the_bits(tmp_path: Path, learner: str) -> None:
    source = BLOBS.replace("learner momentum(lr: 0.05, mu: 0.9)", f"learner {learner}")
    assert learner in source
    single = _sha(_run(tmp_path / "single", source))
    report = _run(tmp_path / "gpu", source, "--plan", "split", "--pairing", "mixed", "--gpu-shadow")
    assert report["ok"], report
    assert _sha(report) == single


def test_a_gpu_on_an_aarch64_host_is_refused_by_name(tmp_path: Path) -> None:
    """GPU roles are built for x86-64 hosts only: a GPU paired with an AArch64 host (a GH200,
    say) is refused at check time and nothing is built; the file's host plans still build."""
    source = DIGITS + "\npairing arm_gpu for pair {\n  worker[*]: host aarch64, gpu h200\n}\n"
    path = tmp_path / "arm.alpha"
    path.write_text(source)
    refused = cli(
        "build", str(path), "--plan", "pair", "--pairing", "arm_gpu", "--gpu-shadow",
        "-o", str(tmp_path / "b"),
    )  # fmt: skip
    text = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "unsupported-on-target" in text, text
    assert "x86_64 hosts only" in text
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").iterdir())
    host = cli(
        "build", str(path), "--plan", "pair", "--pairing", "local", "-o", str(tmp_path / "h")
    )
    assert host.returncode == 0, host.stdout + host.stderr


@pytest.mark.parametrize("case", ["binary", "smooth"])
def test_one_logit_and_label_smoothing_on_gpu_roles_give_the_bits(
    tmp_path: Path, case: str
) -> None:
    """One logit's sigmoid cross-entropy (evaluated by its probability) and the softmax
    cross-entropy with label smoothing."""
    from layer_sources import BINARY, SMOOTH, loss_source

    system = loss_source(BINARY if case == "binary" else SMOOTH, steps=12) + PLANS.format(name="l")
    assert lint_ptx(_ptx_of(system, tmp_path / "l.alpha")) == []
    alone = _run(tmp_path / "single", system)
    report = _run(
        tmp_path / "gpu", system, "--plan", "pair", "--pairing", "gpu_and_host", "--gpu-shadow"
    )
    assert report["ok"], report
    assert _sha(report) == _sha(alone)
    roles = report["roles"]
    assert isinstance(roles, list)
    accuracy = [r["holdout_accuracy"] for r in roles if r["holdout_accuracy"] is not None]
    assert accuracy == [alone["roles"][0]["holdout_accuracy"]]  # type: ignore[index]


def test_the_cnn_example_with_clipping_on_gpu_roles_gives_the_bits(tmp_path: Path) -> None:
    """examples/digits_cnn.alpha (convolutions, pooling, AdamW with a cosine warmup, clipping
    by global norm): its gradient norm is the same canonical tree on the device, so a
    partitioned plan of GPU and host roles (norm nodes exchanged between owners) and a GPU
    pair take the same clipping decisions and end with the single-process bits."""
    cnn = (EXAMPLES / "digits_cnn.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
    system = cnn.split("\nplan ", 1)[0].replace("steps 400", "steps 8")
    # a threshold every round's norm is above: every round clips, on every owner count
    system = system.replace("warmup: 20", "warmup: 3").replace("clip: 1.0", "clip: 0.05")
    assert "clip: 0.05" in system and "steps 8" in system and "warmup: 3" in system
    system += PLANS.format(name="digits_cnn")
    single = _sha(_run(tmp_path / "single", system))
    for plan, pairing in (("pair", "two_gpus"), ("split", "mixed")):
        report = _run(
            tmp_path / pairing, system, "--plan", plan, "--pairing", pairing, "--gpu-shadow"
        )
        assert report["ok"], report
        assert _sha(report) == single, pairing


@pytest.mark.parametrize(
    "body", ["activations", "attention", "extremes", "heads", "log_softmax", "slice"]
)
def test_layer_operations_on_gpu_roles_give_the_bits(tmp_path: Path, body: str) -> None:
    """sqrt, abs, square, gelu, silu, maximum/minimum/clamp, layer norm, causal attention
    (batched products, transposes of the last two axes, softmax), log_softmax, reshape and
    slice: the GPU kernels' bits are the host's."""
    from test_ops_layers import source

    system = source(body, regression=body == "log_softmax") + PLANS.format(name="s")
    assert lint_ptx(_ptx_of(system, tmp_path / "s.alpha")) == []
    single = _sha(_run(tmp_path / "single", system))
    report = _run(
        tmp_path / "gpu", system, "--plan", "pair", "--pairing", "two_gpus", "--gpu-shadow"
    )
    assert report["ok"], report
    assert _sha(report) == single


def test_the_transformer_on_gpu_and_host_roles_gives_the_bits(tmp_path: Path) -> None:
    """Embedding lookup and its gradient, positional embedding, two causal heads, layer norm,
    gelu, residuals, a sliced sequence loss: a partitioned plan of GPU and host roles."""
    text = (EXAMPLES / "transformer.alpha").read_text()
    system = text.split("\nplan ", 1)[0].replace("steps 600", "steps 8")
    assert "steps 8" in system
    system += PLANS.format(name="transformer")
    alone = _run(tmp_path / "single", system)
    report = _run(tmp_path / "gpu", system, "--plan", "split", "--pairing", "mixed", "--gpu-shadow")
    assert report["ok"], report
    assert _sha(report) == _sha(alone)
    # the held-out token accuracy comes from the GPU role's forward kernels (worker[0])
    roles = report["roles"]
    assert isinstance(roles, list)
    accuracy = [r["holdout_accuracy"] for r in roles if r["holdout_accuracy"] is not None]
    assert accuracy == [alone["roles"][0]["holdout_accuracy"]]  # type: ignore[index]


def test_dropout_masks_on_gpu_roles_are_the_hosts(tmp_path: Path) -> None:
    """The mask is a function of (seed, round, example, element): a GPU role reads the round
    and leaf the runtime sets before each gradient, and evaluation uses no mask."""
    from layer_sources import DROPOUT

    system = DROPOUT + PLANS.format(name="d")
    assert lint_ptx(_ptx_of(system, tmp_path / "d.alpha")) == []
    single = _run(tmp_path / "single", system)
    for plan, pairing in (("pair", "two_gpus"), ("split", "mixed")):
        report = _run(
            tmp_path / pairing, system, "--plan", plan, "--pairing", pairing, "--gpu-shadow"
        )
        assert report["ok"], report
        assert _sha(report) == _sha(single)
        done = [r for r in report["roles"] if r["holdout_accuracy"] is not None]  # type: ignore[union-attr]
        assert done and done[0]["holdout_accuracy"] == single["roles"][0]["holdout_accuracy"]  # type: ignore[index]


@pytest.mark.parametrize("body", ["padded", "strided"])
def test_convolutions_and_pools_on_gpu_roles_give_the_bits(tmp_path: Path, body: str) -> None:
    """conv2d (padding, stride) and its two adjoints gather; the pools' adjoints scatter on
    the host and are gathered here, window by window in the host's order."""
    from layer_sources import cnn_source

    system = cnn_source(body) + PLANS.format(name="c")
    assert lint_ptx(_ptx_of(system, tmp_path / "c.alpha")) == []
    single = _sha(_run(tmp_path / "single", system))
    report = _run(
        tmp_path / "gpu", system, "--plan", "pair", "--pairing", "gpu_and_host", "--gpu-shadow"
    )
    assert report["ok"], report
    assert _sha(report) == single


SOLO = """
plan solo for {name} {{
  roles worker[1]
  topology hierarchy(fanout: 2)
}}
pairing one_gpu for solo {{
  worker[*]: host x86_64, gpu h200
}}
"""


def test_a_gpu_role_keeps_its_state_and_copies_one_sum_per_round(tmp_path: Path) -> None:
    """digits (2,410 parameters, Adam, 8 leaves of 8 rows) on one GPU role: the leaves' tree
    runs on the device and the update's parameters and state stay there, so a round copies
    back one node's sum (gradient and loss) and copies over the leaves' rows, the round's
    gradient sum and the update's scalars; the parameters are never sent back to the device."""
    source = DIGITS + SOLO.format(name="digits")
    single = _sha(_run(tmp_path / "single", DIGITS))
    report = _run(
        tmp_path / "gpu", source, "--plan", "solo", "--pairing", "one_gpu", "--gpu-shadow"
    )
    assert report["ok"] and _sha(report) == single
    roles = report["roles"]
    assert isinstance(roles, list)
    (role,) = roles
    n = 64 * 32 + 32 + 32 * 10 + 10
    assert role["to_host_per_round"] == 4 * (n + 1)  # the parameters and state stay there
    rows = 8 * (8 * 64 * 4 + 8 * 4 + 2 * 4)  # each leaf's features, labels, (round, leaf)
    assert role["to_device_per_round"] == rows + 4 * n + 6 * 8


@pytest.mark.parametrize("name", ["blobs", "digits_cnn", "transformer"])
def test_each_example_in_fused_arithmetic_on_gpu_roles_gives_the_bits(
    tmp_path: Path, name: str
) -> None:
    """The examples in `arithmetic fused` (digits: tests/test_fused.py): GPU roles in the
    shadow, partitioned beside a host role, their tiled products adding one fma a term, end
    with the single-process bits, which differ from the unfused ones."""
    from test_fused import fused

    text = (EXAMPLES / f"{name}.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
    system = fused(text.split("\nplan ", 1)[0], steps=6).replace("warmup: 20", "warmup: 3")
    system += PLANS.format(name=name)
    alone = _sha(_run(tmp_path / "single", system))
    report = _run(tmp_path / "gpu", system, "--plan", "split", "--pairing", "mixed", "--gpu-shadow")
    assert report["ok"], report
    assert _sha(report) == alone
    unfused = system.replace("arithmetic fused\n", "")
    assert _sha(_run(tmp_path / "unfused", unfused)) != alone


def test_captures_of_gpu_roles_hold_the_devices_state_and_resume_on_the_host(
    tmp_path: Path,
) -> None:
    """Partitioned parameters and momentum on two GPU roles and a host role, captured every 3
    rounds: the captures hold what the devices updated (fetched for the capture, as the
    parameters sent to the other roles are), so the single-process host executable resumes
    from round 3 and ends with the uninterrupted run's bits."""
    system = BLOBS.replace("steps 200", "steps 8").replace(
        "  state { params partitioned", "  checkpoint every 3 rounds\n  state { params partitioned"
    )
    assert "checkpoint every 3 rounds" in system and "steps 8" in system
    single = _sha(_run(tmp_path / "single", system))
    out = tmp_path / "gpu"
    report = _run(out, system, "--plan", "split", "--pairing", "mixed", "--gpu-shadow")
    assert report["ok"] and _sha(report) == single
    captures = sorted(out.glob("out/**/round-00000003"))
    assert captures, sorted(str(p) for p in out.glob("out/**/*"))[:20]
    resumed = _run(tmp_path / "resumed", system, "--resume", str(captures[0]))
    assert resumed["ok"], resumed
    assert _sha(resumed) == single
