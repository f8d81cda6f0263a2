"""`alpha deploy slurm|k8s` and the hosts file's refusals: parsing and rendering only; what is
deployed, and how, is alpha_core.deploy's to decide."""

from __future__ import annotations

import argparse
import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from rich.markup import escape

from alpha_cli.environment import Refused
from alpha_cli.render import diagnostic_json, err, error_line, out, show_refusals
from alpha_core.build.hosts_file import HostsRefused
from alpha_core.deploy.k8s import K8sOptions, emit_k8s
from alpha_core.deploy.slurm import SlurmOptions, SlurmReport, deploy_slurm, emit_slurm
from alpha_core.deploy.slurm_cmd import SlurmError
from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.diagnostic import visible
from alpha_core.diagnostics.render import render
from alpha_core.link.toolchain import LinkError
from alpha_core.plan.admission import AdmissionRefused
from alpha_core.plan.model import Pairing, Plan
from alpha_core.run.launch import RoleOutcome
from alpha_core.run.role_summary import MANY_ROLES
from alpha_core.support.files import SecretNotWritten
from alpha_core.support.ports import DEFAULT_PORT_BASE
from alpha_core.support.source_file import SourceRefusal, read_source
from alpha_core.workspace.analysis import Analysis, Workspace

OK, REFUSED = 0, 1
T = TypeVar("T")


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


def _analysis(path: str) -> Analysis:
    text = read_source(path)
    if isinstance(text, SourceRefusal):
        raise Refused(text.name, text.message)
    return Workspace(one_shot=True).analyze(path, text)


def _plan(
    args: argparse.Namespace,
) -> tuple[Analysis, Plan | None, Pairing | None, list[Diagnostic]]:
    a = _analysis(args.file)
    plan, pairing, diags = a.plan(args.plan, args.pairing)
    return a, plan, pairing, diags


def _refused(a: Analysis, diags: list[Diagnostic], as_json: bool) -> int:
    if as_json:
        refusals = [diagnostic_json(d, a.text) for d in diags]
        print(json.dumps({"file": a.path, "ok": False, "refusals": refusals}, indent=2))
    else:
        show_refusals(diags, a)
    return REFUSED


def _guarded(run: Callable[[], T]) -> tuple[T | None, list[Diagnostic]]:
    """What `run` gives, or the build's own refusals as diagnostics; Slurm's become
    `slurm-failed` (main shows it)."""
    try:
        return run(), []
    except AdmissionRefused as e:
        return None, [e.diagnostic]
    except LinkError as e:
        return None, [Diagnostic(e.name, e.message, None)]
    except (SlurmError, SecretNotWritten) as e:
        raise Refused(e.name, str(e)) from None


def _options(args: argparse.Namespace) -> SlurmOptions:
    def absolute(path: str | None) -> str:
        return str(Path(path).resolve()) if path else ""

    if not 1 <= args.port_base <= 65535:
        raise Refused("bad-argument", f"--port-base {args.port_base} is out of range: 1 to 65535")
    return SlurmOptions(
        partition=args.partition,
        time=args.time,
        jobid=args.jobid,
        nodelist=args.nodelist,
        checkpoint_dir=absolute(args.checkpoint_dir),
        resume=absolute(args.resume),
        node_dir=args.node_dir,
        per_node=args.ntasks_per_node or 0,
        port_base=args.port_base,
        timeout_ms=args.timeout_ms,
        data_path=args.data,
        params_out=absolute(args.params_out),
    )


@contextmanager
def terminating_signals_interrupt() -> Iterator[None]:
    def interrupt(_sig: int, _frame: object) -> None:
        raise KeyboardInterrupt

    before = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def cmd_slurm(args: argparse.Namespace) -> int:
    a, plan, pairing, diags = _plan(args)
    if plan is None:
        return _refused(a, diags, args.json)
    options = _options(args)
    if args.emit:
        into = Path(args.emit)
        placed, refused = _guarded(lambda: emit_slurm(plan.name, plan, pairing, options, into))
        if placed is None:
            return _refused(a, refused, args.json)
        if args.json:
            files = sorted(str(p) for p in into.iterdir() if p.is_file())
            print(json.dumps({"file": a.path, "ok": True, "emitted": files}, indent=2))
        else:
            out.print(
                f"wrote {escape(str(into))}: job.sh, roles-*.conf, hostfile-*, hosts, "
                "build/, secret — submit with `sbatch job.sh`"
            )
        return OK

    def phase(text: str) -> None:
        if not args.json:
            err.print(f"[green]slurm[/] {escape(text)}")

    many = plan.membership.total >= MANY_ROLES  # a line per hundred roles, not per role
    counts = {"start": 0, "done": 0}

    def event(role: str, node: str, e: dict[str, object]) -> None:
        if args.json:
            return
        kind = str(e.get("event"))
        if many:
            if kind in counts:
                counts[kind] += 1
                n = counts[kind]
                if n % 100 == 0 or n == plan.membership.total:
                    what = "started" if kind == "start" else "done"
                    err.print(f"  {n:,} of {plan.membership.total:,} roles {what}")
            return
        if e.get("event") == "start":
            err.print(f"  {escape(role):>12} started on {escape(node)}")
        elif e.get("event") == "done":
            err.print(f"  {escape(role):>12} done on {escape(node)}")

    # SIGTERM or SIGHUP (a job runner, a closed terminal) unwind like Ctrl-C, so the allocation
    # is released (scancel), which ends every role on the nodes, before alpha exits
    with terminating_signals_interrupt():
        report, refused = _guarded(
            lambda: deploy_slurm(plan.name, plan, pairing, options, event, phase)
        )
    if report is None:
        return _refused(a, refused, args.json)
    return _report(a, report, args.json)


def _resumed(o: RoleOutcome) -> object:
    """The round a role resumed at (its `resumed` event), or None for a fresh start."""
    return next((e.get("round") for e in o.events if e.get("event") == "resumed"), None)


def _report(a: Analysis, report: SlurmReport, as_json: bool) -> int:
    ok = all(o.exit_code == 0 for o in report.outcomes)
    if as_json:
        roles = [
            {**o.to_json(), "node": report.node_of(o.role), "resumed_at": _resumed(o)}
            for o in report.outcomes
        ]
        body = {"file": a.path, "ok": ok, "jobid": report.jobid, "roles": roles,
                "timings": report.timings, "role_started": report.role_started}  # fmt: skip
        print(json.dumps(body, indent=2))
        return OK if ok else REFUSED
    for o in report.outcomes:
        if o.exit_code != 0:
            node = report.node_of(o.role)
            error_line(o.refusal or "role-crashed", f"{o.role} on {node}: {o.message or ''}")
    if not ok:
        return REFUSED
    done = next((o.done for o in report.outcomes if o.done and o.done.get("params_file")), None)
    if done is None:
        error_line("role-crashed", "no role reported final parameters")
        return REFUSED
    out.print(f"final loss        {float(str(done['final_loss'])):.6f}")
    out.print(f"parameters sha256 {done.get('params_sha256')}", soft_wrap=True)
    writer = next(o.role for o in report.outcomes if o.done is done)
    node = report.node_of(writer)
    out.print(f"parameters file   {escape(str(done['params_file']))} (on {node})", soft_wrap=True)
    if len(report.outcomes) >= MANY_ROLES:  # how many on each node, not every role
        nodes: dict[str, int] = {}
        for o in report.outcomes:
            nodes[report.node_of(o.role)] = nodes.get(report.node_of(o.role), 0) + 1
        where = ", ".join(f"{n:,} on {node}" for node, n in sorted(nodes.items()))
    else:
        where = ", ".join(f"{o.role}@{report.node_of(o.role)}" for o in report.outcomes)
    out.print(
        f"roles             {len(report.outcomes):,} finished: {escape(where)}", soft_wrap=True
    )
    out.print(f"job               {report.jobid} (released)")
    return OK


def cmd_k8s(args: argparse.Namespace) -> int:
    a, plan, pairing, diags = _plan(args)
    if plan is None:
        return _refused(a, diags, args.json)
    if not 1 <= args.port_base <= 65535:
        raise Refused("bad-argument", f"--port-base {args.port_base} is out of range: 1 to 65535")
    options = K8sOptions(
        args.image, args.name, args.namespace, args.port_base, args.timeout_ms, args.data
    )
    into = Path(args.output)
    roles, refused = _guarded(lambda: emit_k8s(plan.name, plan, pairing, options, into))
    if roles is None:
        return _refused(a, refused, args.json)
    if args.json:
        pods = [{"role": p.role, "host": p.host, "port": p.port} for p in roles]
        body = {"file": a.path, "ok": True, "output": str(into), "pods": pods}
        print(json.dumps(body, indent=2))
        return OK
    shown = roles if len(roles) < MANY_ROLES else [roles[0], roles[-1]]
    for p in shown:
        out.print(f"  {escape(p.role):>12}  {escape(p.host)}:{p.port}")
        if len(shown) < len(roles) and p is roles[0]:
            out.print(f"  … {len(roles) - 2:,} more pods (the hosts file lists every one)")
    out.print(
        f"wrote {escape(str(into))}: jobset.yaml, service.yaml, secret.yaml (mode 0600), "
        "Dockerfile, hosts, build/ — build and push the image, then `kubectl apply -f "
        "secret.yaml -f service.yaml -f jobset.yaml` (nothing was applied here)"
    )
    return OK


def add_deploy(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The `deploy` subcommand and its engines."""
    d = sub.add_parser("deploy", help="run a plan's roles on a cluster (slurm) or emit it (k8s)")
    engines = d.add_subparsers(dest="engine", required=True)
    s = engines.add_parser("slurm", help="start every role with srun on a Slurm allocation")
    s.add_argument("file")
    s.add_argument("--plan", required=True, help="the plan whose roles are started")
    s.add_argument("--pairing", default=None, help="the plan's pairing (its only one if omitted)")
    s.add_argument("--partition", default=None, help="the Slurm partition to allocate in")
    s.add_argument("--time", default=None, help="the allocation's time limit (salloc --time)")
    s.add_argument("--jobid", default=None, help="use this allocation (it is not released)")
    s.add_argument("--emit", default=None, metavar="DIR", help="write the job instead of running")
    s.add_argument(
        "--nodelist", default=None, help="with --emit: the nodes, `:` between components"
    )
    s.add_argument("--checkpoint-dir", default=None, help="a folder every node shares")
    s.add_argument("--resume", default=None, help="a capture (on a shared folder) to resume")
    s.add_argument("--node-dir", default="/tmp", help="node-local storage for the executables")
    s.add_argument(
        "--ntasks-per-node", type=int, default=None, metavar="N", help="at most N roles a node"
    )
    s.add_argument(
        "--port-base",
        type=int,
        default=DEFAULT_PORT_BASE,
        help=f"role i listens on PORT_BASE + i on its node (default {DEFAULT_PORT_BASE})",
    )
    s.add_argument(
        "--timeout-ms", type=int, default=10_000, help="deadline for connections and frames"
    )
    s.add_argument("--data", default=None, help="data path compiled in (readable on the nodes)")
    s.add_argument(
        "--params-out", default=None, help="the parameter file (default: on the writer's node)"
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_slurm)
    k = engines.add_parser("k8s", help="write a JobSet, its Service and Secret, and an image")
    k.add_argument("file")
    k.add_argument("--plan", required=True, help="the plan whose roles become pods")
    k.add_argument("--pairing", default=None, help="the plan's pairing (its only one if omitted)")
    k.add_argument("--image", required=True, help="the image the Dockerfile is built as")
    k.add_argument("-o", "--output", required=True, metavar="DIR")
    k.add_argument("--name", default=None, help="the JobSet's name (default: alpha-PLAN)")
    k.add_argument("--namespace", default=None, help="the Kubernetes namespace (default: none)")
    k.add_argument(
        "--port-base",
        type=int,
        default=DEFAULT_PORT_BASE,
        help=f"role i listens on PORT_BASE + i in its pod (default {DEFAULT_PORT_BASE})",
    )
    k.add_argument("--timeout-ms", type=int, default=60_000, help="connect and frame deadline")
    k.add_argument("--data", default=None, help="data path compiled in (copied into the image)")
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=cmd_k8s)
