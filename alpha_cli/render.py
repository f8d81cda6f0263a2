"""Rendering refusals and results for a terminal (rich) or as JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.diagnostic import visible
from alpha_core.diagnostics.render import render, span_json
from alpha_core.plan.schedule import Link, Op
from alpha_core.workspace.analysis import Analysis

# soft_wrap: lines are never broken by rich (a digest or a path stays whole, so it can be
# copied); the terminal wraps what is wider than it.
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def diagnostic_json(d: Diagnostic, text: str) -> dict[str, Any]:
    return {
        "name": d.name,
        "message": d.message,
        "span": span_json(d.span, text),
        "related": [{"message": r.message, "span": span_json(r.span, text)} for r in d.related],
        "help": d.help,
    }


def show_refusals(diags: list[Diagnostic], a: Analysis) -> None:
    for d in diags:
        text = render(d, a.text, a.path)
        head, _, rest = text.partition("\n")
        err.print(f"[bold red]{escape(head)}[/]")
        if rest:
            err.print(escape(rest))
        err.print()
    n = len(diags)
    where = escape(visible(a.path))  # a file name may hold control characters too
    err.print(f"[bold red]refused[/]: {n} refusal{'s' if n != 1 else ''} in {where}")


def error_line(name: str, message: str) -> None:
    # messages from the runtime and the OS echo paths: no raw control character reaches a terminal
    err.print(f"[bold red]error\\[{escape(name)}][/]: {escape(visible(message))}")


def op_json(op: Op, links: tuple[Link, ...]) -> dict[str, Any]:
    """One op of a projected schedule for `alpha project --json`: its fields, and the line
    the text output shows for it."""
    tree_node = op.kind in ("compute", "combine", "send", "recv")
    linked = op.kind in ("send", "recv", "send_params", "recv_params", "ack_send", "ack_recv")
    return {
        "kind": op.kind,
        "node": [op.a, op.b] if tree_node else None,
        "peer": links[op.link].peer_name if linked and op.link < len(links) else None,
        "elements": [op.start, op.start + op.count] if op.count else None,
        "text": op.show(links),
    }
