"""A deep model's kernels call one function per kind of node (codegen/graph_emit.py): the same
bits as the reference, and code that grows with the distinct operations, not with the calls."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import build, program_of, run_exe
from reference import train

from alpha_core.autodiff.reverse import training_step
from alpha_core.codegen.graph_emit import OUTLINE_FROM
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.target import TARGETS
from alpha_core.lower.live import live_nodes


def residual(blocks: int, width: int = 6) -> str:
    params = "\n".join(
        f"  param w{i}: f32[{width}, {width}] = normal(0.0, 0.3, seed: {i + 1})\n"
        f"  param b{i}: f32[{width}] = uniform(-0.1, 0.1, seed: {i + 100})"
        for i in range(1, blocks + 1)
    )
    calls = "\n".join(f"    let h{i} = block(h{i - 1}, w{i}, b{i})" for i in range(1, blocks + 1))
    return f"""system deep {{
  data train: synthetic(rows: 48, features: {width}, classes: 3, seed: 3, noise: 0.4, holdout: 8)
  batch 8 leaves 2 shuffle(seed: 1)
  param w0: f32[{width}, {width}] = normal(0.0, 0.3, seed: 900)
{params}
  param wo: f32[{width}, 3] = normal(0.0, 0.3, seed: 901)
  fn block(h: f32[B, {width}], w: f32[{width}, {width}], b: f32[{width}]) -> f32[B, {width}] {{
    return h + tanh(h @ w + b) * 0.5
  }}
  fn model(x: f32[B, {width}]) -> f32[B, 3] {{
    let h0 = (x @ w0) * 0.25
{calls}
    return h{blocks} @ wo
  }}
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)
  steps 6
}}
"""


def test_a_deep_residual_net_is_outlined_and_exact(tmp_path: Path) -> None:
    program = program_of(residual(24), tmp_path / "deep.alpha")
    step = training_step(program)
    assert len(live_nodes(step.graph, [step.loss_sum, *step.grads])) >= OUTLINE_FROM
    module = str(build_kernels(program, step, TARGETS["x86_64"].triple))
    kinds = set(re.findall(r'define internal void @"alpha\.node\.(\d+)\.', module))
    calls = len(re.findall(r'call void @"alpha\.node\.', module))
    # 24 blocks called from the model: a handful of kinds of node, called many times each
    assert 0 < len(kinds) < 40 and calls > 10 * len(kinds), (len(kinds), calls)
    result = build(program, tmp_path / "build")
    params = tmp_path / "out.params"
    code, events, stderr = run_exe(result.executables[0].path, "--params-out", str(params))
    assert code == 0, stderr
    assert events[-1]["params_sha256"] == train(program).sha256


def test_a_small_model_stays_one_function(tmp_path: Path) -> None:
    program = program_of(residual(2), tmp_path / "shallow.alpha")
    module = str(build_kernels(program, training_step(program), TARGETS["x86_64"].triple))
    assert "alpha.node." not in module
