"""Clipping by global norm (issue 13): the norm is the canonical tree over the gradient's
elements, so every owner count and partitioning evaluates the same float32 value and takes
the same decision. A threshold one float32 ulp below a round's norm clips and the norm itself
does not, under 1, 2, 3, 4 and 8 owners with partitioned gradients (each role holding only its
subtree's elements of the round's gradient), each with the NumPy reference's bits; a run
killed mid-way and resumed on another owner count ends with the same bits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import reference_learners
from conftest import program_of
from reference import train
from test_partitioned import (  # noqa: F401 - _kernels_once: one kernel compile per system
    SHORT,
    _kernels_once,
    build_plan_roles,
    build_single,
    plan_text,
    written_sha,
)

ADAM = "learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)"
assert ADAM in SHORT


def system(learner: str, steps: int) -> str:
    """digits alone (its file's plans and pairings left out), with this learner and steps."""
    alone = SHORT[: SHORT.index("\n}\n", SHORT.index("system digits")) + 3]
    return alone.replace(ADAM, f"learner {learner}").replace("steps 40", f"steps {steps}")


def reference_run(text: str, folder: Path) -> tuple[str, list[float]]:
    folder.mkdir(parents=True, exist_ok=True)
    reference_learners.NORMS.clear()
    result = train(program_of(text, folder / "reference.alpha"))
    return result.sha256, list(reference_learners.NORMS)


def owners_sha(text: str, owners: int, folder: Path) -> str:
    if owners == 1:
        return written_sha(build_single(text, folder).run("--quiet"))
    return written_sha(build_plan_roles(plan_text(owners, "grads", system=text), folder).run())


@pytest.fixture(scope="module")
def first_norm(tmp_path_factory: pytest.TempPathFactory) -> np.float32:
    """Round 0's global norm, from the reference (round 0 starts from the initial values, so
    it does not depend on the threshold)."""
    folder = tmp_path_factory.mktemp("norm")
    _, norms = reference_run(system("adam(lr: 0.01, clip: 1000.0)", 1), folder)
    return np.float32(norms[0])


@pytest.mark.parametrize("side", ["one-ulp-below", "at-the-norm"])
def test_one_ulp_decides_the_same_under_every_owner_count(
    side: str, first_norm: np.float32, tmp_path: Path
) -> None:
    threshold = np.nextafter(first_norm, np.float32(0)) if side == "one-ulp-below" else first_norm
    text = system(f"adam(lr: 0.01, clip: {float(threshold)!r})", 1)
    want, norms = reference_run(text, tmp_path)
    assert np.float32(norms[0]) == first_norm
    unclipped, _ = reference_run(system("adam(lr: 0.01)", 1), tmp_path / "plain")
    # below the norm the round is clipped (other bits); at the norm it is not (the same bits)
    assert (want != unclipped) == (side == "one-ulp-below")
    for owners in (1, 2, 3, 4, 8, 5):  # 5: a star, the hub over 4 workers
        assert owners_sha(text, owners, tmp_path / f"owners-{owners}") == want, owners


CLIPPED = "adamw(lr: cosine(0.02, warmup: 5), weight_decay: 0.01, clip: 0.42)"


def test_a_clipped_run_resumes_on_another_owner_count(tmp_path: Path) -> None:
    """30 rounds, some clipped and some not; 4 owners with everything partitioned checkpoint
    every 10 rounds, and 8 owners resumed from round 10 end with the same bits."""
    text = system(CLIPPED, 30)
    want, norms = reference_run(text, tmp_path)
    assert any(n > 0.42 for n in norms) and any(n <= 0.42 for n in norms), norms
    four = build_plan_roles(plan_text(4, "params", every=10, system=text), tmp_path / "four")
    assert written_sha(four.run()) == want
    eight = build_plan_roles(plan_text(8, "params", every=10, system=text), tmp_path / "eight")
    capture = four.folder / "checkpoints" / "round-00000010"
    assert written_sha(eight.run("--resume", str(capture))) == want
    assert written_sha(build_single(text, tmp_path / "one").run("--quiet")) == want


def test_replicated_gradients_clip_without_moving_norms(tmp_path: Path) -> None:
    """A pair with gradients replicated: both workers hold the whole gradient and evaluate the
    norm themselves (no norm ops in their schedules), with the same bits."""
    from test_partitioned import analysis

    from alpha_core.plan.projection import project

    text = system(CLIPPED, 12)
    want, _ = reference_run(text, tmp_path)
    source = plan_text(2, "optimizer", system=text)
    plan, _, _ = analysis(source, tmp_path / "pair").plan("p")
    assert plan is not None
    assert not any(op.kind.startswith("norm") for i in range(2) for op in project(plan, i).ops)
    assert written_sha(build_plan_roles(source, tmp_path / "pair").run()) == want


def test_the_checked_runtime_clips_without_undefined_behaviour(tmp_path: Path) -> None:
    """Three owners of partitioned gradients, each role linked with a runtime that traps on
    undefined behaviour (clip_norm.c included): the norm exchange runs, nothing traps, and the
    bits are the reference's."""
    from dataclasses import replace

    from conftest import link_checked
    from test_partitioned import Built, analysis

    from alpha_core.plan.projection import project
    from alpha_core.run.launch import free_port_base

    text = system(CLIPPED, 8)
    want, _ = reference_run(text, tmp_path)
    plan, _, diags = analysis(plan_text(3, "grads", system=text), tmp_path).plan("p")
    assert plan is not None, diags
    base = free_port_base(plan.membership.total)
    roles = []
    for index in range(plan.membership.total):
        role = replace(project(plan, index, base), checkpoint_dir=str(tmp_path / "ckpt"))
        assert any(op.kind == "norm_send" for op in role.ops)
        roles.append((role.name, link_checked(plan.system, role, tmp_path / f"role-{index}")))
    assert written_sha(Built(roles, tmp_path).run("--quiet")) == want


def _refused(path: str) -> str:
    from conftest import run_exe

    code, events, stderr = run_exe(path, "--quiet")
    assert code == 3 and events[-1]["event"] == "refused", stderr
    assert events[-1]["name"] == "program-invalid"
    return str(events[-1]["message"])


def test_norm_ops_without_their_kernels_or_their_nodes_are_refused(tmp_path: Path) -> None:
    """Checked dry before anything runs: a norm op in a role whose kernels do not clip, and a
    partitioned role that applies without receiving the norm's nodes."""
    from dataclasses import replace

    from conftest import link_checked, program_of
    from test_partitioned import analysis

    from alpha_core.plan.projection import project

    text = system(CLIPPED, 8)
    plan, _, diags = analysis(plan_text(2, "grads", system=text), tmp_path).plan("p")
    assert plan is not None, diags
    child = project(plan, 1)
    plain = program_of(system("adam(lr: 0.01)", 8), tmp_path / "plain.alpha")
    exe = link_checked(plain, child, tmp_path / "plain-role")
    assert "moves gradient norms, but the kernels do not clip" in _refused(exe)
    ops = tuple(op for op in child.ops if op.kind != "norm_recv")
    exe = link_checked(plan.system, replace(child, ops=ops), tmp_path / "no-recv")
    assert "needs a gradient-norm node it neither evaluates nor receives" in _refused(exe)


def test_a_large_clipped_update_in_tasks_is_exact(tmp_path: Path) -> None:
    """300,000 elements: the update runs as tasks on two threads (kernels.APPLY_TASKS_FROM),
    each reading the round's values (rate, AdamW factor, beta powers, clipping scale) from the
    task context; the big parameter is unused by the model, so only weight decay and the
    clipped gradient move it."""
    import hashlib

    from conftest import build, run_exe

    src = WARM_BIG
    program = program_of(src, tmp_path / "big.alpha")
    assert program.n_params >= 1 << 18
    exe = build(program, tmp_path / "build").executables[0].path
    out = tmp_path / "out.params"
    code, events, stderr = run_exe(exe, "--threads", "2", "--params-out", str(out))
    assert code == 0, stderr
    reference_learners.NORMS.clear()
    assert hashlib.sha256(out.read_bytes()).hexdigest() == train(program).sha256
    assert any(n > 0.1 for n in reference_learners.NORMS)  # some rounds were clipped


WARM_BIG = (
    "system s {\n"
    "  data train: synthetic(rows: 120, features: 5, classes: 3, seed: 5, noise: 0.3)\n"
    "  batch 12 leaves 3 shuffle(seed: 3)\n"
    "  param w: f32[5, 3] = normal(0.0, 0.4, seed: 1)\n"
    "  param big: f32[300000] = uniform(-1.0, 1.0, seed: 2)\n"
    "  fn model(x: f32[B, 5]) -> f32[B, 3] {\n    return x @ w\n  }\n"
    "  loss softmax_cross_entropy(model(x), y)\n"
    "  learner adamw(lr: cosine(0.02, warmup: 2), weight_decay: 0.05, clip: 0.1)\n"
    "  steps 6\n}\n"
)


def test_mixed_instruction_sets_take_the_same_decision(tmp_path: Path) -> None:
    """Three owners of partitioned gradients, worker[0] on x86-64 and the others AArch64 (run
    under qemu-user): the norm nodes cross ISAs as float32 bits and the run ends with the
    reference's bits."""
    from test_partitioned import analysis

    from alpha_core.build.executables import build_plan
    from alpha_core.build.outputs import Deployment
    from alpha_core.run.launch import free_port_base, run_roles

    text = system(CLIPPED, 8)
    want, _ = reference_run(text, tmp_path)
    source = plan_text(3, "grads", system=text) + (
        "\npairing mixed for p {\n  worker[0]: host x86_64\n  worker[1..3]: host aarch64\n}\n"
    )
    plan, pairing, diags = analysis(source, tmp_path).plan("p", "mixed")
    assert plan is not None and pairing is not None, diags
    deployment = Deployment(free_port_base(3), "127.0.0.1", None, 20_000, 20_000)
    result = build_plan(plan, pairing, tmp_path / "build", deployment)
    out = tmp_path / "out.params"
    commands = []
    for e in result.executables:
        cmd = [e.path, "--params-out", str(out), "--quiet"]
        commands.append((e.role, cmd if e.role == "worker[0]" else ["qemu-aarch64", *cmd]))
    assert written_sha(run_roles(commands, keep_events=True)) == want
