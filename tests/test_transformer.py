"""examples/transformer.alpha (issue 13): a decoder-only transformer (token and positional
embeddings, two-head causal self-attention, layer norm, a gelu MLP, residuals) sorting digit
strings reaches 0.99 held-out token accuracy; a plan with parameters, gradients and optimizer
state partitioned over four workers gives the single-process SHA-256, and so does a run whose
role is killed with SIGKILL and which resumes from its capture on two owners; a short run
equals the NumPy float32 reference bit for bit."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from auth_peer import launch_secret_file
from conftest import EXAMPLES, run_exe
from test_exact import assert_exact
from test_partitioned import Built, analysis, written_sha

from alpha_core.build.executables import build_plan, build_program
from alpha_core.build.outputs import Deployment
from alpha_core.checkpoint import read_checkpoint
from alpha_core.run.launch import free_port_base

TEXT = (EXAMPLES / "transformer.alpha").read_text()
SYSTEM = TEXT[: TEXT.index("\nplan ")]


def build_role_plan(name: str, folder: Path) -> Built:
    plan, _, diags = analysis(TEXT, folder).plan(name)
    assert plan is not None, diags
    deployment = Deployment(
        free_port_base(plan.membership.total),
        "127.0.0.1",
        None,
        20_000,
        20_000,
        checkpoint_dir=str(folder / "checkpoints"),
    )
    result = build_plan(plan, None, folder / "build", deployment)
    return Built([(e.role, e.path) for e in result.executables], folder)


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("transformer")
    program, _ = analysis(SYSTEM, tmp).program()
    assert program is not None
    result = build_program(program, tmp / "single")
    code, events, stderr = run_exe(result.executables[0].path, "--quiet")
    assert code == 0, stderr
    return events[-1]


def test_the_transformer_sorts_digits(single: dict[str, object]) -> None:
    accuracy = single["holdout_accuracy"]
    assert isinstance(accuracy, float) and accuracy >= 0.99, accuracy


def test_a_partitioned_plan_and_a_killed_resumed_run_give_the_single_process_bits(
    single: dict[str, object], tmp_path: Path
) -> None:
    sharded = build_role_plan("sharded", tmp_path / "sharded")
    assert written_sha(sharded.run("--quiet")) == single["params_sha256"]

    # again from scratch, worker[2] killed after round 250: the capture of round 200 is the
    # last one published; two owners (another count, another topology) resume from it
    (tmp_path / "sharded" / "out.params").unlink()
    for capture in (tmp_path / "sharded" / "checkpoints").iterdir():
        if capture.is_dir():
            capture.rename(tmp_path / f"old-{capture.name}")
    secret = launch_secret_file()
    procs = {
        role: subprocess.Popen(
            [*cmd, *(["--quiet"] if role != "worker[2]" else []), "--secret-file", secret],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, cmd in sharded.commands()
    }
    victim = procs["worker[2]"]
    assert victim.stdout is not None
    for line in victim.stdout:
        if '"step":250,' in line:
            break
    os.kill(victim.pid, signal.SIGKILL)
    for role, p in procs.items():
        p.communicate(timeout=60)
        assert p.returncode != 0, role
    published = read_checkpoint(sharded.folder / "checkpoints")
    assert published.round == 200
    halves = build_role_plan("halves", tmp_path / "halves")
    outcomes = halves.run("--resume", str(sharded.folder / "checkpoints"))
    assert written_sha(outcomes) == single["params_sha256"]
    resumed = {int(str(e["round"])) for o in outcomes for e in o.events if e["event"] == "resumed"}
    assert resumed == {200}


def test_the_transformer_equals_the_reference(tmp_path: Path) -> None:
    assert_exact(SYSTEM.replace("steps 600", "steps 2"), tmp_path)


def test_a_table_of_token_columns_trains_as_the_sequence_source(tmp_path: Path) -> None:
    """The same rows as a CSV table (`positions: 6`: six class labels per row; `tokens: 11`:
    every feature a token value below 11) give the bits of the embedded sequence source; a
    label out of range in any position, or a token out of the vocabulary, is refused by the
    checker with the runtime's message."""
    from alpha_core.data import sequences

    x, y = sequences.generate("sort", 6, 6000, 1)
    table = tmp_path / "sort6.csv"
    table.write_text(
        "".join(
            ",".join(str(int(v)) for v in (*xr, *yr)) + "\n" for xr, yr in zip(x, y, strict=True)
        )
    )
    short = SYSTEM.replace("steps 600", "steps 30")
    as_table = short.replace(
        "sequences(task: sort, length: 6, rows: 6000, seed: 1, holdout: 1000)",
        f'table("{table}", features: 12, classes: 11, positions: 6, tokens: 11, holdout: 1000)',
    )
    shas = []
    for i, text in enumerate((short, as_table)):
        program, _ = analysis(text, tmp_path / str(i)).program()
        assert program is not None
        code, events, stderr = run_exe(
            build_program(program, tmp_path / f"b{i}").executables[0].path, "--quiet"
        )
        assert code == 0, stderr
        shas.append(events[-1]["params_sha256"])
    assert shas[0] == shas[1]
    bad = tmp_path / "bad.csv"
    lines = table.read_text().splitlines()
    lines[3] = lines[3][: lines[3].rindex(",")] + ",11"
    bad.write_text("\n".join(lines) + "\n")
    path = tmp_path / "bad.alpha"
    path.write_text(as_table.replace(str(table), str(bad)))
    from alpha_core.workspace.analysis import Workspace

    got = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert ("data-malformed", f"{bad} line 4: label 11 is not a class index in 0..10") in got
    lines[3] = "11," + lines[3].split(",", 1)[1]  # a token out of the vocabulary, first
    bad.write_text("\n".join(lines) + "\n")
    got = [(d.name, d.message) for d in Workspace().analyze_file(str(path)).diagnostics]
    assert ("data-malformed", f"{bad} line 4: column 1 is not a token in 0..10") in got
