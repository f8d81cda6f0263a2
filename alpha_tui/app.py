"""alpha-tui: open a file, choose a system or a plan (and its pairing), build, launch every
role on this machine, watch each one (round, loss curve, frames, captures), kill a role, and
resume from the newest published capture.

A face: checking, building, starting and reading a run are alpha_core's (workspace, runs,
launch, run_state); this module only shows them and turns keys into calls. Anything slow runs
in a thread; role events are queued by the launch's threads and drained ten times a second,
so a flood of step events costs one redraw per tick.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path

from rich.markup import escape
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Header, RichLog, Select, Sparkline, Static

from alpha_core.build import BuildResult, BuiltExecutable, Deployment
from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.render import render
from alpha_core.launch import Launch, LaunchError, free_port_base
from alpha_core.run_state import RunResult, RunState
from alpha_core.runs import Choice, ChoiceError, build_choice, role_commands
from alpha_core.source_file import SourceRefusal, read_source
from alpha_core.version import version_line
from alpha_core.workspace import Analysis, Workspace

COLUMNS = ("role", "round", "loss", "frames", "bytes", "captured", "state")


class AlphaTui(App[None]):
    """One file, one choice at a time, one launch at a time."""

    TITLE = "alpha-tui"
    CSS = """
    #choices { height: 3; }
    #choices Select { width: 1fr; }
    #status { height: auto; padding: 0 1; }
    #refusals { height: auto; max-height: 12; padding: 0 1; color: $error; }
    #roles { height: 1fr; }
    #curve { height: 4; }
    #log { height: 8; }
    """
    BINDINGS = [
        Binding("b", "build", "Build"),
        Binding("r", "run", "Run"),
        Binding("k", "kill", "Kill role"),
        Binding("u", "resume", "Resume"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        path: str,
        plan: str | None = None,
        pairing: str | None = None,
        checkpoint_every: int = 0,
        checkpoint_dir: str | None = None,
    ) -> None:
        super().__init__()
        self.workspace = Workspace()  # incremental: a re-check after an edit redoes what changed
        self.checkpoint_dir = Path(checkpoint_dir).resolve() if checkpoint_dir else None
        self.path = str(Path(path).resolve())
        self.start_plan, self.start_pairing = plan, pairing
        self.checkpoint_every = checkpoint_every
        self.folder = tempfile.TemporaryDirectory(prefix="alpha-tui-")
        self.analysis: Analysis | None = None
        self.unreadable: SourceRefusal | None = None  # why the file has no text, if it has none
        self.built: BuildResult | None = None
        self.launch: Launch | None = None
        self.state: RunState | None = None
        self.result: RunResult | None = None
        self.launches = 0
        self.targets: list[str] = []  # the choices offered: "system:NAME", "plan:NAME"
        self._events: deque[tuple[str, dict[str, object] | tuple[int, bool]]] = deque()
        self._events_lock = threading.Lock()

    # ---- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="choices"):
            yield Select[str]([], prompt="system or plan", id="target", allow_blank=True)
            yield Select[str]([], prompt="pairing (none)", id="pairing", allow_blank=True)
        yield Static("", id="status")
        yield Static("", id="refusals")
        with Vertical():
            yield DataTable(id="roles", cursor_type="row", zebra_stripes=True)
            yield Sparkline([], id="curve")
            yield RichLog(id="log", markup=True, max_lines=500)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.path
        table = self.query_one(DataTable)
        for column in COLUMNS:
            table.add_column(column, key=column)
        self.set_interval(0.1, self.drain)
        self.check()

    # ---- checking and choosing ------------------------------------------------------------

    def read(self) -> str | None:
        """The file's text, read as the CLI reads it (alpha_core.source_file). When it cannot
        be read (deleted, replaced by a folder or a FIFO) the old analysis is dropped, so
        nothing is built from text that is no longer there, and the refusal is shown."""
        text = read_source(self.path)
        if isinstance(text, SourceRefusal):
            self.unreadable, self.analysis, self.built = text, None, None
            line = f"error[{text.name}]: {text.message}"
            self.query_one("#refusals", Static).update(escape(line))
            self.say(f"[red]refused[/]: {escape(line)}")
            return None
        self.unreadable = None
        return text

    def check(self, keep: bool = False) -> None:
        """Checks the file; `keep`: the current choice stays chosen if it still exists."""
        text = self.read()
        if text is None:
            return
        kept = self.chosen() if keep else None
        self.analysis = a = self.workspace.analyze(self.path, text)
        options = [(f"system {n}", f"system:{n}") for n in sorted(a.checked.programs)]
        options += [(f"plan {n}", f"plan:{n}") for n in sorted(a.checked.plans)]
        target = self.query_one("#target", Select)
        target.set_options(options)
        wanted = kept or (f"plan:{self.start_plan}" if self.start_plan else None)
        self.targets = values = [v for _, v in options]
        if wanted in values:
            target.value = wanted
        elif values:
            target.value = values[0]
        self.show_refusals(a.diagnostics)
        self.say(
            f"checked: {len(a.checked.programs)} systems, {len(a.checked.plans)} plans, "
            f"{len(a.checked.pairings)} pairings; {len(a.diagnostics)} refusals"
        )

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "target":
            self.built = None
            a, plan = self.analysis, self.chosen_plan()
            pairings = (
                []
                if a is None or plan is None
                else [
                    (f"pairing {n}", n)
                    for n, p in sorted(a.checked.pairings.items())
                    if p.plan.name == plan
                ]
            )
            select = self.query_one("#pairing", Select)
            select.set_options(pairings)
            if self.start_pairing in [v for _, v in pairings]:
                select.value = self.start_pairing
        else:
            self.built = None

    def chosen(self) -> str | None:
        value = self.query_one("#target", Select).value
        return value if isinstance(value, str) else None

    def chosen_plan(self) -> str | None:
        value = self.chosen()
        return value.split(":", 1)[1] if value and value.startswith("plan:") else None

    def choice(self) -> Choice | None:
        value = self.chosen()
        if value is None:
            return None
        kind, name = value.split(":", 1)
        pairing = self.query_one("#pairing", Select).value
        if kind == "system":
            return Choice(system=name)
        return Choice(plan=name, pairing=pairing if isinstance(pairing, str) else None)

    # ---- building ---------------------------------------------------------------------------

    def recheck(self) -> None:
        """Before a build: the file is read again, and checked again if it changed."""
        text = self.read()
        if text is not None and (self.analysis is None or text != self.analysis.text):
            self.built = None
            self.check(keep=True)
            self.log_line("the file changed: checked again")

    def action_build(self) -> None:
        if self.busy("build"):
            return
        self.recheck()
        self.built = None
        self.build(then_run=False)

    @work(thread=True, exclusive=True, group="build")
    def build(self, then_run: bool, resume: bool = False) -> None:
        a, choice = self.analysis, self.choice()
        if a is None or choice is None:
            errors = sum(d.severity == "error" for d in a.diagnostics) if a else 0
            why = f"{errors} refusal(s) in the file" if errors else "the file declares no system"
            if self.unreadable is not None:
                why = escape(f"{self.unreadable.name}: {self.unreadable.message}")
            self.call_from_thread(self.say, f"[red]refused[/]: {why}; nothing built")
            return
        self.call_from_thread(self.say, "building…")
        out = Path(self.folder.name) / "build"
        every = self.checkpoint_every
        if choice.plan is None and every == 0:
            program = a.checked.programs.get(choice.system or "")
            every = max(1, program.steps // 10) if program is not None else 0

        def deployment(roles: int) -> Deployment:
            return Deployment(
                port_base=free_port_base(roles),
                checkpoint_dir=str(self.checkpoints),
                checkpoint_every=every,
            )

        def built_role(exe: BuiltExecutable, done: int, total: int) -> None:
            line = f"building… {done}/{total} roles linked ({exe.role}, {exe.size:,} B)"
            self.call_from_thread(self.say, escape(line))

        try:
            result, diags = build_choice(a, choice, out, "x86_64", None, deployment, built_role)
        except ChoiceError as e:
            result, diags = None, [Diagnostic("usage", str(e), None)]
        except Exception as e:  # a bug: named, shown, and the app stays up
            text = f"{type(e).__name__}: {e}; this is a bug in alpha, please report it"
            result, diags = None, [Diagnostic("internal-error", text, None)]
        self.call_from_thread(self.built_one, result, diags, then_run, resume)

    @property
    def checkpoints(self) -> Path:
        return self.checkpoint_dir or Path(self.folder.name) / "checkpoints"

    def built_one(
        self, result: BuildResult | None, diags: list[Diagnostic], then_run: bool, resume: bool
    ) -> None:
        if result is None:
            self.show_refusals(diags)
            self.say(f"[red]refused[/]: {len(diags)} refusal(s), nothing built")
            return
        self.built = result
        sizes = ", ".join(f"{e.role} {e.size:,} B" for e in result.executables)
        self.say(f"built {result.system}: {len(result.executables)} executable(s) ({sizes})")
        self.log_line(f"built {len(result.executables)} executable(s) into {result.manifest}")
        if then_run:
            self.start(resume)

    # ---- launching, watching, killing, resuming --------------------------------------------

    def action_run(self) -> None:
        if self.busy("run"):
            return
        self.recheck()
        if self.built is None:
            self.build(then_run=True)
        else:
            self.start(resume=False)

    def action_resume(self) -> None:
        if self.busy("resume"):
            return
        self.recheck()
        if self.built is None:
            self.build(then_run=True, resume=True)
        else:
            self.start(resume=True)

    def action_kill(self) -> None:
        role = self.selected_role()
        if self.launch is None or role is None or not self.launch.kill(role):
            self.log_line("[yellow]no running role is selected")
            return
        self.log_line(f"[red]killed {escape(role)}[/] (SIGKILL)")

    def busy(self, what: str) -> bool:
        if self.launch is not None and self.launch.running():
            self.log_line(f"[yellow]a run is in progress: {what} waits until it ends")
            return True
        return False

    def start(self, resume: bool) -> None:
        assert self.built is not None
        a = self.analysis
        steps = a.checked.programs[self.built.system].steps if a is not None else 0
        roles = [e.role for e in self.built.executables]
        extra = ["--resume", str(self.checkpoints)] if resume else []
        extra += ["--params-out", str(Path(self.folder.name) / "out.params")]
        with self._events_lock:
            self._events.clear()  # anything an earlier launch said and no tick showed
        try:
            launch = Launch(
                role_commands(self.built, extra),
                on_event=self.queue_event,
                on_exit=self.queue_exit,
            )
        except LaunchError as e:
            self.say(f"[red]refused[/]: {e.name}: {escape(str(e))}")
            self.log_line(f"[red]{e.name}[/]: {escape(str(e))}")
            return
        # The roles' events wait in the queue until the next tick, after this has run.
        self.launch, self.state, self.result = launch, RunState(roles, steps), None
        self.launches += 1
        table = self.query_one(DataTable)
        table.clear()
        table.focus()  # arrows choose the role that k kills and the curve shows
        for role in roles:
            table.add_row(role, f"0/{steps}", "–", "0", "0", "–", "starting", key=role)
        how = "resuming from the newest published capture" if resume else "from the start"
        self.say(f"running {len(roles)} role(s), {how}")
        self.log_line(f"launch {self.launches}: {len(roles)} role(s), {how}")

    def queue_event(self, role: str, event: dict[str, object]) -> None:
        with self._events_lock:
            self._events.append((role, event))

    def queue_exit(self, role: str, code: int, killed: bool) -> None:
        with self._events_lock:
            self._events.append((role, (code, killed)))

    def drain(self) -> None:
        """Applies what the roles said since the last tick, then redraws once."""
        with self._events_lock:
            batch = list(self._events)
            self._events.clear()
        state = self.state
        if not batch or state is None:
            return
        for role, body in batch:
            if isinstance(body, dict):
                state.apply(role, body)
                self.note(role, body)
            else:
                state.exited(role, *body)
        table = self.query_one(DataTable)
        for r in (state.roles[role] for role in dict.fromkeys(role for role, _ in batch)):
            loss = "–" if r.loss is None else f"{r.loss:.6f}"
            captured = "–" if r.captured is None else str(r.captured)
            if r.published is not None:
                captured += " (published)"
            state_text = r.state if r.refusal is None else f"{r.state}: {r.refusal}"
            cells = (f"{r.round}/{r.steps}", loss, f"{r.frames:,}", f"{r.bytes:,}")
            for column, value in zip(COLUMNS[1:], (*cells, captured, state_text), strict=True):
                table.update_cell(r.role, column, value, update_width=True)
        self.show_curve()
        if state.finished and self.result is None:
            self.finish(state.result())

    def note(self, role: str, event: dict[str, object]) -> None:
        kind = event.get("event")
        if kind == "checkpoint" and event.get("published") is True:
            self.log_line(f"{escape(role)}: published round {event.get('round')}")
        elif kind == "resumed":
            self.log_line(f"{escape(role)}: resumed at round {event.get('round')}")
        elif kind == "refused":
            name, message = event.get("name"), escape(str(event.get("message")))
            self.log_line(f"[red]{escape(role)}: refused[/] {name}: {message}")
        elif kind == "stranger-dropped":  # a connection that could not prove the launch secret
            source, name = escape(str(event.get("from"))), escape(str(event.get("name")))
            self.log_line(f"[yellow]{escape(role)}: dropped a stranger[/] from {source} ({name})")

    def finish(self, result: RunResult) -> None:
        self.result = result
        if result.ok:
            metric = (
                f"held-out accuracy {result.holdout_accuracy:.4f}"
                if result.holdout_accuracy is not None
                else f"held-out mse {result.holdout_mse}"
            )
            self.say(
                f"[green]done[/]: final loss {result.final_loss:.6f}, {metric}, "
                f"parameters sha256 {result.params_sha256}"
            )
            self.log_line("[green]done[/]")
            return
        names = ", ".join(f"{role} {name}" for role, name, _ in result.refusals)
        published = self.state.published() if self.state else None
        hint = f"; newest capture: round {published} (u resumes)" if published else ""
        self.say(f"[red]refused[/]: {escape(names)}{hint}")

    def show_curve(self) -> None:
        role = self.selected_role()
        if self.state is not None and role in self.state.roles:
            losses = self.state.roles[role].losses
            self.query_one(Sparkline).data = [x for x in losses if x == x]  # drop NaN

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.show_curve()

    def selected_role(self) -> str | None:
        table = self.query_one(DataTable)
        if self.state is None or table.row_count == 0:
            return None
        roles = list(self.state.roles)
        return roles[table.cursor_row] if 0 <= table.cursor_row < len(roles) else None

    # ---- output -----------------------------------------------------------------------------

    def say(self, markup: str) -> None:
        self.query_one("#status", Static).update(markup)

    def log_line(self, markup: str) -> None:
        self.query_one(RichLog).write(markup)

    def show_refusals(self, diags: list[Diagnostic]) -> None:
        a = self.analysis
        text = "\n\n".join(
            render(d, a.text if a else "", self.path) for d in diags if d.severity == "error"
        )
        self.query_one("#refusals", Static).update(escape(text))

    def on_unmount(self) -> None:
        if self.launch is not None:
            for role in self.launch.roles:
                self.launch.kill(role)
        self.folder.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="alpha-tui", description="Build, launch and watch an Alpha run."
    )
    parser.add_argument("file")
    parser.add_argument("--plan", default=None, help="the plan chosen at start")
    parser.add_argument("--pairing", default=None, help="the pairing chosen at start")
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        help="rounds between captures for a system without a plan (default: a tenth of its "
        "steps); a plan says its own",
    )
    parser.add_argument(
        "--checkpoint-dir",
        default=None,
        help="where captures are published (default: a temporary folder, removed on exit)",
    )
    parser.add_argument("--version", action="version", version=version_line("alpha-tui"))
    args = parser.parse_args(argv)
    unreadable = read_source(args.file)
    if isinstance(unreadable, SourceRefusal):
        print(f"error[{unreadable.name}]: {unreadable.message}", file=sys.stderr)
        return 1
    AlphaTui(args.file, args.plan, args.pairing, args.checkpoint_every, args.checkpoint_dir).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
