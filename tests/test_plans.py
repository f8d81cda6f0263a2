"""Plans at compile time: projection, schedule verification, scale, the canonical tree."""

from __future__ import annotations

import random

import pytest

from alpha_core.lower.tree import cover, internal_nodes, is_node, split
from alpha_core.plan.projection import project
from alpha_core.plan.verify import simulate
from alpha_core.workspace.analysis import Workspace


def system(leaves: int, workers_line: str, topology: str, extra: str = "") -> str:
    return f"""system s {{
  data train: synthetic(rows: 100, features: 3, classes: 2, seed: 1)
  batch {leaves * 2} leaves {leaves}
  param w: f32[3, 2] = normal(0.0, 0.1, seed: 1)
  fn model(x: f32[B, 3]) -> f32[B, 2] {{
    return x @ w
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 1
}}
plan p for s {{
  roles {workers_line}
  topology {topology}
{extra}}}
"""


def checked_plan(src: str):  # type: ignore[no-untyped-def]
    a = Workspace().analyze("/tmp/plans.alpha", src)
    assert a.diagnostics == [], [(d.name, d.message) for d in a.diagnostics]
    return a.checked.plans["p"]


def _evaluate(lo: int, hi: int, held: set[tuple[int, int]], out: set[tuple[int, int]]) -> None:
    if (lo, hi) in held:
        return
    mid = split(lo, hi)
    _evaluate(lo, mid, held, out)
    _evaluate(mid, hi, held, out)
    out.add((lo, hi))
    held.add((lo, hi))


def additions(schedules: list) -> set[tuple[int, int]]:  # type: ignore[type-arg]
    """Every tree node some role evaluates (and every node a combine needs below it)."""
    out: set[tuple[int, int]] = set()
    for s in schedules:
        held = {(op.a, op.b) for op in s.ops if op.kind == "recv"}
        held |= {
            (leaf, leaf + 1) for op in s.ops if op.kind == "compute" for leaf in range(op.a, op.b)
        }

        for op in s.ops:
            if op.kind == "combine":
                _evaluate(op.a, op.b, held, out)
    return out


def test_canonical_tree() -> None:
    assert split(0, 8) == 4 and split(0, 6) == 4 and split(4, 7) == 6 and split(0, 2) == 1
    assert cover(0, 8, 8) == [(0, 8)]
    assert cover(3, 6, 8) == [(3, 4), (4, 6)]
    assert cover(0, 3, 6) == [(0, 2), (2, 3)]
    assert internal_nodes(4) == [(0, 2), (2, 4), (0, 4)]
    assert all(is_node(lo, hi, 13) for lo, hi in internal_nodes(13))
    assert not is_node(1, 3, 8)


@pytest.mark.parametrize(
    ("roles", "topology", "leaves"),
    [
        ("worker[2]", "pair", 8),
        ("hub, worker[4]", "star(hub)", 8),
        ("worker[8]", "hierarchy(fanout: 2)", 8),
        ("worker[3]", "hierarchy(fanout: 4)", 8),
        ("worker[1]", "hierarchy(fanout: 2)", 8),
        ("worker[5]", "hierarchy(fanout: 2)", 13),
        ("hub, worker[7]", "star(hub)", 7),
    ],
)
def test_schedules_fit_and_cover_the_tree(roles: str, topology: str, leaves: int) -> None:
    plan = checked_plan(system(leaves, roles, topology))
    schedules = [project(plan, i) for i in range(plan.membership.total)]
    assert simulate(schedules, buffered=True) is None
    if topology != "pair":  # role trees fit even if every send waited for its receiver
        assert simulate(schedules) is None
    # every internal node of the canonical tree is evaluated by some role, and nothing else is
    assert additions(schedules) == set(internal_nodes(leaves))
    # every worker applies the learner to the whole round's gradient
    for s in schedules:
        if s.name.startswith("worker"):
            assert s.ops[-1].kind == "apply"
    assert sum(s.writes_params for s in schedules) == 1


def test_random_hierarchies_never_deadlock() -> None:
    rng = random.Random(7)
    for _ in range(60):
        workers = rng.randint(1, 40)
        leaves = workers + rng.randint(0, 30)
        fanout = rng.randint(2, 6)
        plan = checked_plan(system(leaves, f"worker[{workers}]", f"hierarchy(fanout: {fanout})"))
        schedules = [project(plan, i) for i in range(workers)]
        assert simulate(schedules) is None, (workers, leaves, fanout)
        assert additions(schedules) == set(internal_nodes(leaves))


def test_a_crossed_schedule_is_caught() -> None:
    """The verifier is not vacuous: two roles that both receive first deadlock in either model,
    and the pair's crossing exchange needs the runtime's send queue."""
    from dataclasses import replace

    plan = checked_plan(system(8, "worker[2]", "pair"))
    pair = [project(plan, 0), project(plan, 1)]
    assert simulate(pair, buffered=True) is None
    rendezvous = simulate(pair)
    assert rendezvous is not None and rendezvous.kind == "deadlock"

    def receive_first(s):  # type: ignore[no-untyped-def]
        sends = [op for op in s.ops if op.kind == "send"]
        recvs = [op for op in s.ops if op.kind == "recv"]
        others = [op for op in s.ops if op.kind not in ("send", "recv")]
        return replace(s, ops=(others[0], *recvs, *sends, *others[1:]))

    crossed = [receive_first(s) for s in pair]
    for buffered in (False, True):
        fault = simulate(crossed, buffered=buffered)
        assert fault is not None and fault.kind == "deadlock"


def test_explicit_uneven_leaves() -> None:
    plan = checked_plan(
        system(
            8, "worker[3]", "hierarchy(fanout: 2)", "  leaves worker[0]: 0..5, worker[1..3]: 5..8\n"
        )
    )
    assert [plan.assignment.range_of(w) for w in range(3)] == [(0, 5), (5, 7), (7, 8)]
    assert simulate([project(plan, i) for i in range(3)]) is None


OWNED = (
    "  state { params partitioned over worker; grads partitioned over worker;"
    " optimizer partitioned over worker }\n  checkpoint every 10 rounds\n"
)


def _with_state(src: str) -> str:
    """The system with 200,000 more parameters, so that every worker owns a slice."""
    src = src.replace(
        "param w: f32[3, 2] = normal(0.0, 0.1, seed: 1)",
        "param w: f32[3, 2] = normal(0.0, 0.1, seed: 1)\n  param v: f32[1000, 200] = zeros",
    )
    return src.replace("return x @ w", "return x @ w + sum(v)")


@pytest.mark.parametrize("owned", [False, True], ids=["replicated", "partitioned-checkpointed"])
def test_two_hundred_thousand_workers_check_and_project_boundedly(owned: bool) -> None:
    """Membership, hierarchy and checkpoint metadata are bounded by fan-out: a role's schedule
    (and with checkpoints, the acknowledgements it receives, i.e. the children its manifest
    lists) depends on its position in the hierarchy, not on the number of workers. How long
    checking and projecting take is measured in docs/performance.md, not asserted here."""
    sizes = {}
    for n in (1_000, 200_000):
        src = system(n, f"worker[{n}]", "hierarchy(fanout: 16)", OWNED if owned else "")
        plan = checked_plan(_with_state(src) if owned else src)
        probes = {
            name: project(plan, i)
            for name, i in (
                ("leaf", 1),
                ("combiner-1", 16),
                ("combiner-2", 256),
                ("last", n - 1),
                ("root", 0),
            )
        }
        sizes[n] = {
            k: (len(s.ops), len(s.links), sum(op.kind == "ack_recv" for op in s.ops))
            for k, s in probes.items()
        }
    small, large = sizes[1_000], sizes[200_000]
    # a role's schedule depends on its position in the hierarchy, not on the total
    for position in ("leaf", "combiner-1", "combiner-2", "last"):
        assert small[position] == large[position], position
    # the root's grows with depth only: at most (fan-out - 1) children on each of 5 levels
    ops, links, acks = large["root"]
    assert links <= 15 * 5 and ops <= 5 * links + 8
    # with checkpoints, each role's manifest lists one child per link below it
    assert acks == (links if owned else 0)
    assert large["combiner-1"][2] == (15 if owned else 0)


LAYOUTS = [
    "  state { optimizer partitioned over worker }\n",
    "  state { grads partitioned over worker; optimizer partitioned over worker }\n",
    "  state {\n    params partitioned over worker\n    grads partitioned over worker\n"
    "    optimizer partitioned over worker\n  }\n",
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    ("roles", "topology"),
    [
        ("worker[2]", "pair"),
        ("hub, worker[4]", "star(hub)"),
        ("worker[5]", "hierarchy(fanout: 2)"),
        ("worker[4]", "hierarchy(fanout: 3)"),
    ],
)
def test_partitioned_state_and_checkpoints_fit(layout: str, roles: str, topology: str) -> None:
    plan = checked_plan(system(8, roles, topology, layout + "  checkpoint every 10 rounds\n"))
    schedules = [project(plan, i) for i in range(plan.membership.total)]
    assert simulate(schedules, buffered=True) is None
    n = plan.system.n_params
    # the applied slices cover the parameters exactly once, in worker order
    applied = sorted(
        (op.start, op.start + op.count) for s in schedules for op in s.ops if op.kind == "apply"
    )
    assert applied[0][0] == 0 and applied[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(applied, applied[1:], strict=False))
    # every role ends the round holding all parameters again: a role with a parent receives
    # them whole from it; the root assembles them from its own slice and its children's
    for s in schedules:
        whole = [op for op in s.ops if op.kind == "recv_params" and (op.start, op.count) == (0, n)]
        if any(not k.accept for k in s.links):
            assert len(whole) == 1, s.show()
        else:
            parts = sorted(
                (op.start, op.start + op.count)
                for op in s.ops
                if op.kind in ("apply", "recv_params")
            )
            assert parts[0][0] == 0 and parts[-1][1] == n, s.show()
            assert all(a[1] == b[0] for a, b in zip(parts, parts[1:], strict=False)), s.show()
    # exactly one role publishes, and written shards cover the state once
    assert sum(op.kind == "publish" for s in schedules for op in s.ops) == 1
