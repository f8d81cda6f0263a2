"""Rendering refusals and results for a terminal (rich) or as JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.diagnostic import visible
from alpha_core.diagnostics.render import render, span_json
from alpha_core.workspace import Analysis

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
