"""What the main screen shows and the panes it opens, apart from running things: the role
table's columns and rows, the loss plot, the status line and log, the refusals, the hint of
an empty table, a role's panes and the help. A mixin of AlphaTui (app.py), which decides when
to call them; it reads alpha_core's state and decides nothing about the run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from textual.events import Resize
from textual.widgets import DataTable, RichLog, Select, Static

from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.render import render
from alpha_core.run.role_summary import MANY_ROLES, summarize
from alpha_tui import table as T
from alpha_tui.loss_plot import LossPlot, Series
from alpha_tui.panes import HelpScreen, RolePanes, help_text

if TYPE_CHECKING:  # for the checker, what the app it is mixed into has
    from textual.app import App

    from alpha_core.build.hosts_file import HostsFile
    from alpha_core.run.role_views import RoleView
    from alpha_core.run.run_state import RunState
    from alpha_core.workspace.analysis import Analysis

    _App = App[None]
else:
    _App = object


class Views(_App):
    state: RunState | None
    views: dict[str, RoleView]
    analysis: Analysis | None
    targets: list[str]
    path: str
    shown_columns: tuple[str, ...]
    shown_cells: dict[str, list[object]]
    hosts: HostsFile | None

    def on_resize(self, event: Resize) -> None:
        # a short terminal (80x24) gives the plot the rows: one-line selectors, a shorter log
        short = event.size.height < 32
        self.query_one("#log").set_class(short, "short")
        self.query_one("#choices").set_class(short, "short")
        for select in self.query(Select):
            select.compact = short
        if T.columns(event.size.width) != self.shown_columns:
            self.set_columns(event.size.width)
            self.redraw_rows()

    def set_columns(self, width: int) -> None:
        table = self.query_one(DataTable)
        steps = self.state_steps()
        table.clear(columns=True)
        self.shown_cells = {}  # what each row shows (redraw_rows)
        self.shown_columns = T.columns(width)
        narrow = self.shown_columns is T.NARROW
        for column in self.shown_columns:
            label = T.header(column, steps, narrow)
            table.add_column(label, width=T.WIDTHS.get(column), key=column)

    def state_steps(self) -> int:
        if self.state is not None:
            return next((r.steps for r in self.state.roles.values()), 0)
        return 0

    def cells(self, role: str) -> list[object]:
        assert self.state is not None
        narrow = self.shown_columns is T.NARROW
        r, agreement = self.state.roles[role], self.state.agreement
        cells: list[object] = [T.cell(c, r, agreement, narrow) for c in self.shown_columns]
        entry = self.hosts.address_of(role) if self.hosts is not None else None
        if entry is not None and self.shown_columns[:1] == ("role",):  # where it runs
            cells[0] = f"{role} @ {entry.host}"
        view = self.views.get(role)
        if view is not None and view.device is not None and self.shown_columns[:1] == ("role",):
            # a GPU role names its target: `worker[0] gpu h200`, `… (shadow)` for its shadow
            shadow = " (shadow)" if getattr(self, "gpu_shadow", False) else ""
            cells[0] = f"{cells[0]} gpu {view.device}{shadow}"
        return cells

    def covered(self) -> bool:
        """A role's panes or the help lie over the main screen. Its rows and plot then wait:
        redrawing them under a modal screen made Textual re-render the dimmed background on
        every tick, which took most of the app's time while the panes were open (a pane
        switch answered in 300-500 ms with both cores busy)."""
        return len(self.screen_stack) > 1

    def uncovered(self, _: object = None) -> None:
        """The panes or the help closed: the rows and plot catch up at once."""
        self.call_after_refresh(self.redraw_rows)

    def redraw_rows(self) -> None:
        if self.state is None or self.covered():
            return
        table = self.query_one(DataTable)
        shown = self.shown_cells
        if table.row_count == 0:
            shown.clear()
            for role in self.state.roles:
                shown[role] = self.cells(role)
                table.add_row(*shown[role], key=role)
        else:
            # only the cells that changed: a run of hundreds of roles redraws a few per tick
            for role in self.state.roles:
                cells, before = self.cells(role), shown.get(role)
                for i, (column, value) in enumerate(zip(self.shown_columns, cells, strict=True)):
                    if before is None or len(before) != len(cells) or before[i] != value:
                        table.update_cell(role, column, value, update_width=True)
                shown[role] = cells
        self.show_summary()
        self.show_plot()

    def show_summary(self) -> None:
        """From MANY_ROLES roles on, a line above the (scrolling) table: how many roles are in
        each state, the rounds they span, the slowest role, and how many were refused."""
        widget = self.query_one("#summary", Static)
        many = self.state is not None and len(self.state.roles) >= MANY_ROLES
        widget.set_class(not many, "hidden")
        if not many or self.state is None:
            return
        s = summarize(self.state)
        parts = [s.line()]
        slowest = s.slowest_line()
        if slowest is not None:
            parts.append(slowest)
        if s.refused:
            first = s.refused[0]
            parts.append(
                f"refused: {first.role} {first.name}"
                + (f" and {len(s.refused) - 1:,} more" if len(s.refused) > 1 else "")
            )
        widget.update(escape(" · ".join(parts)))

    def show_plot(self) -> None:
        plot = self.query_one(LossPlot)
        state, role = self.state, self.selected_role()
        if state is None:
            return
        chosen = state.roles.values() if plot.every_role else [state.roles[role]] if role else []
        series = [Series(r.role, r.first_round, tuple(r.losses)) for r in chosen]
        plot.show(series, "every role" if plot.every_role else role or "no role")

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.show_plot()

    def on_data_table_row_selected(self, _: DataTable.RowSelected) -> None:
        self.action_panes("events")

    def selected_role(self) -> str | None:
        table = self.query_one(DataTable)
        if self.state is None or table.row_count == 0:
            return None
        roles = list(self.state.roles)
        return roles[table.cursor_row] if 0 <= table.cursor_row < len(roles) else None

    def action_panes(self, tab: str) -> None:
        role = self.selected_role() or next(iter(self.views), None)
        if role is None:
            self.log_line("[yellow]no role yet[/]: b builds the choice, r runs it")
            return
        state = self.state

        def device() -> dict[str, object] | None:
            current = self.state if self.state is not None else state
            r = current.roles.get(role) if current is not None else None
            if r is None or r.device is None:
                return None
            return {**r.device, "round_kernel_us": r.kernel_us}

        def events() -> list[dict[str, object]]:
            current = self.state if self.state is not None else state
            r = current.roles.get(role) if current is not None else None
            return list(r.events) if r is not None else []

        def usage() -> str:
            current = self.state if self.state is not None else state
            r = current.roles.get(role) if current is not None else None
            return T.usage_line(r) if r is not None else ""

        def cpu() -> str | None:
            current = self.state if self.state is not None else state
            r = current.roles.get(role) if current is not None else None
            return r.cpu if r is not None else None

        panes = RolePanes(role, self.views.get(role), events, tab, device, usage, cpu)
        self.push_screen(panes, callback=self.uncovered)

    def action_log_scale(self) -> None:
        plot = self.query_one(LossPlot)
        plot.log_scale = not plot.log_scale
        self.show_plot()

    def action_every_role(self) -> None:
        plot = self.query_one(LossPlot)
        plot.every_role = not plot.every_role
        self.show_plot()

    def action_help(self) -> None:
        groups = [("keys of the main screen", list(self.BINDINGS))]
        groups.append(("keys of a role's panes (Enter or e/p/m/d)", list(RolePanes.BINDINGS)))
        self.push_screen(HelpScreen(help_text(groups)), callback=self.uncovered)

    def say(self, markup: str) -> None:
        self.query_one("#status", Static).update(markup)

    def log_line(self, markup: str) -> None:
        self.query_one(RichLog).write(markup)

    def show_hint(self) -> None:
        hint = self.query_one("#hint", Static)
        empty = self.state is None
        a = self.analysis
        errors = sum(d.severity == "error" for d in a.diagnostics) if a else 1
        hint.update(T.empty_hint(len(self.targets), errors) if empty else "")
        hint.set_class(not empty, "hidden")

    def set_refusals(self, text: str) -> None:
        widget = self.query_one("#refusals", Static)
        widget.update(escape(text))
        widget.set_class(not text, "empty")

    def show_refusals(self, diags: list[Diagnostic]) -> None:
        a = self.analysis
        text = "\n\n".join(
            render(d, a.text if a else "", self.path) for d in diags if d.severity == "error"
        )
        self.set_refusals(text)
