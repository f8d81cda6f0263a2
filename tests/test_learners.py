"""The learners beyond plain sgd/momentum/adam (issue 13): AdamW, weight decay, Nesterov
momentum and learning-rate schedules. Each compiled run ends with the NumPy float32
reference's bits (SHA-256 of the parameter file); a run resumed mid-warmup ends with the
uninterrupted bits; every refusal of the new arguments is shown on a real source."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import program_of
from test_exact import LEARNERS, assert_exact, source
from test_partitioned import build_single, written_sha

from alpha_core.semantics import schedules
from alpha_core.semantics.numpy_arith import NumpyArith
from alpha_core.workspace.analysis import Workspace

NEW = {
    "adamw-cosine-warmup": "adamw(lr: cosine(0.01, warmup: 5, final: 0.001), weight_decay: 0.1)",
    "adamw-constant-rate": "adamw(lr: 0.01)",
    "sgd-decay-linear": "sgd(lr: linear(0.1, warmup: 3, steps: 20, final: 0.01), "
    "weight_decay: 0.01)",
    "momentum-nesterov-step": "momentum(lr: step(0.05, every: 7, factor: 0.5), nesterov: true)",
    "momentum-decay": "momentum(lr: 0.05, mu: 0.8, weight_decay: 0.05)",
    "adam-decay-warmup": "adam(lr: constant(0.01, warmup: 10), weight_decay: 0.001)",
}


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_learners_are_exact(name: str, tmp_path: Path) -> None:
    LEARNERS[name] = NEW[name]
    assert_exact(source(name, steps=30), tmp_path)


def test_neutral_arguments_keep_the_identity_and_the_bits(tmp_path: Path) -> None:
    """`weight_decay: 0`, `nesterov: false` and `lr: constant(r)` mean what the plain learner
    means: the same identity (a capture of one resumes the other), hence the same bits."""
    plain = program_of(source("momentum"), tmp_path / "a.alpha")
    LEARNERS["neutral"] = "momentum(lr: 0.05, mu: 0.9, nesterov: false, weight_decay: 0)"
    neutral = program_of(source("neutral"), tmp_path / "b.alpha")
    assert neutral.identity() == plain.identity()
    LEARNERS["constant"] = "sgd(lr: constant(0.1))"
    a = assert_exact(source("sgd", steps=5), tmp_path / "sgd")
    b = assert_exact(source("constant", steps=5), tmp_path / "constant")
    assert a == b


def test_schedules_follow_their_formulas() -> None:
    """The float32 recipe of each schedule against its formula in float64, round by round."""
    A = NumpyArith()
    cases = [
        schedules.ScheduleSpec("cosine", 0.01, warmup=10, steps=110, final=0.001),
        schedules.ScheduleSpec("linear", 0.1, warmup=0, steps=50, final=0.0),
        schedules.ScheduleSpec("step", 0.05, warmup=4, every=7, factor=0.5),
        schedules.ScheduleSpec("constant", 0.3, warmup=25),
    ]
    for spec in cases:
        for t in range(0, 130):
            ph = schedules.phase(spec, t)
            got = float(
                schedules.rate(A, spec, np.float32(ph.t), np.float32(ph.after), np.int32(ph.k))
            )
            if t < spec.warmup:
                want = spec.peak * (t + 1) / spec.warmup
            elif spec.kind == "constant":
                want = spec.peak
            elif spec.kind == "step":
                want = spec.peak * spec.factor ** ((t - spec.warmup) // spec.every)
            else:
                u = min(t - spec.warmup, spec.steps - spec.warmup) / (spec.steps - spec.warmup)
                bump = 0.5 * (1 + math.cos(math.pi * u)) if spec.kind == "cosine" else 1 - u
                want = spec.final + (spec.peak - spec.final) * bump
            assert got == pytest.approx(want, rel=4e-7, abs=1e-9), (spec.kind, t)


def test_cospi_is_close_and_exact_at_its_ends() -> None:
    A = NumpyArith()
    u = np.linspace(0.0, 1.0, 100_001, dtype=np.float32)
    got = schedules.cospi(A, u).astype(np.float64)
    want = np.cos(np.pi * u.astype(np.float64))
    assert np.max(np.abs(got - want)) < 3e-7
    assert [float(schedules.cospi(A, np.float32(v))) for v in (0.0, 0.5, 1.0)] == [1.0, 0.0, -1.0]


WARM = (
    "system s {\n"
    "  data train: synthetic(rows: 120, features: 5, classes: 3, seed: 5, noise: 0.3)\n"
    "  batch 12 leaves 3 shuffle(seed: 3)\n"
    "  param w: f32[5, 3] = normal(0.0, 0.4, seed: 1)\n"
    "  param b: f32[3] = zeros\n"
    "  fn model(x: f32[B, 5]) -> f32[B, 3] {\n    return x @ w + b\n  }\n"
    "  loss softmax_cross_entropy(model(x), y)\n"
    "  learner adamw(lr: cosine(0.02, warmup: 12), weight_decay: 0.05)\n"
    "  steps 20\n}\n"
)


def test_a_run_resumed_mid_warmup_ends_with_the_uninterrupted_bits(tmp_path: Path) -> None:
    from reference import train

    built = build_single(WARM, tmp_path, every=5)
    whole = written_sha(built.run("--quiet"))
    assert whole == train(program_of(WARM, tmp_path / "ref.alpha")).sha256
    for capture in ("round-00000005", "round-00000010"):  # both inside the 12 warmup rounds
        resumed = built.run("--quiet", "--resume", str(tmp_path / "checkpoints" / capture))
        assert written_sha(resumed) == whole


def _refusals(tmp_path: Path, learner: str) -> list[tuple[str, str]]:
    src = WARM.replace("adamw(lr: cosine(0.02, warmup: 12), weight_decay: 0.05)", learner)
    path = tmp_path / "r.alpha"
    path.write_text(src)
    return [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]


@pytest.mark.parametrize(
    ("learner", "name", "message"),
    [
        (
            "sgd(lr: 0.1, weight_decay: -0.01)",
            "bad-argument",
            "`weight_decay` is -0.01 (-0.01 as a float32); it must be at least 0.0",
        ),
        (
            "adamw(lr: 0.001, weight_decay: -1)",
            "bad-argument",
            "`weight_decay` is -1.0; it must be at least 0.0",
        ),
        (
            "momentum(lr: 0.1, nesterov: yes)",
            "bad-argument",
            "`nesterov` is `true` or `false`",
        ),
        (
            "momentum(lr: 0.1, mu: 0, nesterov: true)",
            "bad-argument",
            "Nesterov momentum needs `mu` above 0; with `mu: 0` it is plain sgd",
        ),
        (
            "adam(lr: cosin(0.01))",
            "unknown-name",
            "unknown learning-rate schedule `cosin`",
        ),
        (
            "adam(lr: cosine(0.01, warmup: 20))",
            "bad-argument",
            "a warmup of 20 rounds leaves no round of `cosine` after it: the system's steps are 20",
        ),
        (
            "adam(lr: linear(0.01, warmup: 5, steps: 5))",
            "bad-argument",
            "a warmup of 5 rounds leaves no round of `linear` after it: its `steps:` are 5",
        ),
        (
            "adam(lr: step(0.01))",
            "bad-argument",
            "`step` needs `every:`",
        ),
        (
            "adam(lr: step(0.01, every: 10, factor: 2.0))",
            "bad-argument",
            "`factor` is 2.0; it must be above 0.0 and at most 1.0",
        ),
        (
            "adam(lr: cosine(0.01, steps: 20000000))",
            "bad-argument",
            "`steps` is 20000000; it must be at least 1 and at most 16777216",
        ),
        (
            "adam(lr: cosine(-0.01))",
            "bad-argument",
            "`peak` is -0.01 (-0.01 as a float32); it must be above 0.0",
        ),
        (
            "adam(lr: cosine(0.01, warmup: 0.5))",
            "bad-argument",
            "`warmup` of `cosine` must be a literal int",
        ),
        ("sgd(lr: 0.1, clip: 0)", "bad-argument", "`clip` is 0.0; it must be above 0.0"),
        ("sgd(lr: 0.1, clip: -1.0)", "bad-argument", "`clip` is -1.0; it must be above 0.0"),
    ],
)
def test_refusals_of_the_new_arguments(
    learner: str, name: str, message: str, tmp_path: Path
) -> None:
    found = _refusals(tmp_path, learner)
    assert len(found) == 1, found
    assert found[0][0] == name
    assert found[0][1].startswith(message), found[0][1]


def test_a_long_system_needs_the_decays_length(tmp_path: Path) -> None:
    src = WARM.replace("steps 20", "steps 20000000").replace(
        "adamw(lr: cosine(0.02, warmup: 12), weight_decay: 0.05)", "adam(lr: cosine(0.01))"
    )
    path = tmp_path / "long.alpha"
    path.write_text(src)
    found = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert found == [
        (
            "bad-argument",
            "`cosine` decays over the system's 20,000,000 steps, more than 16,777,216 rounds",
        )
    ]


@pytest.mark.parametrize("name", ["relu", "sum", "softmax"])
def test_a_function_named_like_a_built_in_is_refused(name: str, tmp_path: Path) -> None:
    """It was accepted and never called (every call went to the built-in)."""
    src = WARM.replace(
        "  fn model(", f"  fn {name}(a: f32[B, 3]) -> f32[B, 3] {{\n    return a\n  }}\n  fn model("
    )
    path = tmp_path / "shadow.alpha"
    path.write_text(src)
    found = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert found == [
        (
            "duplicate-name",
            f"`{name}` is a built-in function; a function of that name would never be called",
        )
    ]
