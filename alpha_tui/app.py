"""alpha-tui: open a file, choose a system or a plan (and its pairing), build, launch every
role on this machine, watch each one (round, loss plot, traffic, captures, whether the roles
agree), open a role's panes (events, projection, memory, device), kill a role, and resume from
the newest capture of the run that was killed.

A face: checking, building, starting and reading a run are alpha_core's (workspace, runs,
launch, run_state, captures, agreement, role_views); this module only shows them and turns
keys into calls. Anything slow runs in a thread; role events are queued by the launch's
threads and drained ten times a second, so a flood of step events costs one redraw per tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.markup import escape
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, RichLog, Select, Static

from alpha_core.build.hosts_file import HostsFile, HostsRefused, read_hosts
from alpha_core.build.outputs import BuildResult, BuiltExecutable, Deployment
from alpha_core.diagnostics import Diagnostic
from alpha_core.run.captures import CaptureFolders
from alpha_core.run.interruption import interrupted_line, run_argv
from alpha_core.run.launch import Launch, LaunchError, free_port_base
from alpha_core.run.process_usage import ProcessUsage, Usage
from alpha_core.run.record import STEP_EVENTS, RunRecord, Subject, step_every
from alpha_core.run.role_views import RoleView, role_views
from alpha_core.run.run_state import RunResult, RunState
from alpha_core.run.runs import (
    Choice,
    ChoiceError,
    build_choice,
    capture_refusal,
    chosen_system,
    role_commands,
    run_folder,
)
from alpha_core.support.ports import ephemeral_overlap
from alpha_core.support.sizes import human_bytes, show_loss
from alpha_core.support.source_file import SourceRefusal, read_source
from alpha_core.workspace.analysis import Analysis, Workspace
from alpha_tui import table as T
from alpha_tui.loss_plot import LossPlot
from alpha_tui.views import Views

COLUMNS = T.WIDE  # the columns of a wide terminal (tests read cells by these keys)


def shown_path(path: Path) -> str:
    """A folder as short as it reads unambiguously: relative to the working folder when
    inside it, else from the home folder (`~/…`), else whole."""
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        with contextlib.suppress(ValueError):
            return prefix + str(path.relative_to(base))
    return str(path)


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


# The roles of a launch run this much nicer than alpha-tui, so that on a machine whose cores
# they fill a key still answers at once; with cores to spare they run as fast as before.
ROLE_NICE = 5
# At most STEP_EVENTS step events from a role in a run (alpha_core.run.record.step_every): a
# role of a small model reports ten thousand rounds a second, more than a terminal can read,
# and the plot keeps 4,096 of them. The roles' agreement is judged on every reported round.
__all__ = ["STEP_EVENTS", "AlphaTui", "step_every"]


class AlphaTui(Views, App[None]):
    """One file, one choice at a time, one launch at a time."""

    TITLE = "alpha-tui"
    CSS = """
    #choices { height: 3; }
    #choices.short { height: 1; }
    #choices Select { width: 1fr; }
    #status { height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #refusals { height: auto; max-height: 8; padding: 0 1; color: $error; overflow-y: auto; }
    #refusals.empty { display: none; }
    #roles { height: auto; max-height: 14; }
    #summary { height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #summary.hidden { display: none; }
    #hint { height: 1; padding: 0 1; color: $text-muted; }
    #hint.hidden { display: none; }
    #plot { height: 1fr; min-height: 4; }
    #log { height: 8; }
    #log.short { height: 3; }
    """
    BINDINGS = [
        Binding("c", "choose", "Choose"),
        Binding("b", "build", "Build"),
        Binding("r", "run", "Run"),
        Binding("k", "kill", "Kill"),
        Binding("u", "resume", "Resume"),
        Binding("enter", "panes('events')", "Role panes", show=False),
        Binding("e", "panes('events')", "Events", show=False),
        Binding("p", "panes('projection')", "Projection", show=False),
        Binding("m", "panes('memory')", "Memory", show=False),
        Binding("d", "panes('device')", "Device", show=False),
        Binding("l", "log_scale", "Log scale", show=False),
        Binding("a", "every_role", "All roles / one", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        path: str,
        plan: str | None = None,
        pairing: str | None = None,
        checkpoint_every: int = 0,
        checkpoint_dir: str | None = None,
        port_base: int | None = None,
        steps: int | None = None,
        hosts: str | None = None,
        gpu_shadow: bool = False,
    ) -> None:
        super().__init__()
        self.gpu_shadow = gpu_shadow  # GPU roles built as their host shadow (a control)
        self.hosts_path = hosts  # --hosts: each role's own address (read at each build)
        self.hosts: HostsFile | None = None
        self.workspace = Workspace()  # incremental: a re-check after an edit redoes what changed
        self.checkpoint_dir = Path(checkpoint_dir).resolve() if checkpoint_dir else None
        self.path = str(Path(path).resolve())
        self.start_plan, self.start_pairing = plan, pairing
        self.checkpoint_every, self.port_base, self.steps = checkpoint_every, port_base, steps
        # the executables only (the same bits are built again from the file); what a run
        # trains is kept in its run folder (alpha_core.run.record), never removed
        self.folder = tempfile.TemporaryDirectory(prefix="alpha-tui-")
        self.captures = CaptureFolders(self.checkpoint_dir)
        self.record: RunRecord | None = None  # the record of the newest run
        self.kept: list[Path] = []  # the run folders of this session, said on the way out
        self.analysis: Analysis | None = None
        self.unreadable: SourceRefusal | None = None  # why the file has no text, if it has none
        self.built: BuildResult | None = None
        self.views: dict[str, RoleView] = {}
        self.launch: Launch | None = None
        self.state: RunState | None = None
        self.result: RunResult | None = None
        self.launches = 0
        self.usage = ProcessUsage()  # the roles' CPU and memory, from /proc
        self.built_choice: Choice | None = None  # what the newest build built, and its interval
        self.built_every = 0
        self.interrupted: tuple[int, str] | None = None  # the signal that stopped it, its line
        self.keep_folder = False
        self.targets: list[str] = []  # the choices offered: "system:NAME", "plan:NAME"
        self.shown_columns: tuple[str, ...] = ()
        self.shown_cells: dict[str, list[object]] = {}  # what each row of the table shows
        self._events: deque[tuple[str, dict[str, object] | tuple[int, bool]]] = deque()
        self._events_lock = threading.Lock()

    # ---- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="choices"):
            yield Select[str]([], prompt="system or plan", id="target", allow_blank=True)
            yield Select[str]([], prompt="pairing (none)", id="pairing", allow_blank=True)
        yield Static("", id="status")
        yield Static("", id="refusals", classes="empty")
        with Vertical():
            yield Static("", id="summary", classes="hidden")  # a run of MANY_ROLES or more
            yield DataTable(id="roles", cursor_type="row", zebra_stripes=True)
            yield Static("", id="hint")
            yield LossPlot(id="plot")
            yield RichLog(id="log", markup=True, max_lines=500, wrap=True)
        yield Footer()

    def on_mount(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self.signalled, sig)
        self.sub_title = self.path
        self.set_columns(self.size.width)
        self.set_interval(0.1, self.drain)
        self.set_interval(1.0, self.sample_usage)
        self.check()
        self.query_one(DataTable).focus()  # keys act on the roles, not on a selector

    # ---- checking and choosing ------------------------------------------------------------

    def read(self) -> str | None:
        """The file's text, read as the CLI reads it (alpha_core.support.source_file). When it
        cannot be read (deleted, replaced by a folder or a FIFO) the old analysis is dropped, so
        nothing is built from text that is no longer there, and the refusal is shown."""
        text = read_source(self.path)
        if isinstance(text, SourceRefusal):
            self.unreadable, self.analysis, self.built = text, None, None
            line = f"error[{text.name}]: {text.message}"
            self.set_refusals(line)
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
        if self.start_plan and not keep and wanted not in values:
            self.refuse_plan(self.start_plan, a)  # never a silent fallback to the system
        self.show_refusals(a.diagnostics)
        errors = sum(d.severity == "error" for d in a.diagnostics)
        self.say(
            f"checked: {plural(len(a.checked.programs), 'system')}, "
            f"{plural(len(a.checked.plans), 'plan')}, "
            f"{plural(len(a.checked.pairings), 'pairing')}; {plural(errors, 'refusal')}"
        )
        self.show_hint()

    def refuse_plan(self, name: str, a: Analysis) -> None:
        _, _, diags = a.plan(name)
        why = diags[0] if diags else None
        text = f"--plan {name}: {why.message}" if why else f"--plan {name} is not in the file"
        if why is not None and why.help:
            text += f"; {why.help}"
        self.log_line(f"[red]refused[/] {escape(text)}")
        self.start_plan = None

    def on_select_changed(self, event: Select.Changed) -> None:
        self.built, self.views = None, {}
        if event.select.id != "target":
            return
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
        if kind == "system":
            return Choice(system=name, steps=self.steps)
        pairing = self.query_one("#pairing", Select).value
        every = self.checkpoint_every or None
        return Choice(
            plan=name,
            pairing=pairing if isinstance(pairing, str) else None,
            steps=self.steps,
            checkpoint_every=every,
        )

    # ---- building ---------------------------------------------------------------------------

    def recheck(self) -> None:
        """Before a build: the file is read again, and checked again if it changed."""
        text = self.read()
        if text is not None and (self.analysis is None or text != self.analysis.text):
            self.built = None
            self.check(keep=True)
            self.log_line("the file changed: checked again")

    def action_choose(self) -> None:
        """c: the system-or-plan selector, open (Tab then moves to the pairing's)."""
        select = self.query_one("#target", Select)
        select.focus()
        select.action_show_overlay()

    def action_build(self) -> None:
        if self.busy("build"):
            return
        self.recheck()
        self.built = None
        self.build(then_run=False)

    def deployment(self, choice: Choice, roles: int) -> Deployment:
        every = self.checkpoint_every
        if choice.plan is None and every == 0 and self.analysis is not None:
            program = self.analysis.checked.programs.get(choice.system or "")
            steps = choice.steps or (program.steps if program is not None else 0)
            every = max(1, steps // 10) if steps else 0
        base = self.port_base if self.port_base is not None else free_port_base(roles)
        overlap = ephemeral_overlap(base, min(base + roles - 1, 65535))
        if self.port_base is not None and overlap:
            self.call_from_thread(self.log_line, f"[yellow]warning[/]: {escape(overlap)}")
        hosts = read_hosts(self.hosts_path) if self.hosts_path and choice.plan else None
        self.hosts = hosts
        self.built_choice, self.built_every = choice, every
        return Deployment(
            port_base=base,
            # each launch names its own folder on its command line (start)
            checkpoint_dir=str(Path(self.folder.name) / "checkpoints"),
            checkpoint_every=every if choice.plan is None else 0,
            hosts=hosts,
            gpu_shadow=self.gpu_shadow,
        )

    @work(thread=True, exclusive=True, group="build")
    def build(self, then_run: bool, resume: bool = False) -> None:
        a, choice = self.analysis, self.choice()
        if a is None or choice is None:
            errors = sum(d.severity == "error" for d in a.diagnostics) if a else 0
            why = f"{plural(errors, 'refusal')} in the file" if errors else "no system declared"
            if self.unreadable is not None:
                why = escape(f"{self.unreadable.name}: {self.unreadable.message}")
            self.call_from_thread(self.say, f"[red]refused[/]: {why}; nothing built")
            return
        self.call_from_thread(self.say, "building…")
        out = Path(self.folder.name) / "build"
        shutil.rmtree(out, ignore_errors=True)  # its own folder: the previous choice's build goes

        def built_role(exe: BuiltExecutable, done: int, total: int) -> None:
            line = f"building… {done}/{total} roles linked ({exe.role}, {human_bytes(exe.size)})"
            self.call_from_thread(self.say, escape(line))

        views: dict[str, RoleView] = {}
        if resume and self.captures.current is not None:
            # a capture of another version of the system: what differs, before building
            refused = capture_refusal(a, choice, self.captures.current, "resume from")
            if refused is not None:
                self.call_from_thread(self.built_one, None, [refused], views, False, False)
                return
        try:
            result, diags = build_choice(
                a, choice, out, "x86_64", None, lambda n: self.deployment(choice, n), built_role
            )
            if result is not None:
                views = role_views(a, choice)
        except ChoiceError as e:
            result, diags = None, [Diagnostic("usage", str(e), None)]
        except LaunchError as e:  # no free ports
            result, diags = None, [Diagnostic(e.name, str(e), None)]
        except HostsRefused as e:  # named with the hosts file's lines
            result, diags = None, e.located()
        except Exception as e:  # a bug: named, shown, and the app stays up
            text = f"{type(e).__name__}: {e}; this is a bug in alpha, please report it"
            result, diags = None, [Diagnostic("internal-error", text, None)]
        self.call_from_thread(self.built_one, result, diags, views, then_run, resume)

    def built_one(
        self,
        result: BuildResult | None,
        diags: list[Diagnostic],
        views: dict[str, RoleView],
        then_run: bool,
        resume: bool,
    ) -> None:
        if result is None:
            self.show_refusals(diags)
            self.say(f"[red]refused[/]: {plural(len(diags), 'refusal')}, nothing built")
            return
        self.built, self.views = result, views
        sizes = ", ".join(f"{e.role} {human_bytes(e.size)}" for e in result.executables)
        self.say(f"built {result.system}: {plural(len(result.executables), 'executable')}")
        self.log_line(escape(f"built {sizes} into {result.manifest}"))
        if then_run:
            self.start(resume)
        else:
            self.list_built([e.role for e in result.executables])

    def planned_steps(self) -> int:
        """The rounds the built choice runs: --steps, else its system's `steps`."""
        a, built = self.analysis, self.built
        program = a.checked.programs.get(built.system) if a is not None and built else None
        return self.steps or (program.steps if program is not None else 0)

    def list_built(self, roles: list[str]) -> None:
        """The built roles in the table before anything runs (state `built`), so that Enter
        opens a role's projection and memory, and a run is one key away."""
        state = RunState(roles, self.planned_steps())
        for r in state.roles.values():
            r.state = "built"
        self.state, self.result = state, None
        self.set_columns(self.size.width)
        table = self.query_one(DataTable)
        for role in roles:
            table.add_row(*self.cells(role), key=role)
        self.show_hint()

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
        at = self.captures.resumable()
        if at is None:
            where = self.captures.current or self.captures.root or "this session's runs"
            self.log_line(
                f"[yellow]nothing to resume[/]: no published capture in {escape(str(where))} "
                "(r runs from the start; a plan captures with `checkpoint every N rounds` or "
                "--checkpoint-every N)"
            )
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
        steps = self.planned_steps()
        roles = [e.role for e in self.built.executables]
        at = self.captures.resumable() if resume else None
        if resume and self.captures.current is not None and at is not None:
            folder = self.captures.current
            extra = ["--resume", str(folder), "--checkpoint-dir", str(folder)]
        else:
            resume, folder = False, self.new_run()
            extra = ["--checkpoint-dir", str(folder)]
        assert self.record is not None
        run = self.record.folder
        extra += ["--params-out", str(run / f"{self.built.system}.params")]
        extra += ["--step-every", str(step_every(steps))]
        with self._events_lock:
            self._events.clear()  # anything an earlier launch said and no tick showed
        try:
            launch = Launch(
                role_commands(self.built, extra),
                on_event=self.queue_event,
                on_exit=self.queue_exit,
                nice=ROLE_NICE,
            )
        except LaunchError as e:
            self.say(f"[red]refused[/]: {e.name}: {escape(str(e))}")
            self.log_line(f"[red]{e.name}[/]: {escape(str(e))}")
            self.record.begin(str(folder) if resume else None)  # its record says why
            self.record.event_refused(e.name, str(e))
            self.record.end("refused")
            return
        self.record.begin(str(folder) if resume else None)
        # The roles' events wait in the queue until the next tick, after this has run.
        self.launch, self.state, self.result = launch, RunState(roles, steps), None
        self.launches += 1
        self.set_columns(self.size.width)
        table = self.query_one(DataTable)
        for role in roles:
            table.add_row(*self.cells(role), key=role)
        table.focus()  # arrows choose the role that k kills and the plot shows
        how = f"resuming at round {at:,} of {steps:,}" if resume else f"{steps:,} steps"
        self.say(f"running {plural(len(roles), 'role')}, {how}")
        self.log_line(escape(f"launch {self.launches}: {len(roles)} role(s), {how}, in {run}"))
        self.sub_title = self.run_title(run)
        self.show_hint()

    def run_title(self, run: Path) -> str:
        """The header's words for the run folder: with the file's name where the header has
        room for both (its icon and margins take 18 columns), else the folder alone."""
        both = f"{Path(self.path).name} · run {shown_path(run)}"
        room = self.size.width - 18 - len(f"{self.title} — ")
        return both if len(both) <= room else f"run {shown_path(run)}"

    def new_run(self) -> Path:
        """A run from the start: its run folder, like `alpha run`'s (runs.run_folder), with
        its record, parameters and (without --checkpoint-dir) its captures; the folder the
        captures go to is returned."""
        assert self.built is not None and self.analysis is not None
        choice = self.built_choice or Choice(system=self.built.system)
        run = run_folder(self.analysis, choice)
        run.mkdir(parents=True)
        captures = (
            self.captures.fresh() if self.checkpoint_dir else self.captures.use(run / "checkpoints")
        )
        program = chosen_system(self.analysis, choice)
        subject = Subject(
            self.built.system,
            choice.plan,
            choice.pairing,
            self.built.identity,
            program.canonical() if program is not None else "",
            self.planned_steps(),
            self.path,
            run_argv(self.path, choice, self.built_every, self.hosts_path, self.gpu_shadow),
            [e.role for e in self.built.executables],
            None,
            str(captures),
            self.built.manifest,
        )
        if self.record is not None:
            self.record.close()
        self.record = RunRecord(run, subject)
        self.kept.append(run)
        return captures

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
                if self.record is not None:
                    self.record.event(role, body)
            else:
                state.exited(role, *body)
        self.redraw_rows()
        if state.finished and self.result is None:
            self.finish(state.result())

    def sample_usage(self) -> None:
        """Each running role's CPU and resident memory, from /proc, once a second."""
        launch, state = self.launch, self.state
        if launch is None or state is None or state.finished:
            return
        for role, r in state.roles.items():
            pid = launch.pid(role) if not r.finished else None  # done: nothing to show
            u = self.usage.sample(pid) if pid is not None else Usage(None, None)
            r.cpu_percent, r.rss = u.cpu_percent, u.rss
        self.redraw_rows()

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
        if self.record is not None:
            self.record.end("done" if result.ok else "refused")
        if result.ok:
            metric = (
                f"held-out accuracy {result.holdout_accuracy:.4f}"
                if result.holdout_accuracy is not None
                else f"held-out mse {show_loss(result.holdout_mse)}"
            )
            self.say(
                f"[green]done[/]: final loss {show_loss(result.final_loss)}, {metric}, "
                f"parameters sha256 {result.params_sha256}"
            )
            self.log_line("[green]done[/]")
            return
        names = sorted({name for _, name, _ in result.refusals})
        counts = ", ".join(
            f"{name} ×{sum(n == name for _, n, _ in result.refusals)}" for name in names
        )
        at = self.captures.resumable()  # what u resumes from: read where u will read it
        hint = f"; u resumes at round {at:,}" if at is not None else "; no capture to resume"
        self.say(f"[red]refused[/]: {escape(counts)}{hint}")
        for role, name, message in result.refusals:
            self.log_line(f"[red]{escape(role)} {escape(name)}[/]: {escape(message)}")

    # ---- panes, help, palette -----------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.action not in ("quit",):
                yield SystemCommand(b.description, f"key {b.key_display or b.key}", self._do(b))

    def _do(self, b: Binding) -> Callable[[], object]:
        return lambda: self.run_action(b.action)

    # ---- output -----------------------------------------------------------------------------

    def signalled(self, sig: int) -> None:
        """SIGINT, SIGTERM or SIGHUP: stop a run's roles, keep its captures, and quit; the
        entry point then prints the line that says where the run got to and how to resume."""
        if self.launch is not None and self.launch.running() and self.state is not None:
            self.launch.stop()
            if self.record is not None:
                self.record.end("interrupted")
                self.record.close()
            steps = next(iter(self.state.roles.values())).steps if self.state.roles else 0
            choice = self.built_choice or Choice()
            argv = run_argv(self.path, choice, self.built_every, self.hosts_path, self.gpu_shadow)
            line = interrupted_line(sig, self.state, steps, argv, self.captures.current)
            self.interrupted = (sig, line)
            # a capture it names is kept for that resume, even in alpha-tui's own folder
            self.keep_folder = "newest capture:" in line
        else:
            self.interrupted = (sig, "")
        if sig == signal.SIGHUP:
            # the terminal is gone (closed, its tmux server killed): nothing is left to draw on
            # or restore, and tearing the screen down waits on it for ever. The roles are
            # stopped; say where the run got to if anything still reads stderr, and go.
            if not self.keep_folder:
                self.folder.cleanup()
            with contextlib.suppress(OSError):
                os.write(2, (self.interrupted[1] + "\n").encode())
            os._exit(128 + sig)
        self.exit(return_code=128 + sig)

    def on_unmount(self) -> None:
        if self.launch is not None:
            self.launch.stop(signal.SIGKILL)
        if self.record is not None:
            if self.record.state == "running":
                self.record.end("interrupted")
            self.record.close()
        if not self.keep_folder:
            self.folder.cleanup()
