"""Building what a face asks for and the commands that start it: one system, or every role (or
one role) of a plan with its pairing. Shared by `alpha build` / `alpha run` and alpha-tui, so
that no face decides how a choice becomes executables."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from alpha_core.build.outputs import MANIFEST, BuildResult, BuiltExecutable, Deployment
from alpha_core.check.program import Program
from alpha_core.data.identity import data_refusals
from alpha_core.diagnostics import Diagnostic
from alpha_core.link.toolchain import LinkError
from alpha_core.plan.admission import AdmissionRefused
from alpha_core.plan.model import Plan
from alpha_core.plan.projection import project
from alpha_core.run.identity import identity_refusal, record_canonical
from alpha_core.run.launch import command_for
from alpha_core.workspace.analysis import Analysis

STEPS_LIMIT = 4_294_967_295  # a round counter of the runtime is 32 bits


class ChoiceError(Exception):
    """A choice that names nothing buildable: an unknown role, or a pairing or role given
    without a plan."""


@dataclass(frozen=True)
class Choice:
    system: str | None = None  # without a plan: the system (None: the file's only one)
    plan: str | None = None
    pairing: str | None = None  # None: the plan's only pairing, or none
    role: str | None = None  # only this role of the plan
    steps: int | None = None  # instead of the system's `steps` (a longer demonstration run)
    checkpoint_every: int | None = None  # instead of the plan's `checkpoint every` (with a plan)


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
    # the compiler is loaded here, when a choice is built: a face that only checks, projects
    # or runs what was built never loads LLVM
    from alpha_core.build.arithmetic_check import arithmetic_refusals
    from alpha_core.build.deployment_check import deployment_refusals
    from alpha_core.build.executables import build_plan, build_program

    into = out_dir
    if choice.plan is None and (choice.pairing is not None or choice.role is not None):
        raise ChoiceError(without_plan(a, choice))
    try:
        if choice.plan is None:
            program, diags = a.program(choice.system)
            if program is None:
                return None, diags
            other = another_build(into, program.name, None)
            if other is not None:
                return None, [other]
            program = with_steps(program, choice.steps)
            d = deployment(1)
            refused = deployment_refusals(d, [target]) or resume_refusals(d, program)
            refused = refused or arithmetic_refusals(program, [target], d.cpu)
            refused = refused or data_refusals(program.data, data or d.data_path)
            if refused:
                return None, refused
            result = build_program(program, into, target, data, d)
            record_canonical(program)  # so that a capture of it can say what differs
            return result, []
        plan, pairing, diags = a.plan(choice.plan, choice.pairing)
        if plan is None:
            return None, diags
        other = another_build(into, plan.system.name, plan.name)
        if other is not None:
            return None, [other]
        plan = overridden(plan, choice)
        roles = role_indices(plan, choice.role, "build")
        d = deployment(plan.membership.total)
        hosts = [pairing.host_of(i) if pairing is not None else "x86_64" for i in roles]
        refused = deployment_refusals(d, hosts, role_ports(plan, roles, d))
        refused = refused or data_refusals(plan.system.data, d.data_path)
        refused = refused or resume_refusals(d, plan.system)
        refused = refused or arithmetic_refusals(plan.system, hosts, d.cpu)
        if refused:
            return None, refused
        result = build_plan(plan, pairing, into, d, roles, on_built)
        record_canonical(plan.system)  # so that a capture of it can say what differs
        return result, []
    except AdmissionRefused as e:
        return None, [e.diagnostic]
    except LinkError as e:
        return None, [Diagnostic(e.name, e.message, None)]


def resume_refusals(d: Deployment, program: Program) -> list[Diagnostic]:
    """Before anything is compiled: a resume from a capture of another version of the system
    is refused naming what differs (the roles would refuse it only once built and started)."""
    if not d.resume:
        return []
    refused = identity_refusal(d.resume, program, "resume from")
    return [refused] if refused is not None else []


def chosen_system(a: Analysis, choice: Choice) -> Program | None:
    """The system `choice` builds, with its --steps and --checkpoint-every (which are part of
    its identity), or None when it does not check."""
    if choice.plan is None:
        program, _ = a.program(choice.system)
        return with_steps(program, choice.steps) if program is not None else None
    plan, _, _ = a.plan(choice.plan, choice.pairing)
    return overridden(plan, choice).system if plan is not None else None


def capture_refusal(a: Analysis, choice: Choice, capture: Path, doing: str) -> Diagnostic | None:
    """`checkpoint-identity-mismatch`, naming what differs, when the capture at `capture` was
    made by another version of the system `choice` builds; asked before building."""
    program = chosen_system(a, choice)
    return identity_refusal(capture, program, doing) if program is not None else None


def another_build(out_dir: Path, system: str, plan: str | None) -> Diagnostic | None:
    """`output-holds-another-build` when `out_dir` holds the build of another system or plan
    (its manifest says which): building there would leave two builds' executables side by
    side under a manifest that describes only the newer. A rebuild of the same system and plan
    replaces its own files; an unreadable manifest is not ours to judge and is replaced."""
    import json

    try:
        held = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(held, dict):
        return None
    other_system, other_plan = held.get("system"), held.get("plan")
    if other_system == system and other_plan == plan:
        return None
    what = f"system `{other_system}`" + (f", plan `{other_plan}`" if other_plan else "")
    mine = f"system `{system}`" + (f", plan `{plan}`" if plan else "")
    return Diagnostic(
        "output-holds-another-build",
        f"{out_dir} holds the build of {what} ({MANIFEST}); building {mine} there would mix "
        "the two",
        None,
        help="choose another output folder (-o), or remove that one",
    )


def with_steps(program: Program, steps: int | None) -> Program:
    """The system with another number of steps (its identity changes with it, so a capture
    of one is never resumed by the other)."""
    if steps is None or steps == program.steps:
        return program
    if not 1 <= steps <= STEPS_LIMIT:
        raise ChoiceError(f"--steps {steps} is out of range: 1 to {STEPS_LIMIT:,} steps")
    return dataclasses.replace(program, steps=steps)


def overridden(plan: Plan, choice: Choice) -> Plan:
    """The plan with the choice's steps and checkpoint interval instead of its own."""
    every = choice.checkpoint_every
    if every is not None and not 1 <= every <= STEPS_LIMIT:
        raise ChoiceError(
            f"--checkpoint-every {every} is out of range: 1 to {STEPS_LIMIT:,} rounds"
        )
    system = with_steps(plan.system, choice.steps)
    if system is plan.system and (every is None or every == plan.checkpoint_every):
        return plan
    return dataclasses.replace(
        plan, system=system, checkpoint_every=every if every is not None else plan.checkpoint_every
    )


def without_plan(a: Analysis, choice: Choice) -> str:
    """Why a pairing or a role given without a plan is refused (it would be ignored)."""
    if choice.pairing is not None:
        pairing = a.checked.pairings.get(choice.pairing)
        whose = f"; `{choice.pairing}` pairs plan `{pairing.plan.name}`" if pairing else ""
        return f"--pairing {choice.pairing} pairs the roles of a plan: give --plan too{whose}"
    return f"--role {choice.role} is a role of a plan: give --plan too"


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
    """The roles of `plan` a command works on (`doing` them): the one named, or every role. A
    plan of any size is built whole: its roles share one linked template per kind of role
    (build/role_kinds.py), so a role costs its table, not a link."""
    if role is not None:
        index = plan.membership.index_of(role)
        if index is None:
            near = near_role(plan, role)
            raise ChoiceError(
                f"plan `{plan.name}` has no role `{role}` (its roles: {roles_text(plan)})"
                + (f"; did you mean `{near}`?" if near else "")
            )
        return [index]
    return list(range(plan.membership.total))


def roles_text(plan: Plan) -> str:
    """The roles of a plan by family (`hub`, `worker[0]` … `worker[7]`): never one by one,
    since a plan may have hundreds of thousands."""
    shown = []
    for f in plan.membership.families:
        if f.singleton:
            shown.append(f"`{f.name}`")
        elif f.count == 1:
            shown.append(f"`{f.name}[0]`")
        else:
            shown.append(f"`{f.name}[0]` … `{f.name}[{f.count - 1}]`")
    return ", ".join(shown)


def near_role(plan: Plan, role: str) -> str | None:
    """The role a mistyped name most likely meant: `worker3` or `workr[3]` for `worker[3]`,
    `hubb` for `hub`."""
    import re

    from alpha_core.check.context import suggest

    families = {f.name: f for f in plan.membership.families}
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z_0-9]*?)\s*[\[(]?\s*(\d+)?\s*[\])]?\s*", role)
    if m is None:
        return None
    name, number = m.group(1), m.group(2)
    found = name if name in families else next(iter(suggest(name, families)), None)
    if found is None:
        return None
    f = families[found]
    if f.singleton:
        return found if number is None else None
    if number is not None and int(number) < f.count:
        return f"{found}[{int(number)}]"
    return None


def role_commands(result: BuildResult, extra: Sequence[str] = ()) -> list[tuple[str, list[str]]]:
    """How to start every built role on this machine (qemu for another instruction set), each
    with the `extra` arguments."""
    return [
        (exe.role, command_for(exe.path, exe.target) + list(extra)) for exe in result.executables
    ]


RUNS_DIR_VARIABLE = "ALPHA_RUNS_DIR"  # where `alpha run` keeps a run without `-o`


def run_folder(a: Analysis, choice: Choice, now: float | None = None) -> Path:
    """Where a run given no output folder keeps its executables and parameters:
    `./alpha-runs/<system>[-<plan>]-<UTC timestamp>/` (the folder in ALPHA_RUNS_DIR instead
    of ./alpha-runs when set), a new name if that one is taken. Not created here: a refused
    build leaves nothing behind."""
    import os
    import time

    plan = a.checked.plans.get(choice.plan) if choice.plan else None
    if plan is not None:
        system = plan.system.name
    elif choice.system is not None:
        system = choice.system
    else:
        system = next(iter(sorted(a.checked.programs)), "system")
    label = system + (f"-{choice.plan}" if choice.plan else "")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    root = Path(os.environ.get(RUNS_DIR_VARIABLE) or "alpha-runs").resolve()
    folder = root / f"{label}-{stamp}"
    n = 2
    while folder.exists():
        folder = root / f"{label}-{stamp}-{n}"
        n += 1
    return folder
