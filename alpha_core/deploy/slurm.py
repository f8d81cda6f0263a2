"""`alpha deploy slurm`: a plan's roles started on a Slurm allocation by Slurm's own tools.

Python runs only here, on the submitting machine; the nodes get nothing but the executables
and the secret. In order: the allocation (`salloc --no-shell`, one heterogeneous-job component
per kind of role, or `--jobid` to reuse one), each role mapped to a task slot and so to a node,
the roles built with those nodes' addresses (a hosts file) and the secret's node-local path,
`sbcast` of each executable and the secret to node-local storage, one job step per component
(`srun --multi-prog --distribution=arbitrary`), each role's events read back labelled by role,
and the allocation released (scancel) whatever happened. `--emit DIR` writes the job script,
the multi-prog and host files and the hosts file (with the executables and the secret)
instead, for review or for `sbatch`."""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from alpha_core.build.hosts_file import parse_hosts
from alpha_core.build.outputs import Deployment, role_file_name
from alpha_core.deploy.allocation import (
    Allocation,
    Component,
    Node,
    allocate,
    expand_hostlist,
    hostnames,
    nodes,
    read_allocation,
    release,
)
from alpha_core.deploy.placement import Kind, Placed, hosts_text, kinds, place, requests
from alpha_core.deploy.slurm_cmd import SlurmError, run_slurm
from alpha_core.deploy.slurm_files import (
    NodePaths,
    host_file,
    job_script,
    multi_prog,
    srun_argv,
)
from alpha_core.deploy.srun_streams import labelled, task_exits
from alpha_core.plan.model import Pairing, Plan
from alpha_core.run.launch import RoleOutcome, new_secret
from alpha_core.support.files import write_secret
from alpha_core.support.ports import DEFAULT_PORT_BASE

OnEvent = Callable[[str, str, dict[str, object]], None]  # role, node, event
OnPhase = Callable[[str], None]


@dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    time: str | None = None  # salloc --time
    jobid: str | None = None  # reuse this allocation (left to its owner afterwards)
    nodelist: str | None = None  # --emit without an allocation: the nodes, `:` per component
    checkpoint_dir: str = ""  # a folder every node shares
    resume: str = ""
    node_dir: str = "/tmp"  # node-local storage for the executables and the secret
    per_node: int = 0  # at most this many roles on one node (salloc --ntasks-per-node)
    port_base: int = DEFAULT_PORT_BASE
    timeout_ms: int = 10_000
    data_path: str | None = None
    work_dir: str | None = None  # where the build and the step files go (default: a temp dir)
    params_out: str = ""  # the parameter file (a shared folder); "": beside the writer's copy


@dataclass
class SlurmReport:
    jobid: str
    placed: list[Placed]
    outcomes: list[RoleOutcome] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds from the command's start
    role_started: dict[str, float] = field(default_factory=dict)  # role → its start event

    def node_of(self, role: str) -> str:
        return next(p.node.name for p in self.placed if p.role == role)


def _nodelist_allocation(nodelist: str, found: list[Kind]) -> Allocation:
    """For --emit without a job: the components' nodes as given (`a,b:c`), each kind's roles
    in blocks over its nodes; addresses from scontrol where Slurm answers, else the names."""
    parts = nodelist.split(":")
    if len(parts) != len(found):
        raise SlurmError(
            f"--nodelist names {len(parts)} component(s); this plan needs {len(found)} "
            "(one per kind of role, separated by `:`)"
        )
    components = []
    for k, (part, kind) in enumerate(zip(parts, found, strict=True)):
        try:
            names = hostnames(part)
            known = nodes(names)
        except SlurmError:  # no controller: expand Slurm's host-list syntax ourselves
            names = expand_hostlist(part)
            known = {}
        listed = [known.get(n, Node(n, n, "")) for n in names]
        if not listed:
            raise SlurmError(f"--nodelist component {k} names no node")
        per_node = -(-len(kind.roles) // len(listed))
        slots = tuple(listed[t // per_node] for t in range(len(kind.roles)))
        components.append(Component(k, slots))
    return Allocation("", tuple(components), owned=False)


def _secret_file(path: Path) -> str:
    write_secret(path, new_secret())  # mode 0600, never through a link (files.py)
    return str(path)


def _build(
    plan: Plan,
    pairing: Pairing | None,
    placed: list[Placed],
    work: Path,
    paths: NodePaths,
    options: SlurmOptions,
) -> None:
    text = hosts_text(placed)
    (work / "hosts").write_text(text)
    deployment = Deployment(
        options.port_base,
        "127.0.0.1",
        options.data_path,
        options.timeout_ms,
        options.timeout_ms,
        options.checkpoint_dir,
        resume=options.resume,
        secret_file=paths.secret,  # the node-local path, never the secret
        hosts=parse_hosts(text, str(work / "hosts")),
    )
    from alpha_core.build.executables import build_plan  # LLVM loads when it builds

    build_plan(plan, pairing, work / "build", deployment)


def _step_files(
    found: list[Kind], placed: list[Placed], work: Path, paths: NodePaths, params_out: str
) -> None:
    for k in range(len(found)):
        (work / f"roles-{k}.conf").write_text(multi_prog(placed, k, paths, params_out))
        (work / f"hostfile-{k}").write_text(host_file(placed, k))


def emit_slurm(
    name: str, plan: Plan, pairing: Pairing | None, options: SlurmOptions, into: Path
) -> list[Placed]:
    """The job script, the step files, the hosts file, the executables and the secret in
    `into`, for the nodes of --jobid or --nodelist; nothing is started."""
    found = kinds(plan, pairing)
    if options.jobid:
        allocation = read_allocation(options.jobid, requests(found), owned=False)
    elif options.nodelist:
        allocation = _nodelist_allocation(options.nodelist, found)
    else:
        raise SlurmError("--emit needs the nodes the roles will run on: --nodelist or --jobid")
    into.mkdir(parents=True, exist_ok=True)
    paths = NodePaths(options.node_dir, secrets.token_hex(4))
    placed = place(plan, found, allocation, options.port_base)
    _build(plan, pairing, placed, into, paths, options)
    _secret_file(into / "secret")
    _step_files(found, placed, into, paths, options.params_out)
    script = job_script(name, found, placed, into.resolve(), paths, options.partition, options.time)
    (into / "job.sh").write_text(script)
    (into / "job.sh").chmod(0o755)
    return placed


@contextmanager
def _allocation(found: list[Kind], name: str, options: SlurmOptions) -> Iterator[Allocation]:
    if options.jobid:
        allocation = read_allocation(options.jobid, requests(found), owned=False)
    else:
        allocation = allocate(
            requests(found, options.per_node), name, options.partition, options.time
        )
    try:
        yield allocation
    finally:
        release(allocation)  # always, for an allocation obtained here


def deploy_slurm(
    name: str,
    plan: Plan,
    pairing: Pairing | None,
    options: SlurmOptions,
    on_event: OnEvent | None = None,
    on_phase: OnPhase | None = None,
) -> SlurmReport:
    """Every role started by srun on its node; the report once every role has ended.

    Raises SlurmError (`slurm-failed`) when Slurm cannot give or use the allocation, and the
    build's own errors (LinkError, AdmissionRefused, HostsRefused) before anything starts."""
    begun = time.monotonic()
    found = kinds(plan, pairing)
    phase = on_phase or (lambda _text: None)
    with tempfile.TemporaryDirectory(prefix="alpha-deploy-") as tmp:
        work = Path(options.work_dir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        with _allocation(found, f"alpha-{name}", options) as allocation:
            report = SlurmReport(allocation.jobid, [])
            report.timings["allocated"] = time.monotonic() - begun
            phase(f"allocation {allocation.jobid}")
            paths = NodePaths(options.node_dir, secrets.token_hex(4))
            report.placed = place(plan, found, allocation, options.port_base)
            _build(plan, pairing, report.placed, work, paths, options)
            report.timings["built"] = time.monotonic() - begun
            phase(f"built {len(report.placed)} executables for their nodes")
            secret = _secret_file(work / "secret")
            _copy(allocation, report.placed, work, paths, secret)
            Path(secret).unlink()  # the nodes hold it now; the submitting machine keeps none
            report.timings["copied"] = time.monotonic() - begun
            phase("executables and secret copied to node-local storage (sbcast)")
            _step_files(found, report.placed, work, paths, options.params_out)
            try:
                _run_steps(allocation, found, report, work, begun, on_event)
            finally:
                _clean(allocation, report.placed, paths)
    return report


COPIES = 8  # sbcasts running at once


def _copy(
    allocation: Allocation, placed: list[Placed], work: Path, paths: NodePaths, secret: str
) -> None:
    """Each executable and the secret to the nodes' storage: COPIES sbcasts at once (one at a
    time, 256 roles took their copies about 2.3 s here; a site's controller answers each
    sbcast at its own pace), the first failure raised once the others have ended."""
    from concurrent.futures import ThreadPoolExecutor

    j = allocation.jobid
    argvs = []
    for p in placed:
        job = f"{j}+{p.component}" if allocation.heterogeneous else j
        exe = work / "build" / role_file_name(p.role)
        argvs.append(["sbcast", "--force", "--jobid", job, str(exe), paths.executable(p.role)])
    argvs.append(["sbcast", "--force", "--jobid", j, secret, paths.secret])
    with ThreadPoolExecutor(max_workers=COPIES, thread_name_prefix="alpha-sbcast") as pool:
        for done in [pool.submit(run_slurm, argv) for argv in argvs]:
            done.result()


def _clean(allocation: Allocation, placed: list[Placed], paths: NodePaths) -> None:
    """The copies removed from the nodes (best effort: the allocation is released anyway)."""
    for c in allocation.components:
        names = sorted({s.name for s in c.slots})
        files = [paths.executable(p.role) for p in placed if p.component == c.offset]
        argv = ["srun", "--jobid", allocation.jobid, "--nodelist", ",".join(names)]
        argv += [f"--het-group={c.offset}"] if allocation.heterogeneous else []
        argv += [f"--nodes={len(names)}", f"--ntasks={len(names)}", "--ntasks-per-node=1"]
        argv += ["rm", "-f", paths.secret, *files]
        try:
            run_slurm(argv, timeout=60)
        except SlurmError:
            pass


def _dies_with_parent() -> Callable[[], None] | None:
    """For srun: SIGTERM when `alpha deploy` dies, however it dies (SIGKILL included), which
    srun answers by cancelling its step, so that every role on the nodes ends with it. The
    function is resolved here, in the parent: the child only calls prctl(2) before exec. Run
    from the main thread, which lives as long as the process (the signal follows the thread
    that started the child)."""
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the SIGINT/SIGTERM path still cancels
        return None
    pr_set_pdeathsig = 1

    def arm() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)

    return arm


def _run_steps(
    allocation: Allocation,
    found: list[Kind],
    report: SlurmReport,
    work: Path,
    begun: float,
    on_event: OnEvent | None,
) -> None:
    """One srun per component, all started at once, read until every one has ended."""
    lock = threading.Lock()
    by_task = {(p.component, p.task): p for p in report.placed}
    outcomes = {p.role: RoleOutcome(p.role, 0) for p in report.placed}
    ended: set[str] = set()
    errors: list[str] = []
    report.timings["started"] = time.monotonic() - begun

    def read_out(k: int, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            got = labelled(line)
            if got is None or (k, got[0]) not in by_task:
                continue
            p, event = by_task[(k, got[0])], got[1]
            kind = event.get("event")
            with lock:
                o = outcomes[p.role]
                if kind == "start":
                    report.role_started[p.role] = time.monotonic() - begun
                elif kind == "step" and "first_round" not in report.timings:
                    report.timings["first_round"] = time.monotonic() - begun
                elif kind == "refused":
                    o.refusal, o.message = str(event.get("name")), str(event.get("message"))
                    ended.add(p.role)
                elif kind == "done":
                    o.done = event
                    ended.add(p.role)
                o.events.append(event)
                if on_event is not None:
                    on_event(p.role, p.node.name, event)

    def read_err(k: int, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            exits = task_exits(line)
            with lock:
                for task, status, said in exits:
                    if (k, task) in by_task:
                        o = outcomes[by_task[(k, task)].role]
                        o.exit_code = status
                        o.stderr += said + "\n"
                if not exits and line.startswith("srun:"):
                    errors.append(line.strip())

    procs: list[subprocess.Popen[str]] = []
    threads: list[threading.Thread] = []
    for k, kind in enumerate(found):
        argv = srun_argv(
            allocation.jobid, k, len(kind.roles), allocation.heterogeneous, work / f"roles-{k}.conf"
        )
        env = {**os.environ, "SLURM_HOSTFILE": str(work / f"hostfile-{k}")}
        try:
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                preexec_fn=_dies_with_parent(),
            )
        except OSError as e:
            for started in procs:
                started.kill()
            raise SlurmError(f"cannot run srun: {e.strerror}") from None
        procs.append(proc)
        threads += [
            threading.Thread(target=read_out, args=(k, proc.stdout), daemon=True),
            threading.Thread(target=read_err, args=(k, proc.stderr), daemon=True),
        ]
    for t in threads:
        t.start()
    for proc in procs:
        proc.wait()
    for t in threads:
        t.join()
    report.timings["ended"] = time.monotonic() - begun
    said = "; ".join(errors[-3:])
    for p in report.placed:
        o = outcomes[p.role]
        if o.refusal is not None and o.exit_code == 0:
            o.exit_code = 3  # a named refusal: the executable's own exit status for one
        if o.exit_code == 0 and o.done is None:  # no event and no status: never ran
            o.exit_code = 137
        if o.exit_code != 0 and o.refusal is None:
            o.refusal = "role-crashed"
            o.message = f"{p.role} on {p.node.name} ended with status {o.exit_code} and no named "
            o.message += "refusal" + (f" (srun: {said})" if said else "")
        report.outcomes.append(replace(o))
