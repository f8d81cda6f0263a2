"""alpha-tui as a new user met it (issue 14, items 1-7), each defect reproduced on the real app
through Textual's pilot, with the real compiler and real role processes: the resume that
picked up an earlier launch's capture, ports, a run long enough to kill and resume, 80x24,
the loss plot, the panes of a role, and the small lies (a silent plan fallback, `killed:
killed`, focus, an empty table, "1 systems")."""

from __future__ import annotations

import socket

import pytest
from conftest import EXAMPLES
from test_tui import status, until
from textual.widgets import DataTable, Input

from alpha_core.plan.projection import project
from alpha_core.run.agreement import judge
from alpha_core.run.launch import free_port_base
from alpha_core.run.role_views import role_views
from alpha_core.run.runs import Choice
from alpha_core.workspace.analysis import Workspace
from alpha_tui.app import AlphaTui
from alpha_tui.loss_plot import LossPlot
from alpha_tui.panes import HelpScreen, RolePanes

IN_LOOP = pytest.mark.asyncio
DIGITS = str(EXAMPLES / "digits.alpha")
SMALL, LARGE = (80, 24), (120, 40)


def screen_text(app: AlphaTui) -> str:
    """What the terminal shows, as text (the compositor's lines)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def log_text(app: AlphaTui) -> str:
    return "\n".join(line.text for line in app.query_one("#log").lines)  # type: ignore[attr-defined]


# ---- item 1 (and 3): kill and resume, from the capture it announces -----------------------------

# long enough that a kill made once the first capture is published lands mid-run (a pair
# round of digits takes about 60 µs: 3 s in all, the first capture after 12 ms; on a loaded
# machine the screen may take a few ticks to see the capture and pass the kill on)
STEPS, EVERY = 50_000, 200


@IN_LOOP
async def test_resume_after_a_rerun_resumes_the_killed_runs_own_capture() -> None:
    """The exact sequence of the report: `r` to the end, `r` again, `k`, `u`. The old app
    resumed the first launch's last capture (round 30,000 there) and "finished" at once; the
    steps and the plan's checkpoint interval come from the options (item 3)."""
    app = AlphaTui(DIGITS, plan="pair", steps=STEPS, checkpoint_every=EVERY)
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the first run to end")
        assert app.result is not None and app.result.ok, app.result
        uninterrupted = app.result.params_sha256
        assert app.state is not None and app.state.roles["worker[0]"].published == STEPS

        await pilot.press("r")  # again, from the start
        await until(pilot, lambda: app.result is None, "the second run to start")

        def published() -> bool:
            return app.state is not None and app.state.published() is not None

        await until(pilot, published, "a capture of the second run")
        await pilot.press("down")
        assert app.selected_role() == "worker[1]", app.selected_role()
        await pilot.press("k")
        await until(pilot, lambda: app.result is not None, "the killed run to end")
        second = app.state
        assert second is not None and app.result is not None and not app.result.ok
        killed_at = second.roles["worker[1]"].round
        assert killed_at < STEPS, "the run ended before the kill"
        announced = app.captures.resumable()
        assert announced is not None and announced <= killed_at + EVERY
        assert f"u resumes at round {announced:,}" in status(app)
        # the table says killed, once
        cell = app.query_one(DataTable).get_cell("worker[1]", "state")
        assert str(cell) == "killed"

        await pilot.press("u")
        await until(pilot, lambda: app.result is not None, "the resumed run to end")
        assert app.result is not None and app.result.ok, app.result
        assert app.state is not None and app.state is not second
        resumed = {r.resumed for r in app.state.roles.values()}
        assert resumed == {announced}, (resumed, announced, log_text(app))
        assert f"worker[0]: resumed at round {announced}" in log_text(app)
        assert all(r.round == STEPS and r.frames > 0 for r in app.state.roles.values())
        assert app.result.params_sha256 == uninterrupted


@IN_LOOP
async def test_u_with_nothing_captured_says_so_instead_of_launching() -> None:
    """The shipped plans capture nothing: `u` gave eight checkpoint-incomplete lines."""
    app = AlphaTui(DIGITS, plan="tree")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        await pilot.press("u")
        await pilot.pause()
        assert app.launches == 1
        assert "nothing to resume: no published capture in" in log_text(app)


# ---- item 2: ports -----------------------------------------------------------------------------


@IN_LOOP
async def test_the_port_base_is_the_one_given_and_its_refusal_fits_80x24() -> None:
    """worker[0] of a pair listens on PORT_BASE + 0: holding that port makes its launch
    refuse listen-failed there, so the roles were built for the given base; at 80x24 the
    row still names the refusal whole (item 4)."""
    base = free_port_base(2)
    held = socket.socket()
    held.bind(("127.0.0.1", base))
    held.listen()
    try:
        app = AlphaTui(DIGITS, plan="pair", port_base=base)
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            await pilot.press("r")

            def refused() -> bool:
                return app.state is not None and app.state.roles["worker[0]"].state == "refused"

            await until(pilot, refused, "worker[0] to be refused")
            # worker[1] would wait out its connect timeout (10 s) for it: end it now
            await pilot.press("down", "k")
            await until(pilot, lambda: app.result is not None, "the run to end")
            await pilot.pause()
            assert app.result is not None and not app.result.ok
            assert app.state is not None
            r = app.state.roles["worker[0]"]
            assert r.refusal == "listen-failed" and f":{base}" in (r.message or ""), r
            lines = screen_text(app).splitlines()
            [row] = [line for line in lines if line.startswith(" worker[0] ")]
            assert "✗ listen-failed" in row, row
            assert app.query_one("#status").size.height == 1
    finally:
        held.close()


# ---- item 4: 80x24 -----------------------------------------------------------------------------


@IN_LOOP
async def test_every_role_of_tree_and_its_state_fit_80x24() -> None:
    app = AlphaTui(DIGITS, plan="tree")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
        for i in range(8):
            [row] = [line for line in lines if line.startswith(f" worker[{i}] ")]
            assert row.rstrip().endswith("done"), row
        # the status is one line, whatever it says
        assert app.query_one("#status").size.height == 1


# ---- item 5: the loss plot ----------------------------------------------------------------------


@IN_LOOP
async def test_the_loss_plot_has_axes_a_round_range_and_a_log_scale() -> None:
    app = AlphaTui(DIGITS, plan="star")
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        await pilot.pause()
        plot = str(app.query_one(LossPlot).render())
        assert plot.startswith("loss of hub, rounds 1–300 (linear scale")
        assert "2.310643 ┤" in plot and "└" in plot  # the first loss is the top of the axis
        last = plot.rstrip().splitlines()[-1].split()
        assert last[0] == "1" and last[-1] == "300", last
        await pilot.press("l")
        await pilot.pause()
        plot = str(app.query_one(LossPlot).render())
        assert "(log scale" in plot
        await pilot.press("a")
        await pilot.pause()
        plot = str(app.query_one(LossPlot).render())
        assert plot.startswith("loss of every role")
        assert all(f"■ {role}" in plot for role in ("hub", "worker[0]", "worker[3]"))


# ---- item 6: a role's panes ---------------------------------------------------------------------


@IN_LOOP
async def test_enter_opens_the_roles_events_projection_and_memory() -> None:
    app = AlphaTui(DIGITS, plan="star")
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        await pilot.press("down", "enter")  # worker[0]
        await pilot.pause()
        panes = app.screen
        assert isinstance(panes, RolePanes) and panes.role == "worker[0]"
        lines = panes.lines()
        assert lines[0].startswith("start: system digits") and lines[-1].startswith("done")
        assert sum(line.startswith("step ") for line in lines) == 300
        # the filter, as typed
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"-kind:step")
        await pilot.pause()
        kinds = [line.split()[0] for line in panes.lines()]
        assert kinds == ["start:", "data:", "links:", "done:"]
        # worker[0]'s one link, to the hub on this machine: over the local socket
        links = next(line for line in panes.lines() if line.startswith("links:"))
        assert links == "links: hub over local", links
        # the projection and the admission are the compiler's own
        a = Workspace().analyze_file(DIGITS)
        plan, _, _ = a.plan("star")
        assert plan is not None
        assert panes.view is not None
        assert panes.view.projection == project(plan, 1).show()
        assert panes.view.admission == role_views(a, Choice(plan="star"))["worker[0]"].admission
        assert "KiB" in panes.view.admission and "headroom" in panes.view.admission
        await pilot.press("escape")  # the filter lets go of the keys
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RolePanes)


@IN_LOOP
async def test_the_table_under_a_roles_panes_waits_and_catches_up() -> None:
    """While a role's panes cover the main screen its rows are not redrawn (Textual re-rendered
    the dimmed screen under the panes on every tick: a third of the app's time with 8 roles
    running); when the panes close the rows show where the run is at once."""
    app = AlphaTui(DIGITS, plan="star", steps=40_000)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.state is not None and app.state.roles, "the run to start")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, RolePanes)
        under = app.screen_stack[0].query_one(DataTable)
        shown = str(under.get_cell("hub", "round"))
        assert shown != "40,000", "the run ended before the panes opened"
        await until(pilot, lambda: app.result is not None, "the run to end")
        await pilot.pause(0.3)
        assert str(under.get_cell("hub", "round")) == shown  # nothing drawn under the panes
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, RolePanes)
        assert str(under.get_cell("hub", "round")) == "40,000"
        assert str(under.get_cell("hub", "state")) == "done"


@IN_LOOP
async def test_question_mark_lists_every_binding() -> None:
    app = AlphaTui(DIGITS)
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.text
        for b in [*app.BINDINGS, *RolePanes.BINDINGS]:
            assert b.description in text, b  # type: ignore[union-attr]
        palette = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Choose", "Build", "Run", "Kill", "Resume", "Events", "Log scale"} <= set(palette)


# ---- item 7: the small lies --------------------------------------------------------------------


@IN_LOOP
async def test_a_mistyped_plan_is_refused_not_replaced() -> None:
    app = AlphaTui(DIGITS, plan="strar")
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        log = log_text(app)
        assert "--plan strar: no plan named `strar`" in log and "did you mean `star`?" in log
        assert app.chosen() == "system:digits"  # the file's first choice, said to be a fallback


@IN_LOOP
async def test_focus_wording_and_the_empty_table() -> None:
    app = AlphaTui(DIGITS)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert isinstance(app.focused, DataTable)
        assert status(app).startswith("checked: 1 system, 4 plans, ") and "systems" not in status(
            app
        )
        hint = str(app.query_one("#hint").render())
        assert hint.startswith("no run yet: r runs the choice above")
        await pilot.press("r")  # keys reach the app, not a selector
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.query_one("#hint").has_class("hidden")


# ---- the agree column ---------------------------------------------------------------------------


@IN_LOOP
async def test_every_role_of_a_tree_agrees_in_every_round() -> None:
    app = AlphaTui(DIGITS, plan="uneven")
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.state is not None
        agreement = app.state.agreement
        assert agreement.checked == 300 and agreement.first_disagreement is None
        table = app.query_one(DataTable)
        assert {str(table.get_cell(r, "agree")) for r in app.state.roles} == {"✓ 300"}


def test_a_round_whose_roles_disagree_is_named() -> None:
    # what two roles of a 4-leaf pair would say: the canonical tree, then a wrong split
    good = {"a": ("3f800000", ("0:2=0:1+1:2",)), "b": ("3f800000", ("2:4=2:3+3:4", "0:4=0:2+2:4"))}
    assert judge(7, good, 4).agree
    bad_split = {"a": good["a"], "b": ("3f800000", ("2:4=2:3+3:4", "0:4=0:1+1:4"))}
    v = judge(7, bad_split, 4)
    assert not v.agree and v.role == "b" and "not the canonical tree" in v.why
    bad_bits = {"a": good["a"], "b": ("3f800001", good["b"][1])}
    v = judge(7, bad_bits, 4)
    assert not v.agree and "loss bits" in v.why
    missing = {"a": good["a"], "b": ("3f800000", ("2:4=2:3+3:4",))}
    assert "no role added node [0, 4)" in judge(7, missing, 4).why


@IN_LOOP
async def test_the_device_pane_names_the_cpu_level_a_host_role_runs() -> None:
    """A host role's kernels: the level it chose at start-up (its start event's `cpu`)."""
    from test_cpu_levels import DIGITS_LEVELS, widest_of

    app = AlphaTui(DIGITS, plan="pair")
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        await pilot.press("d")
        await pilot.pause()
        panes = app.screen
        assert isinstance(panes, RolePanes)
        text = str(panes.query_one("#device-text").render())
        assert "runs on a host: x86_64" in text
        level = widest_of(DIGITS_LEVELS)
        assert f"kernels             {level} (chosen at start-up" in text


# ---- the device of a GPU role -------------------------------------------------------------------


@IN_LOOP
async def test_the_device_pane_shows_what_a_gpu_role_opened() -> None:
    """Without a GPU here: the roles of `two_gpus` built as their host shadow (--gpu-shadow)
    run the GPU code path and report the device they opened."""
    app = AlphaTui(DIGITS, plan="pair", pairing="two_gpus", gpu_shadow=True)
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.result is not None and app.result.ok, app.result
        await pilot.press("d")
        await pilot.pause()
        panes = app.screen
        assert isinstance(panes, RolePanes)
        shown = str(panes.query_one("#device-text").render())
        assert shown.startswith("worker[0] runs on a GPU: device profile h200 (host x86_64)")
        assert "target              gpu h200 (shadow)" in shown
        assert "device              host shadow (uuid shadow)" in shown
        assert "a host shadow: the same kernels" in shown
        assert "kernel time" in shown and "ms in the newest round" in shown
        await pilot.press("escape")
        await pilot.pause()
        table = app.query_one(DataTable)
        first = str(table.get_row_at(0)[0])
        assert first == "worker[0] gpu h200 (shadow)", first  # the role's target in the table
