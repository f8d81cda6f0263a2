"""The `alpha` command: check, build, run and explain, rendered with rich."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from alpha_core.build import build_program
from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.registry import REGISTRY
from alpha_core.diagnostics.render import render, span_json
from alpha_core.launch import RoleOutcome, run_role
from alpha_core.link.toolchain import LinkError
from alpha_core.workspace import Analysis, Workspace

OK, REFUSED, USAGE, INTERNAL = 0, 1, 2, 101

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


class Usage(Exception):
    pass


def _analysis(path: str) -> Analysis:
    p = Path(path)
    if not p.is_file():
        raise Usage(f"no such file: {path}")
    return Workspace().analyze_file(str(p))


def _diag_json(d: Diagnostic, text: str) -> dict[str, Any]:
    return {
        "name": d.name,
        "message": d.message,
        "span": span_json(d.span, text),
        "related": [{"message": r.message, "span": span_json(r.span, text)} for r in d.related],
        "help": d.help,
    }


def _show(diags: list[Diagnostic], a: Analysis) -> None:
    for d in diags:
        text = render(d, a.text, a.path)
        head, _, rest = text.partition("\n")
        err.print(f"[bold red]{escape(head)}[/]")
        if rest:
            err.print(escape(rest))
        err.print()
    n = len(diags)
    err.print(f"[bold red]refused[/]: {n} refusal{'s' if n != 1 else ''} in {escape(a.path)}")


def cmd_check(args: argparse.Namespace) -> int:
    a = _analysis(args.file)
    diags = a.diagnostics
    if args.json:
        print(
            json.dumps(
                {
                    "file": a.path,
                    "ok": not diags,
                    "systems": sorted(a.checked.programs),
                    "refusals": [_diag_json(d, a.text) for d in diags],
                },
                indent=2,
            )
        )
        return REFUSED if diags else OK
    if diags:
        _show(diags, a)
        return REFUSED
    for name, p in sorted(a.checked.programs.items()):
        out.print(
            f"[green]ok[/] system [bold]{name}[/]: {p.n_params:,} parameters, "
            f"batch {p.batch} in {p.leaves} leaves, {p.learner.kind}, {p.steps} steps"
        )
    return OK


def _build(args: argparse.Namespace, out_dir: Path) -> tuple[Analysis, Any, list[Diagnostic]]:
    a = _analysis(args.file)
    program, diags = a.program(args.system)
    if program is None:
        return a, None, diags
    try:
        result = build_program(program, out_dir, args.target, args.data)
    except LinkError as e:
        return a, None, [Diagnostic("link-failed", str(e), None)]
    return a, result, []


def cmd_build(args: argparse.Namespace) -> int:
    a, result, diags = _build(args, Path(args.output))
    if args.json:
        body: dict[str, Any] = {
            "file": a.path,
            "ok": result is not None,
            "refusals": [_diag_json(d, a.text) for d in diags],
        }
        if result is not None:
            body.update(result.to_json())
        print(json.dumps(body, indent=2))
        return OK if result is not None else REFUSED
    if result is None:
        _show(diags, a)
        return REFUSED
    for exe in result.executables:
        out.print(
            f"[green]built[/] {escape(exe.path)}  {exe.target}  {exe.size:,} bytes  "
            f"sha256 {exe.sha256[:16]}…"
        )
    out.print(f"manifest {escape(result.manifest)}")
    return OK


def _run_one(exe: str, args: argparse.Namespace, steps: int, quiet_json: bool) -> RoleOutcome:
    command = [exe]
    if args.data:
        command += ["--data", args.data]
    if quiet_json:
        return run_role("main", command)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]}"),
        TimeElapsedColumn(),
        console=err,
    ) as progress:
        task = progress.add_task("training", total=steps, loss="–")

        def on_event(role: str, event: dict[str, object]) -> None:
            if event.get("event") == "step":
                loss = event.get("loss")
                progress.update(
                    task,
                    completed=int(str(event["step"])),
                    loss=f"{float(loss):.4f}" if isinstance(loss, int | float) else "nan",
                )

        return run_role("main", command, on_event)


def cmd_run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="alpha-run-") as tmp:
        out_dir = Path(args.output) if args.output else Path(tmp)
        a, result, diags = _build(args, out_dir)
        if result is None:
            if args.json:
                print(
                    json.dumps(
                        {
                            "file": a.path,
                            "ok": False,
                            "refusals": [_diag_json(d, a.text) for d in diags],
                        },
                        indent=2,
                    )
                )
            else:
                _show(diags, a)
            return REFUSED
        program, _ = a.program(args.system)
        assert program is not None
        if not args.json:
            err.print(
                f"[green]built[/] {result.system} ({program.n_params:,} parameters) — "
                f"training {program.steps} steps of batch {program.batch}"
            )
        outcome = _run_one(result.executables[0].path, args, program.steps, args.json)
        ok = outcome.exit_code == 0
        if args.json:
            print(
                json.dumps(
                    {
                        "file": a.path,
                        "ok": ok,
                        "system": result.system,
                        "identity": result.identity,
                        "roles": [outcome.to_json()],
                    },
                    indent=2,
                )
            )
            return OK if ok else REFUSED
        if not ok:
            err.print(f"[bold red]error\\[{outcome.refusal}][/]: {escape(outcome.message or '')}")
            return REFUSED
        done = outcome.done or {}
        out.print(f"final loss        {float(done['final_loss']):.6f}")  # type: ignore[arg-type]
        if "holdout_accuracy" in done:
            out.print(
                f"held-out accuracy {float(done['holdout_accuracy']):.4f}  "  # type: ignore
                f"({done.get('holdout_rows')} rows)"
            )
        if "holdout_mse" in done:
            out.print(f"held-out mse      {float(done['holdout_mse']):.6f}")  # type: ignore
        out.print(f"parameters sha256 {done.get('params_sha256')}", soft_wrap=True)
        return OK


def cmd_explain(args: argparse.Namespace) -> int:
    r = REGISTRY.get(args.name)
    if r is None:
        from alpha_core.check.context import suggest

        near = suggest(args.name, REGISTRY)
        raise Usage(
            f"no refusal named `{args.name}`" + (f"; did you mean `{near[0]}`?" if near else "")
        )
    out.print(f"[bold]{r.name}[/] ({r.moment}): {escape(r.summary)}\n")
    out.print(escape(r.explanation))
    if r.example:
        out.print("\nExample that is refused:\n")
        out.print(escape(r.example.rstrip()))
    return OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="alpha",
        description="Compile learning systems into exact, self-contained native executables.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check a file and report refusals")
    c.add_argument("file")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_check)
    for name, func, help in (
        ("build", cmd_build, "build the executables"),
        ("run", cmd_run, "build, run on this machine, report"),
    ):
        b = sub.add_parser(name, help=help)
        b.add_argument("file")
        b.add_argument("-o", "--output", default="build" if name == "build" else None)
        b.add_argument("--system", default=None)
        b.add_argument("--target", default="x86_64", choices=["x86_64", "aarch64"])
        b.add_argument("--data", default=None, help="data path compiled in (deployment input)")
        b.add_argument("--json", action="store_true")
        b.set_defaults(func=func)
    e = sub.add_parser("explain", help="explain a refusal by name")
    e.add_argument("name")
    e.set_defaults(func=cmd_explain)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except Usage as u:
        err.print(f"[bold red]error\\[usage][/]: {escape(str(u))}")
        return USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a compiler bug: say so by name, never with a traceback
        err.print(
            f"[bold red]error\\[internal-error][/]: {escape(type(e).__name__)}: {escape(str(e))}"
        )
        err.print("this is a bug in alpha; please report it with the input that caused it")
        return INTERNAL


if __name__ == "__main__":
    sys.exit(main())
