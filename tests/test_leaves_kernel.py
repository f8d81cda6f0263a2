"""The kernel for all the leaves of a round (alpha_core/codegen/leaves_kernel.py): the rows of
every leaf at once, each sum over a leaf's examples per leaf, added by the canonical tree inside
the GEMM's blocks. Its parameters are the NumPy reference's (which computes leaf by leaf and
adds pieces by the tree) and those of roles that compute their leaves one at a time."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLES, assert_refused_here, program_of, run_exe, runs_here
from reference import train

from alpha_core.autodiff.reverse import training_step
from alpha_core.build.executables import build_plan, build_program
from alpha_core.build.outputs import Deployment
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.target import TARGETS
from alpha_core.lower.batching import batching
from alpha_core.plan.model import Plan
from alpha_core.run.launch import free_port_base, run_roles
from alpha_core.workspace.analysis import Workspace

# Five leaves of 40 rows (a tree that is not a power of two), three layers with biases: every
# weight gradient is a packed product per leaf (96 x 120 x 40 and 120 x 100 x 40), the output
# layer's a small one, each bias gradient and the loss a sum per leaf.
SOURCE = """system deep {
  data train: synthetic(rows: 400, features: 96, %(labels)s, seed: 3, noise: 0.4, holdout: 0)
  batch 200 leaves 5 shuffle(seed: 4)
  param w1: f32[96, 120] = normal(0.0, 0.08, seed: 1)
  param b1: f32[120] = zeros
  param w2: f32[120, 100] = normal(0.0, 0.08, seed: 2)
  param b2: f32[100] = uniform(-0.05, 0.05, seed: 5)
  param w3: f32[100, 7] = normal(0.0, 0.08, seed: 3)
  param b3: f32[7] = zeros
  fn model(x: f32[B, 96]) -> f32[B, 7] {
    let h1 = relu(x @ w1 + b1)
    let h2 = tanh(h1 @ w2 + b2)
    return h2 @ w3 + b3
  }
  loss %(loss)s(model(x), y)
  learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps 3
}
"""
CLASSES = SOURCE % {"labels": "classes: 7", "loss": "softmax_cross_entropy"}
REGRESSION = SOURCE % {"labels": "targets: 7", "loss": "mse"}


def _sha(path: str, *args: str) -> str:
    code, events, stderr = run_exe(path, "--quiet", *args)
    assert code == 0, stderr
    return str(events[-1]["params_sha256"])


def _plan_sha(plan: Plan, tmp_path: Path) -> str:
    """The SHA-256 of the parameters the plan's roles write, run as processes on loopback."""
    deployment = Deployment(free_port_base(2), "127.0.0.1", None, 10_000, 10_000)
    result = build_plan(plan, None, tmp_path / "build", deployment)
    out = tmp_path / "out.params"
    outcomes = run_roles(
        [(e.role, [e.path, "--quiet", "--params-out", str(out)]) for e in result.executables],
        keep_events=True,
    )
    assert all(o.exit_code == 0 for o in outcomes), [(o.role, o.stderr[-300:]) for o in outcomes]
    return hashlib.sha256(out.read_bytes()).hexdigest()


def _kernel_names(program: object) -> set[str]:
    step = training_step(program)  # type: ignore[arg-type]
    module = build_kernels(program, step, TARGETS["x86_64"].triple, "x86-64-v3")  # type: ignore[arg-type]
    return {f.name for f in module.functions if not f.is_declaration}


def test_steps_of_large_products_get_the_kernel_for_all_leaves(tmp_path: Path) -> None:
    program = program_of(CLASSES, tmp_path / "deep.alpha")
    split = batching(program, training_step(program))
    assert split is not None
    assert len(split.sums) == 7  # six gradients and the loss
    names = _kernel_names(program)
    assert {"alpha_leaves_grad", "alpha_leaves_batch"} <= names
    # one kernel per size of a node of the canonical tree of 5 leaves: 5 = 4 + 1, 4 = 2 + 2
    assert {n for n in names if n.startswith("alpha.leaves.")} == {
        "alpha.leaves.5",
        "alpha.leaves.4",
        "alpha.leaves.2",
    }
    # leaves of 40 examples: each weight gradient's tree is the blocked GEMM's
    assert not {n for n in names if n.startswith("alpha.gemm.rtree")}


def test_leaves_of_few_examples_keep_their_trees_in_registers(tmp_path: Path) -> None:
    """Leaves of 8 examples (SIZES below): each weight gradient is a tree of rank-8 products,
    kept in registers a tile at a time (alpha_core/codegen/tree_tiles.py), for each size of a
    node the roles compute."""
    program = program_of(SIZES, tmp_path / "sizes.alpha")
    names = _kernel_names(program)
    assert {"alpha.gemm.rtree8k8", "alpha.gemm.rtree4k8", "alpha.gemm.rtree2k8"} <= names
    assert not {n for n in names if n.startswith("alpha.gemm.tree")}


@pytest.mark.parametrize(
    "why, source",
    [
        ("one leaf", CLASSES.replace("batch 200 leaves 5", "batch 40 leaves 1")),
        ("small products", CLASSES.replace("96", "9").replace("120", "12").replace("100", "10")),
        (
            "the rows of every leaf would take over 64 MiB",
            CLASSES.replace("rows: 400", "rows: 80000").replace(
                "batch 200 leaves 5", "batch 40000 leaves 5"
            ),
        ),
        (
            "dropout's mask is the leaf's",
            CLASSES.replace("relu(x @ w1 + b1)", "dropout(relu(x @ w1 + b1), rate: 0.2, seed: 3)"),
        ),
    ],
)
def test_other_steps_keep_the_leaf_kernel_alone(why: str, source: str, tmp_path: Path) -> None:
    program = program_of(source, tmp_path / "deep.alpha")
    assert batching(program, training_step(program)) is None, why
    assert "alpha_leaves_grad" not in _kernel_names(program), why


def test_digits_keeps_the_leaf_kernel_alone(tmp_path: Path) -> None:
    program = program_of((EXAMPLES / "digits.alpha").read_text(), EXAMPLES / "_leaves.alpha")
    (EXAMPLES / "_leaves.alpha").unlink()
    assert batching(program, training_step(program)) is None


@pytest.mark.parametrize("source", [CLASSES, REGRESSION], ids=["classes", "regression"])
@pytest.mark.parametrize("cpu", ["x86-64-v2", "x86-64-v4"])
def test_all_leaves_at_once_have_the_reference_bits(source: str, cpu: str, tmp_path: Path) -> None:
    program = program_of(source, tmp_path / "deep.alpha")
    reference = train(program).sha256
    exe = build_program(program, tmp_path, deployment=Deployment(cpu=cpu)).executables[0].path
    if not runs_here(cpu):  # built all the same; the CPU that runs it shows its bits
        assert_refused_here(exe, cpu, tmp_path)
        return
    shas = {threads: _sha(exe, "--threads", str(threads)) for threads in (1, 3)}
    assert set(shas.values()) == {reference}, shas


def test_all_leaves_at_once_have_the_reference_bits_on_aarch64(tmp_path: Path) -> None:
    assert shutil.which("qemu-aarch64"), "this test needs qemu-aarch64 (apt: qemu-user)"
    program = program_of(CLASSES, tmp_path / "deep.alpha")
    exe = build_program(program, tmp_path, target="aarch64").executables[0].path
    params = tmp_path / "arm.params"
    proc = subprocess.run(
        ["qemu-aarch64", exe, "--quiet", "--threads", "2", "--params-out", str(params)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert hashlib.sha256(params.read_bytes()).hexdigest() == train(program).sha256


def test_roles_computing_leaf_by_leaf_agree_with_the_single_process(tmp_path: Path) -> None:
    """A pair (one worker computes leaves 0-3 in one kernel, the other leaf 4 alone, the pieces
    crossing) writes the bits of the one process that computes all five in one kernel."""
    src = tmp_path / "deep.alpha"
    src.write_text(CLASSES + "\nplan duo for deep {\n  roles worker[2]\n  topology pair\n}\n")
    analysis = Workspace().analyze_file(str(src))
    plan, _, diags = analysis.plan("duo")
    assert plan is not None, diags
    single = build_program(plan.system, tmp_path / "one").executables[0].path
    expected = _sha(single)
    assert _plan_sha(plan, tmp_path) == expected


# 8 leaves of 8 rows: over 8 leaves the output layer's products (64 x 10 x 512) are packed, over
# 4 or 2 leaves they are small, so the smaller sizes' kernels make a buffer (the transpose of w2)
# that the largest read in place.
SIZES = """system sizes {
  data train: synthetic(rows: 128, features: 240, classes: 10, seed: 2, holdout: 0)
  batch 64 leaves 8
  param w1: f32[240, 512] = normal(0.0, 0.05, seed: 1)
  param w2: f32[512, 10] = normal(0.0, 0.05, seed: 2)
  fn model(x: f32[B, 240]) -> f32[B, 10] {
    return relu(x @ w1) @ w2
  }
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.05)
  steps 3
}

plan duo for sizes {
  roles worker[2]
  topology pair
}
"""


def test_each_size_of_a_node_has_the_bits_where_its_products_differ(tmp_path: Path) -> None:
    src = tmp_path / "sizes.alpha"
    src.write_text(SIZES)
    plan, _, diags = Workspace().analyze_file(str(src)).plan("duo")
    assert plan is not None, diags
    reference = train(plan.system).sha256
    single = build_program(plan.system, tmp_path / "one").executables[0].path
    assert _sha(single, "--threads", "2") == reference
    assert _plan_sha(plan, tmp_path) == reference
