"""Partitioned learning state with real processes and the real compiler: optimizer state,
gradients and parameters partitioned over 2 and 4 workers end bit-identical (SHA-256 of the
parameter file) to the single-process build, and each owner's capture holds its own slice.

The helpers here are shared with tests/test_checkpoint_resume.py. Kernels are compiled once per
system (the build's `kernels_object`, memoised by system identity); every role is linked for
real.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from auth_peer import launch_secret_file
from conftest import EXAMPLES

import alpha_core.build.executables as build
from alpha_core.build.executables import build_plan, build_program
from alpha_core.build.outputs import Deployment
from alpha_core.checkpoint import read_checkpoint
from alpha_core.run.launch import RoleOutcome, free_port_base, run_roles
from alpha_core.workspace.analysis import Workspace

DIGITS = (EXAMPLES / "digits.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
SHORT = DIGITS.replace("steps 300", "steps 40")

OPTIMIZER = "optimizer partitioned over worker"
GRADS = "grads partitioned over worker; optimizer partitioned over worker"
ALL = "params partitioned over worker; grads partitioned over worker; " + OPTIMIZER
LAYOUTS = {"optimizer": OPTIMIZER, "grads": GRADS, "params": ALL}
TOPOLOGY = {
    2: ("worker[2]", "pair"),
    3: ("worker[3]", "hierarchy(fanout: 4)"),
    4: ("worker[4]", "hierarchy(fanout: 2)"),
    5: ("hub, worker[4]", "star(hub)"),  # 4 workers under a hub
    8: ("worker[8]", "hierarchy(fanout: 2)"),
}

_KERNELS: dict[tuple[object, ...], bytes] = {}
_compile_kernels = build.kernels_object


def _memoised_kernels(program, *args):  # type: ignore[no-untyped-def]
    key = (program.identity(), *args)
    if key not in _KERNELS:
        _KERNELS[key] = _compile_kernels(program, *args)
    return _KERNELS[key]


@pytest.fixture(autouse=True, scope="module")
def _kernels_once() -> Iterator[None]:
    build.kernels_object = _memoised_kernels  # type: ignore[assignment]
    yield
    build.kernels_object = _compile_kernels  # type: ignore[assignment]


def plan_text(owners: int, layout: str, every: int = 10, system: str = SHORT) -> str:
    roles, topology = TOPOLOGY[owners]
    state = LAYOUTS.get(layout, layout)
    return (
        system
        + f"\nplan p for digits {{\n  roles {roles}\n  topology {topology}\n"
        + f"  state {{ {state} }}\n  checkpoint every {every} rounds\n}}\n"
    )


def analysis(text: str, folder: Path):  # type: ignore[no-untyped-def]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "digits.alpha"
    path.write_text(text)
    a = Workspace().analyze_file(str(path))
    assert a.diagnostics == [], [(d.name, d.message) for d in a.diagnostics]
    return a


@dataclass
class Built:
    """The executables of one build, started as one run with common arguments."""

    roles: list[tuple[str, str]]  # (role, path), in membership order
    folder: Path

    def commands(self, *args: str, params: Path | None = None) -> list[tuple[str, list[str]]]:
        out = params or self.folder / "out.params"
        return [(role, [path, "--params-out", str(out), *args]) for role, path in self.roles]

    def run(self, *args: str, params: Path | None = None) -> list[RoleOutcome]:
        return run_roles(self.commands(*args, params=params), keep_events=True)

    def start(self, *args: str, env: dict[str, str] | None = None) -> dict[str, subprocess.Popen]:  # type: ignore[type-arg]
        return {
            role: subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )  # not through the launcher: the roles read a secret file
            for role, cmd in self.commands(*args, "--secret-file", launch_secret_file())
        }


def build_plan_roles(text: str, folder: Path, timeout_ms: int = 10_000) -> Built:
    plan, _, diags = analysis(text, folder).plan("p")
    assert plan is not None, diags
    deployment = Deployment(
        free_port_base(plan.membership.total),
        "127.0.0.1",
        None,
        timeout_ms,
        timeout_ms,
        checkpoint_dir=str(folder / "checkpoints"),
    )
    result = build_plan(plan, None, folder / "build", deployment)
    return Built([(e.role, e.path) for e in result.executables], folder)


def build_single(text: str, folder: Path, every: int = 0) -> Built:
    program, diags = analysis(text, folder).program()
    assert program is not None, diags
    deployment = Deployment(checkpoint_dir=str(folder / "checkpoints"), checkpoint_every=every)
    result = build_program(program, folder / "build", deployment=deployment)
    return Built([("main", result.executables[0].path)], folder)


def written_sha(outcomes: Sequence[RoleOutcome]) -> str:
    """The parameter digest of the one role that wrote parameters; every role must be done."""
    for o in outcomes:
        assert o.exit_code == 0, (o.role, o.refusal, o.message, o.stderr[-400:])
    writers = [o for o in outcomes if o.done and o.done.get("params_file")]
    assert len(writers) == 1, [o.role for o in writers]
    assert writers[0].done is not None
    return str(writers[0].done["params_sha256"])


Factory = Callable[[str, str], Built]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The single-process digits bits after 40 rounds, built without checkpoints."""
    single = build_single(SHORT, tmp_path_factory.mktemp("single"))
    return written_sha(single.run("--quiet"))


@pytest.mark.parametrize(
    ("layout", "owners"), [(k, n) for k in LAYOUTS for n in (2, 4)] + [("params", 5)]
)
def test_partitioned_state_is_bit_identical_to_one_process(
    layout: str, owners: int, reference: str, tmp_path: Path
) -> None:
    built = build_plan_roles(plan_text(owners, layout), tmp_path)
    outcomes = built.run("--quiet")
    assert written_sha(outcomes) == reference
    # every worker applied the learner and reported the same losses
    done = {o.role: o.done for o in outcomes}
    assert len({str(d["final_loss_bits"]) for d in done.values() if d}) == 1
    # the last capture is published, and each owner wrote its own slice of the optimizer state
    ckpt = read_checkpoint(tmp_path / "checkpoints", identity=None)
    assert ckpt.round == 40
    workers = owners - 1 if owners == 5 else owners
    owners_of = {s.role for s in ckpt.shards() if s.kind == "adam.m"}
    assert owners_of == {f"worker[{w}]" for w in range(workers)}
    params_by = {s.role for s in ckpt.shards() if s.kind == "params"}
    assert params_by == (owners_of if layout == "params" else {"worker[0]"})
    assert ckpt.values("params").tobytes() == (tmp_path / "out.params").read_bytes()


def test_the_checked_runtime_trains_checkpoints_and_resumes(tmp_path: Path) -> None:
    """Four owners of partitioned parameters, gradients and optimizer state, every role linked
    with a runtime that traps on undefined behaviour: the run (frames, combines, staged
    commits, captures every 10 rounds) and a resume from round 20 both end with the
    single-process bits, and nothing traps."""
    from dataclasses import replace

    from conftest import link_checked

    from alpha_core.plan.projection import project

    reference = written_sha(build_single(SHORT, tmp_path / "single").run("--quiet"))
    plan, _, diags = analysis(plan_text(4, "params"), tmp_path).plan("p")
    assert plan is not None, diags
    base = free_port_base(plan.membership.total)
    roles = []
    for index in range(plan.membership.total):
        role = replace(project(plan, index, base), checkpoint_dir=str(tmp_path / "ckpt"))
        roles.append((role.name, link_checked(plan.system, role, tmp_path / f"role-{index}")))
    built = Built(roles, tmp_path)
    assert written_sha(built.run("--quiet")) == reference
    resumed = built.run("--quiet", "--resume", str(tmp_path / "ckpt" / "round-00000020"))
    assert written_sha(resumed) == reference
