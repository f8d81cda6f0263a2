"""The packed matrix product (alpha_core/codegen/gemm.py) keeps the bits of the plain loop.

One system whose products all take the packed path: A·B (the forward), Aᵀ·B (weight gradients)
and A·Bᵀ (the gradient of a hidden layer), with shapes that leave partial register tiles at
every edge, more than one block of k (so partial sums go to memory and back) and more than one
task. Its parameters after training equal the NumPy float32 reference's (SHA-256), on every
vector width (x86-64-v2, v3, v4 and AArch64 NEON under qemu-user) and every thread count.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, assert_refused_here, cli, program_of, run_exe, runs_here
from reference import train

from alpha_core.build.executables import build_program
from alpha_core.build.outputs import Deployment
from alpha_core.codegen.target import TARGETS
from alpha_core.codegen.tiles import vector_width
from alpha_core.lower.blocking import GEMM_MIN_WORK, blocking_for

# Leaf 13 x 300 features -> 270 -> 260 -> 5 classes: 13 rows fill no register tile; k = 300
# and 270 each take two blocks of 256; n = 270 and 260 take two column tasks; the weight
# gradients have 300 and 270 rows (four row tasks, a partial last one).
SOURCE = """system wide {
  data train: synthetic(rows: 52, features: 300, classes: 5, seed: 4, noise: 0.5, holdout: 0)
  batch 26 leaves 2 shuffle(seed: 2)
  param w1: f32[300, 270] = normal(0.0, 0.06, seed: 1)
  param b1: f32[270] = zeros
  param w2: f32[270, 260] = normal(0.0, 0.06, seed: 2)
  param b2: f32[260] = uniform(-0.05, 0.05, seed: 5)
  param w3: f32[260, 5] = normal(0.0, 0.06, seed: 3)
  param b3: f32[5] = zeros
  fn model(x: f32[B, 300]) -> f32[B, 5] {
    let h1 = relu(x @ w1 + b1)
    let h2 = tanh(h1 @ w2 + b2)
    return h2 @ w3 + b3
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps %(steps)d
}
"""

# (m, n, k) of each product that must take the packed path, with its layout
PACKED = {
    "forward x @ w1 (A·B)": (13, 270, 300),
    "forward h1 @ w2 (A·B)": (13, 260, 270),
    "gradient of w1, xᵀ · d (Aᵀ·B)": (300, 270, 13),
    "gradient of w2, h1ᵀ · d (Aᵀ·B)": (270, 260, 13),
    "gradient of h1, d · w2ᵀ (A·Bᵀ)": (13, 270, 260),
}


def _run(path: str, *args: str) -> str:
    code, events, stderr = run_exe(path, "--quiet", *args)
    assert code == 0, stderr
    return str(events[-1]["params_sha256"])


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, str]:
    folder = tmp_path_factory.mktemp("wide")
    program = program_of(SOURCE % {"steps": 3}, folder / "wide.alpha")
    return program, train(program).sha256


def test_every_product_of_the_system_takes_the_packed_path() -> None:
    """The shapes above are what the test says they are: each product is large enough for
    the packed kernel, and each exercises the edges it is meant to."""
    tile = blocking_for(8, 16)
    for what, (m, n, k) in PACKED.items():
        assert m * n * k >= GEMM_MIN_WORK, what
        assert m % tile.mr or n % tile.nr or k > tile.kc, what
    assert any(k > tile.kc for _, _, k in PACKED.values())
    assert any(n > tile.nc for _, n, _ in PACKED.values())
    assert any(m > tile.mc for m, _, _ in PACKED.values())


def test_vector_width_follows_the_cpu() -> None:
    host = TARGETS["x86_64"]
    assert vector_width(host.triple, "x86-64-v2", "") == 4
    assert vector_width(host.triple, "x86-64-v3", "") == 8
    assert vector_width(host.triple, "x86-64-v4", "") == 16
    arm = TARGETS["aarch64"]
    assert vector_width(arm.triple, arm.cpu, arm.features) == 4


@pytest.mark.parametrize("cpu", ["x86-64-v2", "x86-64-v3", "x86-64-v4"])
def test_packed_products_are_exact_on_every_vector_width(
    cpu: str, wide: tuple[object, str], tmp_path: Path
) -> None:
    """Tiles of 4 x 8 (SSE), 3 x 32 (AVX2) and 24 x 16 (AVX-512) lanes, and the short tiles
    (2 x 32 on AVX2, 8 x 16 on AVX-512) that the 26 rows of the forward products take: the bits
    of the reference, which adds each product's terms one at a time in ascending k."""
    program, reference = wide
    result = build_program(program, tmp_path, deployment=Deployment(cpu=cpu))  # type: ignore[arg-type]
    if not runs_here(cpu):  # built all the same; the CPU that runs it shows its bits
        assert_refused_here(result.executables[0].path, cpu, tmp_path)
        return
    assert _run(result.executables[0].path, "--threads", "1") == reference


def test_thread_counts_give_the_same_bits(wide: tuple[object, str], tmp_path: Path) -> None:
    """Threads take whole blocks of outputs: 1, 2, 3 and 8 threads, one set of bits."""
    program, reference = wide
    result = build_program(program, tmp_path, deployment=Deployment(cpu="x86-64-v3"))  # type: ignore[arg-type]
    exe = result.executables[0].path
    shas = {threads: _run(exe, "--threads", str(threads)) for threads in (1, 2, 3, 8)}
    assert set(shas.values()) == {reference}, shas


def test_default_thread_count_is_the_cores_and_gives_the_same_bits(
    wide: tuple[object, str], tmp_path: Path
) -> None:
    program, reference = wide
    result = build_program(program, tmp_path)  # type: ignore[arg-type]
    help_text = subprocess.run(
        [result.executables[0].path, "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--threads N" in help_text and "the cores this process may use" in help_text
    assert _run(result.executables[0].path) == reference


@pytest.mark.parametrize("bad", ["0", "257", "two", ""])
def test_a_bad_thread_count_is_refused_by_name(
    bad: str, wide: tuple[object, str], tmp_path: Path
) -> None:
    program, _ = wide
    result = build_program(program, tmp_path)  # type: ignore[arg-type]
    args = [result.executables[0].path, "--threads"] + ([bad] if bad else [])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "error[usage]: --threads needs a count from 1 to 256" in proc.stderr
    assert not Path(f"{result.executables[0].path}.params").exists()


def test_packed_products_are_exact_on_aarch64(wide: tuple[object, str], tmp_path: Path) -> None:
    """The NEON tile (8 x 12) under qemu-user, with two threads: the reference's bits."""
    assert shutil.which("qemu-aarch64"), "this test needs qemu-aarch64 (apt: qemu-user)"
    program, reference = wide
    result = build_program(program, tmp_path, target="aarch64")  # type: ignore[arg-type]
    exe = result.executables[0].path
    params = tmp_path / "arm.params"
    proc = subprocess.run(
        ["qemu-aarch64", exe, "--quiet", "--threads", "2", "--params-out", str(params)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert hashlib.sha256(params.read_bytes()).hexdigest() == reference


PLAN = """
plan duo for wide {
  roles worker[2]
  topology pair
}

pairing two_cores for duo {
  worker[*]: host x86_64, cores 2
}
"""


def _plan_source(tmp_path: Path, pairing: str = "") -> Path:
    src = tmp_path / "wide.alpha"
    src.write_text(SOURCE % {"steps": 2} + PLAN + pairing)
    return src


def test_pairing_cores_bound_the_threads_at_build_and_at_start(tmp_path: Path) -> None:
    """`cores 2` in the pairing: `alpha build --threads 3` is refused by name before anything is
    compiled; a build without --threads runs two threads, and an executable started with
    --threads 3 is refused before round 0."""
    src = _plan_source(tmp_path)
    base = ["build", str(src), "--plan", "duo", "--pairing", "two_cores"]
    over = cli(*base, "-o", str(tmp_path / "over"), "--threads", "3")
    assert over.returncode != 0
    assert "error[threads-over-cores]" in over.stderr
    assert "--threads 3 is more than the 2 cores pairing `two_cores` gives worker[0]" in over.stderr
    assert not (tmp_path / "over" / "worker-0").exists()

    built = cli(*base, "-o", str(tmp_path / "ok"))
    assert built.returncode == 0, built.stderr
    exe = str(tmp_path / "ok" / "worker-0")
    help_text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    assert "threads for the matrix products (default: 2)" in help_text
    started = subprocess.run([exe, "--threads", "3"], capture_output=True, text=True, timeout=60)
    assert started.returncode == 3
    assert "error[threads-over-cores]: --threads 3 is more than the 2 cores" in started.stderr


def test_a_pairing_cores_count_is_checked(tmp_path: Path) -> None:
    bad = """
pairing none for duo {
  worker[*]: host x86_64, cores 0
}

pairing unit for duo {
  worker[*]: host x86_64, memory 64
}
"""
    checked = cli("check", str(_plan_source(tmp_path, bad)))
    assert checked.returncode == 1
    assert "`cores` is 0; a role runs on 1 to 256 cores" in checked.stdout + checked.stderr
    assert "`memory 64` needs a unit" in checked.stdout + checked.stderr


def test_threads_compiled_in_by_alpha_build(tmp_path: Path) -> None:
    """`alpha build --threads 3`: the executable's default, with the reference's bits."""
    src = tmp_path / "wide.alpha"
    src.write_text(SOURCE % {"steps": 3})
    built = cli("build", str(src), "-o", str(tmp_path / "b"), "--threads", "3")
    assert built.returncode == 0, built.stderr
    exe = str(tmp_path / "b" / "wide")
    help_text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    assert "(default: 3)" in help_text
    program = program_of(SOURCE % {"steps": 3}, tmp_path / "again.alpha")
    assert _run(exe) == train(program).sha256
    refused = cli("build", str(src), "-o", str(tmp_path / "c"), "--threads", "0")
    assert refused.returncode != 0 and "--threads 0 is out of range: 1 to 256" in refused.stderr


LARGE = """system many {
  data train: synthetic(rows: 16, features: 300, classes: 5, seed: 6, noise: 0.5, holdout: 0)
  batch 8 leaves 2
  param w1: f32[300, 900] = normal(0.0, 0.05, seed: 1)
  param b1: f32[900] = zeros
  param w2: f32[900, 5] = normal(0.0, 0.05, seed: 2)
  fn model(x: f32[B, 300]) -> f32[B, 5] {
    return relu(x @ w1 + b1) @ w2
  }
  loss softmax_cross_entropy(model(x), y)
  learner %(learner)s
  steps 3
}
"""


@pytest.mark.parametrize(
    "learner", ["adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)", "momentum(lr: 0.1, mu: 0.9)"]
)
def test_the_learner_update_in_tasks_is_exact(learner: str, tmp_path: Path) -> None:
    """276,300 parameters: the update runs in tasks of 65,536 elements on the role's threads
    (kernels.APPLY_TASKS_FROM); 1 and 3 threads give the reference's bits."""
    from alpha_core.codegen.kernels import APPLY_CHUNK, APPLY_TASKS_FROM

    program = program_of(LARGE % {"learner": learner}, tmp_path / "many.alpha")
    assert program.n_params >= APPLY_TASKS_FROM and program.n_params % APPLY_CHUNK != 0
    reference = train(program).sha256
    exe = build_program(program, tmp_path / "b").executables[0].path
    assert {_run(exe, "--threads", t) for t in ("1", "3")} == {reference}


def test_admission_counts_each_threads_packed_panels(tmp_path: Path) -> None:
    """A role with packed products holds one set of panels per thread: `cores 2` doubles it,
    and a system whose products all stay small holds none."""
    from alpha_core.autodiff.reverse import training_step
    from alpha_core.plan.admission import admit, admit_program, task_scratch
    from alpha_core.workspace.analysis import Workspace

    program = program_of(SOURCE % {"steps": 2}, tmp_path / "single.alpha")
    per_thread = task_scratch(program, training_step(program))
    assert per_thread > 0
    assert ("packed panels (1 thread)", per_thread) in admit_program(program).items
    checked = Workspace().analyze_file(str(_plan_source(tmp_path))).checked
    assert checked is not None
    pairing = checked.pairings["two_cores"]
    assert dict(admit(pairing.plan, pairing, 0).items)["packed panels (2 threads)"] == (
        2 * per_thread
    )
    digits = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
    small = program_of(digits, tmp_path / "digits.alpha")
    assert task_scratch(small, training_step(small)) == 0


def test_a_plan_of_packed_products_and_partitioned_state_has_the_single_process_bits(
    tmp_path: Path,
) -> None:
    """The 276,300-parameter system as 3 workers with parameters, gradients and learner state
    partitioned, two threads each: packed products, the update in tasks on each owner's slice
    and the canonical tree give the bits of one process and of the reference, then resume from
    the round-2 capture to the same bits."""
    from alpha_core.build.executables import build_plan
    from alpha_core.build.outputs import Deployment
    from alpha_core.run.launch import free_port_base, run_roles
    from alpha_core.workspace.analysis import Workspace

    learner = "adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)"
    single = (LARGE % {"learner": learner}).replace("steps 3", "steps 4")
    text = single.replace("batch 8 leaves 2", "batch 12 leaves 3") + (
        "\nplan p for many {\n  roles worker[3]\n  topology hierarchy(fanout: 4)\n"
        "  state { params partitioned over worker; grads partitioned over worker; "
        "optimizer partitioned over worker }\n  checkpoint every 2 rounds\n}\n"
    )
    src = tmp_path / "many.alpha"
    src.write_text(text)
    analysis = Workspace().analyze_file(str(src))
    plan, _, diags = analysis.plan("p")
    assert plan is not None, diags
    reference = train(plan.system).sha256
    deployment = Deployment(
        free_port_base(3),
        "127.0.0.1",
        None,
        10_000,
        10_000,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        threads=2,
    )
    result = build_plan(plan, None, tmp_path / "build", deployment)

    def run(*args: str) -> str:
        out = tmp_path / "out.params"
        outcomes = run_roles(
            [
                (e.role, [e.path, "--quiet", "--params-out", str(out), *args])
                for e in result.executables
            ],
            keep_events=True,
        )
        for o in outcomes:
            assert o.exit_code == 0, (o.role, o.refusal, o.message, o.stderr[-400:])
        (writer,) = [o for o in outcomes if o.done and o.done.get("params_file")]
        assert writer.done is not None
        resumed = {e.get("round") for o in outcomes for e in o.events if e["event"] == "resumed"}
        return f"{writer.done['params_sha256']} resumed at {sorted(map(str, resumed))}"

    assert run() == f"{reference} resumed at []"
    again = run("--resume", str(tmp_path / "checkpoints" / "round-00000002"))
    assert again == f"{reference} resumed at ['2']"


# Eight leaves of 300 rows: the first weight gradient is a product over k = 300 (two or three blocks
# of k, so its partial sums go to memory and back before the tree's additions are made), and
# the leaves' chains are 1 to 3 vectors long (the canonical tree of 8 leaves has depth 3).
DEEP = """system deep {
  data train: synthetic(rows: 2400, features: 67, classes: 4, seed: 9, noise: 0.5, holdout: 0)
  batch 2400 leaves 8
  param w1: f32[67, 70] = normal(0.0, 0.1, seed: 1)
  param b1: f32[70] = zeros
  param w2: f32[70, 4] = normal(0.0, 0.1, seed: 2)
  fn model(x: f32[B, 67]) -> f32[B, 4] {
    return relu(x @ w1 + b1) @ w2
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.05)
  steps 2
}
"""


@pytest.mark.parametrize("cpu", ["x86-64-v3", "x86-64-v4"])
def test_the_trees_additions_made_as_a_gradient_is_stored_keep_the_bits(
    cpu: str, tmp_path: Path
) -> None:
    """A leaf's weight gradient leaves the GEMM with the combine tree's additions already made
    (the chain the runtime passes it), over several blocks of k and at the tiles' edges; its
    bias gradient (a loop) gets them in a pass after. The parameters are the reference's."""
    program = program_of(DEEP, tmp_path / "deep.alpha")
    tile = blocking_for(vector_width(TARGETS["x86_64"].triple, cpu, ""), 16)
    assert 300 > tile.kc and 67 * 70 * 300 >= GEMM_MIN_WORK and 70 % tile.nr and 67 % tile.mr
    result = build_program(program, tmp_path, deployment=Deployment(cpu=cpu))
    if not runs_here(cpu):  # built all the same; the CPU that runs it shows its bits
        assert_refused_here(result.executables[0].path, cpu, tmp_path)
        return
    assert _run(result.executables[0].path, "--threads", "2") == train(program).sha256
