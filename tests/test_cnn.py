"""examples/digits_cnn.alpha (issue 13): convolutions, pooling, relu and a dense layer (AdamW, a
cosine schedule, clipping by global norm) on the
digits as 1x8x8 images reach 0.975 held-out accuracy, every plan of it (a pair, a tree, a plan
with parameters, gradients and optimizer state partitioned) gives the single-process SHA-256,
and a short run equals the NumPy float32 reference bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, run_exe
from test_distributed import analysis, run_plan
from test_exact import assert_exact

from alpha_core.build.executables import build_program

CNN = (EXAMPLES / "digits_cnn.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("cnn")
    program, _ = analysis(CNN, tmp).program()
    assert program is not None
    result = build_program(program, tmp / "single")
    code, events, stderr = run_exe(result.executables[0].path, "--quiet")
    assert code == 0, stderr
    return events[-1]


def test_digits_cnn_reaches_its_accuracy(single: dict[str, object]) -> None:
    accuracy = single["holdout_accuracy"]
    assert isinstance(accuracy, float) and accuracy >= 0.975, accuracy


@pytest.mark.parametrize("plan", ["pair", "tree", "sharded"])
def test_every_plan_gives_the_single_process_bits(
    plan: str, single: dict[str, object], tmp_path: Path
) -> None:
    outcomes = run_plan(CNN, plan, tmp_path)
    for o in outcomes:
        assert o.exit_code == 0, (o.role, o.refusal, o.message, o.stderr[-400:])
    writers = [o for o in outcomes if o.done and "params_sha256" in o.done]
    assert len(writers) == 1 and writers[0].done is not None
    assert writers[0].done["params_sha256"] == single["params_sha256"]


def test_digits_cnn_equals_the_reference(tmp_path: Path) -> None:
    system = CNN[: CNN.index("\nplan ")].replace("steps 400", "steps 22")  # past the warmup
    assert_exact(system, tmp_path)
