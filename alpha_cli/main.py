"""The `alpha` command: check, build, run, project and explain. It decides nothing: it parses
arguments, asks alpha_core, and renders what comes back."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rich.markup import escape

from alpha_cli import explain_cmd
from alpha_cli.build_args import add_build_arguments
from alpha_cli.deploy_cmd import add_deploy, show_hosts_refused
from alpha_cli.environment import Refused, StdoutUnwritable, drop_stdout, guard_stdout
from alpha_cli.help_text import decorate
from alpha_cli.predict_cmd import add_predict_and_export
from alpha_cli.render import diagnostic_json, err, error_line, op_json, out, show_refusals
from alpha_cli.run_view import Interrupted, gpu_lines, run_with_progress, training_line
from alpha_cli.runs_cmd import add_runs
from alpha_core.build.hosts_file import HostsRefused, read_hosts
from alpha_core.build.outputs import BuildResult, BuiltExecutable, Deployment
from alpha_core.checkpoint import CheckpointError, read_checkpoint
from alpha_core.diagnostics import Diagnostic
from alpha_core.link.toolchain import LinkError
from alpha_core.plan.projection import project
from alpha_core.run.interruption import interrupted_line
from alpha_core.run.launch import LaunchError, RoleOutcome, free_port_base
from alpha_core.run.record import STEP_EVENTS, RunRecord, Subject, step_every
from alpha_core.run.role_summary import MANY_ROLES, built_line, roles_line
from alpha_core.run.runs import (
    Choice,
    ChoiceError,
    build_choice,
    capture_refusal,
    chosen_system,
    role_commands,
    role_indices,
    run_folder,
)
from alpha_core.support.ports import ephemeral_overlap
from alpha_core.support.sizes import human_bytes, show_loss
from alpha_core.support.source_file import SourceRefusal, read_source
from alpha_core.workspace.analysis import Analysis, Workspace

OK, REFUSED, USAGE, INTERNAL = 0, 1, 2, 101


class Usage(Exception):
    pass


def _analysis(path: str) -> Analysis:
    text = read_source(path)
    if isinstance(text, SourceRefusal):
        raise Refused(text.name, text.message)
    return Workspace(one_shot=True).analyze(path, text)  # one analysis, then the process exits


def _refused(a: Analysis, diags: list[Diagnostic], as_json: bool) -> int:
    if as_json:
        refusals = [diagnostic_json(d, a.text) for d in diags]
        print(json.dumps({"file": a.path, "ok": False, "refusals": refusals}, indent=2))
    else:
        show_refusals(diags, a)
    return REFUSED


def cmd_check(args: argparse.Namespace) -> int:
    a = _analysis(args.file)
    diags = a.diagnostics
    if args.json:
        body = {
            "file": a.path,
            "ok": not diags,
            "systems": sorted(a.checked.programs),
            "plans": sorted(a.checked.plans),
            "pairings": sorted(a.checked.pairings),
            "refusals": [diagnostic_json(d, a.text) for d in diags],
        }
        print(json.dumps(body, indent=2))
        return REFUSED if diags else OK
    if diags:
        return _refused(a, diags, False)
    if not a.parsed.decls:  # the placed tree is not needed to know that
        out.print(f"[green]ok[/] {escape(a.path)} declares nothing")
    for name, p in sorted(a.checked.programs.items()):
        out.print(
            f"[green]ok[/] system [bold]{name}[/]: {p.n_params:,} parameters, "
            f"batch {p.batch} in {p.leaves} leaves, {p.learner.kind}, {p.steps} steps"
            + (", fused arithmetic" if p.fused else "")
        )
    for name, plan in sorted(a.checked.plans.items()):
        out.print(
            f"[green]ok[/] plan [bold]{name}[/] for {plan.system.name}: "
            f"{plan.membership.total:,} roles, {plan.topology}, contract {plan.contract}"
        )
    for name, pairing in sorted(a.checked.pairings.items()):
        out.print(f"[green]ok[/] pairing [bold]{name}[/] for {pairing.plan.name}")
    return OK


def _deployment(args: argparse.Namespace, roles: int, out_dir: Path | None = None) -> Deployment:
    """The deployment inputs of the command line. `out_dir` is given by `alpha run`: its roles
    publish into one folder there, `checkpoints/`, unless --checkpoint-dir names another (each
    role's own `<executable>.checkpoints` would split a plan's capture across folders)."""
    if args.checkpoint_keep is not None and args.checkpoint_keep < 1:
        # 0 means "every capture" to the build; given, a count must be positive
        raise Refused(
            "bad-argument",
            f"--checkpoint-keep {args.checkpoint_keep} is out of range: 1 to 999,999,999 "
            "captures (leave it out to keep every one)",
        )
    if args.threads is not None and not 1 <= args.threads <= 256:
        raise Refused("bad-argument", f"--threads {args.threads} is out of range: 1 to 256 threads")
    if args.hosts and args.plan is None:
        raise Refused("bad-argument", "--hosts gives each role of a plan its address: add --plan")
    base = args.port_base if args.port_base is not None else free_port_base(roles)
    overlap = ephemeral_overlap(base, min(base + roles - 1, 65535))
    if args.port_base is not None and overlap:
        err.print(f"[yellow]warning[/]: {escape(overlap)}")
    if args.checkpoint_dir:
        ckpt = str(Path(args.checkpoint_dir).resolve())
    else:
        ckpt = str(out_dir.resolve() / "checkpoints") if out_dir is not None else ""
    return Deployment(
        base,
        args.host,
        args.data,
        args.timeout_ms,
        args.timeout_ms,
        ckpt,
        args.checkpoint_every,
        args.cpu,
        str(Path(args.resume).resolve()) if args.resume else "",
        args.checkpoint_keep or 0,
        # A path to read the launch secret from, compiled in; never the secret itself.
        str(Path(args.secret_file).resolve()) if getattr(args, "secret_file", None) else "",
        threads=args.threads or 0,
        hosts=read_hosts(args.hosts) if args.hosts else None,  # HostsRefused, shown by main
        gpu_shadow=bool(getattr(args, "gpu_shadow", False)),
        gpu_uuid=getattr(args, "gpu_uuid", None) or "",
        gpu_index=getattr(args, "gpu_index", None) or 0,
    )


def _choice(args: argparse.Namespace) -> Choice:
    # with a plan, --checkpoint-every replaces the plan's own interval (its identity with it)
    # (a value outside 0..2^32-1 is left to the deployment check: bad-argument, with its range)
    every = args.checkpoint_every if args.plan and 0 < args.checkpoint_every < 2**32 else None
    return Choice(
        args.system,
        args.plan,
        args.pairing,
        getattr(args, "role", None),
        steps=args.steps,
        checkpoint_every=every,
    )


def _build(
    args: argparse.Namespace, out_dir: Path | None, runs: bool = False
) -> tuple[Analysis, BuildResult | None, list[Diagnostic]]:
    """Builds the choice into out_dir, or (None) into a new run folder (runs.run_folder)."""
    a = _analysis(args.file)
    choice = _choice(args)
    into = out_dir if out_dir is not None else run_folder(a, choice)
    with err.status("building…") as status:

        def built(exe: BuiltExecutable, done: int, total: int) -> None:
            status.update(f"building… {done}/{total} roles linked ({escape(exe.role)})")

        try:
            result, diags = build_choice(
                a,
                choice,
                into,
                args.target,
                args.data,
                lambda n: _deployment(args, n, into if runs else None),
                built,
            )
        except ChoiceError as e:
            raise Usage(str(e)) from None
    return a, result, diags


def cmd_build(args: argparse.Namespace) -> int:
    a, result, diags = _build(args, Path(args.output))
    if result is None:
        return _refused(a, diags, args.json)
    if args.json:
        print(json.dumps({"file": a.path, "ok": True, **result.to_json()}, indent=2))
        return OK
    if len(result.executables) >= MANY_ROLES:  # a line for all of them, not one each
        out.print(escape(built_line(result)), soft_wrap=True)
    for exe in result.executables if len(result.executables) < MANY_ROLES else ():
        out.print(
            f"[green]built[/] {escape(exe.role):>12}  {escape(exe.path)}  {exe.target}  "
            f"{human_bytes(exe.size)}  sha256 {exe.sha256[:16]}…  "
            f"memory {human_bytes(exe.demand)}, headroom {human_bytes(exe.headroom)}"
        )
    out.print(f"manifest {escape(result.manifest)}")
    return OK


def _report(outcomes: list[RoleOutcome], as_json: bool, a: Analysis, result: BuildResult) -> int:
    ok = all(o.exit_code == 0 for o in outcomes)
    if as_json:
        body = {
            "file": a.path,
            "ok": ok,
            "system": result.system,
            "identity": result.identity,
            "record": str(Path(result.manifest).parent),
            "roles": [o.to_json() for o in outcomes],
        }
        print(json.dumps(body, indent=2))
        return OK if ok else REFUSED
    failed = [o for o in outcomes if o.exit_code != 0]
    if len(outcomes) >= MANY_ROLES and len(failed) > 1:  # by refusal: a count and the first
        for name in dict.fromkeys(o.refusal or "role-crashed" for o in failed):
            named = [o for o in failed if (o.refusal or "role-crashed") == name]
            more = f" (and {len(named) - 1:,} more roles)" if len(named) > 1 else ""
            error_line(name, f"{named[0].role}: {named[0].message or ''}{more}")
    else:
        for o in failed:
            error_line(o.refusal or "role-crashed", f"{o.role}: {o.message or ''}")
    if not ok:
        return REFUSED
    done = next((o.done for o in outcomes if o.done and "params_sha256" in o.done), None)
    if done is None:
        error_line("role-crashed", "no role reported final parameters")
        return REFUSED
    out.print(f"final loss        {show_loss(float(str(done['final_loss'])))}")
    if "holdout_accuracy" in done:
        out.print(
            f"held-out accuracy {float(str(done['holdout_accuracy'])):.4f}  "
            f"({done.get('holdout_rows')} rows)"
        )
    if "holdout_mse" in done:
        out.print(f"held-out mse      {show_loss(float(str(done['holdout_mse'])))}")
    out.print(f"parameters sha256 {done.get('params_sha256')}", soft_wrap=True)
    if done.get("params_file"):  # kept: in -o or the run's own folder, never a removed one
        out.print(f"parameters file   {escape(str(done['params_file']))}", soft_wrap=True)
    record = Path(result.manifest).parent
    out.print(f"run record        {escape(str(record))} (summary.json, metrics.csv, events/)")
    if len(outcomes) > 1:
        out.print(
            f"roles             {len(outcomes):,} finished: "
            + roles_line([o.role for o in outcomes]),
            soft_wrap=True,
        )
    for line in gpu_lines(outcomes):
        out.print(line, soft_wrap=True)
    return OK


def cmd_run(args: argparse.Namespace) -> int:
    if args.eval_every and (args.eval_every < 1 or args.plan is not None):  # before building
        raise Refused(
            "usage",
            f"--eval-every {args.eval_every}: give a count of rounds from 1, for a run without "
            "a plan (a plan's roles hold their parameters whole only at the end)",
        )
    # the executables and the parameters stay: in -o, or in a new folder under ./alpha-runs
    a, result, diags = _build(args, Path(args.output) if args.output else None, runs=True)
    if result is None:
        return _refused(a, diags, args.json)
    steps = args.steps or a.checked.programs[result.system].steps
    if not args.json:
        err.print(
            f"[green]built[/] {result.system} in {escape(str(Path(result.manifest).parent))}: "
            f"{len(result.executables)} executable(s), {result.params:,} parameters — "
            f"{training_line(steps, args.resume)}"
        )
    extra = ["--data", args.data] if args.data and args.plan is None else []
    if steps > STEP_EVENTS:  # a long run reports at most STEP_EVENTS rounds (record.py)
        extra += ["--step-every", str(step_every(steps))]
    if args.eval_every:  # the held-out metric every N rounds too
        extra += ["--eval-every", str(args.eval_every)]
    commands = role_commands(result, extra)
    targets = {e.role: e.target for e in result.executables}
    built_in = Path(result.manifest).parent
    captures = Path(args.checkpoint_dir) if args.checkpoint_dir else built_in / "checkpoints"
    record = _record(args, a, result, steps, captures)
    try:
        outcomes = run_with_progress(
            commands, steps, quiet=args.json, targets=targets, record=record.event
        )
    except LaunchError as e:  # a role that cannot be started: refused by main, recorded here
        record.event_refused(e.name, str(e))
        record.end("refused")
        record.close()
        raise
    except Interrupted as i:
        assert i.state is not None
        record.end("interrupted")
        record.close()
        line = interrupted_line(i.sig, i.state, steps, ["alpha", *args.argv], captures)
        if args.json:
            print(json.dumps({"file": a.path, "ok": False, "interrupted": line}, indent=2))
        err.print(escape(line), soft_wrap=True)
        return 128 + i.sig
    record.end("done" if all(o.exit_code == 0 for o in outcomes) else "refused")
    record.close()
    return _report(outcomes, args.json, a, result)


def _record(
    args: argparse.Namespace, a: Analysis, result: BuildResult, steps: int, captures: Path
) -> RunRecord:
    """The run's record in its folder: events, metrics and summary (alpha_core.run.record)."""
    program = chosen_system(a, _choice(args))
    assert program is not None  # it was just built
    subject = Subject(
        result.system,
        args.plan,
        args.pairing,
        result.identity,
        program.canonical(),
        steps,
        a.path,
        ["alpha", *args.argv],
        [e.role for e in result.executables],
        str(Path(args.resume).resolve()) if args.resume else None,
        str(captures.resolve()),
        result.manifest,
    )
    record = RunRecord(Path(result.manifest).parent, subject)
    record.begin()
    return record


def cmd_project(args: argparse.Namespace) -> int:
    a = _analysis(args.file)
    plan, _, diags = a.plan(args.plan)
    if plan is None:
        return _refused(a, diags, args.json)
    try:
        indices = role_indices(plan, args.role, "project")
    except ChoiceError as e:
        raise Usage(str(e)) from None
    schedules = [project(plan, i) for i in indices]
    if args.json:
        body = [
            {
                "role": s.name,
                "index": s.index,
                "ops": [op_json(op, s.links) for op in s.ops],
                "links": [{"peer": k.peer_name, "accept": k.accept} for k in s.links],
            }
            for s in schedules
        ]
        print(json.dumps({"plan": plan.name, "roles": body}, indent=2))
        return OK
    for s in schedules:
        out.print(escape(s.show()))
    return OK


def cmd_inspect(args: argparse.Namespace) -> int:
    try:
        ckpt = read_checkpoint(args.checkpoint)
    except CheckpointError as e:
        if args.json:
            print(
                json.dumps(
                    {
                        "checkpoint": args.checkpoint,
                        "ok": False,
                        "refusals": [{"name": e.name, "message": e.message}],
                    },
                    indent=2,
                )
            )
        else:
            error_line(e.name, e.message)
        return REFUSED
    if args.json:
        print(json.dumps({"checkpoint": args.checkpoint, "ok": True, **ckpt.to_json()}, indent=2))
    else:
        out.print(escape(ckpt.summary()))
    return OK


def cmd_eval(args: argparse.Namespace) -> int:
    """Held-out evaluation of a checkpoint by the system's own compiled forward pass."""
    given = Path(args.checkpoint)
    if given.is_file():
        what = "a parameter file" if given.suffix == ".params" else "a file"
        raise Refused(
            "checkpoint-incomplete",
            f"--checkpoint {args.checkpoint} is {what}; eval reads a checkpoint folder or one "
            "capture in it (round-N), which a run publishes with --checkpoint-every N or its "
            "plan's `checkpoint every N rounds` (a plain run writes only its parameters)",
        )
    a = _analysis(args.file)
    program, diags = a.program(args.system)
    if program is None:
        return _refused(a, diags, args.json)
    # a capture of another version of the system: what differs, before anything is compiled
    other = capture_refusal(a, Choice(system=args.system), given, "evaluate")
    if other is not None:
        return _refused(a, [other], args.json)
    from alpha_core.build.executables import build_program  # LLVM loads when eval builds

    with tempfile.TemporaryDirectory(prefix="alpha-eval-") as tmp:
        try:
            result = build_program(program, Path(tmp), "x86_64", args.data)
        except LinkError as e:
            return _refused(a, [Diagnostic(e.name, e.message, None)], args.json)
        command = [
            result.executables[0].path,
            "--resume",
            args.checkpoint,
            "--evaluate-only",
            "--params-out",
            str(Path(tmp) / "params"),
        ]
        [outcome] = run_with_progress([("main", command)], 0, quiet=True)
    if args.json:
        print(
            json.dumps(
                {
                    "file": a.path,
                    "ok": outcome.exit_code == 0,
                    "checkpoint": args.checkpoint,
                    **outcome.to_json(),
                },
                indent=2,
            )
        )
        return OK if outcome.exit_code == 0 else REFUSED
    if outcome.exit_code != 0:
        error_line(outcome.refusal or "role-crashed", outcome.message or "")
        return REFUSED
    done = outcome.done or {}
    if "holdout_accuracy" in done:
        out.print(
            f"held-out accuracy {float(str(done['holdout_accuracy'])):.4f}  "
            f"({done.get('holdout_rows')} rows)"
        )
    if "holdout_mse" in done:
        out.print(f"held-out mse      {show_loss(float(str(done['holdout_mse'])))}")
    out.print(f"parameters sha256 {done.get('params_sha256')}", soft_wrap=True)
    return OK


def cmd_explain(args: argparse.Namespace) -> int:
    try:
        return explain_cmd.cmd_explain(args)  # explain_cmd.py
    except explain_cmd.UnknownRefusal as e:
        raise Usage(str(e)) from None


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
        ("run", cmd_run, "build, run every role on this machine, report"),
    ):
        b = sub.add_parser(name, help=help)
        add_build_arguments(b, name)
        b.set_defaults(func=func)
    j = sub.add_parser("project", help="show each role's projected schedule")
    j.add_argument("file")
    j.add_argument("--plan", required=True)
    j.add_argument("--role", default=None)
    j.add_argument("--json", action="store_true")
    j.set_defaults(func=cmd_project)
    i = sub.add_parser("inspect", help="verify and describe a checkpoint")
    i.add_argument("checkpoint")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_inspect)
    v = sub.add_parser("eval", help="held-out evaluation of a checkpoint")
    v.add_argument("file")
    v.add_argument("--checkpoint", required=True)
    v.add_argument("--system", default=None)
    v.add_argument("--data", default=None)
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_eval)
    e = sub.add_parser("explain", help="explain a refusal by name, or list them all")
    e.add_argument("name", nargs="?", default=None)
    e.set_defaults(func=cmd_explain)
    add_predict_and_export(sub)  # predict_cmd.py
    add_deploy(sub)
    add_runs(sub)
    decorate(p)  # descriptions, examples, --version (help_text.py)
    return p


def _command_refused(args: argparse.Namespace, name: str, message: str) -> int:
    """A refusal of the command itself (no source span), as JSON with --json."""
    if getattr(args, "json", False):
        refusal: dict[str, object] = {"name": name, "message": message, "span": None}
        subject = getattr(args, "file", None) or getattr(args, "checkpoint", None)
        print(json.dumps({"file": subject, "ok": False, "refusals": [refusal]}, indent=2))
        sys.stdout.flush()
    else:
        error_line(name, message)
    return REFUSED


def _innermost(p: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command given (`alpha deploy slurm`'s, not `alpha`'s)."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _innermost(action.choices[chosen], args)
    return p


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line, or exit 2 with the command's own usage and, for an unknown option,
    the nearest ones it has (`--plans`: did you mean `--plan`?)."""
    import difflib

    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra:
        command = _innermost(p, args)
        options = sorted({o for a in command._actions for o in a.option_strings})
        first = next((x for x in extra if x.startswith("-")), extra[0])
        near = difflib.get_close_matches(first.split("=", 1)[0], options, n=2, cutoff=0.6)
        hint = "; did you mean " + " or ".join(near) + "?" if near else ""
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for the line that resumes a run
    try:
        guard_stdout()
        try:
            code: int = args.func(args)
        except Refused as r:
            code = _command_refused(args, r.name, r.message)
        except LaunchError as e:
            code = _command_refused(args, e.name, str(e))
        except HostsRefused as h:
            code = show_hosts_refused(h, getattr(args, "json", False))
        sys.stdout.flush()  # a full or closed stdout is found here, not at interpreter exit
        return code
    except Refused as r:  # standard output closed
        error_line(r.name, r.message)
        return REFUSED
    except StdoutUnwritable as e:
        drop_stdout()
        error_line("stdout-unwritable", str(e))
        return REFUSED
    except Usage as u:
        error_line("usage", str(u))
        return USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a compiler bug: say so by name, never with a traceback
        error_line("internal-error", f"{type(e).__name__}: {e}")
        err.print("this is a bug in alpha; please report it with the input that caused it")
        return INTERNAL


if __name__ == "__main__":
    sys.exit(main())
