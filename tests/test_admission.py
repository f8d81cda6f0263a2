"""Memory admission of the digits example, pinned role by role against counts written out here.

Each item is what the role holds at its peak (docs/language.md, "Memory admission"): the
parameters (2,410 floats), its learner state (adam: two slots per element it owns and two
scalars), the gradient pieces its schedule holds (2,411 floats each: the gradient and the
loss), the kernels' static buffers, the data (1,797 rows of 65 floats), one leaf's inputs
(8 rows of 65 floats), a frame buffer per link (64 + 2,411 × 4 bytes) and a runtime reserve.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import EXAMPLES, cli

from alpha_core.plan.admission import admit, admit_program
from alpha_core.plan.profiles import DEFAULT_HOST_MEMORY, machine_profile
from alpha_core.support.sizes import human_bytes
from alpha_core.workspace.analysis import Workspace

PIECE = 2_411 * 4
FRAME = 64 + PIECE
BASE = 9_640 + 27_924 + 467_220 + 2_080 + 1_048_576  # params, kernels, data, leaf, reserve
ADAM_ALL = (2 * 2_410 + 2) * 4

EXPECTED = {
    # role: (pieces held, links, learner state bytes)
    ("pair", "worker[0]"): (9, 1, ADAM_ALL),
    ("pair", "worker[1]"): (9, 1, ADAM_ALL),
    ("star", "hub"): (7, 4, 0),
    ("star", "worker[0]"): (4, 1, ADAM_ALL),
    ("tree", "worker[0]"): (7, 3, ADAM_ALL),
    ("tree", "worker[1]"): (2, 1, ADAM_ALL),
    ("tree", "worker[2]"): (4, 2, ADAM_ALL),
    ("tree", "worker[4]"): (6, 3, ADAM_ALL),
    ("uneven", "worker[0]"): (11, 2, ADAM_ALL),
    ("uneven", "worker[1]"): (5, 1, ADAM_ALL),
    ("uneven", "worker[2]"): (4, 1, ADAM_ALL),
}


def test_single_process_demand() -> None:
    program, _ = Workspace().analyze_file(str(EXAMPLES / "digits.alpha")).program()
    assert program is not None
    a = admit_program(program)
    assert dict(a.items)["parameters"] == 9_640
    assert a.total == BASE + ADAM_ALL + 15 * PIECE == 1_719_388
    assert a.profile.memory == 8 * 1024**3 and a.headroom == 8 * 1024**3 - 1_719_388


def test_every_role_of_every_plan() -> None:
    a = Workspace().analyze_file(str(EXAMPLES / "digits.alpha"))
    for (plan_name, role), (pieces, links, state) in EXPECTED.items():
        plan = a.checked.plans[plan_name]
        index = plan.membership.index_of(role)
        assert index is not None
        got = admit(plan, None, index)
        assert got.total == BASE + state + pieces * PIECE + links * FRAME, (
            plan_name,
            role,
            got.show(),
        )


# ---- without a pairing: admitted against the machine that builds (issue 9, item 16) -----------

BIG = """system big {
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 2
  param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)
  param b: f32[3] = zeros
  param huge: f32[100000, 100000] = zeros
  fn model(x: f32[B, 4]) -> f32[B, 3] {
    return x @ w + b + sum(huge)
  }
  loss softmax_cross_entropy(model(x), y)
  learner adam(lr: 0.01)
  steps 10
}

plan duo for big {
  roles worker[2]
  topology pair
}
"""


def _refusal(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [refusal] = json.loads(proc.stdout)["refusals"]
    assert isinstance(refusal, dict)
    return refusal


def test_ten_billion_parameters_are_refused_before_anything_is_compiled(tmp_path: Path) -> None:
    """It used to build and exit 0 printing `headroom -191,411,115,980`."""
    source = tmp_path / "big.alpha"
    source.write_text(BIG)
    # the check is the same on every machine: it admits only what a pairing names
    assert cli("check", str(source)).returncode == 0
    machine = machine_profile()
    for command in ("build", "run"):
        out = tmp_path / command
        refusal = _refusal(cli(command, str(source), "--system", "big", "-o", str(out), "--json"))
        assert refusal["name"] == "memory-admission"
        message = str(refusal["message"])
        assert message.startswith("system `big` needs ")
        has = f"{human_bytes(machine.memory)} ({machine.memory:,} bytes)"  # issue 14, item 13
        assert f"but {machine.name} has {has}: without a pairing" in message
        assert not (out / "big").exists()  # nothing was linked
    proc = cli("build", str(source), "--plan", "duo", "-o", str(tmp_path / "plan"), "--json")
    refusal = _refusal(proc)
    assert refusal["name"] == "memory-admission"
    assert str(refusal["message"]).startswith("worker[0] of plan `duo` needs ")
    assert not (tmp_path / "plan" / "worker-0").exists()


def test_a_normal_build_reports_its_headroom_on_this_machine(tmp_path: Path) -> None:
    proc = cli("build", str(EXAMPLES / "digits.alpha"), "-o", str(tmp_path / "out"), "--json")
    assert proc.returncode == 0, proc.stderr
    [exe] = json.loads(proc.stdout)["executables"]
    assert exe["demand"] == 1_719_388
    assert exe["headroom"] == machine_profile().memory - 1_719_388 > 0


def test_machine_profile_sources(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16384000 kB\nMemAvailable:    8000000 kB\n")
    assert machine_profile(str(meminfo), ()).memory == 16_384_000 * 1024
    limit = tmp_path / "memory.max"
    limit.write_text("1073741824\n")
    capped = machine_profile(str(meminfo), (str(limit),))
    assert capped.memory == 1 << 30 and str(limit) in capped.name
    limit.write_text("max\n")  # cgroup v2 for no limit
    assert machine_profile(str(meminfo), (str(limit),)).memory == 16_384_000 * 1024
    unknown = machine_profile(str(tmp_path / "absent"), ())
    assert unknown.memory == DEFAULT_HOST_MEMORY and "default host profile" in unknown.name
