"""The role table's columns and cells: what each column shows of a RoleState, and which
columns fit the terminal. Per role, what nvitop shows per process: its rate (rounds a second),
ETA, CPU and resident memory beside its round, loss, traffic and captures. Narrow terminals
(80 columns) keep the rate and memory and drop the ETA, CPU, frame count and traffic; bytes
are always 1.50 MiB; a state is never cut before its name (`refused: peer-lost` becomes
`✗ peer-lost`, and a name wider than its column is kept whole, the table scrolling instead)."""

from __future__ import annotations

from rich.text import Text

from alpha_core.run.agreement import Agreement
from alpha_core.run.run_state import RoleState
from alpha_core.support.sizes import human_bytes, show_loss

WIDE = (
    "role", "round", "loss", "rate", "eta", "cpu", "rss", "frames", "bytes", "captured",
    "agree", "state",
)  # fmt: skip
NARROW = ("role", "round", "loss", "rate", "rss", "captured", "agree", "state")
NARROW_BELOW = 110  # terminal columns
# Columns of what is sampled while a run goes (from the events' times and /proc): a width of
# their own, so that the table does not shift as the first values arrive, nor end a run with
# widths that depend on whether a sample fell inside it (`1,234/s`, `59m59s`, `200%`,
# `123.45 MiB`)
WIDTHS = {"rate": 9, "eta": 6, "cpu": 4, "rss": 10}


def columns(width: int) -> tuple[str, ...]:
    return WIDE if width >= NARROW_BELOW else NARROW


def header(column: str, steps: int, narrow: bool) -> str:
    if column == "round":
        return f"round/{steps:,}" if not narrow else "round"
    if column == "captured" and narrow:
        return "capt"
    return column


def state_cell(r: RoleState) -> Text:
    if r.state == "refused" and r.refusal:
        return Text(f"✗ {r.refusal}", style="red")
    if r.state == "killed":
        return Text("killed", style="red")
    if r.state == "done":
        return Text("done", style="green")
    return Text(r.state)


def cell(column: str, r: RoleState, agreement: Agreement, narrow: bool) -> str | Text:
    if column == "role":
        return r.role
    if column == "round":
        return f"{r.round:,}" if narrow else f"{r.round:,}/{r.steps:,}"
    if column == "loss":
        return show_loss(r.loss)
    if column == "frames":
        return f"{r.frames:,}"
    if column == "bytes":
        return human_bytes(r.bytes)
    if column == "rate":
        return "–" if r.rate is None else f"{r.rate:,.0f}/s" if r.rate >= 10 else f"{r.rate:.1f}/s"
    if column == "eta":
        return "–" if r.eta is None else duration(r.eta)
    if column == "cpu":
        return "–" if r.cpu_percent is None else f"{r.cpu_percent:.0f}%"
    if column == "rss":
        return "–" if r.rss is None else human_bytes(r.rss)
    if column == "captured":
        if r.captured is None:
            return "–"
        return str(r.captured) + ("" if r.published is None or narrow else " (published)")
    if column == "agree":
        return agreement.mark(r.role)
    return state_cell(r)


def usage_line(r: RoleState) -> str:
    """What the role's process uses now, for its memory pane under the admission's figures."""
    if r.rss is None:
        return "now: not running (its resident memory is read from /proc while it runs)"
    cpu = "–" if r.cpu_percent is None else f"{r.cpu_percent:.0f}%"
    rate = "–" if r.rate is None else f"{r.rate:,.1f} rounds/s"
    return f"now: resident {human_bytes(r.rss)}, CPU {cpu}, {rate} (from /proc)"


def duration(seconds: float) -> str:
    """`42s`, `3m05s`, `2h07m`: an ETA at a glance."""
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def empty_hint(targets: int, refusals: int) -> str:
    """What the empty table says: how to get rows into it."""
    if refusals:
        return "nothing to run: fix the refusals above (the file is read again on b, r, u)"
    if not targets:
        return "nothing to run: the file declares no system"
    return "no run yet: r runs the choice above, b only builds it, ? lists every key"
