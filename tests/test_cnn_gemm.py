"""A CNN whose convolutions take the packed GEMM (codegen/conv_gemm.py), trained end to end:
its parameters equal the NumPy float32 reference's (SHA-256) with a default build, and with
builds pinned to x86-64-v2 and x86-64-v4 each run at 1 and 2 threads. conv2d (stride 1 and 2,
padding 1), conv2d_dx and conv2d_dw all run as products here; tests/test_conv_gemm.py checks
each op directly, over more shapes and AArch64."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import assert_refused_here, program_of, run_exe, runs_here
from reference import train
from test_exact import assert_exact

from alpha_core.autodiff.reverse import training_step
from alpha_core.build.executables import build_program
from alpha_core.build.outputs import Deployment
from alpha_core.ir.graph import concrete
from alpha_core.lower.conv_gemm import CONV_PRODUCTS, on_gemm
from alpha_core.lower.live import live_nodes

SOURCE = """system g {
  data train: synthetic(rows: 96, features: 196, classes: 3, seed: 5, noise: 0.3, holdout: 0)
  batch 32 leaves 2 shuffle(seed: 3)
  param k1: f32[12, 1, 3, 3] = normal(0.0, 0.4, seed: 1)
  param c1: f32[12, 1, 1] = uniform(-0.1, 0.1, seed: 2)
  param k2: f32[13, 12, 3, 3] = normal(0.0, 0.2, seed: 3)
  param w: f32[117, 3] = normal(0.0, 0.3, seed: 4)
  fn model(x: f32[B, 1, 14, 14]) -> f32[B, 3] {
    let h = relu(conv2d(x, k1, stride: 1, padding: 1) + c1)
    let q = relu(conv2d(h, k2, stride: 2, padding: 1))
    let r = max_pool(q, size: 2, stride: 2)
    return reshape(r, B, 117) @ w
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 4
}
"""


def test_the_convolutions_take_the_gemm(tmp_path: Path) -> None:
    program = program_of(SOURCE, tmp_path / "g.alpha")
    step = training_step(program)
    graph = step.graph
    ops = []
    for node in (graph[i] for i in live_nodes(graph, [step.loss_sum, *step.grads])):
        if node.op in CONV_PRODUCTS:
            out = concrete(node.shape, program.leaf_size)
            ins = tuple(concrete(graph[i].shape, program.leaf_size) for i in node.inputs)
            if on_gemm(node.op, out, ins):
                ops.append(node.op)
    assert sorted(ops) == ["conv2d", "conv2d", "conv2d_dw", "conv2d_dw", "conv2d_dx"], ops


def test_a_default_build_equals_the_reference(tmp_path: Path) -> None:
    assert_exact(SOURCE, tmp_path)


@pytest.mark.parametrize("cpu", ["x86-64-v2", "x86-64-v4"])
def test_every_level_and_thread_count_gives_the_reference_bits(cpu: str, tmp_path: Path) -> None:
    program = program_of(SOURCE, tmp_path / "g.alpha")
    result = build_program(program, tmp_path / "build", deployment=Deployment(cpu=cpu))
    if not runs_here(cpu):  # built all the same; the CPU that runs it shows its bits
        assert_refused_here(result.executables[0].path, cpu, tmp_path)
        return
    want = train(program).sha256
    for threads in ("1", "2"):
        code, events, stderr = run_exe(result.executables[0].path, "--quiet", "--threads", threads)
        assert code == 0, stderr
        assert events[-1]["params_sha256"] == want, (cpu, threads)


# 2 x 2 max pools of stride 2 run across vector lanes (codegen/pool_lanes.py): planes of odd
# width (27 -> 13 -> 6 windows a row, no window reads the last row and column) make whole
# vectors and the tails of halving widths at every level (13 = 8 + 4 + 1 on AVX2, 3 x 4 + 1 on
# SSE and NEON), and the adjoint writes every position itself where the windows tile the plane
POOLS = """system p {
  data train: synthetic(rows: 64, features: 729, classes: 3, seed: 4, noise: 0.3, holdout: 0)
  batch 16 leaves 2 shuffle(seed: 3)
  param k1: f32[4, 1, 3, 3] = normal(0.0, 0.4, seed: 1)
  param k2: f32[4, 4, 3, 3] = normal(0.0, 0.3, seed: 3)
  param w: f32[144, 3] = normal(0.0, 0.3, seed: 2)
  fn model(x: f32[B, 1, 27, 27]) -> f32[B, 3] {
    let h = tanh(conv2d(x, k1, stride: 1, padding: 1))
    let p = max_pool(h, size: 2, stride: 2)
    let q = max_pool(tanh(conv2d(p, k2, stride: 1, padding: 1)), size: 2, stride: 2)
    return reshape(q, B, 144) @ w
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 3
}
"""


def test_max_pools_across_lanes_give_the_reference_bits(tmp_path: Path) -> None:
    digest = assert_exact(POOLS, tmp_path / "default")
    program = program_of(POOLS, tmp_path / "p.alpha")
    v2 = build_program(program, tmp_path / "v2", deployment=Deployment(cpu="x86-64-v2"))
    for threads in ("1", "3"):
        code, events, stderr = run_exe(v2.executables[0].path, "--quiet", "--threads", threads)
        assert code == 0, stderr
        assert events[-1]["params_sha256"] == digest, threads
    assert shutil.which("qemu-aarch64"), "this test needs qemu-aarch64 (apt: qemu-user)"
    arm = build_program(program, tmp_path / "arm", target="aarch64")
    done = subprocess.run(
        ["qemu-aarch64", arm.executables[0].path, "--quiet", "--threads", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-600:]
    assert json.loads(done.stdout.splitlines()[-1])["params_sha256"] == digest
