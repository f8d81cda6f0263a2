"""RunState folds a run's events the way the faces show them: rounds, losses, frames, captures,
and how each role ended (done, refused by name, killed, crashed without a name)."""

from __future__ import annotations

from alpha_core.run.run_state import LOSS_HISTORY, RunState


def test_events_fold_into_each_role() -> None:
    s = RunState(["a", "b"], steps=3)
    s.apply("a", {"event": "start"})
    s.apply("a", {"event": "resumed", "round": 1})
    s.apply("a", {"event": "step", "step": 2, "loss": 0.5, "frames": 2, "bytes": 100})
    s.apply("a", {"event": "checkpoint", "round": 2, "published": True})
    s.apply("a", {"event": "step", "step": 3, "loss": "nan?", "frames": 2, "bytes": 100})
    a = s.roles["a"]
    assert (a.resumed, a.round, a.frames, a.bytes, a.published) == (1, 3, 4, 200, 2)
    assert a.losses[0] == 0.5 and a.loss != a.loss  # a loss that is not a number is NaN
    assert s.published() == 2 and not s.finished
    s.apply("a", {"event": "done", "params_sha256": "ab", "final_loss": 0.25})
    s.apply("b", {"event": "refused", "name": "peer-lost", "message": "a closed"})
    assert s.finished
    result = s.result()
    assert not result.ok and result.refusals == [("b", "peer-lost", "a closed")]


def test_kills_and_silent_crashes_are_named() -> None:
    s = RunState(["a", "b", "c"], steps=1)
    s.exited("a", -9, killed=True)
    s.exited("b", 139)
    s.apply("c", {"event": "refused", "name": "frame-corrupt", "message": "x"})
    s.exited("c", 3)
    states = {r.role: (r.state, r.refusal) for r in s.roles.values()}
    assert states == {
        "a": ("killed", "killed"),
        "b": ("refused", "role-crashed"),
        "c": ("refused", "frame-corrupt"),
    }


def test_the_curve_is_bounded_and_a_clean_run_reports_its_digest() -> None:
    s = RunState(["main"], steps=LOSS_HISTORY + 10)
    for t in range(1, LOSS_HISTORY + 11):
        s.apply("main", {"event": "step", "step": t, "loss": float(t)})
    assert len(s.roles["main"].losses) == LOSS_HISTORY and s.roles["main"].losses[-1] == t
    s.apply("main", {"event": "done", "params_sha256": "cd", "holdout_accuracy": 0.5})
    s.exited("main", 0)
    result = s.result()
    assert result.ok and result.params_sha256 == "cd" and result.holdout_accuracy == 0.5
