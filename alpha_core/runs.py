"""Building what a face asks for and the commands that start it: one system, or every role (or
one role) of a plan with its pairing. Shared by `alpha build` / `alpha run` and alpha-tui, so
that no face decides how a choice becomes executables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from alpha_core.build import BuildResult, BuiltExecutable, Deployment, build_plan, build_program
from alpha_core.deployment_check import deployment_refusals
from alpha_core.diagnostics import Diagnostic
from alpha_core.launch import command_for
from alpha_core.link.toolchain import LinkError
from alpha_core.plan.admission import AdmissionRefused
from alpha_core.plan.model import Plan
from alpha_core.plan.projection import project
from alpha_core.workspace import Analysis

ALL_ROLES_LIMIT = 64  # a plan with more roles is built (and projected) one role at a time


class ChoiceError(Exception):
    """A choice that names nothing buildable: an unknown role, or too many roles at once."""


@dataclass(frozen=True)
class Choice:
    system: str | None = None  # without a plan: the system (None: the file's only one)
    plan: str | None = None
    pairing: str | None = None  # None: the plan's only pairing, or none
    role: str | None = None  # only this role of the plan


def build_choice(
    a: Analysis,
    choice: Choice,
    out_dir: Path,
    target: str,
    data: str | None,
    deployment: Callable[[int], Deployment],
    on_built: Callable[[BuiltExecutable, int, int], None] | None = None,
) -> tuple[BuildResult | None, list[Diagnostic]]:
    """The executables of `choice` in out_dir, or the refusals that stop them. `deployment`
    gives the deployment inputs for a number of roles (ports are chosen per build);
    `on_built(executable, done, total)` is told of each role as it is linked."""
    into = out_dir
    try:
        if choice.plan is None:
            program, diags = a.program(choice.system)
            if program is None:
                return None, diags
            d = deployment(1)
            refused = deployment_refusals(d, [target])
            if refused:
                return None, refused
            return build_program(program, into, target, data, d), []
        plan, pairing, diags = a.plan(choice.plan, choice.pairing)
        if plan is None:
            return None, diags
        roles = role_indices(plan, choice.role, "build")
        d = deployment(plan.membership.total)
        hosts = [pairing.host_of(i) if pairing is not None else "x86_64" for i in roles]
        refused = deployment_refusals(d, hosts, role_ports(plan, roles, d))
        if refused:
            return None, refused
        return build_plan(plan, pairing, into, d, roles, on_built), []
    except AdmissionRefused as e:
        return None, [e.diagnostic]
    except LinkError as e:
        return None, [Diagnostic(e.name, e.message, None)]


def role_ports(plan: Plan, roles: Sequence[int], d: Deployment) -> tuple[int, int] | None:
    """The lowest and highest port the `roles` listen on or dial, or None when none has a
    link: role i listens on port_base + i."""
    ports: list[int] = []
    for index in roles:
        links = project(plan, index, d.port_base, d.host).links
        if any(k.accept for k in links):
            ports.append(d.port_base + index)
        ports += [k.port for k in links if not k.accept]
    return (min(ports), max(ports)) if ports else None


def role_indices(plan: Plan, role: str | None, doing: str) -> list[int]:
    """The roles of `plan` a command works on: the one named, or every role when there are at
    most ALL_ROLES_LIMIT (a larger plan is `doing` one role at a time)."""
    if role is not None:
        index = plan.membership.index_of(role)
        if index is None:
            raise ChoiceError(f"plan `{plan.name}` has no role `{role}`")
        return [index]
    if plan.membership.total > ALL_ROLES_LIMIT:
        raise ChoiceError(
            f"plan `{plan.name}` has {plan.membership.total:,} roles: {doing} them one at a "
            "time with --role"
        )
    return list(range(plan.membership.total))


def role_commands(result: BuildResult, extra: Sequence[str] = ()) -> list[tuple[str, list[str]]]:
    """How to start every built role on this machine (qemu for another instruction set), each
    with the `extra` arguments."""
    return [
        (exe.role, command_for(exe.path, exe.target) + list(extra)) for exe in result.executables
    ]
