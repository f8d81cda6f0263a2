"""The panes a user opens for the highlighted role (Enter, or e/p/m/d): its live event log
with a filter, its projected schedule, its memory admission and its device. And `?`: help
made from the bindings, so that it can never list a key that does nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, RichLog, Static, TabbedContent, TabPane

from alpha_core.run.role_views import RoleView
from alpha_core.support.sizes import human_bytes
from alpha_tui.event_log import filtered, newer

TABS = ("events", "projection", "memory", "device")
LOG_LINES = 400  # the newest matching lines the pane shows


def device_text(
    view: RoleView | None, opened: dict[str, object] | None = None, cpu: str | None = None
) -> str:
    """Where the role runs: a host, or the device profile of a GPU role, and once it has
    started, the device it opened (its `device` event: name, UUID, memory, demand)."""
    if view is None:
        return "build the choice (b) to see where this role runs"
    if view.device is None:
        line = f"{view.role} runs on a host: {view.host}, no device"
        if cpu:
            line += f"\n  kernels             {cpu} (chosen at start-up, the widest it has)"
        return line
    lines = [f"{view.role} runs on a GPU: device profile {view.device} (host {view.host})"]
    if opened is None:
        lines.append("not started yet: the device it opens is shown once it runs")
        return "\n".join(lines)

    def size(key: str) -> str:
        value = opened.get(key)
        return human_bytes(value) if isinstance(value, int) else "?"

    lines += [
        f"  target              {opened.get('target')}",
        f"  device              {opened.get('name')} (uuid {opened.get('uuid')})",
        f"  compute capability  {opened.get('compute_capability')}",
        f"  memory              {size('memory')}, {size('free')} free",
        f"  demand              {size('demand')}",
        f"  kernels             {opened.get('kernels')}",
    ]
    us = opened.get("round_kernel_us")
    if isinstance(us, int):
        lines.append(f"  kernel time         {us / 1000:.3f} ms in the newest round")
    if opened.get("shadow") is True:
        lines.append("  a host shadow: the same kernels and launches, run on the host")
    return "\n".join(lines)


class RolePanes(ModalScreen[None]):
    """One role's panes, over the main screen; Escape goes back."""

    BINDINGS = [
        Binding("escape", "dismiss", "Back"),
        Binding("e", "tab('events')", "Events"),
        Binding("p", "tab('projection')", "Projection"),
        Binding("m", "tab('memory')", "Memory"),
        Binding("d", "tab('device')", "Device"),
        Binding("slash", "filter", "Filter", key_display="/"),
    ]
    DEFAULT_CSS = """
    RolePanes { align: center middle; }
    RolePanes > TabbedContent { width: 100%; height: 1fr; }
    #filter { height: 3; }
    #events-log { height: 1fr; }
    """

    def __init__(
        self,
        role: str,
        view: RoleView | None,
        events: Callable[[], Iterable[dict[str, object]]],
        first: str = "events",
        device: Callable[[], dict[str, object] | None] = lambda: None,
        usage: Callable[[], str] = lambda: "",
        cpu: Callable[[], str | None] = lambda: None,
    ) -> None:
        super().__init__()
        self.role, self.view, self.events, self.first = role, view, events, first
        self.device, self.usage, self.cpu = device, usage, cpu
        self.query_text = ""
        self._last: dict[str, object] | None = None  # the newest event written to the log
        self._query: str | None = None  # the filter it was written under

    def compose(self) -> ComposeResult:
        v = self.view
        with TabbedContent(initial=self.first):
            with TabPane(f"events of {self.role}", id="events"):
                yield Input(placeholder="filter: words, -word, kind:step, -kind:step", id="filter")
                yield RichLog(id="events-log", markup=False, max_lines=LOG_LINES, wrap=False)
            with TabPane("projection", id="projection"), VerticalScroll():
                text = v.projection if v else "build the choice (b) to see its schedule"
                yield Static(escape(text), id="projection-text")
            with TabPane("memory", id="memory"), VerticalScroll():
                text = v.admission if v else "build the choice (b) to see its admission"
                yield Static(escape(text), id="memory-text")
                yield Static(escape(self.usage()), id="memory-now")
            with TabPane("device", id="device"):
                yield Static(escape(device_text(v, self.device(), self.cpu())), id="device-text")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_log()
        self.set_interval(0.25, self.refresh_log)  # live: new events while it is open

    def lines(self) -> list[str]:
        return filtered(self.events(), self.query_text, LOG_LINES)

    def refresh_log(self) -> None:
        """Four times a second: the live figures, and the events that came since the last
        call appended (a run reports thousands; formatting and writing all of them again on
        every call kept the app busy while the pane was open)."""
        text = escape(device_text(self.view, self.device(), self.cpu()))
        self.query_one("#device-text", Static).update(text)
        self.query_one("#memory-now", Static).update(escape(self.usage()))
        events = list(self.events())
        log = self.query_one("#events-log", RichLog)
        start = newer(events, self._last) if self._query == self.query_text else None
        if start is None:
            log.clear()
            shown = filtered(events, self.query_text, LOG_LINES)
        else:
            shown = filtered(events[start:], self.query_text, LOG_LINES)
        for line in shown:
            log.write(line)
        self._last = events[-1] if events else None
        self._query = self.query_text

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self.refresh_log()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_filter(self) -> None:
        self.action_tab("events")
        self.query_one("#filter", Input).focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)


def help_text(groups: list[tuple[str, list[BindingType]]]) -> str:
    """Every key of every group, with what it does: the bindings themselves, as declared."""
    lines: list[str] = []
    for title, bindings in groups:
        lines.append(title)
        for b in bindings:
            if not isinstance(b, Binding):
                continue
            key = b.key_display or b.key
            lines.append(f"  {key:<10} {b.description or b.action}")
        lines.append("")
    lines.append("Escape closes this help.")
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "Back"), Binding("question_mark", "dismiss", "Back")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; background: $background; }
    HelpScreen > VerticalScroll { width: 70; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; padding: 0 1; background: $surface; }
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(escape(self.text), id="help-text")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
