"""Distributed runs on loopback with real processes: every plan gives the single-process bits,
the declared combine order is the one that ran, and faults are refused by name."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from auth_peer import launch_secret_file
from conftest import EXAMPLES, run_exe

from alpha_core.build.executables import build_plan, build_program
from alpha_core.build.outputs import Deployment
from alpha_core.lower.tree import internal_nodes, split
from alpha_core.run.launch import RoleOutcome, free_port_base, run_roles
from alpha_core.workspace.analysis import Workspace

DIGITS = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
SHORT = DIGITS.replace("steps 300", "steps 40")


def analysis(text: str, tmp: Path):  # type: ignore[no-untyped-def]
    path = tmp / "digits.alpha"
    path.write_text(text)
    a = Workspace().analyze_file(str(path))
    assert a.diagnostics == [], [(d.name, d.message) for d in a.diagnostics]
    return a


def single_sha(text: str, tmp: Path) -> str:
    program, _ = analysis(text, tmp).program()
    assert program is not None
    result = build_program(program, tmp / "single")
    code, events, stderr = run_exe(result.executables[0].path, "--quiet")
    assert code == 0, stderr
    return str(events[-1]["params_sha256"])


def run_plan(
    text: str,
    plan_name: str,
    tmp: Path,
    timeout_ms: int = 20_000,
) -> list[RoleOutcome]:
    a = analysis(text, tmp)
    plan, _, diags = a.plan(plan_name)
    assert plan is not None, diags
    deployment = Deployment(
        free_port_base(plan.membership.total), "127.0.0.1", None, timeout_ms, timeout_ms
    )
    result = build_plan(plan, None, tmp / plan_name, deployment)
    commands = [
        (e.role, [e.path, "--params-out", str(tmp / f"{e.role}.params")])
        for e in result.executables
    ]
    return run_roles(commands, keep_events=True)


def check_combines(outcomes: list[RoleOutcome], leaves: int) -> None:
    """Per round, the additions all roles report are exactly the canonical tree's."""
    rounds: dict[int, set[str]] = {}
    for o in outcomes:
        for e in o.events:
            if e.get("event") == "step":
                rounds.setdefault(int(str(e["step"])), set()).update(
                    str(c) for c in e.get("combine", [])
                )  # type: ignore[union-attr]
    expected = {
        f"{lo}:{hi}={lo}:{split(lo, hi)}+{split(lo, hi)}:{hi}" for lo, hi in internal_nodes(leaves)
    }
    assert rounds, "no step events"
    for step, seen in rounds.items():
        assert seen == expected, (step, sorted(seen ^ expected))


@pytest.fixture(scope="module")
def reference_sha(tmp_path_factory: pytest.TempPathFactory) -> str:
    return single_sha(DIGITS, tmp_path_factory.mktemp("single"))


@pytest.mark.parametrize("plan", ["pair", "star", "tree", "uneven"])
def test_plans_are_bit_identical_to_one_process(
    plan: str, reference_sha: str, tmp_path: Path
) -> None:
    outcomes = run_plan(DIGITS, plan, tmp_path)
    for o in outcomes:
        assert o.exit_code == 0, (o.role, o.refusal, o.message, o.stderr[-400:])
    writers = [o for o in outcomes if o.done and "params_sha256" in o.done]
    assert len(writers) == 1
    assert writers[0].done is not None
    assert writers[0].done["params_sha256"] == reference_sha
    assert writers[0].done["holdout_accuracy"] >= 0.93  # type: ignore[operator]
    check_combines(outcomes, 8)


ADAM = "adam(lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8)"


@pytest.mark.parametrize(
    "learner",
    [
        "sgd(lr: 0.1)",
        "momentum(lr: 0.05, mu: 0.9)",
        "adamw(lr: cosine(0.01, warmup: 5, final: 0.001), weight_decay: 0.1)",
    ],
)
def test_the_learner_adding_the_last_two_pieces_keeps_the_bits(
    learner: str, tmp_path: Path
) -> None:
    """A pair worker's last addition (its own piece plus the one received) is left to the
    learner (alpha_apply_pair, runtime/schedule.c); a star's hub adds three pieces and keeps
    the pass. Both give the one process's bits, for every learner."""
    assert ADAM in SHORT
    text = SHORT.replace(ADAM, learner)
    expected = single_sha(text, tmp_path)
    for plan in ("pair", "star"):
        (tmp_path / plan).mkdir()
        outcomes = run_plan(text, plan, tmp_path / plan)
        assert all(o.exit_code == 0 for o in outcomes), [
            (o.role, o.stderr[-300:]) for o in outcomes
        ]
        shas = {o.done["params_sha256"] for o in outcomes if o.done and "params_sha256" in o.done}
        assert shas == {expected}, plan


@pytest.mark.parametrize("workers", [1, 2, 4, 8])
def test_owner_counts_of_one_topology(workers: int, tmp_path: Path) -> None:
    text = (
        SHORT
        + f"""
plan n{workers} for digits {{
  roles worker[{workers}]
  topology hierarchy(fanout: 2)
}}
"""
    )
    expected = single_sha(SHORT, tmp_path)
    outcomes = run_plan(text, f"n{workers}", tmp_path)
    assert all(o.exit_code == 0 for o in outcomes), [(o.role, o.refusal) for o in outcomes]
    [writer] = [o for o in outcomes if o.done and "params_sha256" in o.done]
    assert writer.done is not None and writer.done["params_sha256"] == expected
    check_combines(outcomes, 8)


def test_role_from_another_plan_is_refused(tmp_path: Path) -> None:
    """worker[1] built from a system with another learning rate meets worker[0]."""
    other = SHORT.replace("lr: 0.01,", "lr: 0.02,")
    port = free_port_base(2)
    exes = {}
    identities = []
    for name, text in (("a", SHORT), ("b", other)):
        (tmp_path / name).mkdir()
        a = analysis(text, tmp_path / name)
        plan, _, _ = a.plan("pair")
        assert plan is not None
        result = build_plan(
            plan, None, tmp_path / name / "build", Deployment(port, "127.0.0.1", None, 5_000, 5_000)
        )
        exes[name] = {e.role: e.path for e in result.executables}
        identities.append(plan.identity())
    outcomes = run_roles(
        [
            ("worker[0]", [exes["a"]["worker[0]"], "--params-out", str(tmp_path / "w0.params")]),
            ("worker[1]", [exes["b"]["worker[1]"], "--params-out", str(tmp_path / "w1.params")]),
        ],
        keep_events=True,
    )
    refused = [o for o in outcomes if o.refusal == "plan-identity-mismatch"]
    assert refused, [(o.role, o.refusal, o.message) for o in outcomes]
    for o in outcomes:
        assert o.exit_code != 0
        assert not any(e.get("event") == "step" for e in o.events)
    message = refused[0].message or ""
    assert all(identity[:16] in message for identity in identities), message
    assert not list(tmp_path.glob("w*.params"))


def test_killed_role_stops_the_others_and_commits_nothing(tmp_path: Path) -> None:
    text = DIGITS.replace("steps 300", "steps 100000")
    a = analysis(text, tmp_path)
    plan, _, _ = a.plan("star")
    assert plan is not None
    result = build_plan(
        plan,
        None,
        tmp_path / "star",
        Deployment(free_port_base(5), "127.0.0.1", None, 3_000, 3_000),
    )
    secret = launch_secret_file()  # these roles start with Popen, not through the launcher
    procs = {
        e.role: subprocess.Popen(
            [e.path, "--params-out", str(tmp_path / f"{e.role}.p"), "--secret-file", secret],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for e in result.executables
    }
    victim = procs["worker[2]"]
    assert victim.stdout is not None
    for line in victim.stdout:  # wait until training is under way
        if '"event":"step"' in line.replace(" ", "") and '"step":20,' in line.replace(" ", ""):
            break
    os.kill(victim.pid, signal.SIGKILL)
    start = time.monotonic()
    for role, p in procs.items():
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            for q in procs.values():
                q.kill()
            raise AssertionError(f"{role} hung after a peer was killed") from None
        if p is victim:
            continue
        assert p.returncode not in (0, None), role
        assert '"event":"refused"' in out.replace(" ", ""), (role, out[-300:], err[-300:])
    assert time.monotonic() - start < 15
    assert not list(tmp_path.glob("*.p")), "a parameter file was written after a fault"
