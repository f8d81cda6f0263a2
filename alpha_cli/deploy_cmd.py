"""`alpha deploy slurm|k8s` and the hosts file's refusals: parsing and rendering only; what is
deployed, and how, is alpha_core.deploy's to decide."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape

from alpha_cli.render import diagnostic_json, err
from alpha_core.diagnostics.diagnostic import visible
from alpha_core.diagnostics.render import render
from alpha_core.hosts_file import HostsRefused

REFUSED = 1


def show_hosts_refused(h: HostsRefused, as_json: bool) -> int:
    """The hosts file's refusals, rustc-style against the hosts file's own lines."""
    if as_json:
        refusals = [diagnostic_json(d, h.text) for d in h.diagnostics]
        print(json.dumps({"file": h.path, "ok": False, "refusals": refusals}, indent=2))
        return REFUSED
    for d in h.diagnostics:
        head, _, rest = render(d, h.text, h.path).partition("\n")
        err.print(f"[bold red]{escape(head)}[/]")
        if rest:
            err.print(escape(rest))
        err.print()
    n = len(h.diagnostics)
    where = escape(visible(h.path))
    err.print(f"[bold red]refused[/]: {n} refusal{'s' if n != 1 else ''} in {where}")
    return REFUSED


def add_deploy(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The `deploy` subcommand and its engines."""
    d = sub.add_parser("deploy", help="run a plan's roles on a cluster (slurm) or emit it (k8s)")
    engines = d.add_subparsers(dest="engine", required=True)
    del engines
