"""Exactness: the executable's final parameters equal the NumPy float32 reference's, bit for bit
(SHA-256), for every example, every learner, and a model using exp, log, tanh and sigmoid."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import EXAMPLES, build, program_of, run_exe
from reference import train

SYNTH = """system s {
  data train: synthetic(rows: 200, features: 5, %(labels)s, seed: 5, noise: 0.3, holdout: 40)
  batch 24 leaves %(leaves)d %(shuffle)s
  param w1: f32[5, 7] = normal(0.0, 0.4, seed: 1)
  param b1: f32[7] = uniform(-0.1, 0.1, seed: 9)
  param w2: f32[7, %(outputs)d] = normal(0.0, 0.4, seed: 2)
  param b2: f32[%(outputs)d] = zeros
  fn model(x: f32[B, 5]) -> f32[B, %(outputs)d] {
    %(body)s
  }
  loss %(loss)s(model(x), y)
  learner %(learner)s
  steps %(steps)d
}
"""
MLP = "return relu(x @ w1 + b1) @ w2 + b2"
# exp, log (softplus), tanh, sigmoid, a reduction over features, mean and division
TRANSCENDENTAL = (
    "let h = tanh(x @ w1 + b1) + sigmoid(x @ w1) * 0.5\n"
    "    let soft = log(exp(h) + 1.0)\n"
    "    let centred = soft - mean(w1, axis: 0) / 3.0\n"
    "    return centred @ w2 + b2 * sum(b1, axis: 0)"
)
LEARNERS = {
    "sgd": "sgd(lr: 0.1)",
    "momentum": "momentum(lr: 0.05, mu: 0.9)",
    "adam": "adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)",
}


def source(
    learner: str,
    body: str = MLP,
    regression: bool = False,
    leaves: int = 3,
    shuffle: bool = True,
    steps: int = 30,
) -> str:
    outputs = 2 if regression else 3
    return SYNTH % {
        "labels": f"targets: {outputs}" if regression else f"classes: {outputs}",
        "outputs": outputs,
        "leaves": leaves,
        "body": body,
        "learner": LEARNERS[learner],
        "loss": "mse" if regression else "softmax_cross_entropy",
        "steps": steps,
        "shuffle": "shuffle(seed: 3)" if shuffle else "",
    }


def assert_exact(src: str, tmp: Path) -> str:
    tmp.mkdir(parents=True, exist_ok=True)
    program = program_of(src, tmp / "s.alpha")
    result = build(program, tmp / "build")
    tmp.mkdir(parents=True, exist_ok=True)
    params = tmp / "out.params"
    code, events, stderr = run_exe(result.executables[0].path, "--params-out", str(params))
    assert code == 0, stderr
    done = events[-1]
    ref = train(program)
    assert done["params_sha256"] == hashlib.sha256(params.read_bytes()).hexdigest()
    assert done["params_sha256"] == ref.sha256
    steps = [e for e in events if e["event"] == "step"]
    assert [float(e["loss"]) for e in steps] == pytest.approx(ref.losses, rel=1e-6)
    return str(done["params_sha256"])


def assert_exact_on_threads(src: str, tmp: Path, threads: tuple[str, ...] = ("2", "3")) -> str:
    """assert_exact, then the same system built again and run at each of `threads`: the
    reference's digest at every thread count."""
    digest = assert_exact(src, tmp)
    program = program_of(src, tmp / "t.alpha")
    exe = build(program, tmp / "threads").executables[0].path
    for count in threads:
        params = tmp / f"{count}.params"
        code, events, stderr = run_exe(exe, "--threads", count, "--params-out", str(params))
        assert code == 0, stderr
        assert events[-1]["params_sha256"] == digest
    return digest


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_each_learner_classification(learner: str, tmp_path: Path) -> None:
    assert_exact(source(learner), tmp_path)


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_each_learner_regression_with_exp_log_tanh(learner: str, tmp_path: Path) -> None:
    assert_exact(
        source(learner, TRANSCENDENTAL, regression=True, leaves=4, shuffle=False), tmp_path
    )


def test_transcendental_classification(tmp_path: Path) -> None:
    assert_exact(source("adam", TRANSCENDENTAL, leaves=8), tmp_path)


@pytest.mark.parametrize("example", ["digits", "blobs"])
def test_examples_are_exact(example: str, tmp_path: Path) -> None:
    src = (EXAMPLES / f"{example}.alpha").read_text()
    src = src.replace('"data/', f'"{EXAMPLES}/data/')
    assert_exact(src, tmp_path)


def test_learners_differ(tmp_path: Path) -> None:
    """The digests above are not vacuous: changing the learner changes the bits."""
    a = assert_exact(source("sgd", steps=5), tmp_path / "a")
    b = assert_exact(source("momentum", steps=5), tmp_path / "b")
    assert a != b
