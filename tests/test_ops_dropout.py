"""Dropout (issue 13): the mask of element e of example i of leaf l in round t is a pure
function of (seed, t, l · leafsize + i, e), so the executable equals the NumPy float32
reference, a plan with everything partitioned over three workers gives the single-process
bits, and so does the single process resumed from that plan's capture; the gradient agrees
with float64 finite differences (the mask held fixed); evaluation uses no mask."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import reference_layers
from conftest import program_of, run_exe
from layer_sources import DROPOUT
from reference import F32, evaluate, load_data
from test_exact import assert_exact
from test_ops_layers import assert_finite_differences
from test_partitioned import Built, analysis, written_sha

from alpha_core.build.executables import build_plan, build_program
from alpha_core.build.outputs import Deployment
from alpha_core.run.launch import free_port_base

PLAN = """
plan p for d {
  roles worker[3]
  topology hierarchy(fanout: 4)
  state {
    params partitioned over worker; grads partitioned over worker
    optimizer partitioned over worker
  }
  checkpoint every 5 rounds
}
"""


def test_dropout_is_exact_and_its_gradient_matches(tmp_path: Path) -> None:
    assert_exact(DROPOUT, tmp_path / "exact")
    reference_layers.CONTEXT.update(round=7, leaf=2)  # some mask, held fixed
    assert_finite_differences(program_of(DROPOUT, tmp_path / "g.alpha"), False)


def test_every_plan_and_a_resume_give_the_bits_and_evaluation_uses_no_mask(
    tmp_path: Path,
) -> None:
    a = analysis(DROPOUT + PLAN, tmp_path / "plan")
    plan, _, diags = a.plan("p")
    assert plan is not None, diags
    deployment = Deployment(
        free_port_base(plan.membership.total),
        "127.0.0.1",
        None,
        10_000,
        10_000,
        checkpoint_dir=str(tmp_path / "plan" / "checkpoints"),
    )
    result = build_plan(plan, None, tmp_path / "plan" / "build", deployment)
    roles = Built([(e.role, e.path) for e in result.executables], tmp_path / "plan")
    planned = written_sha(roles.run("--quiet"))

    program, _ = a.program()
    assert program is not None
    single = build_program(
        program,
        tmp_path / "single",
        deployment=Deployment(checkpoint_dir=str(tmp_path / "single-checkpoints")),
    )
    params_file = tmp_path / "single.params"
    code, events, stderr = run_exe(single.executables[0].path, "--params-out", str(params_file))
    assert code == 0, stderr
    assert events[-1]["params_sha256"] == planned
    capture = tmp_path / "plan" / "checkpoints" / "round-00000010"
    code, resumed, stderr = run_exe(single.executables[0].path, "--resume", str(capture), "--quiet")
    assert code == 0, stderr
    assert resumed[-1]["params_sha256"] == planned

    # the held-out accuracy is the reference's without any mask
    flat = np.fromfile(params_file, dtype="<f4")
    params = [flat[p.offset : p.offset + p.count].reshape(p.shape) for p in program.params]
    x, y = load_data(program)
    first = program.data.rows - program.data.holdout
    reference_layers.CONTEXT["training"] = False
    try:
        z = evaluate(program.model, [program.output], params, x[first:], y[first:], 24, F32)
    finally:
        reference_layers.CONTEXT["training"] = True
    expected = float(np.mean(np.argmax(z[program.output], axis=1) == y[first:, 0]))
    assert events[-1]["holdout_accuracy"] == pytest.approx(expected, abs=1e-9)


RETURN = "return dropout(reshape(h, B, 12), rate: 0.1, seed: 10) @ wo"
REFUSED = {
    "of a parameter": (
        "return reshape(h, B, 12) @ dropout(wo, rate: 0.5, seed: 1)",
        ("shape-mismatch", "`dropout` masks the values of examples, not f32[12, 3]"),
    ),
    "of rate 1": ("return dropout(reshape(h, B, 12), rate: 1.0, seed: 1) @ wo", "bad-argument"),
    "without a seed": ("return dropout(reshape(h, B, 12), rate: 0.5) @ wo", "bad-argument"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_dropout_misuse_is_refused(case: str, tmp_path: Path) -> None:
    from alpha_core.workspace.analysis import Workspace

    line, want = REFUSED[case]
    path = tmp_path / "r.alpha"
    path.write_text(DROPOUT.replace(RETURN, line))
    got = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert want in got if isinstance(want, tuple) else any(n == want for n, _ in got), got
