"""`alpha runs`: the runs kept in ./alpha-runs (or ALPHA_RUNS_DIR, or --dir), newest first, one
line each; `alpha runs compare A B`: two runs side by side, their configurations' differences
and their loss curves in one chart. Reading and comparing is alpha_core.run.history's."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape
from rich.text import Text

from alpha_cli.render import err, error_line, out
from alpha_core.run.chart import chart
from alpha_core.run.history import HistoryError, compare, find_run, list_runs, runs_root

CHART_HEIGHT = 14


def add_runs(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    r = sub.add_parser("runs", help="list the runs kept, newest first; compare two")
    r.add_argument("--dir", default=None, help="the folder runs are kept in")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_runs)
    how = r.add_subparsers(dest="runs_command", required=False)
    c = how.add_parser("compare", help="two runs side by side: configuration, results, losses")
    c.add_argument("a", help="a run folder, its name, or its place in `alpha runs` (1: newest)")
    c.add_argument("b", help="the other run")
    # given before `compare` or after it: SUPPRESS keeps `alpha runs --dir D compare A B`'s D
    # (a subcommand's own default would overwrite it)
    c.add_argument("--dir", default=argparse.SUPPRESS, help="the folder runs are kept in")
    c.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    c.add_argument("--log", action="store_true", help="the chart's loss on a log scale")
    c.add_argument("--width", type=int, default=None, help="the chart's width in columns")
    c.set_defaults(func=cmd_compare)


def cmd_runs(args: argparse.Namespace) -> int:
    root = runs_root(args.dir)
    runs = list_runs(root)
    if args.json:
        print(json.dumps({"dir": str(root), "runs": [r.to_json() for r in runs]}, indent=2))
        return 0
    if not runs:
        err.print(f"no runs in {escape(str(root))} (alpha run keeps each run there)")
        return 0
    for r in runs:
        out.print(escape(r.line()), soft_wrap=True)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    root = runs_root(args.dir)
    try:
        a, b = find_run(args.a, root), find_run(args.b, root)
    except HistoryError as e:
        error_line(e.name, str(e))
        return 1
    c = compare(a, b)
    if args.json:
        print(json.dumps(c.to_json(), indent=2))
        return 0
    width = max(len(r[1]) for r in c.rows) + 2
    out.print(f"{'':14}  {'A ' + escape(a.name):{width}}  B {escape(b.name)}", soft_wrap=True)
    for what, x, y in c.rows:
        mark = "" if x == y else "  *"
        out.print(f"{what:14}  {escape(x):{width}}  {escape(y)}{mark}", soft_wrap=True)
    n = len(c.differences)
    if n:
        out.print(f"configuration: {n} difference{'s' if n != 1 else ''} (A → B)")
        for line in c.differences:
            out.print(f"  {escape(line)}", soft_wrap=True)
    else:
        out.print("configuration: the same")
    if c.same_parameters is not None:
        out.print("final parameters: " + ("the same bits" if c.same_parameters else "differ"))
    if c.series:
        cols = args.width or min(out.width, 100)
        text = Text(no_wrap=True, overflow="crop")
        for part, style in chart(c.series, cols, CHART_HEIGHT, args.log, "the two runs"):
            text.append(part, style)
        out.print(text)
    return 0
