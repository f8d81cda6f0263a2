"""What a face shows of one role before and while it runs, apart from its events: its
projected schedule (alpha project's text), its memory admission (the breakdown `alpha build`
admits it with) and where it runs (host, or the device of a GPU role). Computed here so that
alpha-tui shows what the compiler decided, never its own idea of it."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.plan.admission import admit, admit_program
from alpha_core.plan.model import Pairing, Plan
from alpha_core.plan.profiles import machine_profile
from alpha_core.plan.projection import project
from alpha_core.plan.schedule import single_process
from alpha_core.run.runs import Choice, overridden, with_steps
from alpha_core.workspace.analysis import Analysis


@dataclass(frozen=True)
class RoleView:
    role: str
    projection: str  # the schedule, as `alpha project` prints it
    admission: str  # the breakdown against its profile, sizes as 8.00 GiB
    host: str  # the instruction set it is built for
    device: str | None  # the device profile of a GPU role; None for a host role


def role_views(a: Analysis, choice: Choice) -> dict[str, RoleView]:
    """Every role of the choice by name (one, `main`, for a system without a plan); empty
    when the choice does not check."""
    if choice.plan is None:
        program, _ = a.program(choice.system)
        if program is None:
            return {}
        program = with_steps(program, choice.steps)
        schedule = single_process(program.leaves, program.identity())
        admission = admit_program(program, machine_profile()).show()
        return {"main": RoleView("main", schedule.show(), admission, "x86_64", None)}
    plan, pairing, _ = a.plan(choice.plan, choice.pairing)
    if plan is None or plan.membership.total > 64:  # a larger plan is shown role by role
        return {}
    plan = overridden(plan, choice)
    return {v.role: v for v in (_view(plan, pairing, i) for i in range(plan.membership.total))}


def _view(plan: Plan, pairing: Pairing | None, index: int) -> RoleView:
    schedule = project(plan, index)
    machine = machine_profile() if pairing is None else None
    admission = admit(plan, pairing, index, machine).show()
    host = pairing.host_of(index) if pairing is not None else "x86_64"
    device = pairing.gpu_of(index) if pairing is not None else None
    return RoleView(schedule.name, schedule.show(), admission, host, device)
