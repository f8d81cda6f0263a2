"""A Slurm allocation: obtained with `salloc --no-shell` (one heterogeneous-job component per
kind of role) or an existing one reused by job id, read back with scontrol (which nodes, their
addresses and instruction sets, how many task slots each), and released with scancel."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from alpha_core.deploy.slurm_cmd import SlurmError, run_slurm


@dataclass(frozen=True)
class Node:
    name: str
    address: str  # NodeAddr: where its roles listen and are dialled
    arch: str  # as Slurm reports it (x86_64, aarch64)


@dataclass(frozen=True)
class Request:
    """One component: `tasks` roles of one kind, `cpus` CPUs each."""

    tasks: int
    cpus: int = 1
    per_node: int = 0  # at most this many of them on one node; 0: as Slurm packs them


@dataclass(frozen=True)
class Component:
    offset: int  # the heterogeneous-job offset (0 for a job of one component)
    slots: tuple[Node, ...]  # one per task the component may start, node by node


@dataclass(frozen=True)
class Allocation:
    jobid: str
    components: tuple[Component, ...]
    owned: bool  # obtained here (released here), or given with --jobid (left to its owner)

    @property
    def heterogeneous(self) -> bool:
        return len(self.components) > 1


def salloc_argv(
    requests: Sequence[Request], name: str, partition: str | None, time: str | None
) -> list[str]:
    """`salloc --no-shell` for the components, `:` between them, each with its own options."""
    argv = ["salloc", "--no-shell"]
    for k, r in enumerate(requests):
        if k:
            argv.append(":")
        argv += ["--job-name", name, "--ntasks", str(r.tasks), "--cpus-per-task", str(r.cpus)]
        argv += ["--ntasks-per-node", str(r.per_node)] if r.per_node else []
        argv += ["--partition", partition] if partition else []
        argv += ["--time", time] if time else []
    return argv


def allocate(
    requests: Sequence[Request], name: str, partition: str | None, time: str | None
) -> Allocation:
    done = run_slurm(salloc_argv(requests, name, partition, time))
    found = re.search(r"Granted job allocation (\d+)", done.stderr + done.stdout)
    if not found:
        raise SlurmError(f"salloc granted no allocation: {done.stderr.strip()[-300:]}")
    jobid = found.group(1)
    try:
        return read_allocation(jobid, requests, owned=True)
    except SlurmError:
        release(Allocation(jobid, (), True))
        raise


def _cpu_count(ids: str) -> int:
    """CPU_IDs=0-2,5 → 4."""
    total = 0
    for part in ids.split(","):
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return total


def hostnames(nodelist: str) -> list[str]:
    return run_slurm(["scontrol", "show", "hostnames", nodelist]).stdout.split()


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host-list syntax expanded as `scontrol show hostnames` does, for when no
    controller answers: `node[1-3,7],gpu[01-02]` is node1, node2, node3, node7, gpu01, gpu02
    (a range keeps the width of its first bound's digits); several brackets in one name give
    every combination, in order. Raises SlurmError for a list it cannot read."""
    names: list[str] = []
    for item in _top_level(text):
        expanded = [""]
        for literal, ranges in re.findall(r"([^\[\]]*)(?:\[([^\[\]]*)\])?", item):
            choices = _ranges(ranges, text) if ranges else [""]
            expanded = [e + literal + c for e in expanded for c in choices]
        names += [n for n in expanded if n]
    if not names or any(c in n for n in names for c in "[]"):
        raise SlurmError(f"--nodelist {text!r} is not a Slurm host list (e.g. node[1-3],gpu7)")
    return names


def _top_level(text: str) -> list[str]:
    """The comma-separated items of a host list, commas inside brackets kept."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "[") - (c == "]")
        if depth < 0 or depth > 1:
            raise SlurmError(f"--nodelist {text!r} has unbalanced brackets")
        if c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise SlurmError(f"--nodelist {text!r} has an unclosed `[`")
    items.append(text[start:])
    return [i for i in items if i]


def _ranges(spec: str, text: str) -> list[str]:
    out = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise SlurmError(f"--nodelist {text!r}: `{part}` is not a number or a range a-b")
        low, high = int(m.group(1)), int(m.group(2) or m.group(1))
        if high - low >= 100_000:
            raise SlurmError(f"--nodelist {text!r}: `{part}` names over 100,000 nodes")
        width = len(m.group(1))
        out += [str(n).zfill(width) for n in range(low, high + 1)]
    return out


def nodes(names: Sequence[str]) -> dict[str, Node]:
    """Each node's address and instruction set, from `scontrol show node`."""
    out = run_slurm(["scontrol", "-o", "show", "node", ",".join(names)]).stdout
    found: dict[str, Node] = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "NodeName" in fields:
            name = fields["NodeName"]
            found[name] = Node(name, fields.get("NodeAddr") or name, fields.get("Arch", ""))
    return found


def read_allocation(jobid: str, requests: Sequence[Request], owned: bool) -> Allocation:
    """The components of job `jobid` and their task slots (CPUs on each node over the CPUs a
    task takes), checked against what the deployment needs."""
    text = run_slurm(["scontrol", "show", "job", "-d", jobid]).stdout
    records = [r for r in re.split(r"\n\s*\n", text) if "JobId=" in r]
    per_component: dict[int, list[tuple[str, int]]] = {}
    for record in records:
        offset = int(m.group(1)) if (m := re.search(r"HetJobOffset=(\d+)", record)) else 0
        state = m.group(1) if (m := re.search(r"JobState=(\S+)", record)) else "?"
        if state != "RUNNING":
            raise SlurmError(f"job {jobid} is {state}, not RUNNING: its nodes are not allocated")
        for nodelist, ids in re.findall(r"\bNodes=(\S+) CPU_IDs=(\S+)", record):
            for host in hostnames(nodelist):
                per_component.setdefault(offset, []).append((host, _cpu_count(ids)))
    if len(per_component) != len(requests):
        raise SlurmError(
            f"job {jobid} has {len(per_component)} component(s); this deployment needs "
            f"{len(requests)} (one per kind of role)"
        )
    known = nodes(sorted({h for cpus in per_component.values() for h, _ in cpus}))
    components = []
    for offset, request in enumerate(requests):
        slots = tuple(
            known[h]
            for h, cpus in per_component.get(offset, [])
            for _ in range(cpus // request.cpus)
        )
        if len(slots) < request.tasks:
            raise SlurmError(
                f"component {offset} of job {jobid} holds {len(slots)} task(s) of "
                f"{request.cpus} CPU(s); this deployment starts {request.tasks} there"
            )
        components.append(Component(offset, slots))
    return Allocation(jobid, tuple(components), owned)


def release(allocation: Allocation) -> None:
    """scancel for an allocation obtained here; one given with --jobid stays its owner's."""
    if allocation.owned:
        run_slurm(["scancel", allocation.jobid])
