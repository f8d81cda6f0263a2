"""Check `plan` and `pairing` declarations against the systems they name."""

from __future__ import annotations

from typing import TypeVar

from alpha_core.check.context import CheckContext
from alpha_core.check.program import Program
from alpha_core.diagnostics import Related
from alpha_core.plan.model import (
    MAX_FANOUT,
    Family,
    LeafAssignment,
    Membership,
    Plan,
)
from alpha_core.plan.state_check import check_state
from alpha_core.support.span import Span
from alpha_core.syntax import ast

T = TypeVar("T")
ORDERS = {"canonical tree": True, "sequence": False, "arrival": False, "ring": False}


def _single(items: tuple[object, ...], kind: type[T], ctx: CheckContext, what: str) -> T | None:
    found = [i for i in items if isinstance(i, kind)]
    for extra in found[1:]:
        ctx.refuse(
            "duplicate-name",
            f"a second `{what}` item",
            getattr(extra, "span", None),
            related=(Related(getattr(found[0], "span"), "first here"),),  # noqa: B009
        )
    return found[0] if found else None


def _missing(ctx: CheckContext, decl: ast.Decl, what: str, example: str) -> None:
    if any(isinstance(i, ast.ErrorItem) for i in decl.items):
        return
    ctx.refuse(
        "missing-item",
        f"plan `{decl.name}` has no `{what}` item",
        decl.name_span,
        help=f"add, for example, `{example}`",
    )


def check_plan(decl: ast.Decl, system: Program, ctx: CheckContext) -> Plan | None:
    before = len(ctx.diagnostics)
    roles = _single(decl.items, ast.RolesItem, ctx, "roles")
    topology = _single(decl.items, ast.TopologyItem, ctx, "topology")
    rounds = _single(decl.items, ast.RoundItem, ctx, "round")
    contract = _single(decl.items, ast.ContractItem, ctx, "contract")
    leaves_item = _single(decl.items, ast.LeavesItem, ctx, "leaves")
    state_item = _single(decl.items, ast.StateItem, ctx, "state")
    checkpoint = _single(decl.items, ast.CheckpointItem, ctx, "checkpoint")
    if roles is None:
        _missing(ctx, decl, "roles", "roles worker[2]")
        return None
    assert isinstance(roles, ast.RolesItem)
    membership = _membership(roles, ctx)
    if membership is None:
        return None
    families = [f for f in membership.families if not f.singleton]
    if len(families) != 1:
        ctx.refuse(
            "topology-mismatch",
            f"a plan needs exactly one family of workers (`worker[n]`); "
            f"this one has {len(families)}",
            roles.span,
        )
        return None
    workers = families[0]
    shape, fanout, hub = _topology(topology, membership, workers, ctx, decl)
    if shape is None:
        return None
    approximate = _contract(contract, ctx)
    if rounds is not None:
        assert isinstance(rounds, ast.RoundItem)
        _round(rounds, membership, workers, approximate, ctx)
    assignment = _assignment(leaves_item, workers, system.leaves, ctx, roles.span)
    if assignment is None or len(ctx.diagnostics) > before:
        return None
    if approximate:
        assert contract is not None
        ctx.refuse(
            "not-built-yet", "approximate contracts are checked but not yet compiled", contract.span
        )
        return None
    state = check_state(state_item, membership, workers, system.n_params, ctx)
    every = None
    if checkpoint is not None:
        if checkpoint.every < 1:
            ctx.refuse(
                "bad-argument", "checkpoints come every 1 round or more", checkpoint.every_span
            )
            return None
        every = checkpoint.every
    if state is None:
        return None
    return Plan(
        decl.name,
        system,
        membership,
        workers,
        hub,
        shape,
        fanout,
        assignment,
        "exact",
        state,
        every,
    )


def _membership(item: ast.RolesItem, ctx: CheckContext) -> Membership | None:
    families: list[Family] = []
    seen: dict[str, Span] = {}
    first = 0
    for r in item.roles:
        if r.name in seen:
            ctx.refuse(
                "duplicate-name",
                f"role `{r.name}` is declared twice",
                r.name_span,
                related=(Related(seen[r.name], "first declared here"),),
            )
            return None
        seen[r.name] = r.name_span
        if r.count is not None and r.count < 1:
            ctx.refuse("bad-argument", f"role family `{r.name}` needs at least one member", r.span)
            return None
        count = 1 if r.count is None else r.count
        families.append(Family(r.name, first, count, r.count is None))
        first += count
    return Membership(tuple(families))


def _topology(
    item: object, membership: Membership, workers: Family, ctx: CheckContext, decl: ast.Decl
) -> tuple[str | None, int, Family | None]:
    if item is None:
        _missing(ctx, decl, "topology", "topology pair")
        return None, 0, None
    assert isinstance(item, ast.TopologyItem)
    shape = item.shape
    name = shape.id if isinstance(shape, ast.Name) else shape.func
    span = shape.span if isinstance(shape, ast.Name) else shape.func_span
    singletons = [f for f in membership.families if f.singleton]
    if name == "pair":
        if workers.count != 2 or singletons or not isinstance(shape, ast.Name):
            ctx.refuse(
                "topology-mismatch",
                f"`pair` joins exactly two workers and nothing else; the plan has "
                f"{workers.count} `{workers.name}` and {len(singletons)} other role(s)",
                span,
            )
            return None, 0, None
        return "pair", 1, None
    if name == "star":
        if (
            not isinstance(shape, ast.Call)
            or len(shape.args) != 1
            or not isinstance(shape.args[0], ast.Name)
        ):
            ctx.refuse("bad-argument", "`star` names its hub: `star(hub)`", item.span)
            return None, 0, None
        hub_name = shape.args[0]
        hub = membership.family(hub_name.id)
        if hub is None or not hub.singleton:
            ctx.unknown(
                "role",
                hub_name.id,
                hub_name.span,
                [f.name for f in membership.families if f.singleton],
            )
            return None, 0, None
        if len(singletons) != 1:
            ctx.refuse("topology-mismatch", "a star has one hub and the workers", item.span)
            return None, 0, None
        if workers.count > MAX_FANOUT:
            ctx.refuse(
                "fanout-exceeded",
                f"a star's hub would combine {workers.count} workers; the bound is {MAX_FANOUT}",
                item.span,
                help=f"use `topology hierarchy(fanout: {MAX_FANOUT})` or less",
            )
            return None, 0, None
        return "star", workers.count, hub
    if name == "hierarchy":
        fan = shape.kwarg("fanout") if isinstance(shape, ast.Call) else None
        if (
            fan is None
            or not isinstance(fan.value, ast.Number)
            or not fan.value.is_int
            or isinstance(shape, ast.Name)
            or shape.args
            or len(shape.kwargs) != 1
        ):
            ctx.refuse("bad-argument", "`hierarchy` takes `fanout:`, an integer", item.span)
            return None, 0, None
        k = int(fan.value.value)
        if k < 2:
            ctx.refuse("bad-argument", f"`fanout` is {k}; it must be at least 2", fan.value.span)
            return None, 0, None
        if k > MAX_FANOUT:
            ctx.refuse(
                "fanout-exceeded", f"`fanout` is {k}; the bound is {MAX_FANOUT}", fan.value.span
            )
            return None, 0, None
        if singletons:
            ctx.refuse(
                "topology-mismatch",
                f"a hierarchy is made of workers only; `{singletons[0].name}` has no place in it",
                item.span,
            )
            return None, 0, None
        return "hierarchy", k, None
    ctx.unknown("topology", name, span, ["pair", "star", "hierarchy"])
    return None, 0, None


def _contract(item: object, ctx: CheckContext) -> bool:
    """True for an approximate contract; exact when absent."""
    if item is None:
        return False
    assert isinstance(item, ast.ContractItem)
    kind = item.kind
    name = kind.id if isinstance(kind, ast.Name) else kind.func
    if name == "exact" and isinstance(kind, ast.Name):
        return False
    if name == "approximate" and isinstance(kind, ast.Call):
        return True
    ctx.unknown("contract", name, item.kind.span, ["exact", "approximate"])
    return False


def _round(
    item: ast.RoundItem,
    membership: Membership,
    workers: Family,
    approximate: bool,
    ctx: CheckContext,
) -> None:
    names = [f.name for f in membership.families]
    for stmt in item.stmts:
        if isinstance(stmt, ast.ComputeStmt | ast.ApplyStmt):
            if membership.family(stmt.family) is None:
                ctx.unknown("role", stmt.family, stmt.family_span, names)
            elif stmt.family != workers.name:
                ctx.refuse(
                    "topology-mismatch",
                    f"only the workers `{workers.name}` compute and apply in this topology",
                    stmt.family_span,
                )
        if isinstance(stmt, ast.ComputeStmt | ast.CombineStmt) and stmt.what != "grad":
            ctx.unknown("value", stmt.what, stmt.what_span, ["grad"])
        if isinstance(stmt, ast.CombineStmt):
            exact = ORDERS.get(stmt.order)
            if exact is None:
                ctx.unknown("combine order", stmt.order, stmt.order_span, list(ORDERS))
            elif not exact and not approximate:
                ctx.refuse(
                    "combine-order-changed",
                    f"combining by {stmt.order} adds the leaves in another order than "
                    "the system's canonical tree",
                    stmt.order_span,
                    help="combine by canonical tree, or declare `contract approximate(...)`",
                )
            if stmt.deliver not in ("all",):
                ctx.refuse(
                    "not-built-yet",
                    f"delivering to `{stmt.deliver}` (one owner per slice) is not built "
                    "yet; deliver to all",
                    stmt.deliver_span,
                )


def _assignment(
    item: object, workers: Family, leaves: int, ctx: CheckContext, roles_span: Span
) -> LeafAssignment | None:
    if item is None:
        if workers.count > leaves:
            ctx.refuse(
                "role-without-leaves",
                f"{workers.count} workers share {leaves} leaves; "
                f"{workers.member(leaves)} onwards would compute nothing",
                roles_span,
                help="give the system more leaves (`batch N leaves L`) or the plan fewer workers",
            )
            return None
        return LeafAssignment.even(workers.count, leaves)
    assert isinstance(item, ast.LeavesItem)
    blocks: list[tuple[int, int, int, int, Span]] = []
    for r in item.ranges:
        ref = r.role
        if ref.name != workers.name:
            ctx.unknown("worker family", ref.name, ref.name_span, [workers.name])
            return None
        lo, hi = (
            (ref.index, ref.index + 1)
            if ref.index is not None
            else ((0, workers.count) if ref.every or ref.lo is None else (ref.lo, ref.hi or 0))
        )
        if not (0 <= lo < hi <= workers.count):
            ctx.refuse(
                "unknown-name",
                f"`{workers.name}` has members 0..{workers.count}; "
                f"`{ref.name}[{lo}..{hi}]` is outside",
                ref.span,
            )
            return None
        if not (0 <= r.lo < r.hi <= leaves):
            ctx.refuse(
                "leaves-uncovered",
                f"leaves {r.lo}..{r.hi} are not within the system's {leaves} leaves",
                r.span,
            )
            return None
        if r.hi - r.lo < hi - lo:
            ctx.refuse(
                "role-without-leaves", f"{hi - lo} workers share only {r.hi - r.lo} leaves", r.span
            )
            return None
        blocks.append((lo, hi, r.lo, r.hi, r.span))
    blocks.sort()
    worker_next, leaf_next = 0, 0
    for lo, hi, llo, lhi, span in blocks:
        if lo < worker_next:
            ctx.refuse("duplicate-name", f"{workers.member(lo)} is given leaves twice", span)
            return None
        if lo > worker_next:
            ctx.refuse(
                "role-without-leaves",
                f"{workers.member(worker_next)} is given no leaves",
                item.span,
            )
            return None
        if llo > leaf_next:
            ctx.refuse("leaves-uncovered", f"no worker computes leaves {leaf_next}..{llo}", span)
            return None
        if llo < leaf_next:
            ctx.refuse(
                "leaves-overlap",
                f"leaves {llo}..{min(lhi, leaf_next)} are computed twice",
                span,
                help="give each leaf to one worker, in worker order",
            )
            return None
        worker_next, leaf_next = hi, lhi
    if worker_next < workers.count:
        ctx.refuse(
            "role-without-leaves", f"{workers.member(worker_next)} is given no leaves", item.span
        )
        return None
    if leaf_next < leaves:
        ctx.refuse(
            "leaves-uncovered", f"no worker computes leaves {leaf_next}..{leaves}", item.span
        )
        return None
    return LeafAssignment(workers.count, leaves, tuple(b[:4] for b in blocks))
