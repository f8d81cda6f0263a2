"""The files a Slurm deployment is made of: per component a `--multi-prog` file (task id →
the role's executable on the node) and a host file for `-m arbitrary` (task id → node), and,
for `--emit`, a job script that `sbatch` runs: sbcast, then the job steps."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from alpha_core.build.outputs import role_file_name
from alpha_core.deploy.placement import Kind, Placed

_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


@dataclass(frozen=True)
class NodePaths:
    """Where a deployment's files lie on every node: one folder, one tag per deployment, so
    that two deployments (or two nodes' copies on one shared folder) never meet."""

    folder: str  # node-local storage, e.g. /tmp
    tag: str

    def executable(self, role: str) -> str:
        return f"{self.folder.rstrip('/')}/alpha-{self.tag}-{role_file_name(role)}"

    @property
    def secret(self) -> str:
        return f"{self.folder.rstrip('/')}/alpha-{self.tag}-secret"


def role_command(p: Placed, paths: NodePaths, params_out: str = "") -> list[str]:
    """How the node starts the role: natively, or under qemu-user when Slurm reports the
    node's instruction set as another (a static executable needs nothing else). A node whose
    instruction set is unknown (no controller answered, as for `--emit --nodelist`) is taken to
    be what the pairing says: emulating on every ordinary node would be the worse guess. The
    parameter file goes beside the executable on the writing role's node, or to `params_out`
    (a shared folder)."""
    exe = [paths.executable(p.role)]
    extra = ["--params-out", params_out] if params_out else []
    arch = p.node.arch.lower()
    if not arch or _ARCH.get(arch, arch) == p.target:
        return exe + extra
    return [f"qemu-{p.target}", *exe, *extra]


def multi_prog(placed: list[Placed], component: int, paths: NodePaths, params_out: str = "") -> str:
    """srun --multi-prog: `TASK PROGRAM ARGS` per task of the component."""
    lines = [f"# alpha deploy slurm: component {component}, one line per role"]
    for p in placed:
        if p.component == component:
            words = " ".join(shlex.quote(w) for w in role_command(p, paths, params_out))
            lines += [f"# {p.role}", f"{p.task} {words}"]  # srun takes no trailing comment
    return "\n".join(lines) + "\n"


def host_file(placed: list[Placed], component: int) -> str:
    """SLURM_HOSTFILE for `srun -m arbitrary`: the node of each task, in task order."""
    mine = sorted((p for p in placed if p.component == component), key=lambda p: p.task)
    return "".join(f"{p.node.name}\n" for p in mine)


def srun_argv(
    jobid: str | None, component: int, tasks: int, heterogeneous: bool, conf: Path
) -> list[str]:
    argv = ["srun", "--label", "--kill-on-bad-exit=0", "--ntasks", str(tasks)]
    argv += ["--jobid", jobid] if jobid else []
    argv += [f"--het-group={component}"] if heterogeneous else []
    return argv + ["--distribution=arbitrary", "--multi-prog", str(conf)]


def job_script(
    name: str,
    found: list[Kind],
    placed: list[Placed],
    folder: Path,
    paths: NodePaths,
    partition: str | None,
    time: str | None,
) -> str:
    """A batch script for sites where users `sbatch` themselves: one component per kind of
    role on the nodes the roles were built for, the files copied with sbcast, one job step
    per component (Slurm 22.05 refuses --multi-prog across heterogeneous groups), the script
    failing when any step does."""
    q = shlex.quote
    het = len(found) > 1
    lines = [
        "#!/bin/sh",
        f"# written by alpha deploy slurm --emit: {len(placed)} roles of plan {name}",
    ]
    for k, kind in enumerate(found):
        if k:
            lines.append("#SBATCH hetjob")
        nodes = sorted({p.node.name for p in placed if p.component == k})
        per_node = max(
            sum(1 for p in placed if p.component == k and p.node.name == n) for n in nodes
        )
        lines.append(
            f"#SBATCH --job-name=alpha-{name} --nodelist={','.join(nodes)} "
            f"--nodes={len(nodes)} --ntasks-per-node={per_node} --cpus-per-task={kind.cpus}"
            + (f" --partition={partition}" if partition else "")
            + (f" --time={time}" if time else "")
        )
    # each step gives its own task count; the allocation's per-node count would only be
    # inherited by them (and warned about) through the environment
    lines += ["set -u", "unset SLURM_NTASKS_PER_NODE", f"cd {q(str(folder))} || exit 1"]
    for p in placed:
        part = f"+{p.component}" if het else ""
        lines.append(
            f'sbcast --force --jobid "$SLURM_JOB_ID{part}" '
            f"{q('build/' + role_file_name(p.role))} {q(paths.executable(p.role))} || exit 1"
        )
    lines.append(f'sbcast --force --jobid "$SLURM_JOB_ID" secret {q(paths.secret)} || exit 1')
    steps = []
    for k, kind in enumerate(found):
        argv = srun_argv(None, k, len(kind.roles), het, Path(f"roles-{k}.conf"))
        lines.append(f"SLURM_HOSTFILE=hostfile-{k} {' '.join(q(a) for a in argv)} &")
        lines.append(f"step{k}=$!")
        steps.append(k)
    lines.append("status=0")
    lines += [f'wait "$step{k}" || status=1' for k in steps]
    lines.append("# the copies removed from the nodes' storage")
    for k in steps:
        files = [paths.secret, *(paths.executable(p.role) for p in placed if p.component == k)]
        n = len({p.node.name for p in placed if p.component == k})
        where = (f" --het-group={k}" if het else "") + f" --nodes={n} --ntasks={n}"
        lines.append(
            f"srun{where} --ntasks-per-node=1 rm -f {' '.join(q(f) for f in files)} || status=1"
        )
    lines.append('exit "$status"')
    return "\n".join(lines) + "\n"
