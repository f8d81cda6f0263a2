"""Memory admission of the digits example, pinned role by role against counts written out here.

Each item is what the role holds at its peak (docs/language.md, "Memory admission"): the
parameters (2,410 floats), its learner state (adam: two slots per element it owns and two
scalars), the gradient pieces its schedule holds (2,411 floats each: the gradient and the
loss), the kernels' static buffers, the data (1,797 rows of 65 floats), one leaf's inputs
(8 rows of 65 floats), a frame buffer per link (64 + 2,411 × 4 bytes) and a runtime reserve.
"""

from __future__ import annotations

from conftest import EXAMPLES

from alpha_core.plan.admission import admit, admit_program
from alpha_core.workspace import Workspace

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
