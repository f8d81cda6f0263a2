"""Where each role runs: its kind (the instruction set, and device, its pairing gives it) picks
the heterogeneous-job component, and its place among that kind's roles picks the task slot,
hence the node, whose address goes into the hosts file the roles are built with."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.deploy.allocation import Allocation, Node, Request
from alpha_core.plan.model import Pairing, Plan


@dataclass(frozen=True)
class Kind:
    target: str  # the instruction set the role is built for
    gpu: str | None  # the device kind, for GPU roles
    roles: tuple[int, ...]  # role indices, in membership order
    cpus: int  # CPUs each of them is given (its pairing's `cores`, else 1)


@dataclass(frozen=True)
class Placed:
    index: int
    role: str
    component: int
    task: int  # the task id within its component's job step
    node: Node
    target: str
    port: int


def kinds(plan: Plan, pairing: Pairing | None) -> list[Kind]:
    """The kinds of role, in the order their first role appears: one component each."""
    groups: dict[tuple[str, str | None], list[int]] = {}
    for i in range(plan.membership.total):
        target = pairing.host_of(i) if pairing is not None else "x86_64"
        gpu = pairing.gpu_of(i) if pairing is not None else None
        groups.setdefault((target, gpu), []).append(i)
    found = []
    for (target, gpu), roles in groups.items():
        cores = [pairing.cores_of(i) or 1 for i in roles] if pairing is not None else [1]
        found.append(Kind(target, gpu, tuple(roles), max(cores)))
    return found


def requests(found: list[Kind], per_node: int = 0) -> list[Request]:
    return [Request(len(k.roles), k.cpus, per_node) for k in found]


def place(plan: Plan, found: list[Kind], allocation: Allocation, port_base: int) -> list[Placed]:
    """Every role on a task slot of its kind's component, in membership order."""
    placed = []
    for k, (kind, component) in enumerate(zip(found, allocation.components, strict=True)):
        for task, index in enumerate(kind.roles):
            placed.append(
                Placed(
                    index,
                    plan.membership.name_of(index),
                    k,
                    task,
                    component.slots[task],
                    kind.target,
                    port_base + index,
                )
            )
    return sorted(placed, key=lambda p: p.index)


def hosts_text(placed: list[Placed]) -> str:
    """The hosts file the roles are built with: each role at its node's address."""
    lines = ["# written by alpha deploy slurm: each role at the address of the node it runs on"]
    for p in placed:
        address = f"[{p.node.address}]" if ":" in p.node.address else p.node.address
        lines.append(f"{p.role} {address}:{p.port}  # {p.node.name}")
    return "\n".join(lines) + "\n"
